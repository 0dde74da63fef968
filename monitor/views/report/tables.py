"""The report's tables of what the rules concluded: HTML cells from § 5 events.

``build.py`` assembles the compliance report; the tables of trap and turbidity
facts (and the table helpers every section uses, and ``LocalTime``) live here, each row read off
a typed event body, so a field the engine adds or a new event type of these
rules shows up in one place. Cells are escaped here; ``table`` takes them as
they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from html import escape

from ...config import SiteConfig
from ...contract.events import (
    Event,
    ProbesSuspect,
    SensorFault,
    TrapCleaned,
    TrapCleanoutRequired,
    TrapFill,
    TurbidityContrast,
)
from ...contract.localtime import local_text

#: Local time of an instant (ms or ISO text) as the report prints it.
Local = Callable[[int | str | None], str]


class LocalTime:
    """Instants in the site's zone, as the report prints them (``2026-05-14 08:00 EDT``,
    a dash for none) and as plots place them (``dt``)."""

    def __init__(self, site: SiteConfig) -> None:
        self.zone = site.zone

    def dt(self, ms: int) -> datetime:
        return datetime.fromtimestamp(ms / 1000, tz=self.zone)

    def __call__(self, value: int | str | None) -> str:
        return local_text(value, self.zone, empty="—")


def table(headers: list[str], rows: list[list[str]], empty: str) -> str:
    """``rows`` hold already-escaped HTML cells."""
    if not rows:
        return f"<p><em>{escape(empty)}</em></p>"
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def outcome(text: str) -> str:
    return f'<span class="{escape(text)}">{escape(text)}</span>'


def trap_section(events: Iterable[Event], local: Local) -> str:
    """§ 134-9A(1): fill levels, clean-out demands, clean-outs and sensor faults (a fault
    is why the fill stood still: the trap was not watched meanwhile)."""
    rows = []
    for e in events:
        b = e.body
        if isinstance(b, TrapFill | TrapCleanoutRequired):
            fill = f"{b.fill_fraction:.0%}" + (
                f" (last valid; sensor faulty: {b.fault})"
                if isinstance(b, TrapCleanoutRequired) and b.fault else "")
        elif isinstance(b, TrapCleaned):
            fill = f"{b.fill_before:.0%} → {b.fill_after:.0%}"
        elif isinstance(b, SensorFault) and b.trap is not None:
            fill = f"sensor {b.sensor} faulty ({b.reason}: {b.value:g} in): fill not measured"
        else:
            continue
        rows.append([escape(local(e.at_ms)), escape(b.trap or ""),
                     escape(e.type.replace("_", " ")), escape(fill)])
    return "<h2>Sediment traps</h2>" + table(
        ["Time", "Trap", "Event", "Fill (of design volume)"], rows,
        "No trap events in the period.")


def turbidity_section(events: Iterable[Event], local: Local) -> str:
    """§ 134-8C: contrast episodes (against background, or the absolute level while no
    usable background exists) and suspect probes."""
    rows = []
    for e in events:
        t = e.body
        if isinstance(t, TurbidityContrast):
            rows.append([escape(local(e.at_ms)), escape(t.pair), outcome(t.state),
                         escape(t.basis), escape(local(t.started_at)), _ntu(t.upstream_ntu),
                         _ntu(t.downstream_ntu), _ntu(t.delta_ntu), _ntu(t.limit_ntu)])
        elif isinstance(t, ProbesSuspect):
            rows.append([escape(local(e.at_ms)), escape(t.pair), outcome("probes suspect"),
                         escape(f"upstream above downstream for {t.hours:g} h"),
                         escape(local(t.since)), _ntu(t.upstream_ntu), _ntu(t.downstream_ntu),
                         _ntu(t.downstream_ntu - t.upstream_ntu), _ntu(t.suspect_delta_ntu)])
    return "<h2>Turbidity episodes</h2>" + table(
        ["Time", "Pair", "State", "Basis", "Episode start", "Upstream NTU", "Downstream NTU",
         "Δ NTU", "Limit (Δ NTU over background, or NTU when absolute)"], rows,
        "No turbidity episodes in the period.")


def _ntu(value: float | None) -> str:
    """An NTU cell; none (an absolute finding has no background) is a dash."""
    return "—" if value is None else escape(f"{value:g}")

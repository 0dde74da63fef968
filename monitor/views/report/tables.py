"""The report's tables of what the rules concluded: HTML cells from the events.

``build.py`` assembles the compliance report; the tables of trap and turbidity
facts (and the table helpers every section uses, and ``LocalTime``) live here, each row read off
a typed event body, so a field the engine adds or a new event type of these
rules shows up in one place. Cells are escaped here; ``table`` takes them as
they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
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
    TurbidityMonitored,
    TurbidityUnmonitored,
)
from ...contract.figures import fill_text
from ...contract.localtime import local_datetime, local_text
from ...contract.times import parse_iso
from ...contract.unmonitored_words import reason_words, still_checked
from ...engine import SiteNow, TurbidityEpisode

#: Local time of an instant (ms or ISO text) as the report prints it.
Local = Callable[[int | str | None], str]


class LocalTime:
    """Instants in the site's zone, as the report prints them (``2026-05-14 08:00 EDT``,
    a dash for none) and as plots place them (``dt``)."""

    def __init__(self, site: SiteConfig) -> None:
        self.zone = site.zone

    def dt(self, ms: int) -> datetime:
        """Where a plot places ``ms``: the journal's readings, which admission keeps
        within minutes of the clock, so always an instant the zone can show (one it
        cannot is placed at the epoch rather than break the report)."""
        return local_datetime(ms, self.zone) or datetime.fromtimestamp(0, tz=self.zone)

    def __call__(self, value: int | str | None) -> str:
        return local_text(value, self.zone, empty="—")

    def zone_words(self, lo_ms: int, hi_ms: int) -> str:
        """``America/New_York (EDT)``, or ``(EST/EDT)`` when the span crosses a change."""
        names = dict.fromkeys(local.strftime("%Z") for ms in (lo_ms, hi_ms)
                              if (local := local_datetime(ms, self.zone)) is not None)
        return f"{self.zone.key} ({'/'.join(names)})"

    def id(self, text: str) -> str:
        """An id with the UTC instants in it (``routine-2026-05-20T14:00:00Z``,
        ``storm-rg1-20260503T140000Z``) in local time: ``routine-2026-05-20 10:00 EDT``."""
        return _INSTANT.sub(lambda m: self(parse_iso(_iso_of(m.group(0)))), text)


#: A UTC instant inside an id: ISO 8601 (``2026-05-20T14:00:00Z``) or compact
#: (``20260503T140000Z``, ``contract.times.compact``).
_INSTANT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z|\d{8}T\d{6}Z")


def _iso_of(text: str) -> str:
    if "-" in text:
        return text
    return f"{text[:4]}-{text[4:6]}-{text[6:8]}T{text[9:11]}:{text[11:13]}:{text[13:15]}Z"


def table(headers: list[str], rows: list[list[str]], empty: str) -> str:
    """``rows`` hold already-escaped HTML cells."""
    if not rows:
        return f"<p><em>{escape(empty)}</em></p>"
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def outcome(text: str) -> str:
    return f'<span class="{escape(text)}">{escape(text)}</span>'


#: Each trap event as its row in the report says it.
TRAP_WORDS = {"trap_fill": "warning level reached",
              "trap_cleanout_required": "clean-out required (§ 134-9A(1))",
              "trap_cleaned": "cleaned out", "sensor_fault": "sensor faulty"}


def trap_section(events: Iterable[Event], local: Local, site: SiteConfig | None = None) -> str:
    """§ 134-9A(1): fill levels, clean-out demands, clean-outs and sensor faults (a fault
    is why the fill stood still: the trap was not watched meanwhile). A fill is never
    rounded across the ``site``'s levels of its trap (``figures.py``)."""
    rows = []
    for e in events:
        b = e.body
        levels = site.fill_levels(b.trap) if site is not None and isinstance(
            b, TrapFill | TrapCleanoutRequired | TrapCleaned) else ()
        if isinstance(b, TrapFill | TrapCleanoutRequired):
            fill = fill_text(b.fill_fraction, *levels) + (
                f" (last valid; sensor faulty: {b.fault})"
                if isinstance(b, TrapCleanoutRequired) and b.fault else "")
        elif isinstance(b, TrapCleaned):
            fill = f"{fill_text(b.fill_before, *levels)} → {fill_text(b.fill_after, *levels)}"
        elif isinstance(b, SensorFault) and b.trap is not None:
            fill = f"sensor {b.sensor} faulty ({b.reason}: {b.value:g} in): fill not measured"
        else:
            continue
        rows.append([escape(local(e.at_ms)), escape(b.trap or ""),
                     escape(TRAP_WORDS.get(e.type, e.type.replace("_", " "))), escape(fill)])
    return "<h2>Sediment traps</h2>" + table(
        ["Time", "Trap", "Event", "Fill (of design volume)"], rows,
        "No trap events in the period.")


def turbidity_section(events: Iterable[Event], local: Local,
                      episodes: Sequence[TurbidityEpisode] = (), now: SiteNow | None = None
                      ) -> str:
    """§ 134-8C: the episodes with their peak (``engine/episodes.py``), then each contrast
    event (against background, or the absolute level while no usable background exists),
    suspect probes and the times it could not be checked; and the pairs whose contrast
    is unknown at the time of the report (``now``, the recorded state)."""
    return "<h2>Turbidity episodes</h2>" + (_episode_table(episodes, local) if episodes else
                                            "") + _turbidity_events(events, local) + (
        _unknown_now(now, local) if now is not None else "")


def _unknown_now(now: SiteNow, local: Local) -> str:
    """One line per pair whose contrast cannot be checked at the time of the report."""
    lines = []
    for pid, p in now.turbidity.items():
        if p.unknown_reason is None:
            continue
        told = (f"; the qualified professional was told at {local(p.notice_ms)}"
                if p.state == "unmonitored" and p.notice_ms is not None else "")
        lines.append(f"<p class='note'>At the time of this report the contrast at "
                     f"{escape(pid)} is unknown since {escape(local(p.unknown_since_ms))} "
                     f"({escape(reason_words(p.unknown_reason))}): § 134-8C is not being "
                     f"checked{escape(told)}.</p>")
    return "".join(lines)


def _episode_table(episodes: Sequence[TurbidityEpisode], local: Local) -> str:
    """One row per episode: detection, its peak reading, and clearing."""
    rows = []
    for ep in episodes:
        d, pk = ep.detected, ep.peak
        absolute = ep.basis == "absolute"
        then = d.downstream_ntu if absolute else d.delta_ntu
        state = outcome("cleared" if ep.cleared_ms is not None else "exceeded")
        peak = ([escape(local(pk.ts_ms)), _ntu(pk.upstream_ntu), _ntu(pk.downstream_ntu),
                 _ntu(pk.delta_ntu)] if pk is not None else
                [escape("— (no reading in the report's data)"), "—", "—", "—"])
        rows.append([escape(ep.pair), state, escape(ep.basis), escape(local(ep.started_ms)),
                     escape(local(ep.detected_ms)), _ntu(then), *peak, _ntu(d.limit_ntu),
                     escape(local(ep.cleared_ms) if ep.cleared_ms is not None
                            else "not cleared")])
    return table(["Pair", "State", "Basis", "Started", "Detected", "Then", "Peak at",
                  "Peak up NTU", "Peak down NTU", "Peak Δ NTU", "Limit", "Cleared"], rows, "") + (
        "<p class='note'>Then: the increase over background when detected (NTU), or the "
        "downstream level when absolute; the peak is the episode's reading with the largest "
        "increase (the highest level when absolute) up to its clearing or the end of the "
        "period; Limit: the allowed increase (NTU over background), or the level when "
        "absolute.</p>")


def _turbidity_events(events: Iterable[Event], local: Local) -> str:
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
        elif isinstance(t, TurbidityUnmonitored | TurbidityMonitored):
            rows.append(_unmonitored_row(e.at_ms, t, local))
    return ("<h3>Turbidity events</h3>" if rows else "") + table(
        ["Time", "Pair", "State", "Basis", "Episode start", "Upstream NTU", "Downstream NTU",
         "Δ NTU", "Limit (Δ NTU over background, or NTU when absolute)"], rows,
        "No turbidity episodes in the period.")


def _unmonitored_row(at_ms: int, t: TurbidityUnmonitored | TurbidityMonitored, local: Local
                     ) -> list[str]:
    """§ 134-8C could not be checked (the notice), or can be again: why, and what was
    still checked meanwhile (the absolute level, when the background was missing)."""
    if isinstance(t, TurbidityUnmonitored):
        state, what = "not monitored", (f"contrast unknown ({reason_words(t.reason)}); still "
                                        f"checked: {still_checked(t.reason, t.absolute_ntu)}")
    else:
        state, what = "monitored again", (f"contrast unknown {local(t.since)} to "
                                          f"{local(t.known_at)} ({reason_words(t.reason)})")
    return [escape(local(at_ms)), escape(t.pair), outcome(state), escape(what),
            escape(local(t.since)), "—", "—", "—", _ntu(t.absolute_ntu)]


def _ntu(value: float | None) -> str:
    """An NTU cell; none (an absolute finding has no background) is a dash."""
    return "—" if value is None else escape(f"{value:g}")

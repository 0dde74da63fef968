"""``stormwatch report``: a compliance report with plots, as one HTML file (DESIGN § 6).

Reads the database read-only, from a store the caller opened (``cli.py``
refuses a missing or unreadable database: a page saying "no data" would look
like a report). Events come from the log book (``logbook.current_events``: the
authoritative set, covered by the hash chain whose head the header prints, so
an edit of the ``events`` table cannot reach the report). The plots come from
the site's journal run through an engine with its samplers
(``engine/series.py``), so a plot shows what the rules saw (the trap's fill
after the median, the storm's running total), never a recomputation that could
contradict an alert; the open clocks from the recorded site status. Neither
is chained. Times are in the site's zone; plots are inline PNG (matplotlib).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from html import escape
from typing import Any

from ...config import Config, SiteConfig
from ...config.plausible import NO_GAUGE, storm_duty_unwatched
from ...contract.events import (
    ClockClosed,
    Event,
    InspectionBackdated,
    InspectionMissed,
    InspectionRecorded,
    ProbesSuspect,
    SensorFault,
    SensorStale,
    TrapCleanoutRequired,
    TurbidityContrast,
)
from ...contract.times import MS_PER_HOUR, parse_iso
from ...engine.actions import action_states, record_of_event
from ...engine.core import Engine
from ...engine.outcomes import storm_records
from ...engine.readout import SiteNow, SiteSummary
from ...engine.series import (
    ContrastSample,
    Sample,
    StormSample,
    TrapSample,
    attach,
    hourly_rain,
    judged_rain,
    running_totals,
)
from ...engine.sitestorms import MEAN_GAUGE
from ...engine.summary import judged_at, status_at
from ...host.rows import apply_row
from ...store import Store
from ..logbook import current_events, verify_logbook
from .rows import revealed_note, sensor_rows
from .tables import outcome as _outcome
from .tables import table as _table
from .tables import trap_section, turbidity_section

LAW = [
    ("§ 134-9A(2)", "… a qualified professional conduct site inspections and document the "
     "effectiveness of all erosion and sediment control practices every seven days and within "
     "24 hours of any storm event producing 0.5 inch of precipitation or more. Inspection "
     "reports shall be maintained in a site log book."),
    ("§ 134-9A(1)", "Sediment shall be removed from sediment traps or sediment ponds whenever "
     "their design capacity has been reduced by 50%."),
    ("§ 134-12D", "Each week's continued violation shall constitute a separate additional "
     "violation."),
    ("§ 134-8C", "Any land development activity shall not cause an increase in turbidity that "
     "will result in substantial visible contrast to natural conditions in surface waters of "
     "the State of New York."),
]

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:70em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #bbb;padding:.25em .6em;text-align:left;font-size:.92em}
th{background:#eee} blockquote{color:#444;border-left:3px solid #bbb;margin-left:0;padding-left:1em}
.late,.exceeded,.overdue{color:#b00;font-weight:bold} .met{color:#070}
img{max-width:100%}
"""


def parse_bound(text: str, site: SiteConfig, *, end: bool) -> int:
    """``--from``/``--to``: a local date (inclusive: ``--to`` ends at the next midnight)
    or an ISO time with offset. Raises ValueError."""
    text = text.strip()
    if len(text) == 10:
        day = date.fromisoformat(text)
        if end:
            day += timedelta(days=1)
        return round(datetime.combine(day, time(0), tzinfo=site.zone).timestamp() * 1000)
    return parse_iso(text)


class _Local:
    def __init__(self, site: SiteConfig) -> None:
        self.zone = site.zone

    def dt(self, ms: int) -> datetime:
        return datetime.fromtimestamp(ms / 1000, tz=self.zone)

    def __call__(self, value: int | str | None) -> str:
        if value is None or value == "":
            return "—"
        ms = value if isinstance(value, int) else parse_iso(value)
        return self.dt(ms).strftime("%Y-%m-%d %H:%M %Z")


def _in(value: Any) -> str:
    return "—" if value is None else f"{float(value):.2f} in"


# --------------------------------------------------------------------------- data


@dataclass
class Series:
    """What the engine saw of one site after each reading (``engine/series.py``): the
    report plots these, so a plot shows exactly what the alerts were decided on."""

    storms: dict[str, list[StormSample]] = field(default_factory=dict)
    traps: dict[str, list[TrapSample]] = field(default_factory=dict)
    contrast: dict[str, list[ContrastSample]] = field(default_factory=dict)


def engine_series(config: Config, store: Store, site_id: str, lo: int, hi: int) -> Series:
    """The site's samples with event time in ``[lo, hi)``.

    The site's journal is run through an engine of its own from the start (the
    rules carry state: a storm's running total, the median of a trap, the
    last background), the same way the daemon ran it; the last sample of each
    series and instant wins (a late reading corrects what came before it).
    """
    engine = Engine(config)
    found: dict[tuple[str, str, int], Sample] = {}

    def keep(sample: Sample) -> None:
        if sample.site == site_id and lo <= sample.ts_ms < hi:
            name = (sample.gauge if isinstance(sample, StormSample) else
                    sample.trap if isinstance(sample, TrapSample) else sample.pair)
            found[(type(sample).__name__, name, sample.ts_ms)] = sample

    attach(engine, keep)
    seq = 0
    while rows := store.journal.after(seq, limit=5000):
        seq = rows[-1].seq
        for row in rows:
            if row.body.get("site") == site_id:
                apply_row(engine, row)
        engine.drain_settled()
    out = Series()
    for sample in sorted(found.values(), key=lambda s: s.ts_ms):
        if isinstance(sample, StormSample):
            out.storms.setdefault(sample.gauge, []).append(sample)
        elif isinstance(sample, TrapSample):
            out.traps.setdefault(sample.trap, []).append(sample)
        else:
            out.contrast.setdefault(sample.pair, []).append(sample)
    return out


# --------------------------------------------------------------------------- plots


def _png(fig: Any, alt: str = "plot") -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def _axes(title: str, local: _Local) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 3.6))
    ax.set_title(title)
    formatter = mdates.DateFormatter("%m-%d %H:%M", tz=local.zone)  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_formatter(formatter)
    fig.autofmt_xdate()
    ax.grid(alpha=0.3)
    return fig, ax


def _rain_plot(site: SiteConfig, storms: dict[str, list[StormSample]], local: _Local) -> str:
    """Hourly rain and the storm running total of each gauge the storms are judged on
    (``series.judged_rain``: under ``gauges: mean`` the mean of the live gauges, as the
    rule averaged them), against the threshold."""
    judged = judged_rain(site, storms)
    fig, ax = _axes(f"{site.name or site.id}: rainfall (in)", local)
    width = 1 / 24 * 0.9 / max(len(judged), 1)
    for i, (gauge, samples) in enumerate(judged.items()):
        hours = hourly_rain(samples)
        offset = (i - (len(judged) - 1) / 2) * width
        ax.bar([local.dt(h + MS_PER_HOUR // 2) + timedelta(days=offset) for h, _ in hours],
               [inch for _, inch in hours], width=width, color=_BARS[i % len(_BARS)],
               label="hourly rain" + (f" ({_gauge_words(gauge)})" if len(storms) > 1 else ""))
        if any(s.in_event for s in samples):
            ax.step([local.dt(s.ts_ms) for s in samples],
                    [s.total_in if s.in_event else float("nan") for s in samples], where="post",
                    color="#d9534f", label="storm running total"
                    + (f" ({_gauge_words(gauge)})" if len(storms) > 1 else ""))
    ax.axhline(site.rain.threshold_in, color="#d9534f", linestyle="--",
               label=f"{site.rain.threshold_in:g} in (§ 134-9A(2))")
    ax.set_ylabel("inches")
    ax.legend(loc="best")
    return _png(fig, _rain_words(site, judged))


#: The bars of each gauge, side by side when a site's storms are judged on several.
_BARS = ("#4a90d9", "#9cc3ec", "#25598f")


def _gauge_words(gauge: str) -> str:
    return "mean of the live gauges" if gauge == MEAN_GAUGE else gauge


def _rain_words(site: SiteConfig, judged: Mapping[str, Sequence[StormSample]]) -> str:
    """The rain plot's alternative text: what it shows, and each gauge's highest total."""
    tops = [f"{_gauge_words(g)} {max((s.total_in for s in xs if s.in_event), default=0.0):.2f} in"
            for g, xs in judged.items()]
    return (f"Hourly rain and storm running total as the storm rule judged it "
            f"(gauges: {site.rain.gauges}); highest storm total: {', '.join(tops)}; "
            f"threshold {site.rain.threshold_in:g} in")


def _trap_plot(site: SiteConfig, traps: dict[str, list[TrapSample]],
               local: _Local) -> str | None:
    """Each trap's fill of design volume after the median, as the trap alerts see it."""
    if not traps:
        return None
    fig, ax = _axes(f"{site.name or site.id}: sediment trap fill (% of design volume)", local)
    for tid, samples in traps.items():
        ax.plot([local.dt(s.ts_ms) for s in samples], [s.fill_fraction * 100 for s in samples],
                marker=".", label=tid)
    trap0 = site.traps[0]
    ax.axhline(trap0.warn_fraction * 100, color="orange", linestyle="--",
               label=f"{trap0.warn_fraction:.0%} warning")
    ax.axhline(trap0.cleanout_fraction * 100, color="#d9534f", linestyle="--",
               label=f"{trap0.cleanout_fraction:.0%} clean-out (§ 134-9A(1))")
    ax.set_ylabel("% full")
    ax.legend(loc="best")
    return _png(fig)


def _turbidity_plot(site: SiteConfig, contrast: dict[str, list[ContrastSample]],
                    local: _Local) -> str | None:
    """Downstream minus its background, and the allowed increase, per pair; a reading
    without a usable background is a gap (the contrast is unknown there)."""
    if not contrast:
        return None
    fig, ax = _axes(f"{site.name or site.id}: downstream − upstream turbidity (NTU)", local)
    for pid, samples in contrast.items():
        xs = [local.dt(s.ts_ms) for s in samples]
        nan = float("nan")
        ax.plot(xs, [s.delta_ntu if s.delta_ntu is not None else nan for s in samples],
                marker=".", label=pid)
        ax.plot(xs, [s.limit_ntu if s.limit_ntu is not None else nan for s in samples],
                linestyle="--", color="#d9534f", label=f"{pid} allowed increase (§ 134-8C)")
        unknown = [x for x, s in zip(xs, samples, strict=True) if not s.background]
        if unknown:
            ax.plot(unknown, [0.0] * len(unknown), "x", color="#888",
                    label=f"{pid}: no background")
    ax.axhline(0, color="#888", linewidth=0.8)
    ax.set_ylabel("NTU")
    ax.legend(loc="best")
    return _png(fig)


# --------------------------------------------------------------------------- report


def _actions_in(events: Iterable[Event], from_ms: int, to_ms: int) -> list[Any]:
    """The corrective actions that were open at some time in ``[from_ms, to_ms)``."""
    states = action_states(record_of_event(e.body) for e in events
                           if isinstance(e.body, InspectionRecorded))
    return [a for a in states if a.opened_ms < to_ms
            and (a.resolved_ms is None or a.resolved_ms >= from_ms)]


def _action_counts(events: Iterable[Event], from_ms: int, to_ms: int) -> str:
    actions = _actions_in(events, from_ms, to_ms)
    resolved = [a for a in actions if a.resolved_ms is not None and a.resolved_ms < to_ms]
    return (f"{sum(1 for a in actions if a.opened_ms >= from_ms)} opened, {len(resolved)} "
            f"resolved, {len(actions) - len(resolved)} open at the end")


def _actions_table(events: Iterable[Event], from_ms: int, to_ms: int, now_ms: int,
                   local: _Local) -> str:
    rows = []
    for a in _actions_in(events, from_ms, to_ms):
        done = a.resolved_ms is not None and a.resolved_ms < to_ms
        late = a.due_ms is not None and (a.resolved_ms if done else min(to_ms, now_ms)) > a.due_ms
        status = ("resolved" if done else "open") + (" late" if late else "")
        rows.append([escape(a.id), escape(a.text), escape(f"{local(a.opened_ms)}, {a.inspector}"),
                     escape(local(a.due_ms)), escape(local(a.resolved_ms) if done else "—"),
                     _outcome(status)])
    return "<h2>Corrective actions</h2>" + _table(
        ["Id", "Action", "Asked (when, by)", "Due", "Resolved", "Status"], rows,
        "No corrective actions open in the period.")


def _open_clocks(state: SiteNow | None, local: _Local) -> str:
    if state is None:
        return ("<h2>Open inspection clocks</h2><p><em>Unknown: the daemon has recorded no "
                "state for this site.</em></p>")
    rows = [[escape(c.clock), escape(c.clock_id), escape(local(c.due_ms)),
             _outcome("overdue") + escape(f" by {-c.hours_left:.1f} h")
             if c.overdue and c.hours_left is not None
             else escape(f"{c.hours_left:.1f} h left") if c.hours_left is not None else "—",
             escape(str(c.missed_weeks) if c.missed_weeks is not None else "—")]
            for c in state.open_clocks]
    return "<h2>Open inspection clocks (at the time of this report)</h2>" + _table(
        ["Clock", "Id", "Due", "State", "Weeks missed"], rows, "No open inspection clocks.")


def build_report(config: Config, store: Store, site_id: str, from_ms: int, to_ms: int,
                 now_ms: int) -> str:
    """The report for ``[from_ms, to_ms)`` as one HTML document, from an open (read-only)
    store."""
    site = config.site(site_id)
    if site is None:
        raise ValueError(f"unknown site {site_id!r}")
    local = _Local(site)
    title = f"Stormwater compliance report — {site.name or site.id}"
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
             f"<style>{CSS}</style></head><body><h1>{escape(title)}</h1>"]
    book = current_events(store, site.id)
    problems = verify_logbook(store).problems
    header = [("Site", f"{site.name or ''} ({site.id})"), ("Address", site.address or "—"),
              ("Condition", site.condition),
              ("Period", f"{local(from_ms)} to {local(to_ms)} (end exclusive)"),
              ("Time zone", site.timezone), ("Generated at", local(now_ms)),
              # The head a later `logbook verify --anchor SEQ:HASH` checks this report against.
              ("Log book head", book.head.describe(site.zone) + "; the events below are read "
               f"from the log book up to this row (anchor {book.head.anchor})"),
              ("Log book check", "hash chain intact" if not problems else
               f"FAILED: {len(problems)} problem(s); run `stormwatch logbook verify`")]
    if book.pending:
        header.append(("Not yet in the log book", f"{book.pending} event(s) of a backlog still "
                       "being applied, shown from the events table"))
    parts.append(_table(["", ""], [[escape(k), escape(v)] for k, v in header], ""))
    parts.append("<h2>The law</h2>" + "".join(
        f"<blockquote><strong>{escape(ref)}</strong> {escape(text)}</blockquote>"
        for ref, text in LAW))

    all_events = book.events
    series = engine_series(config, store, site.id, from_ms, to_ms)

    def in_period(e: Event) -> bool:
        return from_ms <= e.at_ms < to_ms

    events = [e for e in all_events if in_period(e)]
    closed = {e.body.clock_id: e.body for e in all_events if isinstance(e.body, ClockClosed)}
    mine = [e.body for e in events]
    # Clocks are judged where the engine judged them (``judged_at``): the open clocks
    # below and the storms' outcomes alike.
    recorded = store.state.site_statuses().get(site.id)
    state, judged = None, now_ms
    if recorded is not None:
        kept = SiteSummary.from_json(recorded.data)
        judged = judged_at(kept, now_ms)
        state = status_at(kept, judged)
    # An open storm's total is its running total so far (the plot's last point).
    running = running_totals(x for xs in series.storms.values() for x in xs)
    storms = [s for s in storm_records(site, all_events, judged, running)
              if s.started_ms < to_ms and (s.ended_ms is None or s.ended_ms >= from_ms)]
    storm_out = [s.outcome for s in storms]
    open_routine = [c for c in (state.open_clocks if state else ()) if c.clock == "routine"]
    missed = [b for b in mine if isinstance(b, InspectionMissed)]
    routine = [b.outcome for b in mine if isinstance(b, ClockClosed) and b.clock == "routine"]
    contrasts = [(e.at_ms, e.body) for e in events if isinstance(e.body, TurbidityContrast)]
    unwatched = storm_duty_unwatched(site)  # never "0 storms": nothing could see one
    summary = [
        ("Storms", NO_GAUGE if unwatched else f"{len(storms)} ({sum(s.qualified for s in storms)}"
                   f" qualified, ≥ {site.rain.threshold_in:g} in)"),
        ("Storm inspections", NO_GAUGE if unwatched else f"{storm_out.count('met')} met, "
         f"{storm_out.count('late')} late, {storm_out.count('open') + storm_out.count('overdue')}"
         f" open ({storm_out.count('overdue')} overdue)"),
        ("Routine inspections", f"{routine.count('met')} met, {routine.count('late')} late, "
         + (f"{len(open_routine)} open ({sum(c.overdue for c in open_routine)} overdue)"
            if state is not None else "open: unknown (no recorded state)")),
        ("Weeks without a required inspection (§ 134-12D)",
         f"{len(missed)} ({len({b.clock_id for b in missed})} clock(s))"),
        ("Backdated inspections", str(sum(1 for b in mine if isinstance(b, InspectionBackdated)))),
        ("Corrective actions", _action_counts(all_events, from_ms, to_ms)),
        ("Trap clean-out demands",
         str(sum(1 for b in mine if isinstance(b, TrapCleanoutRequired)))),
        ("Turbidity exceedances",
         str(sum(1 for _, t in contrasts if t.state == "exceeded"))),
        ("Stale-sensor episodes", str(sum(1 for b in mine if isinstance(b, SensorStale)))),
        ("Trap sensor faults (fill not measured meanwhile)",
         str(sum(1 for b in mine if isinstance(b, SensorFault)))),
        ("Suspect turbidity probes", str(sum(1 for b in mine if isinstance(b, ProbesSuspect)))),
    ]
    parts.append("<h2>Summary</h2>" + _table(
        ["Item", "Count"], [[escape(k), escape(v)] for k, v in summary], ""))

    rows = []
    for s in storms:
        total = _in(s.total_in) + (" (running)" if s.running else "")
        rows.append([escape(local(s.started_ms)), escape(local(s.ended_ms)),
                     escape(total), escape(_in(s.max_24h_in)),
                     escape(local(s.qualified_ms) + revealed_note(s, local)),
                     escape(local(s.due_ms)),
                     escape(local(s.inspected_ms)), _outcome(s.outcome)])
    parts.append("<h2>Storms</h2>" + _table(
        ["Start", "End", "Total", "Max 24 h", "Qualified at", "Inspection due", "Inspected at",
         "Outcome"], rows, NO_GAUGE if unwatched else "No storms in the period."))

    parts.append(_open_clocks(state, local))
    parts.append("<h2>Sensors (at the time of this report)</h2>" + _table(
        ["Sensor", "Kind", "Reporting", "Health", "Last seen"],
        [[escape(c) for c in r] for r in sensor_rows(site, state, local)], "No sensors."))
    rows = []
    for b in mine:
        if isinstance(b, InspectionRecorded):
            clocks = [f"{c} ({closed[c].outcome})" if c in closed else c for c in b.closes]
            who = "; ".join(f"{n} ({c})" if c else n for n, c in
                            zip(b.inspectors, b.credentials or [""] * len(b.inspectors),
                                strict=False))
            entered = local(b.entered_at) + (" BACKDATED" if b.backdated else "")
            found = [f"{f['practice']}: {f['condition']}" for f in b.findings]
            found += [f"asks {a['id']}: {a['text']}" for a in b.corrective_actions]
            found += [f"resolves {r}" for r in b.resolves]
            rows.append([escape(local(b.inspected_at)), escape(entered), escape(who or
                                                                                b.inspector),
                         escape(b.kind), escape("; ".join(found) or "—"), escape(b.notes or ""),
                         escape(", ".join(clocks) or "—")])
    parts.append("<h2>Inspections</h2>" + _table(
        ["Inspected", "Entered", "Inspector (credential)", "Kind", "Findings and actions",
         "Notes", "Clocks closed"], rows, "No inspections recorded in the period."))
    parts.append(_actions_table(all_events, from_ms, to_ms, now_ms, local))

    parts.append(trap_section(events, local))
    parts.append(turbidity_section(events, local))

    parts.append("<h2>Plots</h2>")
    if series.storms:
        parts.append(_rain_plot(site, series.storms, local))
    else:
        parts.append("<p><em>No rain gauge readings in the period.</em></p>")
    for plot in (_trap_plot(site, series.traps, local),
                 _turbidity_plot(site, series.contrast, local)):
        if plot is not None:
            parts.append(plot)
    parts.append("</body></html>")
    return "".join(parts)

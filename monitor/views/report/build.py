"""``stormwatch report``: a compliance report with plots, as one HTML file (DESIGN § 6).

Reads the database read-only, from a store the caller opened (``cli.py``
refuses a missing or unreadable database: a page saying "no data" would look
like a report). Events come from the log book (``logbook.current_events``: the
authoritative set, covered by the hash chain whose head the header prints, so
an edit of the ``events`` table cannot reach the report). The storms and their
outcomes are the engine's (``engine/outcomes.py``), judged at the instant the
engine judges the clocks (``summary.judged_at``), like the open clocks from the
recorded site status beside them; the plots (``plots.py``) come from the
site's journal run through an engine with its samplers (``samples.py``), so a
plot shows what the rules saw, never a recomputation that could contradict an
alert. Neither is chained. Each section of the report is one function below,
in the order they appear. Times are in the site's zone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from html import escape
from pathlib import Path

from ...config import Config, SiteConfig, photo_pixels_of, photos_dir_of
from ...config.plausible import NO_GAUGE, storm_duty_unwatched
from ...contract.events import (
    Body,
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
from ...contract.times import parse_iso
from ...engine.actions import ActionState, action_states, record_of_event
from ...engine.duties import outstanding_duties
from ...engine.episodes import turbidity_episodes
from ...engine.outcomes import StormRecord, storm_records
from ...engine.readout import SiteNow, SiteSummary
from ...engine.series import running_totals
from ...engine.summary import judged_at, status_at
from ...store import Store
from ..logbook import Recorded, current_events, verify_logbook
from .owed import owed_section
from .photos import photos_section
from .plots import plots_section
from .rows import revealed_note, sensor_rows
from .samples import Series, engine_series
from .tables import LocalTime, outcome, table, trap_section, turbidity_section
from .weather import weather_section

__all__ = ["Series", "build_report", "engine_series", "parse_bound"]

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
.photos{display:flex;flex-wrap:wrap;gap:1em;margin:.5em 0 1.5em}
figure{margin:0;width:240px;font-size:.8em;break-inside:avoid}
figure img.thumb{width:240px;height:auto;border:1px solid #bbb}
.missing{width:236px;height:120px;border:2px dashed #b00;color:#b00;font-weight:bold;
 display:flex;align-items:center;justify-content:center;text-align:center;padding:2px}
.nowrap{white-space:nowrap} .note{font-size:.85em;color:#444;max-width:60em}
.sha{font-family:monospace;font-size:.85em;word-break:break-all;color:#444}
"""


#: How far the events may run ahead of the report's clock before the header says it was
#: generated before them: a node's clock a few seconds fast is not a demo's clock.
AHEAD_TOLERANCE_MS = 60_000


#: The dates a report's bounds may name: from the epoch to the last year whose
#: next midnight every zone can still show (a typo'd year is a usage error, not a
#: report of two thousand years, nor an overflow).
FIRST_DAY, LAST_DAY = date(1970, 1, 1), date(9998, 12, 31)
_FIRST_MS = 0
_END_MS = round(datetime(LAST_DAY.year + 1, 1, 1, tzinfo=timezone.utc).timestamp() * 1000)


def parse_bound(text: str, site: SiteConfig, *, end: bool) -> int:
    """``--from``/``--to``: a local date (inclusive: ``--to`` ends at the next midnight)
    or an ISO time with offset, from ``FIRST_DAY`` to ``LAST_DAY``. Raises ValueError."""
    text = text.strip()
    if len(text) != 10:
        ms = parse_iso(text)
        if not _FIRST_MS <= ms < _END_MS:
            raise _outside(text)
        return ms
    day = date.fromisoformat(text)
    if not FIRST_DAY <= day <= LAST_DAY:
        raise _outside(text)
    if end:
        day += timedelta(days=1)
    return round(datetime.combine(day, time(0), tzinfo=site.zone).timestamp() * 1000)


def _outside(text: str) -> ValueError:
    return ValueError(f"{text[:40]} is outside the dates a report covers ({FIRST_DAY} to"
                      f" {LAST_DAY})")


def build_report(config: Config, store: Store, site_id: str, from_ms: int, to_ms: int,
                 now_ms: int, *, photos_dir: Path | None = None) -> str:
    """The report for ``[from_ms, to_ms)`` as one HTML document, from an open (read-only)
    store; inspection photos are read from ``photos_dir`` (default: where the field app
    keeps them, ``config.photos_dir_of``)."""
    site = config.site(site_id)
    if site is None:
        raise ValueError(f"unknown site {site_id!r}")
    p = _Period(site, LocalTime(site), from_ms, to_ms, now_ms)
    book = current_events(store, site.id)
    # From the start of the earliest turbidity episode the period shows (its peak).
    lo = min([from_ms] + [parse_iso(e.body.started_at) for e in book.events
                          if isinstance(e.body, TurbidityContrast) and from_ms <= e.at_ms < to_ms])
    wide = engine_series(config, store, site.id, lo, to_ms)
    series = wide.since(from_ms)
    kept, state, judged = _recorded_state(store, site.id, now_ms)
    # The end of the period, or where the engine last judged the site if earlier.
    end = min(to_ms - 1, judged)
    duties = outstanding_duties(book.events, kept.clocks if kept else None,
                                wide.trap_samples(), end)
    episodes = [ep for ep in turbidity_episodes(book.events, wide.contrast, to_ms)
                if ep.cleared_ms is None or ep.cleared_ms >= from_ms]
    # An open storm's total is its running total so far (the plot's last point).
    running = running_totals(x for xs in series.storms.values() for x in xs)
    storms = [s for s in storm_records(site, book.events, judged, running)
              if s.started_ms < to_ms and (s.ended_ms is None or s.ended_ms >= from_ms)]
    events = [e for e in book.events if from_ms <= e.at_ms < to_ms]
    closed = {e.body.clock_id: e.body for e in book.events if isinstance(e.body, ClockClosed)}
    title = f"Stormwater compliance report — {site.name or site.id}"
    return "".join([
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<style>{CSS}</style></head><body><h1>{escape(title)}</h1>",
        _header(p, store, book, judged),
        "<h2>The law</h2>" + "".join(
            f"<blockquote><strong>{escape(ref)}</strong> {escape(text)}</blockquote>"
            for ref, text in LAW),
        _summary(p, book.events, events, storms, state),
        owed_section(site, duties, end, to_ms, kept is not None, p.local),
        _storms(p, storms),
        _open_clocks(state, p.local),
        weather_section(book.events, book.retracted, p.local, from_ms, to_ms)
        if config.weather is not None else "",
        "<h2>Sensors (at the time of this report)</h2>" + table(
            ["Sensor", "Kind", "Reporting", "Health", "Last seen"],
            [[escape(c) for c in r] for r in sensor_rows(site, state, p.local)], "No sensors."),
        _inspections(p, events, closed),
        photos_section(events, photos_dir or photos_dir_of(config), p.local,
                       photo_pixels_of(config)),
        _actions_table(book.events, from_ms, to_ms, now_ms, p.local),
        trap_section(events, p.local),
        turbidity_section(events, p.local, episodes, state),
        plots_section(site, series, p.local, from_ms, to_ms),
        "</body></html>"])


@dataclass(frozen=True, slots=True)
class _Period:
    """What every section is about: the site, its local time, ``[from_ms, to_ms)`` and
    when the report is made."""

    site: SiteConfig
    local: LocalTime
    from_ms: int
    to_ms: int
    now_ms: int


def _recorded_state(store: Store, site_id: str, now_ms: int
                    ) -> tuple[SiteSummary | None, SiteNow | None, int]:
    """The site's recorded summary, its status judged where the engine judged it
    (``judged_at``), and that instant; (None, None, ``now_ms``) when the daemon has
    recorded none."""
    recorded = store.state.site_statuses().get(site_id)
    if recorded is None:
        return None, None, now_ms
    kept = SiteSummary.from_json(recorded.data)
    judged = judged_at(kept, now_ms)
    return kept, status_at(kept, judged), judged


def _header(p: _Period, store: Store, book: Recorded, judged_ms: int) -> str:
    """The site, the period, and the log book head the events are read up to; and,
    when the events run ahead of the clock the report is made by (a demo's simulated
    clock, a node stamping ahead), that it was generated before them."""
    site, local = p.site, p.local
    problems = verify_logbook(store).problems
    header = [("Site", f"{site.name or ''} ({site.id})"), ("Address", site.address or "—"),
              ("Condition", site.condition),
              ("Period", f"{local(p.from_ms)} to {local(p.to_ms)} (end exclusive)"),
              ("Time zone", site.timezone), ("Generated at", local(p.now_ms)),
              # The head a later `logbook verify --anchor SEQ:HASH` checks this report against.
              ("Log book head", book.head.describe(site.zone) + "; the events below are read "
               f"from the log book up to this row (anchor {book.head.anchor})"),
              ("Log book check", "hash chain intact" if not problems else
               f"FAILED: {len(problems)} problem(s); run `stormwatch logbook verify`")]
    latest = max([judged_ms] + [e.at_ms for e in book.events])
    if latest > p.now_ms + AHEAD_TOLERANCE_MS:
        header.insert(6, ("Generated before its events", f"this report was generated at "
                          f"{local(p.now_ms)}, before {local(latest)}, the latest time of the "
                          "site's events and clocks: they come from a clock running ahead of "
                          "this computer's (a demo's simulated clock, or a sensor node "
                          "stamping its readings ahead)"))
    if book.pending:
        header.append(("Not yet in the log book", f"{book.pending} event(s) of a backlog still "
                       "being applied, shown from the events table"))
    return table(["", ""], [[escape(k), escape(v)] for k, v in header], "")


def _summary(p: _Period, all_events: Sequence[Event], events: Sequence[Event],
             storms: Sequence[StormRecord], state: SiteNow | None) -> str:
    """The counts of the period, each as the engine concluded it."""
    site = p.site
    mine = [e.body for e in events]
    outcomes = [s.outcome for s in storms]
    open_routine = [c for c in (state.open_clocks if state else ()) if c.clock == "routine"]
    missed = [b for b in mine if isinstance(b, InspectionMissed)]
    routine = [b.outcome for b in mine if isinstance(b, ClockClosed) and b.clock == "routine"]
    unwatched = storm_duty_unwatched(site)  # never "0 storms": nothing could see one
    rows = [
        ("Storms", NO_GAUGE if unwatched else f"{len(storms)} ({sum(s.qualified for s in storms)}"
                   f" qualified, ≥ {site.rain.threshold_in:g} in)"),
        ("Storm inspections", NO_GAUGE if unwatched else f"{outcomes.count('met')} met, "
         f"{outcomes.count('late')} late, {outcomes.count('open') + outcomes.count('overdue')}"
         f" open ({outcomes.count('overdue')} overdue)"),
        ("Routine inspections", f"{routine.count('met')} met, {routine.count('late')} late, "
         + (f"{len(open_routine)} open ({sum(c.overdue for c in open_routine)} overdue)"
            if state is not None else "open: unknown (no recorded state)")),
        ("Weeks without a required inspection (§ 134-12D)",
         f"{len(missed)} ({len({b.clock_id for b in missed})} clock(s))"),
        ("Backdated inspections", _count(mine, InspectionBackdated)),
        ("Corrective actions", _action_counts(all_events, p.from_ms, p.to_ms)),
        ("Trap clean-out demands", _count(mine, TrapCleanoutRequired)),
        ("Turbidity exceedances", str(sum(1 for b in mine if isinstance(b, TurbidityContrast)
                                          and b.state == "exceeded"))),
        ("Stale-sensor episodes", _count(mine, SensorStale)),
        ("Trap sensor faults (fill not measured meanwhile)", _count(mine, SensorFault)),
        ("Suspect turbidity probes", _count(mine, ProbesSuspect)),
    ]
    return "<h2>Summary</h2>" + table(
        ["Item", "Count"], [[escape(k), escape(v)] for k, v in rows], "")


def _count(bodies: Iterable[Body], kind: type[Body]) -> str:
    return str(sum(1 for b in bodies if isinstance(b, kind)))


def _in(value: float | None) -> str:
    return "—" if value is None else f"{float(value):.2f} in"


def _storms(p: _Period, storms: Sequence[StormRecord]) -> str:
    """One row per storm of the judged gauges, with its outcome."""
    local = p.local
    rows = []
    for s in storms:
        total = _in(s.total_in) + (" (running)" if s.running else "")
        rows.append([escape(local(s.started_ms)), escape(local(s.ended_ms)),
                     escape(total), escape(_in(s.max_24h_in)),
                     escape(local(s.qualified_ms) + revealed_note(s, local) + (
                         f" (by the reference station {s.reference}: gauge {s.gauge} did not "
                         "see it)" if s.reference else "")),
                     escape(local(s.due_ms)),
                     escape(local(s.inspected_ms)), outcome(s.outcome)])
    return "<h2>Storms</h2>" + table(
        ["Start", "End", "Total", "Max 24 h", "Qualified at", "Inspection due", "Inspected at",
         "Outcome"], rows,
        NO_GAUGE if storm_duty_unwatched(p.site) else "No storms in the period.")


def _inspections(p: _Period, events: Sequence[Event],
                 closed: dict[str, ClockClosed]) -> str:
    """The inspections of the period: who (with credentials), when entered, what they
    found and asked for, and the clocks each closed."""
    local = p.local
    rows = []
    for e in events:
        b = e.body
        if not isinstance(b, InspectionRecorded):
            continue
        clocks = [f"{local.id(c)} ({closed[c].outcome})" if c in closed else local.id(c)
                  for c in b.closes]
        # The first named certifies; the others came along (no credential, nothing
        # closed by them).
        certifying, *companions = b.inspectors or [b.inspector]
        credential = (b.credentials or [""])[0]
        who = f"{certifying} ({credential})" if credential else certifying
        if companions:
            who += "; with " + ", ".join(companions)
        entered = local(b.entered_at) + (" BACKDATED" if b.backdated else "")
        found = [f"{f['practice']}: {f['condition']}" for f in b.findings]
        found += [f"asks {a['id']}: {a['text']}" for a in b.corrective_actions]
        found += [f"resolves {r}" for r in b.resolves]
        rows.append([escape(local(b.inspected_at)), escape(entered), escape(who or b.inspector),
                     escape(b.kind), escape("; ".join(found) or "—"), escape(b.notes or ""),
                     escape(", ".join(clocks) or "—")])
    return "<h2>Inspections</h2>" + table(
        ["Inspected", "Entered", "Inspector (credential)", "Kind", "Findings and actions",
         "Notes", "Clocks closed"], rows, "No inspections recorded in the period.")


def _actions_in(events: Iterable[Event], from_ms: int, to_ms: int) -> list[ActionState]:
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
                   local: LocalTime) -> str:
    rows = []
    for a in _actions_in(events, from_ms, to_ms):
        resolved = a.resolved_ms if a.resolved_ms is not None and a.resolved_ms < to_ms else None
        until = resolved if resolved is not None else min(to_ms, now_ms)
        late = a.due_ms is not None and until > a.due_ms
        status = ("resolved" if resolved is not None else "open") + (" late" if late else "")
        rows.append([escape(a.id), escape(a.text), escape(f"{local(a.opened_ms)}, {a.inspector}"),
                     escape(local(a.due_ms)), escape(local(resolved)), outcome(status)])
    return "<h2>Corrective actions</h2>" + table(
        ["Id", "Action", "Asked (when, by)", "Due", "Resolved", "Status"], rows,
        "No corrective actions open in the period.")


def _open_clocks(state: SiteNow | None, local: LocalTime) -> str:
    if state is None:
        return ("<h2>Open inspection clocks</h2><p><em>Unknown: the daemon has recorded no "
                "state for this site.</em></p>")
    rows = [[escape(c.clock), escape(local.id(c.clock_id)), escape(local(c.due_ms)),
             outcome("overdue") + escape(f" by {-c.hours_left:.1f} h")
             if c.overdue and c.hours_left is not None
             else escape(f"{c.hours_left:.1f} h left") if c.hours_left is not None else "—",
             escape(str(c.missed_weeks) if c.missed_weeks is not None else "—")]
            for c in state.open_clocks]
    return "<h2>Open inspection clocks (at the time of this report)</h2>" + table(
        ["Clock", "Id", "Due", "State", "Weeks missed"], rows, "No open inspection clocks.")

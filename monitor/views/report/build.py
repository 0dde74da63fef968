"""``stormwatch report``: a compliance report with plots, as one HTML file.

Reads the database read-only, from a store the caller opened (``cli.py``
refuses a missing or unreadable database: a page saying "no data" would look
like a report). Events come from the log book (``logbook.current_events``: the
authoritative set, covered by the hash chain whose head the header prints, so
an edit of the ``events`` table cannot reach the report). What the period
holds is read once, by the engine, into one list (``engine/period.py``,
``monitor/README.md`` "Report periods"): the events whose time lies in it, the
storms that qualified in it, and what was owed at its end (never at the time
the report is made: a week's report made a month later is the week's), judged
where the engine judged the site when the period has not ended yet
(``summary.judged_at``). The summary, the duties table and every section read
that list, so they cannot disagree; only the sensors' health is the recorded
state's now, as its heading says. The plots (``plots.py``) come from the
site's journal run through an engine with its samplers (``samples.py``), so a
plot shows what the rules saw, never a recomputation that could contradict an
alert. Neither is chained. Each section of the report is one function below,
in the order they appear. Times are in the site's zone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from html import escape
from pathlib import Path

from ...config import Config, SiteConfig, photo_pixels_of, photos_dir_of
from ...config.plausible import storm_duty_unwatched
from ...contract.events import (
    ClockClosed,
    InspectionBackdated,
    InspectionMissed,
    InspectionRecorded,
    ProbesSuspect,
    SensorFault,
    SensorStale,
    TrapCleanoutRequired,
    TurbidityContrast,
)
from ...contract.figures import depth_text
from ...contract.permits import NO_GAUGE
from ...contract.times import parse_iso
from ...engine import (
    Period,
    SiteNow,
    SiteSummary,
    Tally,
    judged_at,
    period_facts,
    status_at,
    turbidity_episodes,
)
from ...rules.clocks.clocks import is_overdue
from ...rules.clocks.outcomes import StormRecord
from ...store import Store
from ..logbook import Recorded, current_events, verify_logbook
from .actionchain import chain_section, permit_deadline_section
from .owed import owed_section
from .permits import permits_section
from .photos import photos_section
from .plots import plots_section
from .rows import closed_words, revealed_note, sensor_rows
from .samples import Series, engine_series
from .style import CSS
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
                 now_ms: int, *, photos_dir: Path | None = None,
                 stylesheet: str | None = None,
                 logbook_problems: list[str] | None = None) -> str:
    """The report for ``[from_ms, to_ms)`` as one HTML document, from an open (read-only)
    store; inspection photos are read from ``photos_dir`` (default: where the field app
    keeps them, ``config.photos_dir_of``). Its styles (``style.py``) are inlined, or
    linked from the address ``stylesheet`` (the field app's: its policy blocks inline
    styles). ``logbook_problems``: the log book's verification when the caller holds a
    fresh one (the field app's, by head), else the whole chain is verified here."""
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
    # One list of the period's facts, judged at its end (or where the engine last
    # judged the site, if earlier): every section below reads it.
    facts = period_facts(site, book.events, kept.clocks if kept else None, wide.trap_samples(),
                         from_ms, to_ms, judged,
                         (x for xs in series.storms.values() for x in xs))
    episodes = [ep for ep in turbidity_episodes(book.events, wide.contrast, to_ms)
                if ep.cleared_ms is None or ep.cleared_ms >= from_ms]
    closed = {e.body.clock_id: e.body for e in book.events if isinstance(e.body, ClockClosed)}
    title = f"Stormwater compliance report — {site.name or site.id}"
    return "".join([
        _head(title, stylesheet), f"<body><h1>{escape(title)}</h1>",
        _header(p, book, judged, verify_logbook(store).problems if logbook_problems is None
                else logbook_problems),
        "<h2>The law</h2>" + "".join(
            f"<blockquote><strong>{escape(ref)}</strong> {escape(text)}</blockquote>"
            for ref, text in LAW),
        _summary(p, facts, kept is not None),
        owed_section(site, facts.duties, facts.judged_ms, to_ms, kept is not None, p.local),
        permits_section(site, facts, config.weather is not None),
        _storms(p, facts.storms),
        weather_section(book.events, book.retracted, p.local, from_ms, to_ms)
        if config.weather is not None else "",
        "<h2>Sensors (at the time of this report)</h2>" + table(
            ["Sensor", "Kind", "Reporting", "Health", "Last seen"],
            [[escape(c) for c in r] for r in sensor_rows(site, state, p.local)], "No sensors."),
        _inspections(p, facts, closed),
        photos_section(facts.events, photos_dir or photos_dir_of(config), p.local,
                       photo_pixels_of(config)),
        _actions_table(facts, p.local),
        chain_section(facts, p.local),
        permit_deadline_section(site, facts, p.local),
        trap_section(facts.events, p.local, site),
        turbidity_section(facts.events, p.local, episodes, state),
        plots_section(site, series, p.local, from_ms, to_ms),
        "</body></html>"])


def _head(title: str, stylesheet: str | None) -> str:
    """The document's head: its title, a viewport (a phone lays it out at its own width,
    not a desktop's shrunk), and the stylesheet inlined or linked."""
    style = f"<style>{CSS}</style>" if stylesheet is None else \
        f"<link rel='stylesheet' href='{escape(stylesheet)}'>"
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{escape(title)}</title>{style}</head>")


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


def _header(p: _Period, book: Recorded, judged_ms: int, problems: list[str]) -> str:
    """The site, the period, and the log book head the events are read up to; and,
    when the events run ahead of the clock the report is made by (a demo's simulated
    clock, a node stamping ahead), that it was generated before them."""
    site, local = p.site, p.local
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


def _summary(p: _Period, facts: Period, recorded: bool) -> str:
    """The counts of the period, each read off the period's one list (``engine/period.py``):
    clocks closed in the period, and those still owed at its end as the duties table
    lists them."""
    site = p.site
    storm, routine = facts.tally("storm"), facts.tally("routine")
    missed = facts.bodies(InspectionMissed)
    opened, resolved, still_open = facts.action_counts()
    unwatched = storm_duty_unwatched(site)  # never "0 storms": nothing could see one
    # Without a recorded state the clocks are read from the events alone (owed.py).
    found = "" if recorded else " as far as the events show (no recorded state)"
    rows = [
        ("Storms", NO_GAUGE if unwatched else f"{len(facts.storms)} ("
         f"{sum(s.qualified for s in facts.storms)} qualified, ≥ {site.rain.threshold_in:g} in)"),
        ("Storm inspections", NO_GAUGE if unwatched else _tally(storm) + found),
        ("Routine inspections", _tally(routine) + found),
        ("Weeks without a required inspection (§ 134-12D)",
         f"{len(missed)} ({len({b.clock_id for b in missed})} clock(s))"),
        ("Backdated inspections", str(len(facts.bodies(InspectionBackdated)))),
        ("Corrective actions", f"{opened} opened, {resolved} resolved, {still_open} open at "
                               "the end"),
        ("Trap clean-out demands", str(len(facts.bodies(TrapCleanoutRequired)))),
        ("Turbidity exceedances", str(sum(1 for b in facts.bodies(TurbidityContrast)
                                          if b.state == "exceeded"))),
        ("Stale-sensor episodes", str(len(facts.bodies(SensorStale)))),
        ("Trap sensor faults (fill not measured meanwhile)", str(len(facts.bodies(SensorFault)))),
        ("Suspect turbidity probes", str(len(facts.bodies(ProbesSuspect)))),
    ]
    return "<h2>Summary</h2>" + table(
        ["Item", "Count"], [[escape(k), escape(v)] for k, v in rows], "")


def _tally(t: Tally) -> str:
    return f"{t.met} met, {t.late} late, {t.open} open ({t.overdue} overdue)"


def _in(value: float | None, site: SiteConfig) -> str:
    """A storm's depth, never rounded across the site's threshold (``figures.py``)."""
    return "—" if value is None else depth_text(float(value), site.rain.threshold_in)


def _storms(p: _Period, storms: Sequence[StormRecord]) -> str:
    """One row per storm of the judged gauges, with its outcome."""
    local = p.local
    rows = []
    for s in storms:
        total = _in(s.total_in, p.site) + (" (running)" if s.running else "")
        rows.append([escape(local(s.started_ms)), escape(local(s.ended_ms)),
                     escape(total), escape(_in(s.max_24h_in, p.site)),
                     escape(local(s.qualified_ms) + revealed_note(s, local) + (
                         f" (by the reference station {s.reference}: gauge {s.gauge} did not "
                         "see it)" if s.reference else "")),
                     escape(local(s.due_ms)),
                     escape(local(s.inspected_ms)), outcome(s.outcome)])
    return "<h2>Storms</h2>" + table(
        ["Start", "End", "Total", "Max 24 h", "Qualified at", "Inspection due", "Inspected at",
         "Outcome"], rows,
        NO_GAUGE if storm_duty_unwatched(p.site) else "No storms in the period.") + (
        "<p class='note'>A storm is a storm of the period in which it qualified (one that "
        "did not qualify, of the period in which it began), as it stood at the end of the "
        "period: still raining then, it has no end and its running total.</p>"
        if rows else "")


def _inspections(p: _Period, facts: Period, closed: dict[str, ClockClosed]) -> str:
    """The inspections of the period: who (with credentials), when entered, what they
    found, asked for and resolved (an id that resolved nothing said so), and the clocks
    each closed."""
    local = p.local
    rows = []
    for e in facts.events:
        b = e.body
        if not isinstance(b, InspectionRecorded):
            continue
        clocks = closed_words(b.closes, {c: x.outcome for c, x in closed.items()}, p.site)
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
        nothing = facts.resolved_nothing.get(e.id, ())
        found += [f"resolves {r}" + (" (no corrective action was open under this id: it "
                                     "resolved nothing)" if r in nothing else "")
                  for r in b.resolves]
        rows.append([escape(local(b.inspected_at)), escape(entered), escape(who or b.inspector),
                     escape(b.kind), escape("; ".join(found) or "—"), escape(b.notes or ""),
                     escape(clocks or "—")])
    return "<h2>Inspections</h2>" + table(
        ["Inspected", "Entered", "Inspector (credential)", "Kind", "Findings and actions",
         "Notes", "Clocks closed"], rows, "No inspections recorded in the period.")


def _actions_table(facts: Period, local: LocalTime) -> str:
    """The corrective actions open at some time in the period, as they stood at its end."""
    rows = []
    for a in facts.actions:
        until = a.resolved_ms if a.resolved_ms is not None else facts.judged_ms
        late = is_overdue(a.due_ms, until)
        # Past due and not done is overdue, never "open" (status says it so too).
        status = ("resolved late" if late else "resolved") if a.resolved_ms is not None \
            else "overdue" if late else "open"
        rows.append([escape(a.id), escape(a.text), escape(f"{local(a.opened_ms)}, {a.inspector}"),
                     escape(local(a.due_ms)), escape(local(a.resolved_ms)), outcome(status)])
    return "<h2>Corrective actions</h2>" + table(
        ["Id", "Action", "Asked (when, by)", "Due", "Resolved", "Status"], rows,
        "No corrective actions open in the period.")

"""Inspection clocks of § 134-9A(2).

    "... the applicant shall have a qualified professional conduct site
    inspections ... every seven days and within 24 hours of any storm event
    producing 0.5 inch of precipitation or more. Inspection reports shall be
    maintained in a site log book."  — Chapter 134, § 134-9A(2)

Theory of operation
-------------------
Everything in this module is a pure function of five things: the storm events
the gauges concluded, the inspections recorded, the site's active period
(``active.py``: its start, final stabilization and pauses), and *now*.
It is recomputed from scratch whenever one of them changes (a site has tens
of storms and inspections in a season, so this is cheap), which is what makes
late data and late inspections come out exactly as if they had arrived in
order.

Site storms (which gauge events make one storm, and one clock) come from
``sitestorms.py``.

A clock's life: it opens (a storm qualifies, or
the previous routine clock was satisfied), passes each reminder instant
(``due − h`` for ``h`` in ``remind_before_hours``), becomes overdue at ``due``
and again every ``overdue_repeat_hours``, and is closed by the first
inspection at or after its start: on or before ``due`` is ``met``, after is
``late``. Only inspections that may close clocks count (``closes_clocks``: not
kind ``other``, which the shell also gives an inspection by someone off the
roster). An unsatisfied routine clock also counts the weeks it misses
(``inspection_missed``, § 134-12D: the first from its due, each later one at
the end of the local day a week on), until it closes or is cut. For
``clock_start: event_end`` the start and due are unknown until the storm has
ended; such a clock is open but cannot yet be satisfied or go
overdue.

The site's whole life bounds every clock (``period.ActivePeriod``): a storm
that qualifies before the site's start, after final stabilization or in a
pause opens no clock; its ``storm_qualified`` is informational, with the
reason in ``outside``. A storm clock still open when the active span it opened
in ends (a pause begins, the site is closed) is cut there, as a routine clock
is. Routine clocks chain within the active period (``routine.py``). The
site's other facts are made here too: ``inspection_recorded`` (and
``inspection_backdated``) and ``site_closed`` (``records.py``),
``site_shutdown`` (``shutdowns.py``), and ``corrective_action_due`` and
``corrective_action_overdue`` (``actions.py``).

Every permit of the site (``rules/permits``) keeps its own clocks: the
computation above runs once per permit on the site with the permit's numbers
in place (``permitclocks.py``), and one inspection closes the open clocks of
every permit it satisfies.

Clocks apply only to Conditions A, B and C of § 134-7B(2); other sites still
get ``storm_qualified`` (with ``due: null`` and ``informational: true``, and
no ``outside``: the whole site is outside the duty, not the instant).

What can no longer change is taken out of memory by ``settle.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...config import SiteConfig
from ...contract.events import (
    Body,
    ClockClosed,
    Fact,
    InspectionDueSoon,
    InspectionMissed,
    InspectionOverdue,
    StormQualified,
    make_id,
)
from ...contract.inputs import ActionStep, Inspection, ShutdownNotice, SiteClosure
from ...contract.permits import DEFAULT_PROFILE
from ...contract.times import hours_ms, iso
from ..active import ActivePeriod, calendar_zone, week_from_ms
from ..permits.duties import permits_of
from ..rain.rain import iso_or_none, revealed_due
from ..rain.sitestorms import (
    GaugeStorm,
    gauge_storms,
    qualifying_storms,
    reference_storms,
    stale_spans,
    with_references,
)
from .actions import action_facts, action_states, record_of
from .permitclocks import PermitRules, forecast_triggers, snow_triggers
from .records import closure_fact, inspection_facts, is_backdated
from .routine import Anchor, routine_chain
from .shutdowns import shutdown_fact, shutdown_spans


@dataclass(slots=True)
class Clock:
    clock_id: str
    clock: str  # "storm" | "routine"
    opened_at: int
    start: int | None  # inspections at or after this satisfy the clock
    due: int | None
    closed_at: int | None = None
    closed_by: Inspection | None = None
    storm: GaugeStorm | None = None
    #: Where a pause or the end of the site's active period cuts the clock if nothing
    #: closes it before (None: its active span runs on, or it was closed).
    ends_at: int | None = None
    #: The permit whose rule the clock keeps, and the rule's citation.
    permit: str | None = None
    section: str | None = None
    #: The routine chain the clock belongs to: the permit's key (``settle.py``), and
    #: whether that is the site's primary permit (whose chain's anchor is ``anchor``).
    chain: str = DEFAULT_PROFILE
    primary: bool = True

    @property
    def outcome(self) -> str | None:
        if self.closed_at is None or self.due is None:
            return None
        return "met" if self.closed_at <= self.due else "late"


def is_overdue(due_ms: int | None, now_ms: int) -> bool:
    """Past due at ``now_ms``: an inspection at ``due`` itself still meets the clock
    (closed on or before due is ``met``, monitor/README.md, "The rules"), so only after it is late.
    The one
    rule of lateness that ``status``, the exporter and the report share."""
    return due_ms is not None and now_ms > due_ms


@dataclass(frozen=True, slots=True)
class ClockFloor:
    """What of an open clock's notices is settled: overdue notices ``0 .. k - 1`` and
    the reminders of ``reminders`` hours. They are never concluded again."""

    k: int = 0
    reminders: frozenset[float] = frozenset()

    def to_json(self) -> list[Any]:
        return [self.k, sorted(self.reminders)]

    @classmethod
    def from_json(cls, data: Any) -> ClockFloor:
        return cls(int(data[0]), frozenset(float(h) for h in data[1]))


@dataclass(slots=True)
class ClockFacts:
    """The facts of one clock, and how far its overdue notices have been issued."""

    signature: tuple[Any, ...]
    facts: dict[str, Fact] = field(default_factory=dict)
    next_overdue: int = 0
    floor: ClockFloor = field(default_factory=ClockFloor)


@dataclass(slots=True)
class SiteClocks:
    """The result of one recomputation: facts by id, every clock, and what changed.

    A clock nobody inspects keeps going overdue every few hours for as long as
    the data runs (a year of rain with no inspections recorded is thousands of
    notices), so each clock's facts are kept with its signature and only
    extended when *now* moves; ``changed`` lists the ids that differ from the
    previous result.
    """

    facts: dict[str, Fact] = field(default_factory=dict)
    clocks: list[Clock] = field(default_factory=list)
    per_clock: dict[str, ClockFacts] = field(default_factory=dict)
    other_ids: set[str] = field(default_factory=set)
    changed: set[str] = field(default_factory=set)


def closes_clocks(insp: Inspection) -> bool:
    """Whether an inspection may close a clock: ``other`` never does (the shell records
    an inspection by someone off the roster as ``other``)."""
    return insp.kind != "other"


def compute(site: SiteConfig, gauge_facts: list[Fact], inspections: list[Inspection],
            monitored_from_ms: int | None, now_ms: int | None,
            previous: SiteClocks | None = None, *, anchor: Anchor | None = None,
            floors: dict[str, ClockFloor] | None = None,
            closure: SiteClosure | None = None,
            permit_rules: tuple[PermitRules, ...] | None = None,
            anchors: dict[str, Anchor] | None = None,
            steps: tuple[ActionStep, ...] = (),
            shutdowns: tuple[ShutdownNotice, ...] = ()) -> SiteClocks:
    """Storm qualification, clocks and their events for one site at ``now_ms``.

    ``previous`` is the last result for the same site; it is reused, not copied,
    and must not be used afterwards. ``monitored_from_ms`` is where the active period begins
    by the readings (``period.FirstRun``; read only without ``active_since``). ``anchor`` and
    ``floors`` come from ``settle``: the start of the primary permit's routine chain
    (``anchors``: every other permit's, by key) and the settled notices of open clocks;
    ``closure`` the site's recorded final stabilization. ``permit_rules`` are the
    site's permits as the clocks read them (``PermitRules.of``; worked out when not
    given, but the engine resolves them once per site): each keeps its own clocks.
    ``steps`` are the corrective actions' steps: a fix reported done meets a permit's
    deadline for it (``actions.py``). ``shutdowns`` are the site's temporary shutdowns
    and their ends: a permit with a shutdown rule inspects at its cadence meanwhile.
    """
    prev = previous or SiteClocks()
    result = SiteClocks(facts=prev.facts)
    inspections = sorted(inspections, key=lambda i: (i.ts_ms, i.inspector, i.kind))
    closes: dict[int, list[str]] = {id(i): [] for i in inspections}
    fresh: dict[str, Fact] = {}  # clock facts new since the previous result
    period = ActivePeriod.of(site, monitored_from_ms,
                             closure.ts_ms if closure is not None else None)
    spans = shutdown_spans(shutdowns)
    other = {f.id: f for f in (shutdown_fact(site.id, start, end) for start, end in spans)}
    anchors = {**(anchors or {}), **({"": anchor} if anchor is not None else {})}
    rules = permit_rules if permit_rules is not None else tuple(
        PermitRules.of(site, p) for p in permits_of(site))
    for one in rules:
        clocks, facts = _permit_clocks(one, gauge_facts, inspections,
                                       period, anchors, now_ms,
                                       [(n.ts_ms, end) for n, end in spans])
        result.clocks += clocks
        other.update(facts)
    for clock in result.clocks:
        _close_storm_clock(clock, inspections)
        if clock.closed_by is not None:
            closes[id(clock.closed_by)].append(clock.clock_id)
        result.per_clock[clock.clock_id] = _clock_facts(
            site, clock, now_ms, prev.per_clock.get(clock.clock_id), fresh,
            (floors or {}).get(clock.clock_id))
    for insp in inspections:
        for fact in inspection_facts(site, insp, tuple(sorted(closes[id(insp)]))):
            other[fact.id] = fact
    for fact in action_facts(site, action_states((record_of(i) for i in inspections), steps),
                             now_ms, tuple(r.permit for r in rules)):
        other[fact.id] = fact
    if closure is not None:
        fact = closure_fact(closure)
        other[fact.id] = fact
    _merge(result, prev, other, fresh)
    return result


def _close_storm_clock(clock: Clock, inspections: list[Inspection]) -> None:
    """A storm clock is closed by the first inspection at or after its start that may
    close clocks, unless it was cut before (routine clocks close in ``routine.py``)."""
    if clock.clock != "storm" or clock.start is None:
        return
    for insp in inspections:
        if clock.ends_at is not None and insp.ts_ms >= clock.ends_at:
            return  # cut: no later inspection closes it
        if insp.ts_ms >= clock.start and closes_clocks(insp):
            clock.closed_at, clock.closed_by, clock.ends_at = insp.ts_ms, insp, None
            return


def _permit_clocks(rules: PermitRules, gauge_facts: list[Fact], inspections: list[Inspection],
                   period: ActivePeriod, anchors: dict[str, Anchor], now_ms: int | None,
                   shutdowns: list[tuple[int, int | None]]) -> tuple[list[Clock], dict[str, Fact]]:
    """One permit's clocks (none where clocks do not apply) and its ``storm_qualified``
    facts. ``anchors`` by permit key, the primary permit's under ``""``."""
    permit = rules.permit
    storm_clocks, facts = _storm_clocks(rules, gauge_facts, period)
    if not rules.site.clocks_apply:
        return [], facts
    anchor = anchors.get("" if permit.primary else permit.key)
    return storm_clocks + _routine_clocks(rules, inspections, period, anchor, now_ms,
                                          shutdowns), facts


def _storm_clocks(rules: PermitRules, gauge_facts: list[Fact], period: ActivePeriod
                  ) -> tuple[list[Clock], dict[str, Fact]]:
    """A ``storm_qualified`` per site storm that qualifies under the permit's storm rule
    (``sitestorms.qualifying_storms``, beside them the reference storms of
    ``weather.reference_opens_clock``: ``with_references``), and a storm clock where
    clocks apply and it qualified within the active period, due ``inspect_within_hours``
    after its start (``clock_start``: when it qualified, or when its storm ended; a
    reference storm's when the reference reached the threshold, since a station's hours
    do not say when the rain at the site ended; ``PermitRules.storm_due``), cut where
    its active span ends. The permit's snowmelt clocks beside them."""
    site, permit = rules.site, rules.permit
    if permit.storm is None or permit.storm.source == "forecast":
        return _trigger_clocks(rules, gauge_facts, period), {}
    rain = site.rain
    within = hours_ms(rain.inspect_within_hours)
    clocks: list[Clock] = []
    facts: dict[str, Fact] = {}
    mine = rules.gauge_facts(gauge_facts)
    storms = qualifying_storms(site, gauge_storms(mine), stale_spans(mine))
    storms = with_references(storms, reference_storms(mine), hours_ms(rain.dry_gap_hours))
    section = rules.storm_section()
    for site_storm in storms:
        rep, group = site_storm.rep, site_storm.group
        assert rep.qualified_at is not None
        clock_id = permit.clock_id(f"storm-{rep.event_id}")
        if rain.clock_start == "qualified" or rep.reference is not None:
            start: int | None = rep.qualified_at
        else:
            ended = [s.ended_at for s in group]
            start = None if any(e is None for e in ended) else max(e for e in ended if e)
        outside = period.outside(rep.qualified_at) if site.clocks_apply else None
        opens = site.clocks_apply and outside is None
        due = rules.storm_due(start, start + within) if start is not None and opens else None
        not_before = revealed_due(rep.q_not_before, rep.qualified_at, start, due, within,
                                  rain.clock_start)
        if opens:
            clocks.append(Clock(clock_id, "storm", rep.qualified_at, start, due, storm=rep,
                                ends_at=period.span_end(rep.qualified_at),
                                permit=permit.event_key, section=rules.cited(section),
                                chain=permit.key,
                                primary=permit.primary))
        fact = Fact(site.id, rep.qualified_at,
                    rules.storm_fact_id(site.id, rep.gauge, rep.started_at),
                    StormQualified(
                        gauge=rep.q_gauges[0] if rep.reference is not None else rep.gauge,
                        event_id=rep.event_id, started_at=iso(rep.started_at),
                        qualified_at=iso(rep.qualified_at), total_in=rep.q_total_in,
                        max_24h_in=rep.q_max_24h_in, due=iso(due) if due is not None else None,
                        uncertain_in=rep.q_uncertain_in, gauges=site_storm.gauges,
                        threshold_in=rain.threshold_in, mode=rain.mode,
                        clock_id=clock_id if opens else None,
                        informational=None if opens else True, outside=outside,
                        qualified_not_before=iso_or_none(rep.q_not_before),
                        due_not_before=iso_or_none(not_before), **_reference_fields(rep),
                        permit=permit.event_key, section=rules.cited(section)))
        facts[fact.id] = fact
    return clocks + _trigger_clocks(rules, gauge_facts, period), facts


def _trigger_clocks(rules: PermitRules, facts: list[Fact], period: ActivePeriod
                    ) -> list[Clock]:
    """The permit's snowmelt and forecast clocks (``permitclocks``), where clocks apply
    and the trigger came within the active period."""
    site, permit = rules.site, rules.permit
    if not site.clocks_apply:
        return []
    return [Clock(t.clock_id, "storm", t.start_ms, t.start_ms, t.due_ms,
                  ends_at=period.span_end(t.start_ms), permit=permit.event_key,
                  section=rules.cited(t.section), chain=permit.key, primary=permit.primary)
            for t in snow_triggers(rules, facts) + forecast_triggers(rules, facts)
            if period.outside(t.start_ms) is None]


def _reference_fields(storm: GaugeStorm | None) -> dict[str, Any]:
    """The fields that mark a storm, and its clock's events, as the reference's."""
    if storm is None or storm.reference is None:
        return {}
    return {"source": "reference", "reference": storm.reference,
            "reference_in": storm.q_total_in}


def _clock_source(clock: Clock) -> str | None:
    """``reference`` for a clock a reference storm opened, else None (not in the JSON)."""
    return "reference" if clock.storm is not None and clock.storm.reference else None


def _routine_clocks(rules: PermitRules, inspections: list[Inspection], period: ActivePeriod,
                    anchor: Anchor | None, now_ms: int | None,
                    shutdowns: list[tuple[int, int | None]]) -> list[Clock]:
    """The permit's routine chain within the site's active period (``routine.py``), at
    its shutdown cadence during the site's shutdowns when it has one."""
    permit = rules.permit
    if permit.routine is None:
        return []
    shut = permit.shutdown
    return [Clock(permit.clock_id(rc.clock_id), "routine", rc.start, rc.start, rc.due,
                  rc.closed_by.ts_ms if rc.closed_by is not None else None, rc.closed_by,
                  ends_at=rc.ends_at, permit=permit.event_key,
                  section=rules.cited(permit.routine.cite.section), chain=permit.key,
                  primary=permit.primary)
            for rc in routine_chain(rules.site, inspections, period, anchor, closes_clocks,
                                    now_ms, min_gap_days=permit.routine.min_gap_days,
                                    shutdowns=shutdowns if shut is not None else (),
                                    shutdown_days=shut.every_days if shut is not None else None)]


def _merge(result: SiteClocks, prev: SiteClocks, other: dict[str, Fact],
           fresh: dict[str, Fact]) -> None:
    """Merge into the previous facts dict (``result.facts`` is it); note what changed."""
    facts = result.facts
    candidates = set(other) | prev.other_ids | set(fresh)
    for cid, cf in prev.per_clock.items():
        if result.per_clock.get(cid) is not cf:
            candidates.update(cf.facts)
    for fid in candidates:
        value = other.get(fid) or fresh.get(fid)
        if value is None:
            if facts.pop(fid, None) is not None:
                result.changed.add(fid)
        elif facts.get(fid) != value:
            facts[fid] = value
            result.changed.add(fid)
    result.other_ids = set(other)


#: Adds one fact of a clock (its instant, id and body).
_Add = Callable[[int, str, Body], None]


def _clock_facts(site: SiteConfig, clock: Clock, now_ms: int | None, prev: ClockFacts | None,
                 fresh: dict[str, Fact], floor: ClockFloor | None) -> ClockFacts:
    """The clock's reminders, overdue notices and closing up to ``now_ms``.

    A clock unchanged since ``prev`` keeps its facts and only gains the notices
    *now* has newly reached; a changed clock starts over from its ``floor`` (the
    notices already settled are never concluded again). Facts added here go to
    ``fresh`` as well.
    """
    by = clock.closed_by
    signature = (clock.clock, clock.opened_at, clock.start, clock.due, clock.closed_at,
                 clock.ends_at, by.entered_ms if by is not None else None)
    floor = floor or ClockFloor()
    if prev is not None and prev.signature == signature:
        cf = prev
    else:
        cf = ClockFacts(signature, next_overdue=floor.k, floor=floor)
    if clock.due is None:
        return cf
    now = now_ms if now_ms is not None else -(2**62)
    # No notice once the clock is closed, or cut by a pause or the end of the site.
    closed = min(c for c in (clock.closed_at, clock.ends_at, 2**62) if c is not None)

    def add(at: int, fid: str, body: Body) -> None:
        cf.facts[fid] = fresh[fid] = Fact(site.id, at, fid, body)

    _notices(site, clock, clock.due, cf, now, closed, add)
    if clock.closed_at is not None and clock.closed_at <= now:
        fid = make_id("clock_closed", site.id, clock.clock_id)
        if fid not in cf.facts:
            entered = by.entered_ms if by is not None else None
            add(clock.closed_at, fid, ClockClosed(
                clock_id=clock.clock_id, clock=clock.clock, due=iso(clock.due),
                inspected_at=iso(clock.closed_at),
                outcome="met" if clock.closed_at <= clock.due else "late",
                entered_at=iso(entered) if entered is not None else None,
                backdated=by is not None and is_backdated(site, by),
                source=_clock_source(clock), permit=clock.permit, section=clock.section))
    return cf


def _notices(site: SiteConfig, clock: Clock, due: int, cf: ClockFacts, now: int, closed: int,
             add: _Add) -> None:
    """The notices *now* has reached before the clock ``closed``: each reminder
    (``remind_before_hours``), the overdue notices every ``overdue_repeat_hours`` from
    due on (from ``cf.next_overdue``), and a routine clock's missed weeks (§ 134-12D)."""
    rules = site.rain
    cid, kind, due_iso = clock.clock_id, clock.clock, iso(due)
    source = _clock_source(clock)
    for hours in rules.remind_before_hours:
        at = due - hours_ms(hours)
        if hours in cf.floor.reminders:
            continue
        if clock.opened_at <= at <= now and at < closed:
            fid = make_id("inspection_due_soon", site.id, cid, hours)
            if fid not in cf.facts:
                add(at, fid, InspectionDueSoon(
                    clock_id=cid, clock=kind, due=due_iso, hours_left=hours, source=source,
                    permit=clock.permit, section=clock.section))
    repeat = hours_ms(rules.overdue_repeat_hours)
    k = cf.next_overdue
    at = due + k * repeat
    while at <= now and at < closed:
        add(at, make_id("inspection_overdue", site.id, cid, k),
            InspectionOverdue(clock_id=cid, clock=kind, due=due_iso,
                              hours_late=round(k * rules.overdue_repeat_hours, 3),
                              source=source, permit=clock.permit, section=clock.section))
        k += 1
        at = due + k * repeat
    cf.next_overdue = k
    if kind == "routine":
        zone = calendar_zone(site)
        week, at = 1, due
        while at <= now and at < closed:
            fid = make_id("inspection_missed", site.id, cid, week)
            nxt = week_from_ms(due, week + 1, zone)
            if fid not in cf.facts:
                add(at, fid, InspectionMissed(clock_id=cid, clock=kind, due=due_iso, week=week,
                                              week_from=iso(at), week_to=iso(nxt),
                                              permit=clock.permit, section=clock.section))
            week, at = week + 1, nxt

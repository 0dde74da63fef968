"""Inspection clocks of § 134-9A(2).

    "... the applicant shall have a qualified professional conduct site
    inspections ... every seven days and within 24 hours of any storm event
    producing 0.5 inch of precipitation or more. Inspection reports shall be
    maintained in a site log book."  — Chapter 134, § 134-9A(2)

Theory of operation
-------------------
Everything in this module is a pure function of four things: the storm events
the gauges concluded, the inspections recorded, the site's start, and *now*.
It is recomputed from scratch whenever one of them changes (a site has tens
of storms and inspections in a season, so this is cheap), which is what makes
late data and late inspections come out exactly as if they had arrived in
order.

Site storms (DESIGN § 4 "Site storms from several gauges"). Each gauge has
its own storm events; an event's *extent* runs from its start to its last
rain plus the dry gap (the time within which more rain would have been the
same storm). Taken in the order they qualify, a qualifying gauge event opens a
site storm unless its extent overlaps that of a qualifying event of another
gauge that opened one; then it joins that site storm. Overlap is judged
between qualifying events only: a sub-threshold drizzle at one gauge never
joins two storms of another into one (each opens its own clock, and its own
§ 134-9A(2) inspection is asked for), and an event that joined opens nothing,
so overlap does not chain from one storm to the next. ``gauges: any``
qualifies the site storm with the event that opened it; ``all`` when every
gauge that is not stale at that instant has a qualifying event in the same
site storm (the storm qualifies at the last of them, and never when one
gauge's qualifying event belongs to another site storm or to none); ``mean``
uses the averaged virtual gauge ``mean`` alone. Each qualifying site storm is
one ``storm_qualified`` and one storm clock.

A clock's life: it opens (a storm qualifies, or
the previous routine clock was satisfied), passes each reminder instant
(``due − h`` for ``h`` in ``remind_before_hours``), becomes overdue at ``due``
and again every ``overdue_repeat_hours``, and is closed by the first
inspection at or after its start: on or before ``due`` is ``met``, after is
``late``. Only inspections that may close clocks count (``closes_clocks``: not
kind ``other``, which the shell also gives an inspection by someone off the
roster). An unsatisfied routine clock also counts the weeks it misses
(``inspection_missed``, § 134-12D), until it closes or is cut. For
``clock_start: event_end`` the start and due are unknown until the storm has
ended; such a clock is open but cannot yet be satisfied or go
overdue.

Routine clocks chain within the site's active period (``routine.py``). The
site's other facts are made here too: ``inspection_recorded`` (and
``inspection_backdated``), ``site_closed``, and ``corrective_action_due``
(``actions.py``).

Clocks apply only to Conditions A, B and C of § 134-7B(2); other sites still
get ``storm_qualified`` (with ``due: null`` and ``informational: true``).

What can no longer change is taken out of memory by ``settle.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..config import SiteConfig
from .actions import action_facts, action_states, record_of
from .events import (
    Body,
    ClockClosed,
    Fact,
    GaugeQualified,
    InspectionBackdated,
    InspectionDueSoon,
    InspectionMissed,
    InspectionOverdue,
    InspectionRecorded,
    SensorRecovered,
    SensorStale,
    SiteClosed,
    StormEnded,
    StormQualified,
    StormStarted,
    make_id,
)
from .inputs import Inspection, SiteClosure
from .routine import WEEK_MS, Anchor, routine_chain
from .times import hours_ms, iso, parse_iso

MEAN_GAUGE = "mean"


@dataclass(frozen=True, slots=True)
class GaugeStorm:
    """One gauge's storm event, as its facts describe it."""

    gauge: str
    event_id: str
    started_at: int
    ended_at: int | None
    qualified_at: int | None = None
    q_total_in: float = 0.0
    q_max_24h_in: float = 0.0
    last_rain: int | None = None
    #: The ids of the gauge facts this storm was rebuilt from (dropped when it settles).
    fact_ids: tuple[str, ...] = ()
    q_uncertain_in: float = 0.0
    q_gauges: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class StaleSpan:
    """A time a gauge was stale: ``[start_ms, end_ms)``, open while ``end_ms`` is None."""

    start_ms: int
    end_ms: int | None
    fact_ids: tuple[str, ...]

    def covers(self, ts_ms: int) -> bool:
        return self.start_ms <= ts_ms and (self.end_ms is None or ts_ms < self.end_ms)


def stale_spans(facts: Iterable[Fact]) -> dict[str, list[StaleSpan]]:
    """The stale spans of each sensor, from its ``sensor_stale``/``sensor_recovered`` facts
    (a recovery names the instant its staleness began)."""
    starts: dict[tuple[str, int], Fact] = {}
    ends: dict[tuple[str, int], Fact] = {}
    for fact in facts:
        body = fact.body
        if isinstance(body, SensorStale):
            starts[(body.sensor, fact.at_ms)] = fact
        elif isinstance(body, SensorRecovered):
            ends[(body.sensor, parse_iso(body.stale_since))] = fact
    out: dict[str, list[StaleSpan]] = {}
    for (sensor, start), fact in sorted(starts.items()):
        end = ends.get((sensor, start))
        out.setdefault(sensor, []).append(StaleSpan(
            start, end.at_ms if end is not None else None,
            (fact.id,) if end is None else (fact.id, end.id)))
    return out


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
    #: A routine clock cut by a pause or the end of the site's active period.
    ends_at: int | None = None

    @property
    def outcome(self) -> str | None:
        if self.closed_at is None or self.due is None:
            return None
        return "met" if self.closed_at <= self.due else "late"


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


def gauge_storms(facts: list[Fact]) -> list[GaugeStorm]:
    """Rebuild gauge storm events from the rain folds' facts."""
    by_event: dict[tuple[str, str], dict[str, Any]] = {}
    for fact in facts:
        body = fact.body
        if not isinstance(body, StormStarted | GaugeQualified | StormEnded):
            continue
        rec = by_event.setdefault((body.gauge, body.event_id), {
            "gauge": body.gauge, "event_id": body.event_id, "started_at": None,
            "ended_at": None, "qualified_at": None, "q_total_in": 0.0, "q_max_24h_in": 0.0,
            "q_uncertain_in": 0.0, "q_gauges": (body.gauge,), "ids": [],
        })
        rec["ids"].append(fact.id)
        if isinstance(body, StormStarted):
            rec["started_at"] = fact.at_ms
        elif isinstance(body, GaugeQualified):
            rec["qualified_at"] = fact.at_ms
            rec["q_total_in"] = body.total_in
            rec["q_max_24h_in"] = body.max_24h_in
            rec["q_uncertain_in"] = body.uncertain_in
            rec["q_gauges"] = body.gauges
        else:
            rec["ended_at"] = fact.at_ms
    storms = []
    for rec in by_event.values():
        if rec["started_at"] is None:
            continue
        storms.append(GaugeStorm(rec["gauge"], rec["event_id"], rec["started_at"],
                                 rec["ended_at"], rec["qualified_at"], rec["q_total_in"],
                                 rec["q_max_24h_in"], rec["ended_at"], tuple(sorted(rec["ids"])),
                                 rec["q_uncertain_in"], rec["q_gauges"]))
    storms.sort(key=lambda s: (s.started_at, s.gauge))
    return storms


def group_storms(storms: list[GaugeStorm], gap_ms: int) -> list[list[GaugeStorm]]:
    """Gauge events whose extents overlap, transitively (sub-threshold ones included):
    the spans of weather that ``settle`` takes out of memory whole. A site storm
    (``site_storms``) never reaches across two of them."""
    groups: list[list[GaugeStorm]] = []
    reach = -1
    for storm in storms:
        end = storm.ended_at + gap_ms if storm.ended_at is not None else 2**62
        if groups and storm.started_at < reach:
            groups[-1].append(storm)
            reach = max(reach, end)
        else:
            groups.append([storm])
            reach = end
    return groups


def _extent_end(storm: GaugeStorm, gap_ms: int) -> int:
    return storm.ended_at + gap_ms if storm.ended_at is not None else 2**62


def site_storms(storms: list[GaugeStorm], gap_ms: int) -> list[list[GaugeStorm]]:
    """The qualifying gauge events as site storms (module docstring): each list starts
    with the event that opened it, then those that joined it, in the order they
    qualified. Sub-threshold events are left out; ties in ``qualified_at`` go by gauge."""
    qualifying = sorted((s for s in storms if s.qualified_at is not None),
                        key=lambda s: (s.qualified_at or 0, s.gauge, s.started_at))
    out: list[list[GaugeStorm]] = []
    for storm in qualifying:
        end = _extent_end(storm, gap_ms)
        for members in out:
            opener = members[0]
            if opener.gauge != storm.gauge and storm.started_at < _extent_end(opener, gap_ms) \
                    and opener.started_at < end:
                members.append(storm)
                break
        else:
            out.append([storm])
    return out


@dataclass(frozen=True, slots=True)
class SiteStorm:
    """A qualifying site storm: the gauge event that qualified it, its qualifying gauge
    events (``site_storms``), and the gauges that counted."""

    rep: GaugeStorm
    group: list[GaugeStorm]
    gauges: tuple[str, ...]


def qualifying_storms(site: SiteConfig, storms: list[GaugeStorm],
                      spans: dict[str, list[StaleSpan]] | None = None) -> list[SiteStorm]:
    """The site storms that qualify (``site_storms``). ``any``: each, with the event
    that opened it. ``all``: "every gauge must qualify" is read within one site
    storm, so a gauge's qualifying event counts for the storm it opened or joined
    and for no other: the site storm qualifies with the first of its members after
    which each gauge has qualified in it or is stale (``spans``) at that instant;
    a storm that one gauge (not stale) missed opens no clock, even when that
    gauge's own storm, overlapping it, went to another site storm."""
    rules = site.rain
    if rules.gauges == "mean":
        return [SiteStorm(s, [s], s.q_gauges) for s in storms
                if s.gauge == MEAN_GAUGE and s.qualified_at is not None]
    spans = spans or {}

    def stale(gauge: str, ts_ms: int) -> bool:
        return any(span.covers(ts_ms) for span in spans.get(gauge, ()))

    real = [s for s in storms if s.gauge != MEAN_GAUGE]
    out = []
    gauge_ids = {g.id for g in site.gauges()}
    for group in site_storms(real, hours_ms(rules.dry_gap_hours)):
        if rules.gauges == "any":
            out.append(SiteStorm(group[0], group, (group[0].gauge,)))
            continue
        # The members are in the order they qualified: the first of each gauge counts.
        ranked = list({s.gauge: s for s in reversed(group)}.values())
        ranked.sort(key=lambda s: (s.qualified_at or 0, s.gauge))
        for i, rep in enumerate(ranked):
            at = rep.qualified_at or 0
            counted = {s.gauge for s in ranked[:i + 1]}
            if all(g in counted or stale(g, at) for g in gauge_ids):
                out.append(SiteStorm(rep, group, tuple(sorted(counted))))
                break
    return out


def closes_clocks(insp: Inspection) -> bool:
    """Whether an inspection may close a clock: ``other`` never does (the shell records
    an inspection by someone off the roster as ``other``)."""
    return insp.kind != "other"


def compute(site: SiteConfig, gauge_facts: list[Fact], inspections: list[Inspection],
            first_seen_ms: int | None, now_ms: int | None,
            previous: SiteClocks | None = None, *, anchor: Anchor | None = None,
            floors: dict[str, ClockFloor] | None = None,
            closure: SiteClosure | None = None) -> SiteClocks:
    """Storm qualification, clocks and their events for one site at ``now_ms``.

    ``previous`` is the last result for the same site; it is reused, not copied,
    and must not be used afterwards. ``anchor`` and ``floors`` come from
    ``settle``: the start of the routine chain and the settled notices of open
    clocks; ``closure`` the site's recorded final stabilization.
    """
    rules = site.rain
    prev = previous or SiteClocks()
    result = SiteClocks(facts=prev.facts)
    other: dict[str, Fact] = {}
    inspections = sorted(inspections, key=lambda i: (i.ts_ms, i.inspector, i.kind))
    within = hours_ms(rules.inspect_within_hours)
    closes: dict[int, list[str]] = {id(i): [] for i in inspections}
    fresh: dict[str, Fact] = {}  # clock facts new since the previous result

    # Storm clocks and storm_qualified.
    for site_storm in qualifying_storms(site, gauge_storms(gauge_facts), stale_spans(gauge_facts)):
        rep, group = site_storm.rep, site_storm.group
        assert rep.qualified_at is not None
        clock_id = f"storm-{rep.event_id}"
        if rules.clock_start == "qualified":
            start: int | None = rep.qualified_at
        else:
            ended = [s.ended_at for s in group]
            start = None if any(e is None for e in ended) else max(e for e in ended if e)
        due = start + within if start is not None and site.clocks_apply else None
        if site.clocks_apply:
            result.clocks.append(Clock(clock_id, "storm", rep.qualified_at, start, due,
                                       storm=rep))
        fact = Fact(site.id, rep.qualified_at,
                    make_id("storm_qualified", site.id, rep.gauge, rep.started_at),
                    StormQualified(
                        gauge=rep.gauge, event_id=rep.event_id, started_at=iso(rep.started_at),
                        qualified_at=iso(rep.qualified_at), total_in=rep.q_total_in,
                        max_24h_in=rep.q_max_24h_in, due=iso(due) if due is not None else None,
                        uncertain_in=rep.q_uncertain_in, gauges=site_storm.gauges,
                        threshold_in=rules.threshold_in, mode=rules.mode,
                        clock_id=clock_id if site.clocks_apply else None,
                        informational=None if site.clocks_apply else True))
        other[fact.id] = fact

    if site.clocks_apply:
        closed_ms = closure.ts_ms if closure is not None else None
        for rc in routine_chain(site, inspections, first_seen_ms, anchor, closed_ms,
                                closes_clocks):
            result.clocks.append(Clock(
                rc.clock_id, "routine", rc.start, rc.start, rc.due,
                rc.closed_by.ts_ms if rc.closed_by is not None else None, rc.closed_by,
                ends_at=rc.ends_at))
        for clock in result.clocks:
            if clock.clock == "storm" and clock.start is not None:
                for insp in inspections:
                    if insp.ts_ms >= clock.start and closes_clocks(insp):
                        clock.closed_at, clock.closed_by = insp.ts_ms, insp
                        break
            if clock.closed_by is not None:
                closes[id(clock.closed_by)].append(clock.clock_id)
            result.per_clock[clock.clock_id] = _clock_facts(
                site, clock, now_ms, prev.per_clock.get(clock.clock_id), fresh,
                (floors or {}).get(clock.clock_id))

    for insp in inspections:
        for fact in inspection_facts(site, insp, tuple(sorted(closes[id(insp)]))):
            other[fact.id] = fact
    for fact in action_facts(site.id, action_states(record_of(i) for i in inspections), now_ms):
        other[fact.id] = fact
    if closure is not None:
        fact = closure_fact(closure)
        other[fact.id] = fact

    # Merge into the previous facts dict; note what changed.
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
    return result


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
    rules = site.rain
    due = clock.due
    cid, kind, due_iso = clock.clock_id, clock.clock, iso(due)
    now = now_ms if now_ms is not None else -(2**62)
    # No notice once the clock is closed, or cut by a pause or the end of the site.
    closed = min(c for c in (clock.closed_at, clock.ends_at, 2**62) if c is not None)

    def add(at: int, fid: str, body: Body) -> None:
        cf.facts[fid] = fresh[fid] = Fact(site.id, at, fid, body)

    for hours in rules.remind_before_hours:
        at = due - hours_ms(hours)
        if hours in cf.floor.reminders:
            continue
        if clock.opened_at <= at <= now and at < closed:
            fid = make_id("inspection_due_soon", site.id, clock.clock_id, hours)
            if fid not in cf.facts:
                add(at, fid, InspectionDueSoon(
                    clock_id=cid, clock=kind, due=due_iso, hours_left=hours))
    repeat = hours_ms(rules.overdue_repeat_hours)
    k = cf.next_overdue
    at = due + k * repeat
    while at <= now and at < closed:
        add(at, make_id("inspection_overdue", site.id, clock.clock_id, k),
            InspectionOverdue(clock_id=cid, clock=kind, due=due_iso,
                              hours_late=round(k * rules.overdue_repeat_hours, 3)))
        k += 1
        at = due + k * repeat
    cf.next_overdue = k
    if kind == "routine":
        week, at = 1, due
        while at <= now and at < closed:
            fid = make_id("inspection_missed", site.id, clock.clock_id, week)
            if fid not in cf.facts:
                add(at, fid, InspectionMissed(clock_id=cid, clock=kind, due=due_iso, week=week,
                                              week_from=iso(at), week_to=iso(at + WEEK_MS)))
            week, at = week + 1, at + WEEK_MS
    if clock.closed_at is not None and clock.closed_at <= now:
        fid = make_id("clock_closed", site.id, clock.clock_id)
        if fid not in cf.facts:
            entered = by.entered_ms if by is not None else None
            add(clock.closed_at, fid, ClockClosed(
                clock_id=cid, clock=kind, due=due_iso, inspected_at=iso(clock.closed_at),
                outcome="met" if clock.closed_at <= due else "late",
                entered_at=iso(entered) if entered is not None else None,
                backdated=by is not None and is_backdated(site, by)))
    return cf


def is_backdated(site: SiteConfig, insp: Inspection) -> bool:
    """Entered more than ``backdate_alert_hours`` after its own time."""
    return insp.entered_ms is not None and \
        insp.entered_ms - insp.ts_ms > hours_ms(site.backdate_alert_hours)


def inspection_fact_ids(site_id: str, insp: Inspection) -> tuple[str, str]:
    """The ids of an inspection's facts (``inspection_facts``), whether or not both exist."""
    return (make_id("inspection_recorded", site_id, insp.ts_ms, insp.inspector),
            make_id("inspection_backdated", site_id, insp.ts_ms, insp.inspector))


def inspection_facts(site: SiteConfig, insp: Inspection, closes: tuple[str, ...]) -> list[Fact]:
    """``inspection_recorded`` for the log book, and ``inspection_backdated`` for the
    officer when it was entered long after its own time (§ 134-9A(2) reports)."""
    entered = iso(insp.entered_ms) if insp.entered_ms is not None else None
    backdated = is_backdated(site, insp)
    recorded_id, backdated_id = inspection_fact_ids(site.id, insp)
    out = [Fact(site.id, insp.ts_ms, recorded_id,
                InspectionRecorded(
                    inspector=insp.inspector, kind=insp.kind, inspected_at=iso(insp.ts_ms),
                    closes=closes, entered_at=entered, backdated=backdated,
                    findings=tuple({"practice": f.practice, "condition": f.condition}
                                   for f in insp.findings),
                    corrective_actions=tuple(
                        {"id": a.id, "text": a.text,
                         "due": iso(a.due_ms) if a.due_ms is not None else None}
                        for a in insp.corrective_actions),
                    inspectors=insp.names, credentials=insp.credentials,
                    resolves=insp.resolves, notes=insp.notes or None))]
    if backdated and insp.entered_ms is not None:
        out.append(Fact(site.id, insp.entered_ms, backdated_id,
                        InspectionBackdated(
                            inspector=insp.inspector, inspected_at=iso(insp.ts_ms),
                            entered_at=entered or "", closes=closes,
                            hours_late=round((insp.entered_ms - insp.ts_ms) / 3_600_000, 2))))
    return out


def closure_fact(closure: SiteClosure) -> Fact:
    """``site_closed``: final stabilization, for the log book."""
    return Fact(closure.site, closure.ts_ms, make_id("site_closed", closure.site),
                SiteClosed(closed_at=iso(closure.ts_ms),
                           entered_at=iso(closure.entered_ms)
                           if closure.entered_ms is not None else None,
                           by=closure.by, notes=closure.notes))

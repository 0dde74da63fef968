"""Settling: what the clocks no longer need, out of memory (a season is months).

What can no longer change leaves memory, so the clocks' recomputation stays
as cheap on day 180 as on day 1. Once the
engine refuses input older than a horizon, anything decided entirely before it
is final: a storm group whose last rain plus the dry gap lies before it and
whose clock (if any) closed before it, a routine clock closed before it, an
inspection before it that closes no clock still open. Their facts are final
and are handed back to the engine (the store keeps them). The routine chain
then starts at an *anchor* (the inspection that closed the last settled
routine clock) instead of the site's start, and the reminders and overdue
notices of an open clock that lie before the horizon are counted (a
``ClockFloor``) instead of kept: an unattended clock is one clock and a counter,
not a notice every four hours for ever.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import SiteConfig
from .clocks import (
    MEAN_GAUGE,
    Anchor,
    Clock,
    ClockFloor,
    SiteClocks,
    gauge_storms,
    group_storms,
)
from .events import Fact, InspectionDueSoon, InspectionOverdue, make_id
from .inputs import Inspection
from .times import hours_ms, parse_iso


@dataclass(slots=True)
class Settled:
    """What ``settle`` decided: facts that are final, and the inputs still needed."""

    fact_ids: list[str] = field(default_factory=list)
    #: Gauge storm facts no clock will ask about again.
    storm_fact_ids: set[str] = field(default_factory=set)
    inspections: list[Inspection] = field(default_factory=list)
    anchor: Anchor | None = None
    floors: dict[str, ClockFloor] = field(default_factory=dict)


def settle(site: SiteConfig, gauge_facts: list[Fact], result: SiteClocks,
           inspections: list[Inspection], anchor: Anchor | None,
           floors: dict[str, ClockFloor], horizon_ms: int) -> Settled:
    """Take out of ``result`` what nothing at or after ``horizon_ms`` can change.

    The caller refuses readings and inspections older than the horizon from now
    on, which is what makes these facts final (see the module docstring). The
    settled facts are removed from ``result``; ``Settled`` says which, and what
    the next ``compute`` needs instead of them.
    """
    rules = site.rain
    gap = hours_ms(rules.dry_gap_hours)
    storms = gauge_storms(gauge_facts)
    real = [s for s in storms if s.gauge != MEAN_GAUGE]
    groups = group_storms(real, gap)
    if rules.gauges == "mean":
        groups += [[s] for s in storms if s.gauge == MEAN_GAUGE]
    clock_of_storm = {(c.storm.gauge, c.storm.event_id): c for c in result.clocks
                      if c.storm is not None}

    # Clocks that may settle: closed before the horizon and, for a storm clock,
    # its whole storm group final (last rain + dry gap before the horizon).
    final_groups = [g for g in groups if all(s.ended_at is not None for s in g)
                    and max(s.ended_at or 0 for s in g) + gap < horizon_ms]
    candidates: set[str] = set()
    for group in final_groups:
        for s in group:
            clock = clock_of_storm.get((s.gauge, s.event_id))
            if clock is not None and clock.closed_at is not None and clock.closed_at < horizon_ms:
                candidates.add(clock.clock_id)
    routine = [c for c in result.clocks if c.clock == "routine"]
    candidates.update(c.clock_id for c in routine
                      if c.closed_at is not None and c.closed_at < horizon_ms)
    closes: dict[int, list[Clock]] = {}
    for clock in result.clocks:
        if clock.closed_by is not None:
            closes.setdefault(id(clock.closed_by), []).append(clock)
    # An inspection goes only when every clock it closed goes (its fact lists
    # them all), and routine clocks settle as a prefix of their chain.
    while True:
        needed = {id(i) for i in inspections if i.ts_ms >= horizon_ms or any(
            c.clock_id not in candidates for c in closes.get(id(i), ()))}
        narrowed = {cid for cid in candidates
                    if (c := _by_id(result.clocks, cid)) is not None
                    and (c.closed_by is None or id(c.closed_by) not in needed)}
        prefix = True
        for c in routine:
            prefix = prefix and c.clock_id in narrowed
            if not prefix:
                narrowed.discard(c.clock_id)
        if narrowed == candidates:
            break
        candidates = narrowed

    out = Settled(floors=dict(floors), anchor=anchor)
    settled_ids: set[str] = set()
    for group in final_groups:
        clocks_of = [clock_of_storm[(s.gauge, s.event_id)] for s in group
                     if (s.gauge, s.event_id) in clock_of_storm]
        if any(c.clock_id not in candidates for c in clocks_of):
            continue
        for s in group:
            out.storm_fact_ids.update(s.fact_ids)
            settled_ids.add(make_id("storm_qualified", site.id, s.gauge, s.started_at))
    for clock in list(result.clocks):
        if clock.clock_id not in candidates:
            continue
        cf = result.per_clock.pop(clock.clock_id, None)
        if cf is not None:
            settled_ids.update(cf.facts)
        out.floors.pop(clock.clock_id, None)
        result.clocks.remove(clock)
        if clock.clock == "routine" and clock.closed_at is not None and (
                out.anchor is None or clock.closed_at > out.anchor.start_ms):
            out.anchor = Anchor(clock.closed_at)
    for insp in inspections:
        if id(insp) in needed:
            out.inspections.append(insp)
        else:
            settled_ids.add(make_id("inspection_recorded", site.id, insp.ts_ms, insp.inspector))

    # Open clocks: count the notices before the horizon instead of keeping them.
    repeat = hours_ms(rules.overdue_repeat_hours)
    for cid, cf in result.per_clock.items():
        early = [fid for fid, f in cf.facts.items() if f.at_ms < horizon_ms
                 and f.type in ("inspection_overdue", "inspection_due_soon")]
        if not early:
            continue
        reminders = set(cf.floor.reminders)
        k = cf.floor.k
        for fid in early:
            fact = cf.facts.pop(fid)
            settled_ids.add(fid)
            body = fact.body
            if isinstance(body, InspectionDueSoon):
                reminders.add(float(body.hours_left))
            elif isinstance(body, InspectionOverdue):
                k = max(k, (fact.at_ms - parse_iso(body.due)) // repeat + 1)
        cf.floor = out.floors[cid] = ClockFloor(k, frozenset(reminders))

    present = [fid for fid in settled_ids if fid in result.facts]
    for fid in present:
        del result.facts[fid]
    result.other_ids -= settled_ids
    out.fact_ids = sorted(present)
    return out


def _by_id(clocks: list[Clock], clock_id: str) -> Clock | None:
    for clock in clocks:
        if clock.clock_id == clock_id:
            return clock
    return None

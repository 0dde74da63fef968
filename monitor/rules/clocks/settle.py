"""Settling: what the clocks no longer need, out of memory (a season is months).

What can no longer change leaves memory, so the clocks' recomputation stays
as cheap on day 180 as on day 1. Once the
engine refuses input older than a horizon, anything decided entirely before it
is final: a storm group whose last rain plus the dry gap lies before it and
whose clock (if any) closed before it, a routine clock closed before it, an
inspection before it that closes no clock still open and whose corrective
actions were resolved before it (with the inspection resolving them). Their facts are final
and are handed back to the engine (the store keeps them). The routine chain
then starts at an *anchor* (the inspection that closed the last settled
routine clock) instead of the site's start, and the reminders and overdue
notices of an open clock that lie before the horizon are counted (a
``ClockFloor``) instead of kept: an unattended clock is one clock and a counter,
not a notice every four hours for ever.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ...config import SiteConfig
from ...contract.events import Fact, InspectionDueSoon, InspectionOverdue
from ...contract.inputs import Inspection
from ...contract.times import hours_ms, parse_iso
from ..permits.duties import Permit, permits_of
from ..rain.sitestorms import MEAN_GAUGE, GaugeStorm, gauge_storms, group_storms, reference_storms
from .actions import action_states, final_before, final_fact_ids, record_of
from .clocks import Clock, ClockFloor, SiteClocks
from .permitclocks import PermitRules
from .records import inspection_fact_ids
from .routine import Anchor


@dataclass(slots=True)
class Settled:
    """What ``settle`` decided: facts that are final, and the inputs still needed."""

    fact_ids: list[str] = field(default_factory=list)
    #: Gauge storm facts no clock will ask about again.
    storm_fact_ids: set[str] = field(default_factory=set)
    inspections: list[Inspection] = field(default_factory=list)
    anchor: Anchor | None = None
    #: The anchors of the other permits' routine chains, by permit key.
    anchors: dict[str, Anchor] = field(default_factory=dict)
    floors: dict[str, ClockFloor] = field(default_factory=dict)


def settle(site: SiteConfig, gauge_facts: list[Fact], result: SiteClocks,
           inspections: list[Inspection], anchor: Anchor | None,
           floors: dict[str, ClockFloor], horizon_ms: int, *,
           open_refs: frozenset[str] = frozenset(),
           undecided: tuple[int, int] | None = None,
           anchors: dict[str, Anchor] | None = None,
           permits: tuple[Permit, ...] | None = None) -> Settled:
    """Take out of ``result`` what nothing at or after ``horizon_ms`` can change.

    The caller refuses readings and inspections older than the horizon from now
    on, which is what makes these facts final (see the module docstring). The
    settled facts are removed from ``result``; ``Settled`` says which, and what
    the next ``compute`` needs instead of them. In phases: the storm groups that
    are final, the clocks that may go, narrowed until every inspection that goes
    takes all its clocks with it, then out of memory what settled, and the early
    notices of the clocks still open counted instead of kept. ``open_refs`` are the
    ``gauge_disagrees`` facts the weather rules may still change: a reference storm
    of one is not final, nor is its group. ``undecided`` (``period.FirstRun``) are
    the instants ``[lo, hi)`` that later input may still move into the active period
    of a site without ``active_since``: a storm that qualified there is not final.
    ``anchors`` and ``permits``: the other permits' chains, and every permit's
    ``storm_qualified`` of a storm that settles (``rules/permits``).
    """
    groups = _final_groups(site, gauge_facts, horizon_ms, open_refs)
    if undecided is not None:
        lo, hi = undecided
        groups = [g for g in groups if not any(
            s.qualified_at is not None and lo <= s.qualified_at < hi for s in g)]
    clock_of_storm: dict[tuple[str, str], list[Clock]] = {}
    for c in result.clocks:
        if c.storm is not None:
            clock_of_storm.setdefault((c.storm.gauge, c.storm.event_id), []).append(c)
    kept_actions, action_needed, final_action_ids = _action_inputs(site, inspections, horizon_ms)
    candidates, needed = _settling_clocks(result.clocks, groups, clock_of_storm, inspections,
                                          action_needed, horizon_ms)
    out = Settled(floors=dict(floors), anchor=anchor, anchors=dict(anchors or {}))
    settled_ids = _settle_groups(site, groups, clock_of_storm, candidates,
                                 permits if permits is not None else permits_of(site), out)
    settled_ids |= _drop_clocks(result, candidates, out)
    for insp in inspections:
        if id(insp) in needed:
            out.inspections.append(insp)
        else:
            settled_ids.update(inspection_fact_ids(site.id, insp))
    settled_ids.update(fid for aid, fid in final_action_ids if aid not in kept_actions)
    settled_ids |= _count_early_notices(result, hours_ms(site.rain.overdue_repeat_hours),
                                        horizon_ms, out)
    present = [fid for fid in settled_ids if fid in result.facts]
    for fid in present:
        del result.facts[fid]
    result.other_ids -= settled_ids
    out.fact_ids = sorted(present)
    return out


def _settle_groups(site: SiteConfig, groups: list[list[GaugeStorm]],
                   clock_of_storm: dict[tuple[str, str], list[Clock]], candidates: set[str],
                   permits: tuple[Permit, ...], out: Settled) -> set[str]:
    """The storm groups whose clocks all settle leave memory (their gauge facts, in
    ``out``); the ids of every permit's ``storm_qualified`` of them."""
    settled_ids: set[str] = set()
    rules = [PermitRules.of(site, p) for p in permits]
    for group in groups:
        clocks_of = [c for s in group for c in clock_of_storm.get((s.gauge, s.event_id), ())]
        if any(c.clock_id not in candidates for c in clocks_of):
            continue
        for s in group:
            out.storm_fact_ids.update(s.fact_ids)
            settled_ids.update(r.storm_fact_id(site.id, s.gauge, s.started_at) for r in rules)
    return settled_ids


def _final_groups(site: SiteConfig, gauge_facts: list[Fact], horizon_ms: int,
                  open_refs: frozenset[str]) -> list[list[GaugeStorm]]:
    """The spans of weather (``group_storms``; the mean gauge's storms each alone) that
    are final: every storm ended, the last rain plus the dry gap before the horizon."""
    gap = hours_ms(site.rain.dry_gap_hours)
    storms = gauge_storms(gauge_facts)
    # A reference storm goes with the storms it may join (the judged ones), so that
    # what settles never leaves half a storm behind to open a second clock.
    refs = [replace(r, ended_at=None) if r.event_id in open_refs else r
            for r in reference_storms(gauge_facts)]
    mean = site.rain.gauges == "mean"
    groups = group_storms(_by_start([s for s in storms if s.gauge != MEAN_GAUGE]
                                    + ([] if mean else refs)), gap)
    if mean:
        groups += group_storms(_by_start([s for s in storms if s.gauge == MEAN_GAUGE] + refs),
                               gap)
    return [g for g in groups if all(s.ended_at is not None for s in g)
            and max(s.ended_at or 0 for s in g) + gap < horizon_ms]


def _by_start(storms: list[GaugeStorm]) -> list[GaugeStorm]:
    return sorted(storms, key=lambda s: (s.started_at, s.gauge))


def _settling_clocks(clocks: list[Clock], groups: list[list[GaugeStorm]],
                     clock_of_storm: dict[tuple[str, str], list[Clock]],
                     inspections: list[Inspection], action_needed: set[int],
                     horizon_ms: int) -> tuple[set[str], set[int]]:
    """The clocks that settle, and the inspections still needed (by ``id()``).

    A clock may settle once closed (or cut) before the horizon and, for a storm
    clock, its whole storm group final. An inspection goes only when every clock it
    closed goes (its fact lists them all), and routine clocks settle as a prefix
    of their chain: the candidates are narrowed until both hold.
    """
    candidates: set[str] = set()
    for group in groups:
        for s in group:
            candidates.update(c.clock_id for c in clock_of_storm.get((s.gauge, s.event_id), ())
                              if _ended(c) < horizon_ms)
    routine = [c for c in clocks if c.clock == "routine"]
    candidates.update(c.clock_id for c in routine if _ended(c) < horizon_ms)
    closes: dict[int, list[Clock]] = {}
    for clock in clocks:
        if clock.closed_by is not None:
            closes.setdefault(id(clock.closed_by), []).append(clock)
    while True:
        needed = action_needed | {id(i) for i in inspections if i.ts_ms >= horizon_ms or any(
            c.clock_id not in candidates for c in closes.get(id(i), ()))}
        narrowed = {cid for cid in candidates
                    if (c := _by_id(clocks, cid)) is not None
                    and (c.closed_by is None or id(c.closed_by) not in needed)}
        prefix: dict[str, bool] = {}
        for c in routine:  # each permit's chain settles as a prefix of itself
            prefix[c.chain] = prefix.get(c.chain, True) and c.clock_id in narrowed
            if not prefix[c.chain]:
                narrowed.discard(c.clock_id)
        if narrowed == candidates:
            return candidates, needed
        candidates = narrowed


def _drop_clocks(result: SiteClocks, candidates: set[str], out: Settled) -> set[str]:
    """Take the settling clocks out of ``result``, moving the routine chain's anchor past
    them; the ids of their facts."""
    settled_ids: set[str] = set()
    for clock in list(result.clocks):
        if clock.clock_id not in candidates:
            continue
        cf = result.per_clock.pop(clock.clock_id, None)
        if cf is not None:
            settled_ids.update(cf.facts)
        out.floors.pop(clock.clock_id, None)
        result.clocks.remove(clock)
        if clock.clock != "routine":
            continue
        current = out.anchor if clock.primary else out.anchors.get(clock.chain)
        if current is None or _ended(clock) > current.start_ms:
            # After a cut clock the chain starts afresh with the next active span.
            moved = Anchor(_ended(clock), strict=clock.closed_at is not None)
            if clock.primary:
                out.anchor = moved
            else:
                out.anchors[clock.chain] = moved
    return settled_ids


def _count_early_notices(result: SiteClocks, repeat_ms: int, horizon_ms: int,
                         out: Settled) -> set[str]:
    """Open clocks: count the reminders and overdue notices before the horizon (a
    ``ClockFloor`` in ``out.floors``) instead of keeping them; their fact ids."""
    settled_ids: set[str] = set()
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
                k = max(k, (fact.at_ms - parse_iso(body.due)) // repeat_ms + 1)
        cf.floor = out.floors[cid] = ClockFloor(k, frozenset(reminders))
    return settled_ids


def _action_inputs(site: SiteConfig, inspections: list[Inspection], horizon_ms: int
                   ) -> tuple[set[str], set[int], list[tuple[str, str]]]:
    """The corrective actions still open to change (every action of an inspection that
    asked for one of those, since its fact lists them all), the inspections they
    need (by ``id()``: that one, and those resolving its actions), and the
    fact ids of the actions that are final (``actions.final_fact_ids``)."""
    states = action_states(record_of(i) for i in inspections)
    pending = {s.id for s in states if not final_before(s, horizon_ms)}
    openers = [i for i in inspections if any(a.id in pending for a in i.corrective_actions)]
    kept = {a.id for i in openers for a in i.corrective_actions}
    needed = {id(i) for i in openers} | {id(i) for i in inspections
                                         if any(r in kept for r in i.resolves)}
    finals = [(s.id, fid) for s in states if s.id not in pending
              for fid in final_fact_ids(site, s)]
    return kept, needed, finals


def _by_id(clocks: list[Clock], clock_id: str) -> Clock | None:
    for clock in clocks:
        if clock.clock_id == clock_id:
            return clock
    return None


def _ended(clock: Clock) -> int:
    """When a clock stopped for good: closed by an inspection, or cut by a pause or the
    end of the active period; far in the future while it runs."""
    if clock.closed_at is not None:
        return clock.closed_at
    return clock.ends_at if clock.ends_at is not None else 2**62

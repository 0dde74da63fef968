"""Site storms: which gauge storm events make one storm of the site, and one clock.

    "... within 24 hours of any storm event producing 0.5 inch of precipitation or
    more."  — Chapter 134, § 134-9A(2)

Theory of operation
-------------------
The gauges' folds (``rain.py``) conclude each gauge's own storm events as
facts; ``gauge_storms`` rebuilds them from those facts, ``stale_spans`` the
times each gauge was stale (``gauges: all`` and ``mean`` leave those out), and
``qualifying_storms`` says which site storms qualify, for ``clocks.py`` to open
a storm clock each.

Site storms (monitor/README.md, "Site storms from several gauges"). Each gauge has
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

``group_storms`` is the older, transitive grouping (through sub-threshold
events too): no site storm reaches across two of its groups, so ``settle.py``
uses it to take whole spans of weather out of memory.

Reference storms (``weather.reference_opens_clock``). A ``gauge_disagrees``
that opens a clock (the reference stations saw the threshold over 24 hours
while a site gauge was stale or saw under a quarter of it) is a storm of the
site as well: ``reference_storms`` makes it a storm event of a pseudo-gauge
``reference:<gauge>``, qualified when the reference's 24 hours reached the
threshold, its extent the reference's windows plus the dry gap.
``with_references`` puts those beside the qualifying site storms by the same
first-to-qualify rule: one that overlaps a site storm (or another reference
storm) that qualified before it joins it and opens nothing, and a site storm
that a reference storm qualified before joins that one. So the same storm is
one clock, however it was seen.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...config import SiteConfig
from ...contract.events import (
    Fact,
    GaugeDisagrees,
    GaugeQualified,
    SensorRecovered,
    SensorStale,
    StormEnded,
    StormStarted,
)
from ...contract.times import MS_PER_HOUR, hours_ms, parse_iso
from .rain import ms_or_none

MEAN_GAUGE = "mean"
#: The pseudo-gauge of a reference storm is this prefix and the disagreeing gauge.
REFERENCE_PREFIX = "reference:"
#: The reference's window (``weather.py`` judges 24 hours of it).
WINDOW_MS = 24 * MS_PER_HOUR


def judged_gauge(site: SiteConfig, gauge: str) -> bool:
    """Whether the site's storms are judged on ``gauge``'s storm events: under ``gauges:
    mean`` on the averaged virtual gauge ``mean`` alone, otherwise on each real gauge
    (``any``, ``all``). A plot or a table of the site's storms shows these, so it shows
    what the alerts were decided on."""
    return (gauge == MEAN_GAUGE) == (site.rain.gauges == "mean")


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
    #: Qualified on rain revealed after a silence: the silence's start (rain.py).
    q_not_before: int | None = None
    #: A reference storm's station (``reference_storms``); None for a gauge's own.
    reference: str | None = None


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
            "q_uncertain_in": 0.0, "q_gauges": (body.gauge,), "ids": [], "q_not_before": None,
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
            rec["q_not_before"] = ms_or_none(body.qualified_not_before)
        else:
            rec["ended_at"] = fact.at_ms
    storms = []
    for rec in by_event.values():
        if rec["started_at"] is None:
            continue
        storms.append(GaugeStorm(rec["gauge"], rec["event_id"], rec["started_at"],
                                 rec["ended_at"], rec["qualified_at"], rec["q_total_in"],
                                 rec["q_max_24h_in"], rec["ended_at"], tuple(sorted(rec["ids"])),
                                 rec["q_uncertain_in"], rec["q_gauges"], rec["q_not_before"]))
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
    judged = [s for s in storms if judged_gauge(site, s.gauge)]
    if rules.gauges == "mean":
        return [SiteStorm(s, [s], s.q_gauges) for s in judged if s.qualified_at is not None]
    spans = spans or {}

    def stale(gauge: str, ts_ms: int) -> bool:
        return any(span.covers(ts_ms) for span in spans.get(gauge, ()))

    out = []
    gauge_ids = {g.id for g in site.gauges()}
    for group in site_storms(judged, hours_ms(rules.dry_gap_hours)):
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


def reference_storms(facts: Iterable[Fact]) -> list[GaugeStorm]:
    """The ``gauge_disagrees`` facts that open a clock, as storm events (module
    docstring): qualified at the fact's instant (the end of the first 24 hours in which
    the reference reached the threshold), with the reference's depth as its totals."""
    out = []
    for fact in facts:
        body = fact.body
        if not isinstance(body, GaugeDisagrees) or not body.opens_clock:
            continue
        window_to = parse_iso(body.window_to)
        start = min(parse_iso(body.window_from), fact.at_ms - WINDOW_MS)
        end = max(window_to, fact.at_ms)
        out.append(GaugeStorm(
            f"{REFERENCE_PREFIX}{body.gauge}", fact.id, start, end, fact.at_ms,
            body.reference_in, body.reference_in, end, (fact.id,), 0.0, (body.gauge,),
            reference=body.reference))
    out.sort(key=lambda s: (s.started_at, s.gauge))
    return out


def with_references(site_storms: list[SiteStorm], references: list[GaugeStorm],
                    gap_ms: int) -> list[SiteStorm]:
    """The qualifying site storms and the reference storms, one per storm (module
    docstring): in the order they qualified (a site storm first on a tie), each that
    overlaps one of the other kind already taken, or a reference storm already taken,
    joins it and is left out."""
    candidates = [(s.rep.qualified_at or 0, 0, s) for s in site_storms]
    # No gauge counted for a reference storm: its ``gauges`` is empty.
    candidates += [(r.qualified_at or 0, 1, SiteStorm(r, [r], ())) for r in references]
    candidates.sort(key=lambda c: (c[0], c[1], c[2].rep.gauge, c[2].rep.started_at))
    taken: list[tuple[int, SiteStorm]] = []
    for _, kind, storm in candidates:
        if not any((kind or other) and _overlaps(storm, taken_storm, gap_ms)
                   for other, taken_storm in taken):
            taken.append((kind, storm))
    return [storm for _, storm in taken]


def _overlaps(a: SiteStorm, b: SiteStorm, gap_ms: int) -> bool:
    """Whether any event of one site storm overlaps any of the other in extent."""
    return any(x.started_at < _extent_end(y, gap_ms) and y.started_at < _extent_end(x, gap_ms)
               for x in a.group for y in b.group)

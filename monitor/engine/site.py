"""One site in the engine: its timelines, the inputs of its clocks, and its silences.

``build_site`` makes a site's timelines from its configuration: the folds
every rule family declares (``rules/registry.py``: one per rain gauge, plus a
virtual ``mean`` gauge for ``gauges: mean``; one per sediment trap, per
turbidity pair, and per sensor for its health), and routes each sensor's
messages where the families say: readings to the rules, and ``status``
messages to the health of the sensor and, as heartbeats, to the health of the
``on_tip`` gauges of its node (and to the ``mean`` gauge, which leaves out the
gauges that are stale). The rest keeps what the
clocks read (``storm_facts``: the gauges' storm events, and with ``gauges:
all`` when each gauge was stale) and the silence of sensors never heard from
(``health.never_heard``) in step, as it keeps the pairs' unknown runs and the
notices they give (``unmonitored.py``), and saves and restores a site
(``dump_site``/``load_site``). The engine (``core.py``) drives all of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..config import SensorConfig, SiteConfig, TurbidityPair, WeatherConfig
from ..contract.events import (
    Event,
    Fact,
    GaugeDisagrees,
    SensorRecovered,
    SensorStale,
)
from ..contract.inputs import ActionStep, Inspection, Reading, ShutdownNotice, SiteClosure
from ..contract.times import minutes_ms
from ..rules.active import FirstRun, active_start_ms
from ..rules.clocks import clocks
from ..rules.clocks.clocks import ClockFloor, SiteClocks
from ..rules.clocks.permitclocks import PermitRules
from ..rules.clocks.routine import Anchor
from ..rules.family import FoldInputs
from ..rules.health.health import never_heard
from ..rules.permits.duties import Permit, permits_of
from ..rules.rain import sitestorms
from ..rules.rain.rain import GaugeFold
from ..rules.registry import FAMILIES
from ..rules.turbidity import unmonitored
from ..rules.turbidity.unmonitored import Run, Unknown, open_unknown, run_of, runs_by_pair
from ..rules.weather.weather import (
    WINDOW_MS,
    GaugeRecord,
    WeatherBook,
    disagreement_truth,
    forecast_truth,
    prune_forecasts,
    prune_hours,
    reference_cut_ms,
    reference_start_ms,
)
from .timeline import Source, Timeline
from .window import Window

T = TypeVar("T")


@dataclass
class SiteEngine:
    """The timelines and clock inputs of one site."""

    config: SiteConfig
    #: The timelines by group (a family's ``group``, ``rules/family.py``) and name.
    groups: dict[str, dict[str, Timeline[Any]]] = field(default_factory=lambda: {
        f.group: {} for f in FAMILIES if f.group is not None})
    routes: dict[str, list[Timeline[Any]]] = field(default_factory=dict)
    #: Where each sensor's ``status`` messages go, and whose sign of life they are.
    status_routes: dict[str, list[Timeline[Any]]] = field(default_factory=dict)
    heard_by: dict[str, list[str]] = field(default_factory=dict)
    #: Inspections the clocks still need (older ones have settled).
    inspections: list[Inspection] = field(default_factory=list)
    inspection_keys: set[tuple[int, str, str]] = field(default_factory=set)
    last_inspection_ms: int | None = None
    first_seen_ms: int | None = None
    #: The start of the site's active period (``active_start_ms``), once per site: every
    #: reading is compared with it.
    active_from_ms: int | None = None
    #: Where the active period of a site without ``active_since`` begins (``active.py``).
    first_run: FirstRun = field(default_factory=lambda: FirstRun(0))
    #: The newest event time of the site's inputs, and the ``COMPACT_EVERY_MS`` block of
    #: it at the last compaction (``core.py``): each site's horizon follows its own input.
    newest_ms: int | None = None
    compacted_block: int | None = None
    compacted_ms: int | None = None
    clocks: SiteClocks = field(default_factory=SiteClocks)
    #: The *now* of the last clock computation: a restore recomputes at this
    #: instant, so it holds exactly the clock facts that were published.
    clocks_now_ms: int | None = None
    #: The gauges' storm facts the clocks still need, by id (they outlive the
    #: gauge timelines' window while a storm's clock is open).
    storm_facts: dict[str, Fact] = field(default_factory=dict)
    anchor: Anchor | None = None
    #: The routine chains' anchors of the site's other permits, by permit key.
    anchors: dict[str, Anchor] = field(default_factory=dict)
    floors: dict[str, ClockFloor] = field(default_factory=dict)
    #: The permits the site answers to, as the clocks read them (``rules/permits``,
    #: ``rules/clocks/permitclocks.py``): resolved once, not at every computation.
    permit_rules: tuple[PermitRules, ...] = ()
    #: Final stabilization, once recorded (``site close``).
    closure: SiteClosure | None = None
    #: Temporary shutdowns and their ends (``site shutdown``, ``site resume``), in time
    #: order: few in a season, all kept.
    shutdowns: tuple[ShutdownNotice, ...] = ()
    #: The steps of the corrective actions still in memory, by key (``steps.py``).
    action_steps: dict[tuple[str, str, int, str], ActionStep] = field(default_factory=dict)
    #: ``inspection_missed`` facts that have settled (left memory), for the season count.
    missed_weeks_settled: int = 0
    #: Accepted readings per sensor, ever (status messages not counted).
    readings: dict[str, int] = field(default_factory=dict)
    #: Each sensor's first message (status included), and the silence before it
    #: (``health.never_heard``); sensors whose silence is final are ``silence_settled``.
    first_ms: dict[str, int] = field(default_factory=dict)
    silence: dict[str, Fact] = field(default_factory=dict)
    silence_settled: set[str] = field(default_factory=set)
    #: The weather inputs (``weather.py``), the ids of the weather facts that held at
    #: the last computation, and whether gauge readings came since.
    weather: WeatherBook = field(default_factory=WeatherBook)
    weather_ids: set[str] = field(default_factory=set)
    weather_dirty: bool = False
    #: The forecast facts of the current set of issues (None: to be worked out), so a
    #: tick after gauge readings recomputes only the comparison with the reference.
    forecast_facts: dict[str, Fact] | None = None
    #: The pairs' unknown runs by id (they outlive the pair timelines' window until
    #: their episode is final), the notices they give (``unmonitored.py``), the *now*
    #: those were worked out at, and when the next one falls due if nothing changes.
    unknown_runs: dict[str, Run] = field(default_factory=dict)
    notices: dict[str, Fact] = field(default_factory=dict)
    notices_now_ms: int | None = None
    notice_next_ms: int | None = None

    @property
    def permits(self) -> tuple[Permit, ...]:
        """The permits the site answers to, with their duties."""
        return tuple(r.permit for r in self.permit_rules)

    def note_reading_for_weather(self, ts_ms: int) -> None:
        """The reference compares the gauges' readings within its windows: the next
        tick looks again when a reading lies in one of them."""
        until = self.weather.rainy_until
        self.weather_dirty = self.weather_dirty or (until is not None and ts_ms < until)

    def all_timelines(self) -> Iterable[tuple[str, Timeline[Any]]]:
        for group, tls in self.groups.items():
            for name, tl in tls.items():
                yield f"{group}:{name}", tl

    def timeline(self, name: str) -> Timeline[Any]:
        """The timeline named ``group:name``."""
        group, ident = name.split(":", 1)
        return self.groups[group][ident]

    # The groups the engine's own bookkeeping reads (storm facts, weather, summary).
    @property
    def gauges(self) -> dict[str, Timeline[Any]]:
        return self.groups["gauge"]

    @property
    def traps(self) -> dict[str, Timeline[Any]]:
        return self.groups["trap"]

    @property
    def pairs(self) -> dict[str, Timeline[Any]]:
        return self.groups["pair"]

    @property
    def health(self) -> dict[str, Timeline[Any]]:
        return self.groups["health"]


def folds(site: SiteConfig) -> dict[str, FoldInputs]:
    """Every fold of a site by timeline name (``group:name``), with the sensors whose
    readings it takes and the sensors whose status messages it takes: each family's
    (``rules/registry.py``), in the registry's order."""
    return {name: inputs for family in FAMILIES for name, inputs in family.folds(site).items()}


def source_of(window: Window, site: str, sensors: Sequence[str],
              status_of: Sequence[str]) -> Source:
    wanted = set(status_of)

    def read(since_ms: int) -> list[Reading]:
        found = window.readings(site, sorted(set(sensors) | wanted), since_ms)
        return [r for r in found if (r.sensor in wanted if r.kind == "status"
                                     else r.sensor in sensors)]
    return read


def build_site(site: SiteConfig, window: Window | None,
                restored: dict[str, Any] | None = None) -> SiteEngine:
    se = SiteEngine(site, first_run=FirstRun.for_site(site),
                    active_from_ms=active_start_ms(site),
                    permit_rules=tuple(PermitRules.of(site, p) for p in permits_of(site)))
    for name, (fold, sensors, status_of) in folds(site).items():
        group, ident = name.split(":", 1)
        source = source_of(window, site.id, sensors, status_of) if window is not None else None
        data = (restored or {}).get(name)
        tl: Timeline[Any] = (Timeline.restore(fold, data, source) if data is not None
                             else Timeline(fold, source))
        se.groups[group][ident] = tl
        for sid in status_of:
            se.status_routes.setdefault(sid, []).append(tl)
            if group == "health":
                se.heard_by.setdefault(sid, []).append(ident)
    # Which timelines each sensor's messages go to.
    for s in site.sensors:
        se.routes[s.id] = [se.timeline(name) for family in FAMILIES
                           for name in family.routes(site, s)]
    return se


def dump_site(se: SiteEngine) -> dict[str, Any]:
    return {
        "timelines": {name: tl.dump() for name, tl in se.all_timelines()},
        "inspections": [i.to_json() for i in se.inspections],
        "last_inspection_ms": se.last_inspection_ms,
        "first_seen_ms": se.first_seen_ms,
        "first_run": se.first_run.to_json(),
        "newest_ms": se.newest_ms,
        # When the next compaction runs is part of the state: the restored
        # engine must forget what the uninterrupted one forgets, when it does.
        "compacted_block": se.compacted_block,
        "compacted_ms": se.compacted_ms,
        "clocks_now_ms": se.clocks_now_ms,
        "storm_facts": [f.to_json() for f in se.storm_facts.values()],
        "anchor": se.anchor.to_json() if se.anchor is not None else None,
        "anchors": {key: a.to_json() for key, a in se.anchors.items()},
        "floors": {cid: floor.to_json() for cid, floor in se.floors.items()},
        "readings": se.readings,
        "first_ms": se.first_ms,
        "silence_settled": sorted(se.silence_settled),
        "closure": se.closure.to_json() if se.closure is not None else None,
        "shutdowns": [n.to_json() for n in se.shutdowns],
        "action_steps": [st.to_json() for st in se.action_steps.values()],
        "missed_weeks_settled": se.missed_weeks_settled,
        "weather": se.weather.dump(),
        "weather_ids": sorted(se.weather_ids),
        "weather_dirty": se.weather_dirty,
        "unknown_runs": [run.to_json() for run in se.unknown_runs.values()],
        "notices_now_ms": se.notices_now_ms,
    }


def load_site(site: SiteConfig, window: Window | None, sd: dict[str, Any]) -> SiteEngine:
    se = build_site(site, window, sd.get("timelines"))
    for raw in sd.get("inspections", []):
        insp = Inspection.from_json(raw)
        se.inspections.append(insp)
        se.inspection_keys.add((insp.ts_ms, insp.inspector, insp.kind))
    se.last_inspection_ms = sd.get("last_inspection_ms")
    se.first_seen_ms = sd.get("first_seen_ms")
    se.first_run = FirstRun.for_site(site, [int(t) for t in sd.get("first_run", [])])
    se.newest_ms = sd.get("newest_ms")
    se.compacted_block = sd.get("compacted_block")
    se.compacted_ms = sd.get("compacted_ms")
    se.clocks_now_ms = sd.get("clocks_now_ms")
    se.storm_facts = {f.id: f for f in (Fact.from_json(raw) for raw in sd.get("storm_facts", []))}
    anchor = sd.get("anchor")
    se.anchor = Anchor.from_json(anchor) if anchor is not None else None
    se.anchors = {str(k): Anchor.from_json(v) for k, v in sd.get("anchors", {}).items()}
    se.floors = {cid: ClockFloor.from_json(v) for cid, v in sd.get("floors", {}).items()}
    se.readings = {str(k): int(v) for k, v in sd.get("readings", {}).items()}
    se.first_ms = {str(k): int(v) for k, v in sd.get("first_ms", {}).items()}
    se.silence_settled = set(sd.get("silence_settled", []))
    closure = sd.get("closure")
    se.closure = SiteClosure.from_json(closure) if closure is not None else None
    se.shutdowns = tuple(ShutdownNotice.from_json(n) for n in sd.get("shutdowns", []))
    se.action_steps = {st.key: st for st in map(ActionStep.from_json, sd.get("action_steps", []))}
    se.missed_weeks_settled = int(sd.get("missed_weeks_settled", 0))
    se.weather = WeatherBook.load(sd.get("weather", {}))
    se.weather_ids = set(sd.get("weather_ids", []))
    se.weather_dirty = bool(sd.get("weather_dirty", False))
    se.silence = never_heard(site, se.first_ms, monitoring_start(se), se.clocks_now_ms,
                             frozenset(se.silence_settled))
    se.unknown_runs = {run.fact_id: run for run in (Run.from_json(raw)
                                                    for raw in sd.get("unknown_runs", []))}
    se.notices_now_ms = sd.get("notices_now_ms")
    se.notices, se.notice_next_ms = notice_truth(se, se.notices_now_ms)
    recompute_clocks(se, se.clocks_now_ms)
    return se


def add_shutdown(se: SiteEngine, notice: ShutdownNotice) -> bool:
    """Keep a shutdown notice, in time order; False when the same one (instant and kind)
    is held already."""
    if any((n.ts_ms, n.resume) == (notice.ts_ms, notice.resume) for n in se.shutdowns):
        return False
    se.shutdowns = tuple(sorted((*se.shutdowns, notice), key=lambda n: (n.ts_ms, n.resume)))
    return True


def recompute_clocks(se: SiteEngine, now_ms: int | None) -> None:
    """The site's clocks at ``now_ms`` from its storm facts and inspections."""
    se.clocks_now_ms = now_ms
    se.clocks = clocks.compute(se.config, list(se.storm_facts.values()), se.inspections,
                               se.first_run.start_ms, now_ms, se.clocks, anchor=se.anchor,
                               floors=se.floors, closure=se.closure, permit_rules=se.permit_rules,
                               anchors=se.anchors, steps=tuple(se.action_steps.values()),
                               shutdowns=se.shutdowns)


def monitoring_start(se: SiteEngine) -> int | None:
    """The later of ``active_since`` and the site's first message; ``active_since``
    alone for a site never heard from (an active site that is silent is not fine)."""
    active = se.active_from_ms
    if active is None or se.first_seen_ms is None:
        return active if active is not None else se.first_seen_ms
    return max(active, se.first_seen_ms)


def prune_stale_spans(se: SiteEngine, horizon_ms: int) -> None:
    """Drop the gauges' stale spans that ended before the horizon and before every
    storm the clocks still read began: no qualification will ask about them again."""
    limit = min([horizon_ms] + [f.at_ms for f in se.storm_facts.values()
                                if f.type == "storm_started"])
    for spans in sitestorms.stale_spans(se.storm_facts.values()).values():
        for span in spans:
            if span.end_ms is not None and span.end_ms <= limit:
                for fid in span.fact_ids:
                    del se.storm_facts[fid]


def settle_silence(se: SiteEngine, horizon_ms: int) -> list[str]:
    """The silence facts of sensors heard from since that lie wholly before the horizon
    are final: their ids. (A sensor still never heard from keeps its open fact.)"""
    final: list[str] = []
    for sensor in se.config.sensors:
        if sensor.id not in se.first_ms:
            continue
        mine = [f for f in se.silence.values()
                if isinstance(f.body, SensorStale | SensorRecovered) and f.body.sensor == sensor.id]
        if mine and all(f.at_ms < horizon_ms for f in mine):
            se.silence_settled.add(sensor.id)
            for f in mine:
                final.append(f.id)
                del se.silence[f.id]
    return final


def note_unknown_runs(se: SiteEngine, truth: dict[str, Fact], changed: Iterable[str]) -> bool:
    """Mirror a pair timeline's unknown runs into ``unknown_runs``; True if any changed."""
    return mirror(se.unknown_runs, truth, changed, run_of)


def mirror(kept: dict[str, T], truth: Mapping[str, Fact], changed: Iterable[str],
           wanted: Callable[[Fact], T | None]) -> bool:
    """Keep in ``kept`` what ``wanted`` makes of the facts among the ``changed`` ids of a
    timeline's ``truth`` as they are now (None: not wanted; a changed id gone from the
    truth, or no longer wanted, leaves ``kept``); True if ``kept`` changed."""
    dirty = False
    for fid in changed:
        fact = truth.get(fid)
        value = None if fact is None else wanted(fact)
        if value is not None:
            if kept.get(fid) != value:
                kept[fid] = value
                dirty = True
        elif kept.pop(fid, None) is not None:
            dirty = True
    return dirty


def notice_truth(se: SiteEngine, now_ms: int | None) -> tuple[dict[str, Fact], int | None]:
    """The pairs' ``turbidity_unmonitored``/``turbidity_monitored`` facts that hold at
    ``now_ms``, and when the next one falls due (``unmonitored.notices``)."""
    return unmonitored.notices(se.config, runs_by_pair(se.unknown_runs.values()),
                               _heard(se), se.first_seen_ms, _closed_ms(se), now_ms)


def pair_unknown(se: SiteEngine, pair: TurbidityPair) -> Unknown | None:
    """Why the pair's contrast is unknown now, since when, and when its notice is due."""
    return open_unknown(se.config, pair, runs_by_pair(se.unknown_runs.values()), _heard(se),
                        se.first_seen_ms, _closed_ms(se))


def settle_notices(se: SiteEngine) -> list[str]:
    """Drop the runs of the episodes that became final (their timeline let them go) and
    return the ids of their notices, which are final too."""
    runs, notices = unmonitored.settle(se.config, runs_by_pair(se.unknown_runs.values()),
                                       _heard(se), se.first_seen_ms,
                                       {pid: tl.truth for pid, tl in se.pairs.items()})
    for fid in runs:
        se.unknown_runs.pop(fid, None)
    return [fid for fid in notices if se.notices.pop(fid, None) is not None]


def _heard(se: SiteEngine) -> dict[str, bool]:
    return {pid: bool(tl.state.heard) for pid, tl in se.pairs.items()}


def _closed_ms(se: SiteEngine) -> int | None:
    return se.closure.ts_ms if se.closure is not None else None


def weather_facts(se: SiteEngine, weather: WeatherConfig, window: Window | None
                  ) -> dict[str, Fact]:
    """The site's ``storm_forecast`` and ``gauge_disagrees`` facts that hold (``weather.py``),
    the gauges' side from the book's tail and, after it, the window (or, without one,
    the timelines' memory)."""
    if se.forecast_facts is None:
        se.forecast_facts = forecast_truth(se.config, weather, se.weather)
    truth = dict(se.forecast_facts)
    start = reference_start_ms(se.config, weather, se.weather)
    if start is None:
        return truth
    records = []
    for sensor in se.config.gauges():
        stale_ms = _stale_ms(sensor)
        since = start - (stale_ms or 0) - 1
        kept = [m for m in se.weather.tails.get(sensor.id, ()) if m[0] >= since]
        until = se.weather.tail_until
        # After a compaction the tail holds what came before it: read on from there.
        fresh = _gauge_messages(se, sensor, window, since if until is None else until, since)
        records.append(GaugeRecord(sensor.id, (*kept, *fresh), stale_ms))
    return {**truth, **disagreement_truth(se.config, weather, se.weather, records)}


def _stale_ms(sensor: SensorConfig) -> int | None:
    """How long a silence makes the gauge stale for rule 3 (None: never judged)."""
    if sensor.on_tip:
        return None if sensor.heartbeat_minutes is None else minutes_ms(sensor.heartbeat_minutes)
    return minutes_ms(sensor.stale_after_minutes)


def _gauge_messages(se: SiteEngine, sensor: SensorConfig, window: Window | None,
                    read_from_ms: int, keep_from_ms: int, before_ms: int | None = None
                    ) -> list[tuple[int, float]]:
    """The gauge's signs of life read from ``read_from_ms`` (before ``before_ms``) as
    (time, depth in inches), those from ``keep_from_ms`` on; its depths counted on
    from the book's baseline counter (what the gauge's counter read before them)."""
    rain = [r for r in _signs_of_life(se, sensor, window, read_from_ms)
            if before_ms is None or r.ts_ms < before_ms]
    baseline = se.weather.baselines.get(sensor.id)
    fold = se.gauges[sensor.id].fold
    assert isinstance(fold, GaugeFold)
    counted = [r for r in rain if r.sensor == sensor.id and r.kind != "status"]
    depth: dict[int, float] = {}
    for ts, inches in fold.depths_in([baseline, *counted] if baseline is not None else counted):
        depth[ts] = depth.get(ts, 0.0) + inches
    return [(ts, depth.get(ts, 0.0)) for ts in sorted({r.ts_ms for r in rain})
            if ts >= keep_from_ms]


def _signs_of_life(se: SiteEngine, sensor: SensorConfig, window: Window | None,
                   since_ms: int) -> list[Reading]:
    """The gauge's messages, and the status of its node for an on_tip gauge, from
    ``since_ms``: the window's, or without one the gauge's health timeline's (which
    takes exactly those and keeps them all)."""
    found = (window.readings(se.config.id, se.config.heartbeat_sensors(sensor), since_ms)
             if window is not None else
             [r for _, r in se.health[sensor.id].recent if r.ts_ms >= since_ms])
    return [r for r in found if r.sensor == sensor.id or r.kind == "status"]


def prune_weather(se: SiteEngine, weather: WeatherConfig, window: Window | None,
                  published: Mapping[str, Event], horizon_ms: int) -> list[str]:
    """At a compaction, before the readings before ``horizon_ms`` leave memory: keep the
    gauges' side of the reference windows as the book's tail, prune the book
    (``weather.py``, bounded memory), and return the ids of the weather facts that are
    final."""
    book = se.weather
    for sensor in se.config.gauges():
        since = book.tail_until if book.tail_until is not None else -(2**62)
        book.tails.setdefault(sensor.id, []).extend(
            _gauge_messages(se, sensor, window, since, since, before_ms=horizon_ms))
        rain = [r for r in _signs_of_life(se, sensor, window, since)
                if r.sensor == sensor.id and r.kind != "status" and r.ts_ms < horizon_ms]
        if rain:
            fold = se.gauges[sensor.id].fold
            assert isinstance(fold, GaugeFold)
            book.baselines[sensor.id] = max(rain, key=fold.key)
    book.tail_until = horizon_ms
    final = prune_forecasts(se.config, weather, book, horizon_ms)
    stations = weather.stations_of(se.config.id)
    cut = reference_cut_ms(stations, book, horizon_ms)
    final += [fid for fid in se.weather_ids if (e := published.get(fid)) is not None
              and e.type == GaugeDisagrees.TYPE and e.at_ms <= cut]
    stale = max([_stale_ms(g) or 0 for g in se.config.gauges()] or [0])
    prune_hours(book, stations, cut, cut - WINDOW_MS - stale - 1)
    se.weather_ids -= set(final)
    se.forecast_facts = None
    return final

"""The engine: readings and ticks in, domain events out. No I/O, no wall clock.

Theory of operation
-------------------
Each site owns a set of timelines (see ``timeline.py``): one per rain gauge
(plus a virtual ``mean`` gauge for ``gauges: mean``), one per sediment trap,
one per turbidity pair, and one per sensor for its health. A reading is routed
to every timeline that uses its sensor. The storm events of the gauges, the
inspections and *now* feed the site's clocks (``clocks.py``), recomputed
whenever one of them changes.

The engine keeps, for every fact id ever concluded, the last version it
published. After each ``apply``/``tick`` it compares the facts that may have
changed with that record and returns what is new (revision 0), what changed
(the same id, revision + 1) and what no longer holds (revision + 1 with
``retracted``). The final set of latest, non-retracted revisions is a function
of the set of readings and inspections and of the latest ``now``: arrival
order and duplicates do not change it.

*Now* is the later of the newest tick and the newest event time seen, so a
replay that never ticks still lets time pass with its readings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..config import Config, SiteConfig
from . import clocks
from .clocks import MEAN_GAUGE, SiteClocks
from .events import Event, Fact
from .health import HealthFold
from .inputs import Inspection, Reading
from .rain import GAUGE_QUALIFIED, MICRO_PER_IN, GaugeFold
from .timeline import Timeline
from .times import MS_PER_DAY, MS_PER_HOUR, iso
from .traps import TrapFold
from .turbidity import PairFold

#: Readings this much older than the newest are counted as late (DESIGN § 4).
LATE_NOTE_MS = MS_PER_HOUR
#: Compaction keeps a day beyond the lateness bound, so a reading the shell
#: accepted (checked against its own reference clock) always lands after the base.
COMPACT_MARGIN_MS = MS_PER_DAY
COMPACT_EVERY = 2048


@dataclass
class Stats:
    accepted: int = 0
    duplicates: int = 0
    too_old: int = 0
    late: int = 0

    def to_json(self) -> dict[str, int]:
        return {"accepted": self.accepted, "duplicates": self.duplicates,
                "too_old": self.too_old, "late": self.late}


@dataclass
class SiteEngine:
    """The timelines and clock inputs of one site."""

    config: SiteConfig
    gauges: dict[str, Timeline[Any]] = field(default_factory=dict)
    traps: dict[str, Timeline[Any]] = field(default_factory=dict)
    pairs: dict[str, Timeline[Any]] = field(default_factory=dict)
    health: dict[str, Timeline[Any]] = field(default_factory=dict)
    routes: dict[str, list[Timeline[Any]]] = field(default_factory=dict)
    inspections: list[Inspection] = field(default_factory=list)
    inspection_keys: set[tuple[int, str, str]] = field(default_factory=set)
    first_seen_ms: int | None = None
    compacted_ms: int | None = None
    clocks: SiteClocks = field(default_factory=SiteClocks)
    #: The *now* of the last clock computation: a restore recomputes at this
    #: instant, so it holds exactly the clock facts that were published.
    clocks_now_ms: int | None = None

    def all_timelines(self) -> Iterable[tuple[str, Timeline[Any]]]:
        for group, tls in (("gauge", self.gauges), ("trap", self.traps), ("pair", self.pairs),
                           ("health", self.health)):
            for name, tl in tls.items():
                yield f"{group}:{name}", tl


def _folds(site: SiteConfig) -> dict[str, Any]:
    """Every fold of a site, by timeline name (``group:name``)."""
    folds: dict[str, Any] = {}
    gauges = site.gauges()
    for g in gauges:
        folds[f"gauge:{g.id}"] = GaugeFold(site.id, g.id, site.rain, {g.id: g.in_per_tip_value})
    if site.rain.gauges == "mean" and gauges:
        folds[f"gauge:{MEAN_GAUGE}"] = GaugeFold(
            site.id, MEAN_GAUGE, site.rain, {g.id: g.in_per_tip_value for g in gauges},
            units=MICRO_PER_IN * len(gauges), emit_resets=False)
    for trap in site.traps:
        sensor = site.sensor(trap.sensor)
        assert sensor is not None
        folds[f"trap:{trap.id}"] = TrapFold(site.id, trap, sensor)
    for pair in site.turbidity_pairs:
        up, down = site.sensor(pair.upstream), site.sensor(pair.downstream)
        assert up is not None and down is not None
        folds[f"pair:{pair.id}"] = PairFold(site.id, pair, up, down)
    for s in site.sensors:
        folds[f"health:{s.id}"] = HealthFold(site.id, s)
    return folds


def _build_site(site: SiteConfig, restored: dict[str, Any] | None = None) -> SiteEngine:
    se = SiteEngine(site)
    groups = {"gauge": se.gauges, "trap": se.traps, "pair": se.pairs, "health": se.health}
    for name, fold in _folds(site).items():
        group, ident = name.split(":", 1)
        data = (restored or {}).get(name)
        tl: Timeline[Any] = Timeline.restore(fold, data) if data is not None else Timeline(fold)
        groups[group][ident] = tl
    # Which timelines each sensor's messages go to.
    for s in site.sensors:
        targets: list[Timeline[Any]] = []
        if s.kind == "rain":
            targets.append(se.gauges[s.id])
            if MEAN_GAUGE in se.gauges:
                targets.append(se.gauges[MEAN_GAUGE])
        targets += [se.traps[t.id] for t in site.traps if t.sensor == s.id]
        targets += [se.pairs[p.id] for p in site.turbidity_pairs
                    if s.id in (p.upstream, p.downstream)]
        se.routes[s.id] = targets
    return se


class Engine:
    """The compliance engine for every site of one configuration."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.sites: dict[str, SiteEngine] = {s.id: _build_site(s) for s in config.sites}
        self.published: dict[str, Event] = {}
        self.watermark_ms: int | None = None
        self.tick_ms: int | None = None
        self.stats = Stats()
        self._since_compact = 0

    # ------------------------------------------------------------------ inputs

    @property
    def now_ms(self) -> int | None:
        """Event-time now: the newest tick or the newest event time seen."""
        if self.tick_ms is None:
            return self.watermark_ms
        if self.watermark_ms is None:
            return self.tick_ms
        return max(self.tick_ms, self.watermark_ms)

    def apply(self, item: Reading | Inspection) -> list[Event]:
        """Take one accepted reading or inspection; return the events it causes."""
        se = self.sites.get(item.site)
        if se is None:
            raise KeyError(f"unknown site {item.site!r}")
        if isinstance(item, Inspection):
            return self._apply_inspection(se, item)
        return self._apply_reading(se, item)

    def apply_many(self, items: Iterable[Reading | Inspection]) -> list[Event]:
        out: list[Event] = []
        for item in items:
            out += self.apply(item)
        return out

    def tick(self, now_ms: int) -> list[Event]:
        """Let time pass to ``now_ms`` (wall clock in the daemon, last reading in replay)."""
        # An older tick still settles the tails readings have touched since the last one.
        self.tick_ms = now_ms if self.tick_ms is None else max(self.tick_ms, now_ms)
        now_ms = self.tick_ms
        out: list[Event] = []
        for se in self.sites.values():
            for _, tl in se.all_timelines():
                changed = tl.advance_to(now_ms)
                if changed:
                    out += self._publish(tl.truth, changed)
            out += self._recompute_clocks(se)
        return _ordered(out)

    # ------------------------------------------------------------------ queries

    def current_events(self) -> list[Event]:
        """The final set: the latest revision of every fact that still holds."""
        return _ordered([e for e in self.published.values() if not e.retracted])

    def clocks(self, site_id: str) -> list[clocks.Clock]:
        return list(self.sites[site_id].clocks.clocks)

    def site_engine(self, site_id: str) -> SiteEngine:
        return self.sites[site_id]

    # ------------------------------------------------------------------ internals

    def _apply_reading(self, se: SiteEngine, reading: Reading) -> list[Event]:
        site = se.config
        health = se.health.get(reading.sensor)
        if health is None:
            raise KeyError(f"unknown sensor {reading.sensor!r} of site {site.id!r}")
        ts = reading.ts_ms
        if se.compacted_ms is not None and ts < se.compacted_ms:
            # Older than what was already folded into the timelines' base state.
            self.stats.too_old += 1
            return []
        targets = [] if reading.kind == "status" else list(se.routes.get(reading.sensor, ()))
        targets.append(health)
        if self.watermark_ms is not None and self.watermark_ms - ts > LATE_NOTE_MS:
            self.stats.late += 1
        out: list[Event] = []
        clocks_dirty = False
        inserted = False
        for tl in targets:
            changed = tl.insert(reading)
            if changed is None:
                continue
            inserted = True
            if not changed:
                continue
            out += self._publish(tl.truth, changed)
            if tl is not health and any(
                    (tl.truth.get(fid) or _GONE).type in _STORM_TYPES for fid in changed):
                clocks_dirty = True
            if tl is not health and any(fid not in tl.truth for fid in changed):
                clocks_dirty = True
        if not inserted and targets:
            # Every timeline knew this message already: a redelivery.
            self.stats.duplicates += 1
            return []
        self.stats.accepted += 1
        if se.first_seen_ms is None or ts < se.first_seen_ms:
            se.first_seen_ms = ts
            clocks_dirty = clocks_dirty or (site.active_since is None)
        self._advance_watermark(ts)
        if clocks_dirty:
            out += self._recompute_clocks(se)
        self._since_compact += 1
        if self._since_compact >= COMPACT_EVERY:
            self._compact()
        return _ordered(out)

    def _apply_inspection(self, se: SiteEngine, insp: Inspection) -> list[Event]:
        key = (insp.ts_ms, insp.inspector, insp.kind)
        if key in se.inspection_keys:
            self.stats.duplicates += 1
            return []
        se.inspection_keys.add(key)
        se.inspections.append(insp)
        self.stats.accepted += 1
        self._advance_watermark(insp.ts_ms)
        return _ordered(self._recompute_clocks(se))

    def _advance_watermark(self, ts: int) -> None:
        if self.watermark_ms is None or ts > self.watermark_ms:
            self.watermark_ms = ts

    def _recompute_clocks(self, se: SiteEngine) -> list[Event]:
        gauge_facts = [f for tl in se.gauges.values() for f in tl.truth.values()
                       if f.type in _STORM_TYPES]
        se.clocks_now_ms = self.now_ms
        se.clocks = clocks.compute(se.config, gauge_facts, se.inspections, se.first_seen_ms,
                                   self.now_ms, se.clocks)
        return self._publish(se.clocks.facts, se.clocks.changed)

    def _publish(self, truth: dict[str, Fact], changed: Iterable[str]) -> list[Event]:
        out = []
        for fid in changed:
            fact = truth.get(fid)
            old = self.published.get(fid)
            if fact is not None and fact.type.startswith("_"):
                continue
            if fact is None:
                if old is not None and not old.retracted:
                    event = Event(old.fact, old.revision + 1, retracted=True)
                    self.published[fid] = event
                    out.append(event)
                continue
            if old is None:
                event = Event(fact, 0)
            elif old.retracted or old.fact != fact:
                event = Event(fact, old.revision + 1)
            else:
                continue
            self.published[fid] = event
            out.append(event)
        return out

    def _compact(self) -> None:
        self._since_compact = 0
        if self.watermark_ms is None:
            return
        for se in self.sites.values():
            horizon = (self.watermark_ms - round(se.config.lateness_days * MS_PER_DAY)
                       - COMPACT_MARGIN_MS)
            for _, tl in se.all_timelines():
                tl.compact(horizon)
            se.compacted_ms = horizon

    def horizon_ms(self, site_id: str, ref_ms: int) -> int:
        """The oldest event time still accepted for a site, against ``ref_ms``."""
        return ref_ms - round(self.sites[site_id].config.lateness_days * MS_PER_DAY)

    # ------------------------------------------------------------------ persistence

    def dump(self) -> dict[str, Any]:
        """All state as JSON-ready data; ``Engine.restore`` gives the same engine back."""
        return {
            "version": 1,
            "watermark_ms": self.watermark_ms,
            "tick_ms": self.tick_ms,
            "stats": self.stats.to_json(),
            "published": [e.to_json() for e in self.published.values()],
            "sites": {
                sid: {
                    "timelines": {name: tl.dump() for name, tl in se.all_timelines()},
                    "inspections": [i.to_json() for i in se.inspections],
                    "first_seen_ms": se.first_seen_ms,
                    "compacted_ms": se.compacted_ms,
                    "clocks_now_ms": se.clocks_now_ms,
                }
                for sid, se in self.sites.items()
            },
        }

    @classmethod
    def restore(cls, config: Config, data: dict[str, Any]) -> Engine:
        eng = cls.__new__(cls)
        eng.config = config
        eng.watermark_ms = data["watermark_ms"]
        eng.tick_ms = data["tick_ms"]
        eng.stats = Stats(**data["stats"])
        eng._since_compact = 0
        eng.published = {}
        for raw in data["published"]:
            event = Event.from_json(raw)
            eng.published[event.id] = event
        eng.sites = {}
        for site in config.sites:
            sd = data["sites"].get(site.id, {})
            se = _build_site(site, sd.get("timelines"))
            for raw in sd.get("inspections", []):
                insp = Inspection.from_json(raw)
                se.inspections.append(insp)
                se.inspection_keys.add((insp.ts_ms, insp.inspector, insp.kind))
            se.first_seen_ms = sd.get("first_seen_ms")
            se.compacted_ms = sd.get("compacted_ms")
            se.clocks_now_ms = sd.get("clocks_now_ms")
            se.clocks = clocks.compute(site, [f for tl in se.gauges.values()
                                              for f in tl.truth.values()
                                              if f.type in _STORM_TYPES],
                                       se.inspections, se.first_seen_ms, se.clocks_now_ms)
            eng.sites[site.id] = se
        return eng


_STORM_TYPES = frozenset({"storm_started", "storm_ended", GAUGE_QUALIFIED})
_GONE = Fact("", "", 0, "")


def _ordered(events: list[Event]) -> list[Event]:
    return sorted(events, key=lambda e: (e.fact.sort_key(), e.revision))


def describe_time(ts_ms: int | None) -> str | None:
    return iso(ts_ms) if ts_ms is not None else None

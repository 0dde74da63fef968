"""The engine: readings and ticks in, domain events out. No I/O, no wall clock.

Theory of operation
-------------------
Each site owns a set of timelines (see ``timeline.py``, built by ``site.py``):
one per rain gauge (plus a virtual ``mean`` gauge for ``gauges: mean``), one
per sediment trap, one per turbidity pair, and one per sensor for its health. A reading is routed
to every timeline that uses its sensor. The storm events of the gauges, the
inspections and *now* feed the site's clocks (``clocks.py``), recomputed
whenever one of them changes; the pairs' unknown runs, the site's first message,
its closure and *now* feed the notices of unmonitored turbidity
(``unmonitored.py``), recomputed when one of them changes or a notice falls due.

The engine keeps, for every fact id that may still change, the last version it
published. After each ``apply``/``tick`` it compares the facts that may have
changed with that record and returns what is new (revision 0), what changed
(the same id, revision + 1) and what no longer holds (revision + 1 with
``retracted``). The final set of latest, non-retracted revisions is a function
of the set of readings and inspections and of the latest ``now``: arrival
order and duplicates do not change it.

*Now* is the later of the newest tick and the newest event time seen, so a
replay that never ticks still lets time pass with its readings.

Bounded memory (a season is months). Each time a site's newest event time
enters a new ``COMPACT_EVERY_MS`` block, the engine moves that site's
*horizon* up to ``lateness_days`` plus a day before it: input older than that
is refused from then on, so what it decided is final. Each site by its own
newest input, as the ingest rule judges ``too_old`` (sensors/README.md, "MQTT contract"): a replay
file grouped by site feeds a site whose rows are older than another's newest,
and none of them may be refused for that. The timelines drop their checkpoints and facts before the
horizon, the clocks settle what is closed before it, and the published record
forgets those facts. They are not lost: ``drain_settled`` hands them to the
caller (the daemon has them in its store already; ``replay`` prints them).
The late readings a timeline re-folds with come from an injected ``Window``
(``window.py``): the daemon's journal, or memory for ``replay``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..config import Config
from ..contract.events import Event, Fact, in_event_order
from ..contract.inputs import (
    ActionStep,
    Forecast,
    Inspection,
    Reading,
    ReferenceObservation,
    ShutdownNotice,
    SiteClosure,
)
from ..contract.times import MS_PER_DAY, MS_PER_HOUR
from ..rules.clocks import clocks
from ..rules.clocks.settle import settle
from ..rules.health.health import HealthFold, never_heard
from ..rules.rain.rain import GaugeFold
from ..rules.snow.snow import SnowFold
from ..rules.turbidity.turbidity import PairFold
from .clockinputs import CLOCK_INPUT_GROUPS, note_reference_storms, note_storm_facts
from .firstseen import note_first_seen
from .site import (
    SiteEngine,
    add_shutdown,
    build_site,
    dump_site,
    load_site,
    monitoring_start,
    note_unknown_runs,
    notice_truth,
    prune_stale_spans,
    prune_weather,
    recompute_clocks,
    settle_notices,
    settle_silence,
    weather_facts,
)
from .steps import apply_step, settle_steps
from .timeline import bucket_of
from .window import MemoryWindow, Window

#: Readings this much older than the newest are counted as late (monitor/README.md, "The rules").
LATE_NOTE_MS = MS_PER_HOUR
#: Compaction keeps a day beyond the lateness bound, so a reading the shell
#: accepted (checked against its own reference clock) always lands after the base.
COMPACT_MARGIN_MS = MS_PER_DAY
#: Compaction runs when event time enters a new block of this length: what it
#: costs follows event time, not the number of sensors (a count of readings
#: would compact a hundred sites a hundred times as often as one).
COMPACT_EVERY_MS = 6 * MS_PER_HOUR
#: A retracted fact older than its site's horizon by this much is kept only as
#: its last revision number (should it ever hold again, it continues from there).
RETIRE_AFTER_MS = 7 * MS_PER_DAY
#: The shape of ``Engine.dump()``; another version is rebuilt from the journal.
DUMP_VERSION = 6


@dataclass
class Stats:
    accepted: int = 0
    duplicates: int = 0
    too_old: int = 0
    late: int = 0

    def to_json(self) -> dict[str, int]:
        return {"accepted": self.accepted, "duplicates": self.duplicates,
                "too_old": self.too_old, "late": self.late}


class Engine:
    """The compliance engine for every site of one configuration.

    ``window`` is where late readings are re-read from (see ``window.py``), so
    the timelines keep only their last two hours of readings; without one they
    keep every reading within the lateness bound (``replay``, which has read
    them all anyway).
    """

    def __init__(self, config: Config, window: Window | None = None) -> None:
        self.config = config
        self.window = window
        self.sites: dict[str, SiteEngine] = {s.id: build_site(s, self.window)
                                             for s in config.sites}
        self.published: dict[str, Event] = {}
        #: Retracted facts long past, as their last revision only.
        self.retired: dict[str, int] = {}
        self.watermark_ms: int | None = None
        self.tick_ms: int | None = None
        #: Whether the last ``tick`` refreshed a tail that readings had touched. Such a
        #: tick changes what compaction settles even when it publishes nothing (a storm
        #: end concluded by the tail and again by a later reading leaves the tail), so
        #: a host that journals ticks must journal it, or a replay of its journal
        #: (a restart) retracts facts the live engine settled.
        self.tick_refreshed = False
        self.stats = Stats()
        self._settled: list[Event] = []
        #: Ids published as retracted (the few ``_retire`` looks at).
        self._retracted: set[str] = set()

    # ------------------------------------------------------------------ inputs

    @property
    def now_ms(self) -> int | None:
        """Event-time now: the newest tick or the newest event time seen."""
        if self.tick_ms is None:
            return self.watermark_ms
        if self.watermark_ms is None:
            return self.tick_ms
        return max(self.tick_ms, self.watermark_ms)

    def apply(self, item: Reading | Inspection | SiteClosure | ShutdownNotice | Forecast
              | ReferenceObservation | ActionStep) -> list[Event]:
        """Take one accepted reading, inspection, site closure or shutdown notice, weather
        input or step of a corrective action; return the events it causes."""
        se = self.sites.get(item.site)
        if se is None:
            raise KeyError(f"unknown site {item.site!r}")
        if isinstance(item, ActionStep):  # a record of its own: no clock moves (steps.py)
            fact = apply_step(se, item, self.stats)
            if fact is None:
                return []
            out = self._publish({fact.id: fact}, [fact.id])
            # A fix reported done meets a permit's deadline (rules/clocks/actions.py).
            deadlines = any(p.corrective_action or p.maintenance for p in se.permits)
            return out + (self._recompute_clocks(se) if deadlines else [])
        if isinstance(item, Forecast | ReferenceObservation):
            return self._apply_weather(se, item)
        if isinstance(item, Inspection):
            return self._apply_inspection(se, item)
        if isinstance(item, SiteClosure):
            return self._apply_closure(se, item)
        if isinstance(item, ShutdownNotice):
            return self._apply_shutdown(se, item)
        return self._apply_reading(se, item)

    def tick(self, now_ms: int) -> list[Event]:
        """Let time pass to ``now_ms`` (wall clock in the daemon, last reading in replay)."""
        # An older tick still settles the tails readings have touched since the last one.
        self.tick_ms = now_ms if self.tick_ms is None else max(self.tick_ms, now_ms)
        now_ms = self.tick_ms
        out: list[Event] = []
        self.tick_refreshed = False
        for se in self.sites.values():
            for name, tl in se.all_timelines():
                self.tick_refreshed = self.tick_refreshed or tl.tail_dirty
                changed = tl.advance_to(now_ms)
                if changed:
                    out += self._publish(tl.truth, changed)
                    if name.startswith(CLOCK_INPUT_GROUPS):
                        note_storm_facts(se, tl.truth, changed)
                    elif name.startswith("pair:"):
                        note_unknown_runs(se, tl.truth, changed)
            out += self._recompute_clocks(se)
            out += self._recompute_silence(se)
            out += self._recompute_notices(se)
            if se.weather_dirty:
                out += self._recompute_weather(se)
        return _ordered(out)

    # ------------------------------------------------------------------ queries

    def current_events(self) -> list[Event]:
        """The latest revision of every fact still in memory that holds (settled facts
        have been handed out by ``drain_settled``)."""
        return _ordered([e for e in self.published.values() if not e.retracted])

    def drain_settled(self) -> list[Event]:
        """The latest revisions of the facts that became final and left memory since
        the last call (retractions excluded), in no particular order."""
        out, self._settled = self._settled, []
        return out

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
        if reading.kind == "status":
            targets = list(se.status_routes.get(reading.sensor, ()))
        else:
            targets = [*se.routes.get(reading.sensor, ()), health]
        if self.watermark_ms is not None and self.watermark_ms - ts > LATE_NOTE_MS:
            self.stats.late += 1
        if self.window is not None:
            self.window.add(reading)
        out: list[Event] = []
        clocks_dirty = notices_dirty = inserted = False
        for tl in targets:
            changed = tl.insert(reading)
            if changed is None:
                continue
            inserted = True
            if not changed:
                continue
            out += self._publish(tl.truth, changed)
            if isinstance(tl.fold, GaugeFold | HealthFold | SnowFold):
                clocks_dirty = note_storm_facts(se, tl.truth, changed) or clocks_dirty
            elif isinstance(tl.fold, PairFold):
                notices_dirty = note_unknown_runs(se, tl.truth, changed) or notices_dirty
        if not inserted and targets:
            # Every timeline knew this message already: a redelivery.
            self.stats.duplicates += 1
            return []
        self.stats.accepted += 1
        se.note_reading_for_weather(ts)
        if reading.kind != "status":
            se.readings[reading.sensor] = se.readings.get(reading.sensor, 0) + 1
        site_first, sensor_first, first_clocks = note_first_seen(se, reading)
        clocks_dirty = clocks_dirty or first_clocks
        notices_dirty = notices_dirty or site_first
        silence_dirty = site_first or sensor_first
        self._advance_watermark(se, ts)
        if clocks_dirty:
            out += self._recompute_clocks(se)
        if silence_dirty:
            out += self._recompute_silence(se)
        out += self._notices_if_due(se, notices_dirty)
        out += self._compact_if_due(se)
        return _ordered(out) if len(out) > 1 else out

    def _apply_inspection(self, se: SiteEngine, insp: Inspection) -> list[Event]:
        if se.compacted_ms is not None and insp.ts_ms < se.compacted_ms:
            # Its clocks may have settled already: too late to change them.
            self.stats.too_old += 1
            return []
        key = (insp.ts_ms, insp.inspector, insp.kind)
        if key in se.inspection_keys:
            # One inspection per (time, inspector, kind): a second one with that key is
            # a redelivery, or a second record of the same visit (the field app and a
            # hand-written message). Which one stands must not depend on which came
            # first, so the smaller canonical form does, whatever the order.
            self.stats.duplicates += 1
            at = next(i for i, old in enumerate(se.inspections)
                      if (old.ts_ms, old.inspector, old.kind) == key)
            if _canonical(insp) >= _canonical(se.inspections[at]):
                return []
            se.inspections[at] = insp
            return _ordered(self._recompute_clocks(se))
        se.inspection_keys.add(key)
        se.inspections.append(insp)
        if se.last_inspection_ms is None or insp.ts_ms > se.last_inspection_ms:
            se.last_inspection_ms = insp.ts_ms
        self.stats.accepted += 1
        self._advance_watermark(se, insp.ts_ms)
        return _ordered(self._recompute_clocks(se) + self._notices_if_due(se, False))

    def _apply_closure(self, se: SiteEngine, closure: SiteClosure) -> list[Event]:
        # The earliest recorded closure holds (final stabilization happens once).
        if se.closure is not None and se.closure.ts_ms <= closure.ts_ms:
            self.stats.duplicates += 1
            return []
        se.closure = closure
        self.stats.accepted += 1
        self._advance_watermark(se, closure.ts_ms)
        return _ordered(self._recompute_clocks(se) + self._notices_if_due(se, True))

    def _apply_shutdown(self, se: SiteEngine, notice: ShutdownNotice) -> list[Event]:
        if not add_shutdown(se, notice):  # one notice per instant and kind
            self.stats.duplicates += 1
            return []
        self.stats.accepted += 1
        self._advance_watermark(se, notice.ts_ms)
        return _ordered(self._recompute_clocks(se))

    def _apply_weather(self, se: SiteEngine, item: Forecast | ReferenceObservation
                       ) -> list[Event]:
        # Weather is evidence beside the readings: it does not move event time.
        if self.config.weather is None:
            return []
        if se.compacted_ms is not None and item.ts_ms < se.compacted_ms:
            # As for readings: what the book held before the horizon has been decided.
            self.stats.too_old += 1
            return []
        if not se.weather.add(item):
            self.stats.duplicates += 1
            return []
        if isinstance(item, Forecast):
            se.forecast_facts = None
        self.stats.accepted += 1
        return _ordered(self._recompute_weather(se))

    def _recompute_weather(self, se: SiteEngine) -> list[Event]:
        se.weather_dirty = False
        if self.config.weather is None:
            return []
        truth = weather_facts(se, self.config.weather, self.window)
        ids, se.weather_ids = se.weather_ids | set(truth), set(truth)
        out = self._publish(truth, ids)
        if note_reference_storms(se, truth, ids):
            # reference_opens_clock: a disagreement is a storm of the site too.
            out += self._recompute_clocks(se)
        return out

    def _advance_watermark(self, se: SiteEngine, ts: int) -> None:
        if self.watermark_ms is None or ts > self.watermark_ms:
            self.watermark_ms = ts
        if se.newest_ms is None or ts > se.newest_ms:
            se.newest_ms = ts

    def _recompute_clocks(self, se: SiteEngine) -> list[Event]:
        recompute_clocks(se, self.now_ms)
        return self._publish(se.clocks.facts, se.clocks.changed)

    def _recompute_silence(self, se: SiteEngine) -> list[Event]:
        # Compared with what was published (not with the last result), so a
        # restored engine catches up with exactly what the uninterrupted one had.
        old = se.silence
        se.silence = never_heard(se.config, se.first_ms, monitoring_start(se), self.now_ms,
                                 frozenset(se.silence_settled))
        ids = set(old) | set(se.silence)
        out = self._publish(se.silence, ids)
        if note_storm_facts(se, se.silence, ids):
            out += self._recompute_clocks(se)
        return out

    def _recompute_notices(self, se: SiteEngine) -> list[Event]:
        old = se.notices
        se.notices_now_ms = self.now_ms
        se.notices, se.notice_next_ms = notice_truth(se, self.now_ms)
        return self._publish(se.notices, set(old) | set(se.notices))

    def _notices_if_due(self, se: SiteEngine, dirty: bool) -> list[Event]:
        """The notices again when their inputs changed or *now* reached the next one."""
        now, due = self.now_ms, se.notice_next_ms
        if dirty or (now is not None and due is not None and now >= due):
            return self._recompute_notices(se)
        return []

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
                    self._retracted.add(fid)
                    out.append(event)
                continue
            if old is None:
                retired = self.retired.pop(fid, None)
                event = Event(fact, 0 if retired is None else retired + 1)
            elif old.retracted or old.fact != fact:
                event = Event(fact, old.revision + 1)
                self._retracted.discard(fid)
            else:
                continue
            self.published[fid] = event
            out.append(event)
        return out

    def _compact_if_due(self, se: SiteEngine) -> list[Event]:
        """Compact when the site's newest input entered a new block; what the weather
        concludes on the readings about to leave memory comes first."""
        if se.newest_ms is None or se.newest_ms // COMPACT_EVERY_MS == se.compacted_block:
            return []
        out = self._recompute_weather(se) if se.weather_dirty else []
        self._compact(se)
        return out

    def _compact(self, se: SiteEngine) -> None:
        """Move the site's horizon up to its newest input's block (module docstring)."""
        if se.newest_ms is None:
            return
        se.compacted_block = se.newest_ms // COMPACT_EVERY_MS
        horizon = bucket_of(se.newest_ms - round(se.config.lateness_days * MS_PER_DAY)
                            - COMPACT_MARGIN_MS)
        if se.compacted_ms is None or horizon > se.compacted_ms:
            final: list[str] = []
            if self.config.weather is not None:
                final += prune_weather(se, self.config.weather, self.window, self.published,
                                       horizon)
            for _, tl in se.all_timelines():
                final += tl.compact(horizon)
            final += settle_notices(se)
            if self.window is not None:
                self.window.compact(se.config.id, horizon)
            settled = settle(se.config, list(se.storm_facts.values()), se.clocks,
                             se.inspections, se.anchor, se.floors, horizon,
                             open_refs=frozenset(se.weather_ids),
                             undecided=None if se.config.active_since is not None
                             else se.first_run.undecided(horizon),
                             anchors=se.anchors, permits=se.permits)
            se.first_run.prune(horizon)
            final += settled.fact_ids
            for fid in settled.storm_fact_ids:
                se.storm_facts.pop(fid, None)
            prune_stale_spans(se, horizon)
            se.inspections = settled.inspections
            se.inspection_keys = {(i.ts_ms, i.inspector, i.kind) for i in se.inspections}
            final += settle_steps(se, horizon)
            se.anchor, se.anchors, se.floors = settled.anchor, settled.anchors, settled.floors
            se.compacted_ms = horizon
            final += settle_silence(se, horizon)
            for fid in final:
                event = self.published.pop(fid, None)
                if event is not None and not event.retracted:
                    self._settled.append(event)
                    if event.fact.type == "inspection_missed":
                        se.missed_weeks_settled += 1
            self._retire(se.config.id, horizon - RETIRE_AFTER_MS)

    def _retire(self, site_id: str, before_ms: int) -> None:
        gone = [fid for fid in self._retracted if (e := self.published[fid]).fact.site == site_id
                and e.at_ms < before_ms]
        for fid in gone:
            self.retired[fid] = self.published.pop(fid).revision
            self._retracted.discard(fid)

    # ------------------------------------------------------------------ persistence

    def dump(self) -> dict[str, Any]:
        """All state as JSON-ready data; ``Engine.restore`` gives the same engine back.

        The window's readings are included when the window keeps them itself
        (``MemoryWindow``); the daemon's journal window keeps none here.
        """
        return {
            "version": DUMP_VERSION,
            "watermark_ms": self.watermark_ms,
            "tick_ms": self.tick_ms,
            "stats": self.stats.to_json(),
            "published": [e.to_json() for e in self.published.values()],
            "retired": self.retired,
            "window": self.window.dump() if self.window is not None else None,
            "sites": {sid: dump_site(se) for sid, se in self.sites.items()},
        }

    @classmethod
    def restore(cls, config: Config, data: dict[str, Any],
                window: Window | None = None) -> Engine:
        """The engine ``dump()`` described. ``ValueError`` when it is from another
        version of stormwatch (rebuild from the journal instead)."""
        if data.get("version") != DUMP_VERSION:
            raise ValueError(f"engine state version {data.get('version')!r}, this stormwatch"
                             f" reads {DUMP_VERSION}")
        if window is None and data.get("window") is not None:
            window = MemoryWindow.load(data["window"])
        eng = cls(config, window)
        eng.watermark_ms = data["watermark_ms"]
        eng.tick_ms = data["tick_ms"]
        eng.stats = Stats(**data["stats"])
        for raw in data["published"]:
            event = Event.from_json(raw)
            eng.published[event.id] = event
            if event.retracted:
                eng._retracted.add(event.id)
        eng.retired = {str(k): int(v) for k, v in data["retired"].items()}
        eng.sites = {}
        for site in config.sites:
            eng.sites[site.id] = load_site(site, window, data["sites"].get(site.id, {}))
        return eng


_ordered = in_event_order


def _canonical(insp: Inspection) -> str:
    """An inspection as sorted JSON, to choose between two with one key."""
    return json.dumps(insp.to_json(), sort_keys=True, default=str)

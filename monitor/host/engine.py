"""``EngineHost``: an engine restored from a store and kept in step with its journal.

``stormwatch run`` (``daemon/loop.py``) drives one from its MQTT queue;
``stormwatch inspect`` drives one when no daemon runs. The InfluxDB exporter
keeps an engine replica with the same journal window (``window.py``), journal
rows (``rows.py``) and snapshots (``snapshots.py``). None of them imports
another: they all import this package, which imports the engine and the store
and nothing above them.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ..config import Config
from ..contract.events import Event
from ..contract.inputs import Inspection, Reading
from ..contract.times import MS_PER_HOUR, WallClock, iso
from ..engine import Engine, summarize
from ..store import JournalIn, Store
from ..store.events import AlertRoutes
from .backlog import BacklogLog
from .rows import apply_item, apply_row
from .snapshots import ENGINE_OWNER, SnapshotImage, Snapshots, restore_engine
from .tickclock import TickClock
from .window import JournalWindow

log = logging.getLogger("stormwatch.daemon")

#: A row received this much after its event time is backfill (a node's buffer),
#: like monitor/README.md, "The rules"'s "late data (lateness > 1 h)".
BACKFILL_MS = MS_PER_HOUR
#: A site's backfilled events are logged this long (wall clock) after its last
#: backfilled row: a node replaying its buffer at a bounded rate pauses briefly.
BACKFILL_SETTLE_MS = 10_000
#: ... and at least this often while a long backlog trickles in, so an alert never
#: waits longer than this for a backlog to end (each fact is then logged at most
#: once a minute, at its latest revision).
BACKFILL_MAX_DEFER_MS = 60_000


@dataclass
class EngineHost:
    """An engine restored from a store and kept in step with its journal."""

    config: Config
    store: Store
    engine: Engine
    window: JournalWindow
    snapshots: Snapshots
    applied_seq: int = 0
    rows_since_snapshot: int = 0
    #: Receipt-to-engine delay of the newest applied row (for ``status --json``).
    lag_ms: int | None = None
    routes: AlertRoutes | None = None
    clock: WallClock = time.time
    #: Called after events with alerts were recorded (wakes the delivery worker).
    on_alerts: Callable[[], None] | None = None
    #: The site status text last recorded, per site, and the sites with input since.
    status_written: dict[str, str] = field(default_factory=dict)
    dirty_sites: set[str] = field(default_factory=set)
    #: Coalesce backfill (the daemon): while a site's backlog is applied, its events
    #: wait for their log book and outbox rows (``store.events.settle_deferred``).
    coalesce: bool = False
    #: Sites applying a backlog: wall ms of their last backfilled row, and of the
    #: start of the current deferral.
    backfill: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: What each of those backlogs brought: logged as one line when it settles.
    backlogs: BacklogLog = field(default_factory=BacklogLog)
    #: Events the engine produced that the store refused to record (disk full):
    #: the engine will not produce them again, so the next ``record`` writes them
    #: first, in order.
    unrecorded: list[Event] = field(default_factory=list)
    #: The daemon's tick time (the wall clock without its steps); None: ``clock``.
    tick_clock: TickClock | None = None

    @classmethod
    def restore(cls, config: Config, store: Store, *, clock: WallClock = time.time,
                routes: AlertRoutes | None = None) -> EngineHost:
        window = JournalWindow(store)
        engine, seq, snapshots = restore_engine(config, store, window, ENGINE_OWNER)
        return cls(config, store, engine, window, snapshots, seq, routes=routes, clock=clock)

    def catch_up(self, *, record: bool = True, until: int | None = None) -> int:
        """Apply every journal row after ``applied_seq`` (up to ``until``) and record the
        events; return the count."""
        total = 0
        while True:
            rows = self.store.journal.after(self.applied_seq, limit=5000)
            if until is not None:
                rows = [r for r in rows if r.seq <= until]
            if not rows:
                return total
            events: list[Event] = []
            for row in rows:
                self.window.upto_seq = row.seq
                events += apply_row(self.engine, row)
                if "site" in row.body:
                    site = str(row.body["site"])
                    self.dirty_sites.add(site)
                    self._note_backfill(site, int(row.body.get("ts_ms", 0)), row.received_ms)
            self._applied(rows[-1].seq, rows[-1].received_ms, len(rows))
            total += len(rows)
            if record:
                self.record(events)

    def apply_committed(self, items: Sequence[tuple[int, Reading | Inspection, int | None]]
                        ) -> None:
        """Apply inputs just committed to the journal, as (seq, input, received_ms), in seq
        order, without reading them back; rows another process journaled before
        them are applied first."""
        if not items:
            return
        if items[0][0] - 1 > self.applied_seq:
            self.catch_up(until=items[0][0] - 1)
        events: list[Event] = []
        for seq, item, received_ms in items:
            self.window.upto_seq = seq
            events += apply_item(self.engine, item)
            self.dirty_sites.add(item.site)
            self._note_backfill(item.site, item.ts_ms, received_ms)
        last_seq, _, received = items[-1]
        self._applied(last_seq, received, len(items))
        self.record(events)

    def _note_backfill(self, site: str, ts_ms: int, received_ms: int | None) -> None:
        # A row received long after its event time is a node's buffer being
        # replayed: every reading of it revises the same few facts again.
        if self.coalesce and received_ms is not None and received_ms - ts_ms > BACKFILL_MS:
            now = self.now_ms()
            self.backfill[site] = (now, self.backfill.get(site, (now, now))[1])
            self.backlogs.row(site, ts_ms)

    def settle_backfill(self, *, all_sites: bool = False) -> int:
        """Log the settled revisions of the sites whose backlog has been quiet for
        ``BACKFILL_SETTLE_MS`` or deferred for ``BACKFILL_MAX_DEFER_MS`` (every site
        with ``all_sites``, at shutdown), and of any deferral a crash left behind;
        return how many events were logged."""
        now = self.now_ms()
        flowing = set()
        for site, (last, since) in list(self.backfill.items()):
            if all_sites or now - last >= BACKFILL_SETTLE_MS:
                del self.backfill[site]
                self.backlogs.finish(site)
            elif now - since < BACKFILL_MAX_DEFER_MS:
                flowing.add(site)
            else:
                # Still flowing for long: log what stands now, and defer afresh.
                self.backfill[site] = (last, now)
        logged = self.store.events.settle_deferred(recorded_ms=now, routes=self.routes,
                                                   keep=flowing)
        if logged and self.on_alerts is not None and self.routes is not None:
            self.on_alerts()
        return logged

    def _applied(self, seq: int, received_ms: int | None, rows: int) -> None:
        self.applied_seq = seq
        self.rows_since_snapshot += rows
        if received_ms is not None:
            self.lag_ms = max(0, self.now_ms() - received_ms)
        # What settled is recorded already (every revision was, when it was made).
        self.engine.drain_settled()

    def record(self, events: list[Event], *, status: bool = False) -> int:
        """Record events (one transaction with their outbox and log book rows, and the
        status of the sites they changed); ``status`` records the status of every
        site that took input since, events or not."""
        events = self.unrecorded + events
        statuses = self._status_changes(None if status else {e.fact.site for e in events})
        if not events and not statuses:
            return 0
        try:
            new = self.store.events.record(events, self.applied_seq,
                                           recorded_ms=self.now_ms(), routes=self.routes,
                                           statuses=statuses, defer=set(self.backfill))
        except sqlite3.OperationalError:
            # Kept for the next call (the caller retries once the store takes writes).
            self.unrecorded = events
            self.dirty_sites.update(statuses)
            raise
        self.unrecorded = []
        self.status_written.update(statuses)
        if new:
            # A backlog's events are counted, and said in one line when it settles.
            for e in self.backlogs.events(events):
                _log_event(e)
            if self.on_alerts is not None and self.routes is not None:
                self.on_alerts()
        return new

    def record_status(self) -> None:
        """Record the status of every site (the clocks move with time, too)."""
        self.dirty_sites.update(s.id for s in self.config.sites)
        self.record([], status=True)

    def _status_changes(self, only: set[str] | None) -> dict[str, str]:
        """The status of the sites with input since their last record (of those in
        ``only``, when given), where it changed."""
        sites = self.dirty_sites if only is None else self.dirty_sites & only
        changed = {}
        for site_id in sites:
            if site_id not in self.engine.sites:
                continue
            text = json.dumps(summarize(self.engine, site_id).to_json(), separators=(",", ":"))
            if self.status_written.get(site_id) != text:
                changed[site_id] = text
        self.dirty_sites -= sites
        return changed

    def tick(self, meta: Mapping[str, int | str] | None = None) -> list[Event]:
        """Tick on the wall clock (``tick_clock``'s, when set: not its steps); journal the
        tick when it changed anything (an event, or a tail readings had touched: see
        ``Engine.tick_refreshed``); record the sites' status, and ``meta`` with the
        tick's own."""
        clock = self.tick_clock
        now = self.now_ms() if clock is None else clock.now_ms(self.engine.watermark_ms)
        events = self.engine.tick(now)
        if events or self.engine.tick_refreshed:
            # Journal rows are identified by their content, and a frozen or stepped
            # wall clock ticks at the same ``now`` again after more readings: where the
            # tick fell (``after_seq``) keeps it a row of its own, not a duplicate.
            body = {"now_ms": now, "after_seq": self.applied_seq}
            try:
                (seq,) = self.store.journal.commit([JournalIn("tick", None, None, now,
                                                            body, None, now)])
            except sqlite3.OperationalError:
                self.unrecorded += events  # recorded later; a restart re-ticks anyway
                raise
            if seq is not None:
                self.applied_seq = max(self.applied_seq, seq)
        self.dirty_sites.update(s.id for s in self.config.sites)
        self.record(events, status=True)
        # When the engine last saw time pass, and with how much of the journal: the
        # status shows it, and a test waits for a tick after its last reading with it.
        values: dict[str, int | str] = {
            "tick_ms": now, "tick_applied_seq": self.applied_seq,
            "wall_step_ms": (clock.step_ms or 0) if clock is not None else 0}
        if self.lag_ms is not None:
            values["lag_ms"] = self.lag_ms
        self.store.state.meta_update({**values, **(meta or {})})
        if self.coalesce:
            self.settle_backfill()
        return events

    def take_snapshot(self) -> SnapshotImage:
        image = self.snapshots.take(self.engine, self.applied_seq, self.rows_since_snapshot)
        self.rows_since_snapshot = 0
        return image

    def snapshot(self) -> None:
        """Snapshot on this thread (at shutdown, and for the CLI)."""
        image = self.take_snapshot()
        try:
            self.snapshots.write(self.store, image, created_ms=self.now_ms())
        except BaseException:
            self.rows_since_snapshot += image.rows
            raise

    def now_ms(self) -> int:
        return round(self.clock() * 1000)


def _log_event(event: Event) -> None:
    extra = event.body.to_json()
    if event.retracted:
        extra["retracted"] = True
    log.info("event %s site=%s at=%s rev=%s %s", event.type, event.site, iso(event.at_ms),
             event.revision, json.dumps(extra, separators=(",", ":"), default=str))



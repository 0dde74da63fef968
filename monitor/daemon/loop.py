"""The daemon: MQTT → journal → engine → events, outbox and log book. The run loop.

The shell around the engine, and nothing clever:

* the MQTT client (a process of its own, ``mqttproc.py``, or a thread for the
  demo) hands messages over through a bounded queue;
* this module's loop takes a batch from the queue, parses it, commits accepted
  readings to the journal and rejects to the dead-letter table in one
  transaction, then acknowledges the batch to the broker (monitor/README.md, "Architecture": the
  journal commit comes first, always);
* it applies the batch's readings, just committed, to the engine straight
  from memory (``host.EngineHost``), and before them any journal rows another
  process wrote (``stormwatch inspect`` while the broker is unreachable); it
  records the resulting events, their outbox rows and log book rows in one
  transaction, and wakes the alert worker;
* it ticks the engine on the wall clock, without its steps (``tickclock.py``:
  NTP after a cold start must not fire or hold back notices); a tick that
  changed anything is itself
  journaled, so a restart replays exactly what happened; each tick also
  records every site's status (``site_status``) for ``stormwatch status``;
* it snapshots the engine every so often, from a thread of its own
  (``snapshotwriter.py``): state, not readings, and only the checkpoints that
  changed. On start it restores the snapshot and replays the journal after
  it; events already recorded are recognised by (id, revision) and not
  recorded or alerted twice;
* when the store refuses a write (disk full), nothing crashes and nothing is
  lost: a batch whose commit failed is held unacknowledged, events are kept by
  ``EngineHost``, the loop takes no more (the bounded queues stop paho, the
  broker holds the rest) and retries with backoff. ``store/health.py`` logs it
  and shows it to ``status``, with the broker connection.
"""

from __future__ import annotations

import logging
import queue
import shutil
import signal
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import Config
from ..contract.times import WallClock
from ..host.engine import EngineHost
from ..host.tickclock import TickClock
from ..sinks.registry import Worker, build_routes, build_workers
from ..sources.mqtt import SESSION_META, Ingest, Received, session_key
from ..sources.mqttproc import IngestProcess
from ..sources.nodeclocks import NodeClocks
from ..store import Store, is_disk_full
from ..store.events import AlertRoutes
from ..store.health import DaemonHealth
from ..store.opening import LOCK_NAME, daemon_lock, open_store
from ..views.journalcheck import journal_problems
from .archiver import Archiver
from .batch import Acker, BatchPath
from .confirmer import Confirmer
from .heap import keep_heap
from .rejectlog import RejectLog
from .sdnotify import SdNotify
from .snapshotwriter import SnapshotWriter
from .weatherpoll import WeatherPoller
from .workers import run_worker

log = logging.getLogger("stormwatch.daemon")

BATCH_MAX = 1000
BATCH_WAIT_S = 0.005
TICK_EVERY_S = 5.0
#: While a backlog drains (after an outage, or a node flushing its buffer) ticks
#: wait, so silence is judged on data that has arrived; but never longer than this.
TICK_AT_LEAST_EVERY_S = 60.0
QUEUE_SIZE = 10_000
#: At a stop, the longest the daemon goes on journaling what it had received (the
#: queue holds at most QUEUE_SIZE; that takes about a second). The rest of the stop
#: (final state, snapshot, workers) is bounded too: ``STOP_WORKERS_S``.
DRAIN_MAX_S = 5.0
STOP_WORKERS_S = 5.0
#: The recorded status of sites with new input is brought up to date this often
#: (and at once with any event, in the same transaction); while a backlog drains,
#: less often: every site has new input then, and the drain comes first.
STATUS_EVERY_S = 0.5
STATUS_BACKLOG_S = 5.0
#: Between full garbage collections (see ``heap.keep_heap``).
FULL_GC_EVERY_S = 3600.0
#: The longest wait between attempts to open or write a store that refused.
MAX_WAIT_S = 15.0
#: Meta key written to find out whether the store takes writes again.
PROBE_META = "store_probe_ms"


# --------------------------------------------------------------------------- the daemon


@dataclass
class _Running:
    """What a running daemon holds between turns of its loop (``Daemon._run``)."""

    host: EngineHost
    writer: SnapshotWriter
    ingest: Ingest | IngestProcess
    worker_stop: threading.Event
    threads: list[threading.Thread]
    started: float
    #: Monotonic times of the last tick, status record, snapshot and full collection.
    last_tick: float = field(init=False)
    last_status: float = field(init=False)
    last_snapshot: float = field(init=False)
    last_full_gc: float = field(init=False)
    #: A failed snapshot is tried again only after ``daemon.snapshot_retry_s``.
    snapshot_ok_after: float = 0.0

    def __post_init__(self) -> None:
        self.last_tick = self.last_status = self.last_snapshot = self.last_full_gc = \
            self.started


class Daemon:
    """``stormwatch run``: ingest, journal, engine, events, until told to stop."""

    def __init__(self, config: Config, *, clock: WallClock = time.time,
                 routes: AlertRoutes | None = None,
                 workers: list[Worker] | None = None, tick_every_s: float = TICK_EVERY_S,
                 mqtt_protocol: int | None = None, mqtt_process: bool = False,
                 stop_event: threading.Event | None = None,
                 config_path: str | Path | None = None) -> None:
        """``mqtt_process``: run the MQTT client in a process of its own
        (``mqttproc.py``; ``stormwatch run`` does), not on a thread of this one.
        ``config_path``: the file ``config`` was read from, named in the commands
        alerts print so that they work as printed."""
        self.config = config
        self.mqtt_protocol = mqtt_protocol
        self.mqtt_process = mqtt_process
        self.connected = threading.Event()
        self.tick_every_s = tick_every_s
        self.clock = clock
        # An injected clock (the demo's simulated time) never steps: it is its own
        # monotonic clock.
        self.tick_clock = TickClock() if clock is time.time else TickClock(clock, clock)
        self.routes = routes if routes is not None else build_routes(config)
        self.workers = workers if workers is not None else [
            *build_workers(config, clock, config_path),
            *([WeatherPoller(config, clock)] if config.weather is not None else [])]
        if config.archive is not None and workers is None:
            # Its own thread like a sink's (``archiver.py``); a caller that passes its own
            # workers drives the archive itself.
            self.workers.append(Archiver(config, clock))
        self.stop_event = stop_event if stop_event is not None else threading.Event()
        self.queue: queue.Queue[Received] = queue.Queue(maxsize=QUEUE_SIZE)
        self.rejects = RejectLog(log)
        self.node_clocks = NodeClocks(config.broker.topic_prefix)
        self.confirmer = Confirmer(config, clock)
        self.batches = BatchPath(config, clock, self.rejects, self.node_clocks, self.confirmer)
        self.notify = SdNotify()
        #: The health file, the store refusing writes (``health.trouble``), and the
        #: batch held unacknowledged meanwhile.
        self.health = DaemonHealth(config.state_dir, log, clock)
        self.held: list[Received] = []
        self._broker_up: bool | None = None

    def request_stop(self, *_: Any) -> None:
        self.stop_event.set()

    def run(self) -> int:
        with daemon_lock(self.config) as held:
            if held is None:
                log.error("another stormwatch daemon holds %s", Path(self.config.state_dir)
                          / LOCK_NAME)
                return 2
            store = self._open_store()
            if store is None:
                return 0  # told to stop while waiting for it
            with store:
                if not self._journal_agrees(store):
                    return 1
                return self._run(store)

    def _journal_agrees(self, store: Store) -> bool:
        """Whether the journal's inspections agree with the log book (``journalcheck``):
        the engine's state is made from the journal, so an inspection edited there
        would show forged text and close clocks nobody closed. An edit is logged one
        line per row, and the daemon does not start on it (exit 1)."""
        problems = journal_problems(store, archived=False,
                                    sites=[s.id for s in self.config.sites])
        for line in problems:
            log.error("%s", line)
        if problems:
            log.error("refusing to start: the journal's inspections differ from the log book"
                      " (%d problem(s) above); restore the journal from a backup, and see"
                      " `stormwatch logbook verify`", len(problems))
        return not problems

    def _open_store(self) -> Store | None:
        """The store, waited for while it cannot be opened: on a full disk SQLite cannot
        make its WAL files ("disk I/O error"). Exiting would only have systemd start
        the daemon again and again; waiting leaves the messages with the broker."""
        delay = 1.0
        while True:
            try:
                return open_store(self.config)
            except sqlite3.OperationalError as exc:
                if delay == 1.0:
                    state = Path(self.config.state_dir).resolve()
                    full = is_disk_full(exc) or shutil.disk_usage(state).free < 1 << 16
                    log.error("cannot open the store in %s (%s%s); waiting for it, tried again"
                              " every %g s at most (the broker keeps the readings meanwhile)",
                              state, exc, ": the disk is full" if full else "", MAX_WAIT_S)
                    self.notify.send("READY=1\nSTATUS=waiting for the store (see the log)")
            self.notify.watchdog()  # at least every MAX_WAIT_S: well within WatchdogSec
            if self.stop_event.wait(delay):
                return None
            delay = min(delay * 2, MAX_WAIT_S)

    def _run(self, store: Store) -> int:
        """Start, loop until told to stop, stop in order (see ``_stop``)."""
        run = self._start(store)
        try:
            while not self.stop_event.is_set():
                self._turn(store, run)
            self._watch_broker(run.ingest, store)  # a connection made just before the stop
            self.notify.send("STOPPING=1")
            self._drain(store, run.ingest, run.host)
            self.confirmer.publish_due(run.ingest)  # what the drain journaled
        finally:
            run.ingest.stop()
            run.writer.stop()
        self._stop(run)
        return 0

    def _start(self, store: Store) -> _Running:
        """Restore the engine, catch up with the journal, start the snapshot writer, the
        MQTT client and the sinks' workers; then tell systemd we are ready."""
        started = time.monotonic()
        store.journal.max_dead_bytes = self.config.dead_letters.max_bytes
        self.health.open()
        host = EngineHost.restore(self.config, store, clock=self.clock, routes=self.routes)
        host.coalesce = True
        host.tick_clock = self.tick_clock
        restored_at = host.applied_seq
        replayed = 0
        try:
            replayed = host.catch_up()
            host.record_status()
            self.confirmer.restore(store)
        except sqlite3.OperationalError as exc:
            self.health.store_failed(exc)  # the loop goes on from where this stopped
        self.tick_clock.start(host.engine.tick_ms)
        log.info("engine restored from the snapshot at journal %s and %s later row(s) in"
                 " %.1f s", restored_at, replayed, time.monotonic() - started)
        host.on_alerts = self._wake_workers
        keep_heap(full=True)
        writer = SnapshotWriter(self.config, host.snapshots, self.clock)
        writer.start()
        ingest = self._make_ingest(store)
        ingest.start()
        worker_stop = threading.Event()
        writable = lambda: not self.health.trouble.active  # noqa: E731 - the engine thread's view
        threads = [threading.Thread(target=run_worker, args=(w, worker_stop, writable),
                                    name=w.name, daemon=True) for w in self.workers]
        for t in threads:
            t.start()
        self.notify.send("READY=1")
        return _Running(host, writer, ingest, worker_stop, threads, time.monotonic())

    def _turn(self, store: Store, run: _Running) -> None:
        """One turn of the loop: a batch from MQTT (journal, acknowledge, apply), rows
        others journaled, a tick or a status record when due, a snapshot when due.
        While the store refuses writes, it takes nothing new (the queues fill and the
        broker holds the rest) and retries with backoff."""
        host, ingest = run.host, run.ingest
        self._watch_broker(ingest, store)
        self.notify.watchdog()
        if self.health.trouble.active:
            if time.monotonic() >= self.health.trouble.retry_at:
                self._retry(store, ingest, host)
            else:
                self.stop_event.wait(0.05)
            return
        batch = self._take_batch(timeout=0.05)
        now = time.monotonic()
        try:
            if batch:
                self.ingest_batch(store, ingest, host, batch)
            if store.journal.max_seq() > host.applied_seq:
                host.catch_up()
            now = time.monotonic()
            caught_up = ingest.connected.is_set() and len(batch) < BATCH_MAX and \
                self.queue.empty()
            self._tick_or_record(run, now, caught_up)
        except sqlite3.OperationalError as exc:
            self.health.store_failed(exc)
            return
        self.confirmer.publish_due(ingest)
        self._snapshot_if_due(run, now)

    def _tick_or_record(self, run: _Running, now: float, caught_up: bool) -> None:
        """A tick every ``tick_every_s`` once caught up (and at least every
        ``TICK_AT_LEAST_EVERY_S`` during a backlog); else the sites' status, when new
        input came, every ``STATUS_EVERY_S`` (``STATUS_BACKLOG_S`` during a backlog)."""
        host = run.host
        if (now - run.last_tick >= self.tick_every_s and caught_up) or \
                now - run.last_tick >= max(TICK_AT_LEAST_EVERY_S, self.tick_every_s):
            host.tick({**self.node_clocks.meta(), **self.confirmer.book.meta()})
            self.node_clocks.dirty = self.confirmer.book.dirty = False  # written with the tick
            run.last_tick = run.last_status = now
        elif host.dirty_sites and now - run.last_status >= (
                STATUS_EVERY_S if caught_up else STATUS_BACKLOG_S):
            host.record([], status=True)
            run.last_status = now

    def _snapshot_if_due(self, run: _Running, now: float) -> None:
        """Hand a snapshot to the writer every ``snapshot_every_rows`` rows or
        ``snapshot_every_s``; one that failed is counted back and retried later."""
        host, writer, daemon = run.host, run.writer, self.config.daemon
        for image, ok in writer.outcomes():
            if not ok:
                host.rows_since_snapshot += image.rows
                run.snapshot_ok_after = now + daemon.snapshot_retry_s
        if not writer.busy and now >= run.snapshot_ok_after and (
                host.rows_since_snapshot >= daemon.snapshot_every_rows or
                (host.rows_since_snapshot and now - run.last_snapshot >= daemon.snapshot_every_s)):
            writer.submit(host.take_snapshot())
            run.last_snapshot = now
            full = now - run.last_full_gc >= FULL_GC_EVERY_S
            keep_heap(full=full)
            if full:
                run.last_full_gc = now

    def _stop(self, run: _Running) -> None:
        """After the drain: record the final state, snapshot, and give the workers one
        shared deadline to finish a send."""
        host = run.host
        try:
            host.catch_up()
            host.record_status()
            host.settle_backfill(all_sites=True)
            host.store.state.meta_update(self.confirmer.book.meta() or {})
        except sqlite3.OperationalError as exc:
            log.error("could not record the final state (%s); the next start replays the"
                      " journal", exc)
        for image, ok in run.writer.outcomes():
            if not ok:
                host.rows_since_snapshot += image.rows
        self._snapshot(host)
        run.worker_stop.set()
        self._wake_workers()
        # One deadline for all: a worker in the middle of a slow send (an SMTP
        # server that does not answer) must not hold the stop for long; what it had
        # not confirmed is sent again after the restart (the outbox keeps it).
        until = time.monotonic() + STOP_WORKERS_S
        for t in run.threads:
            t.join(timeout=max(0.0, until - time.monotonic()))
        self.health.close()
        log.info("stopped at journal %s", host.applied_seq)

    def _make_ingest(self, store: Store) -> Ingest | IngestProcess:
        """The MQTT client, told whether the broker should still hold our session."""
        b = self.config.broker
        expect = store.state.meta_get(SESSION_META) == session_key(b)
        sites = [s.id for s in self.config.sites]
        if self.mqtt_process:
            return IngestProcess(b, self.queue, sites=sites, clock=self.clock,
                                 protocol=self.mqtt_protocol, connected=self.connected,
                                 log_format=self.config.log_format,
                                 log_level=logging.getLogger().getEffectiveLevel(),
                                 expect_session=expect)
        return Ingest(b, self.queue, sites=sites, clock=self.clock, protocol=self.mqtt_protocol,
                      connected=self.connected, expect_session=expect)

    def _drain(self, store: Store, ingest: Ingest | IngestProcess, host: EngineHost) -> None:
        """At stop: the MQTT side takes nothing new, then what it handed over is journaled
        and acknowledged. Bounded by ``DRAIN_MAX_S``: what is not journaled by then is
        not acknowledged, and the broker sends it again at the next start."""
        ingest.pause()
        log.info("stopping: taking no new messages; journaling the %d received",
                 self.queue.qsize())
        deadline = time.monotonic() + DRAIN_MAX_S
        journaled = 0
        while not self.health.trouble.active:
            if time.monotonic() >= deadline:
                log.warning("stopping after %g s of draining: %d received message(s) not"
                            " journaled; not acknowledged, the broker sends them again",
                            DRAIN_MAX_S, self.queue.qsize())
                return
            # The marker first, then the queue: once the MQTT side has said it takes
            # nothing more, an empty queue means everything taken is journaled.
            done = ingest.paused.is_set()
            batch = self._take_batch(timeout=0.05)
            if not batch:
                if done:
                    log.info("stopping: journaled and acknowledged %d message(s); the broker"
                             " keeps the rest for the next start", journaled)
                    return
                continue
            try:
                self.ingest_batch(store, ingest, host, batch)
                journaled += len(batch)
            except sqlite3.OperationalError as exc:
                self.health.store_failed(exc)
        log.warning("stopping with %d message(s) not journaled, as the store refuses writes:"
                    " they were not acknowledged, and the broker sends them again",
                    len(self.held) + self.queue.qsize())

    def _watch_broker(self, ingest: Ingest | IngestProcess, store: Store) -> None:
        up = ingest.connected.is_set()
        if up == self._broker_up:
            return
        self._broker_up = up
        self.health.broker(up)
        if up:
            self.confirmer.reconnected()
        key = session_key(self.config.broker)
        if up and key is not None and store.state.meta_get(SESSION_META) != key:
            try:
                store.state.meta_set(SESSION_META, key)
            except sqlite3.OperationalError as exc:
                log.debug("broker session not noted (%s); tried at the next connection", exc)

    def _retry(self, store: Store, ingest: Acker, host: EngineHost) -> None:
        """Try the held batch (or a small write), then the events kept back."""
        held, self.held = self.held, []
        try:
            if held:
                self.ingest_batch(store, ingest, host, held)
            else:
                store.state.meta_set(PROBE_META, self.health.now_ms())
            host.record([], status=True)
        except sqlite3.OperationalError as exc:
            self.health.store_failed(exc)
            return
        self.health.store_ok(len(held))

    def _wake_workers(self) -> None:
        for worker in self.workers:
            worker.wake()

    def _snapshot(self, host: EngineHost) -> bool:
        """Snapshot the engine on this thread; a failure is logged loudly and never fatal.

        A snapshot only shortens the next start (the journal holds every
        input), so ingest, acknowledgements and alerts must not stop for it.
        """
        try:
            host.snapshot()
        except Exception as exc:
            log.error("snapshot at journal %s FAILED (%s; until one succeeds, a restart replays"
                      " the journal from the last good snapshot)", host.applied_seq, exc,
                      exc_info=not is_disk_full(exc))
            return False
        return True

    def _take_batch(self, timeout: float) -> list[Received]:
        try:
            first = self.queue.get(timeout=timeout)
        except queue.Empty:
            return []
        batch = [first]
        deadline = time.monotonic() + BATCH_WAIT_S
        while len(batch) < BATCH_MAX:
            try:
                # What is queued already, without the timed wait's machinery.
                batch.append(self.queue.get_nowait())
                continue
            except queue.Empty:
                pass
            try:
                batch.append(self.queue.get(timeout=max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                break
        return batch

    def ingest_batch(self, store: Store, ingest: Acker, host: EngineHost,
                     batch: list[Received]) -> None:
        """One batch from the queue to the engine (``batch.py``: parse, journal, acknowledge,
        confirm, apply). When the journal commit fails (``sqlite3.OperationalError``:
        the disk is full) nothing is acknowledged or applied and the batch is kept in
        ``held`` for a retry; the error is raised on."""
        try:
            self.batches.ingest(store, ingest, host, batch)
        except sqlite3.OperationalError:
            self.held = batch  # not on disk: not acknowledged, tried again
            raise


def install_signal_handlers(stop: threading.Event) -> None:
    """SIGTERM and SIGINT set ``stop``: the daemon drains, snapshots and exits 0."""
    def handler(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)

"""The daemon: MQTT → journal → engine → events, outbox and log book.

The shell around the engine, and nothing clever:

* the ingest thread (paho) parses and enqueues;
* this module's loop takes a batch from the queue, commits accepted readings
  to the journal and rejects to the dead-letter table in one transaction,
  then acknowledges the batch to the broker;
* it then applies every journal row it has not applied yet (its own, and rows
  another process wrote, such as ``stormwatch inspect`` while the broker is
  unreachable) to the engine, and records the resulting events, their outbox
  rows and log book rows in one transaction with the journal position;
* it ticks the engine on the wall clock; a tick that produced events is itself
  journaled, so a restart replays exactly what happened;
* it snapshots the engine every so often. On start it restores the latest
  snapshot and replays the journal after it; events already recorded are
  recognised by (id, revision) and not recorded or alerted twice.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import queue
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .config import Config
from .engine import Engine, Event
from .engine.inputs import Inspection, Reading
from .ingest import Ingest, Message
from .models import Rejection, parse_message
from .store import DeadLetterIn, JournalIn, JournalRow, Store
from .workers import Worker, build_routes, build_workers

log = logging.getLogger("stormwatch.daemon")

DB_NAME = "stormwatch.db"
LOCK_NAME = "stormwatch.lock"
BATCH_MAX = 1000
BATCH_WAIT_S = 0.005
TICK_EVERY_S = 5.0
#: While a backlog drains (after an outage, or a node flushing its buffer) ticks
#: wait, so silence is judged on data that has arrived; but never longer than this.
TICK_AT_LEAST_EVERY_S = 60.0
QUEUE_SIZE = 10_000


def db_path(config: Config) -> Path:
    return Path(config.state_dir) / DB_NAME


def open_store(config: Config, *, readonly: bool = False) -> Store:
    state = Path(config.state_dir)
    if not readonly:
        state.mkdir(parents=True, exist_ok=True)
    return Store(state / DB_NAME, readonly=readonly)


# --------------------------------------------------------------------------- journal <-> engine


def journal_in(item: Reading | Inspection, *, topic: str | None, received_ms: int | None
               ) -> JournalIn:
    if isinstance(item, Inspection):
        return JournalIn("inspection", item.site, None, item.ts_ms, item.to_json(), topic,
                         received_ms)
    return JournalIn("reading", item.site, item.sensor, item.ts_ms, item.to_json(), topic,
                     received_ms)


def apply_row(engine: Engine, row: JournalRow) -> list[Event]:
    """Feed one journal row to the engine."""
    if row.kind == "reading":
        reading = Reading.from_json(row.body)
        if engine.config.site(reading.site) is None or \
                engine.site_engine(reading.site).health.get(reading.sensor) is None:
            # The configuration changed since the row was journaled: keep the row, skip it.
            return []
        return engine.apply(reading)
    if row.kind == "inspection":
        insp = Inspection.from_json(row.body)
        if engine.config.site(insp.site) is None:
            return []
        return engine.apply(insp)
    if row.kind == "tick":
        return engine.tick(int(row.body["now_ms"]))
    log.warning("journal row %s has unknown kind %r; skipped", row.seq, row.kind)
    return []


@dataclass
class EngineHost:
    """An engine restored from a store and kept in step with its journal."""

    config: Config
    store: Store
    engine: Engine
    applied_seq: int = 0
    rows_since_snapshot: int = 0
    #: Receipt-to-engine delay of the newest applied row (for ``status --json``).
    lag_ms: int | None = None
    routes: Callable[[dict[str, Any]], list[str]] | None = None
    clock: Callable[[], float] = time.time

    @classmethod
    def restore(cls, config: Config, store: Store, *, clock: Callable[[], float] = time.time,
                routes: Callable[[dict[str, Any]], list[str]] | None = None) -> EngineHost:
        snap = store.latest_snapshot()
        if snap is None:
            host = cls(config, store, Engine(config), 0, routes=routes, clock=clock)
        else:
            seq, data = snap
            try:
                engine = Engine.restore(config, data)
            except (KeyError, ValueError, TypeError) as exc:
                # A snapshot from another configuration: rebuild from the whole journal.
                log.warning("snapshot at journal %s unusable (%s); replaying the journal", seq, exc)
                engine, seq = Engine(config), 0
            host = cls(config, store, engine, seq, routes=routes, clock=clock)
        return host

    def catch_up(self, *, record: bool = True) -> int:
        """Apply every journal row after ``applied_seq`` and record the events; return the count."""
        total = 0
        while True:
            rows = self.store.journal_after(self.applied_seq, limit=5000)
            if not rows:
                return total
            events: list[Event] = []
            for row in rows:
                events += apply_row(self.engine, row)
            self.applied_seq = rows[-1].seq
            if rows[-1].received_ms is not None:
                self.lag_ms = max(0, self.now_ms() - rows[-1].received_ms)
            total += len(rows)
            self.rows_since_snapshot += len(rows)
            if record:
                self.record(events)

    def record(self, events: list[Event]) -> int:
        new = self.store.record_events([e.to_json() for e in events], self.applied_seq,
                                       recorded_ms=self.now_ms(), routes=self.routes)
        for e in events:
            if new:
                _log_event(e)
        return new

    def tick(self) -> list[Event]:
        """Tick on the wall clock; journal the tick when it changed anything."""
        now = self.now_ms()
        if self.lag_ms is not None:
            self.store.meta_set("lag_ms", self.lag_ms)
        events = self.engine.tick(now)
        if events:
            (seq,) = self.store.commit_batch([JournalIn("tick", None, None, now, {"now_ms": now},
                                                        None, now)])
            if seq is not None:
                self.applied_seq = max(self.applied_seq, seq)
            self.record(events)
        return events

    def snapshot(self) -> None:
        self.store.save_snapshot(self.applied_seq, self.engine.dump(), created_ms=self.now_ms())
        self.rows_since_snapshot = 0

    def now_ms(self) -> int:
        return round(self.clock() * 1000)


def _log_event(event: Event) -> None:
    e = event.to_json()
    extra = {k: v for k, v in e.items() if k not in ("type", "site", "at", "id", "revision")}
    log.info("event %s site=%s at=%s rev=%s %s", e["type"], e["site"], e["at"], e["revision"],
             json.dumps(extra, separators=(",", ":"), default=str))


# --------------------------------------------------------------------------- lock


@contextmanager
def daemon_lock(config: Config, *, wait: bool = False) -> Iterator[IO[str] | None]:
    """The state directory's lock: held by a running daemon (or by a CLI writing alone).

    Yields the lock file when acquired, or None when another process holds it.
    """
    state = Path(config.state_dir)
    state.mkdir(parents=True, exist_ok=True)
    handle = open(state / LOCK_NAME, "a+", encoding="utf-8")  # noqa: SIM115 - held for the block
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield None
            return
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield handle
    finally:
        handle.close()


def daemon_running(config: Config) -> bool:
    with daemon_lock(config) as held:
        return held is None


# --------------------------------------------------------------------------- systemd


class SdNotify:
    """systemd's notify protocol (``Type=notify``), a datagram to $NOTIFY_SOCKET."""

    def __init__(self) -> None:
        addr = os.environ.get("NOTIFY_SOCKET")
        self.addr = "\0" + addr[1:] if addr and addr.startswith("@") else addr
        usec = os.environ.get("WATCHDOG_USEC")
        self.watchdog_s = int(usec) / 1e6 / 2 if usec and usec.isdigit() else None
        self._last_watchdog = 0.0

    def send(self, state: str) -> None:
        if not self.addr:
            return
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
                s.connect(self.addr)
                s.sendall(state.encode())
        except OSError as exc:
            log.debug("sd_notify failed: %s", exc)

    def watchdog(self) -> None:
        if self.watchdog_s is None:
            return
        now = time.monotonic()
        if now - self._last_watchdog >= self.watchdog_s:
            self._last_watchdog = now
            self.send("WATCHDOG=1")


# --------------------------------------------------------------------------- the daemon


@dataclass
class RejectLog:
    """Log each (sensor, reason) at most once a minute; count every one."""

    last: dict[tuple[str, str], float] = field(default_factory=dict)

    def note(self, topic: str, rejection: Rejection, now: float) -> None:
        parts = topic.split("/")
        sensor = "/".join(parts[-3:-1]) if len(parts) >= 3 else topic
        key = (sensor, rejection.reason.value)
        if now - self.last.get(key, -1e9) >= 60:
            self.last[key] = now
            log.warning("rejected message on %s: %s (%s)", topic, rejection.reason.value,
                        rejection.detail)


class Daemon:
    """``stormwatch run``: ingest, journal, engine, events, until told to stop."""

    def __init__(self, config: Config, *, clock: Callable[[], float] = time.time,
                 routes: Callable[[dict[str, Any]], list[str]] | None = None,
                 workers: list[Worker] | None = None, tick_every_s: float = TICK_EVERY_S,
                 mqtt_protocol: int | None = None,
                 stop_event: threading.Event | None = None) -> None:
        self.config = config
        self.mqtt_protocol = mqtt_protocol
        self.connected = threading.Event()
        self.tick_every_s = tick_every_s
        self.clock = clock
        self.routes = routes if routes is not None else build_routes(config)
        self.workers = workers if workers is not None else build_workers(config, clock)
        self.stop_event = stop_event if stop_event is not None else threading.Event()
        self.queue: queue.Queue[Message] = queue.Queue(maxsize=QUEUE_SIZE)
        self.rejects = RejectLog()
        self.notify = SdNotify()

    def request_stop(self, *_: Any) -> None:
        self.stop_event.set()

    def run(self) -> int:
        with daemon_lock(self.config) as held:
            if held is None:
                log.error("another stormwatch daemon holds %s", Path(self.config.state_dir)
                          / LOCK_NAME)
                return 2
            with open_store(self.config) as store:
                return self._run(store)

    def _run(self, store: Store) -> int:
        host = EngineHost.restore(self.config, store, clock=self.clock, routes=self.routes)
        replayed = host.catch_up()
        log.info("engine restored at journal %s (%s rows replayed)", host.applied_seq, replayed)
        ingest = Ingest(self.config.broker, self.queue, sites=[s.id for s in self.config.sites],
                        clock=self.clock, protocol=self.mqtt_protocol, connected=self.connected)
        ingest.start()
        worker_stop = threading.Event()
        threads = [threading.Thread(target=_run_worker, args=(w, worker_stop), name=w.name,
                                    daemon=True) for w in self.workers]
        for t in threads:
            t.start()
        self.notify.send("READY=1")
        last_tick = last_snapshot = time.monotonic()
        snapshot_ok_after = 0.0
        every_s = self.config.daemon.snapshot_every_s
        every_rows = self.config.daemon.snapshot_every_rows
        try:
            while not self.stop_event.is_set():
                batch = self._take_batch(timeout=0.05)
                if batch:
                    self._commit(store, ingest, batch)
                if store.journal_max_seq() > host.applied_seq:
                    host.catch_up()
                now = time.monotonic()
                caught_up = ingest.connected.is_set() and len(batch) < BATCH_MAX and \
                    self.queue.empty()
                if (now - last_tick >= self.tick_every_s and caught_up) or \
                        now - last_tick >= max(TICK_AT_LEAST_EVERY_S, self.tick_every_s):
                    host.tick()
                    last_tick = now
                if now >= snapshot_ok_after and (
                        host.rows_since_snapshot >= every_rows or
                        (host.rows_since_snapshot and now - last_snapshot >= every_s)):
                    if self._snapshot(host):
                        last_snapshot = now
                    else:
                        snapshot_ok_after = now + self.config.daemon.snapshot_retry_s
                self.notify.watchdog()
            self.notify.send("STOPPING=1")
            log.info("stopping: draining %s queued message(s)", self.queue.qsize())
            # Drain what the network thread already handed over, while we can still ack.
            while True:
                batch = self._take_batch(timeout=0.2)
                if not batch:
                    break
                self._commit(store, ingest, batch)
        finally:
            ingest.stop()
        host.catch_up()
        self._snapshot(host)
        worker_stop.set()
        for t in threads:
            t.join(timeout=10)
        log.info("stopped at journal %s", host.applied_seq)
        return 0

    def _snapshot(self, host: EngineHost) -> bool:
        """Snapshot the engine; a failure is logged loudly and never fatal.

        A snapshot only shortens the next start (the journal holds every
        input), so ingest, acknowledgements and alerts must not stop for it.
        """
        try:
            host.snapshot()
        except Exception:
            log.exception("snapshot at journal %s FAILED; ingest and alerts go on, the next"
                          " attempt is in %g s (until one succeeds, a restart replays the"
                          " journal from the last good snapshot)", host.applied_seq,
                          self.config.daemon.snapshot_retry_s)
            return False
        return True

    def _take_batch(self, timeout: float) -> list[Message]:
        try:
            first = self.queue.get(timeout=timeout)
        except queue.Empty:
            return []
        batch = [first]
        deadline = time.monotonic() + BATCH_WAIT_S
        while len(batch) < BATCH_MAX:
            try:
                batch.append(self.queue.get(timeout=max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                break
        return batch

    def _commit(self, store: Store, ingest: Ingest, batch: list[Message]) -> None:
        journal: list[JournalIn] = []
        dead: list[DeadLetterIn] = []
        now = self.clock()
        ref_ms = round(now * 1000)
        for m in batch:
            item = parse_message(self.config, m.topic, m.payload, ref_ms=ref_ms,
                                 received_ms=m.received_ms)
            if isinstance(item, Rejection):
                dead.append(DeadLetterIn(m.topic, m.payload, item.reason.value, item.detail,
                                         m.received_ms))
                self.rejects.note(m.topic, item, now)
            else:
                journal.append(journal_in(item, topic=m.topic, received_ms=m.received_ms))
        store.commit_batch(journal, dead)
        # Only now, with the batch on disk, may the broker forget it.
        ingest.ack(batch)


def _run_worker(worker: Worker, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            worker.run(stop)
            return
        except Exception:  # a sink must not take the daemon down; restart it after a pause
            log.exception("worker %s failed; restarting in 5 s", worker.name)
            stop.wait(5.0)


def install_signal_handlers(stop: threading.Event) -> None:
    """SIGTERM and SIGINT set ``stop``: the daemon drains, snapshots and exits 0."""
    def handler(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)

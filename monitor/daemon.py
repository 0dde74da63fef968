"""The daemon: MQTT → journal → engine → events, outbox and log book.

The shell around the engine, and nothing clever:

* the ingest thread (paho) hands messages over through a bounded queue;
* this module's loop takes a batch from the queue, parses it, commits accepted
  readings to the journal and rejects to the dead-letter table in one
  transaction, then acknowledges the batch to the broker (DESIGN § 2: the
  journal commit comes first, always);
* it applies the batch's readings, just committed, to the engine straight
  from memory (each with its journal seq), and before them any journal rows
  another process wrote (``stormwatch inspect`` while the broker is
  unreachable); it records the resulting events, their outbox rows and log
  book rows in one transaction, and wakes the alert worker;
* it ticks the engine on the wall clock; a tick that produced events is itself
  journaled, so a restart replays exactly what happened; each tick also
  records every site's status (``site_status``) for ``stormwatch status``;
* it snapshots the engine every so often, from a thread of its own (see
  ``Snapshots``): state, not readings, and only the checkpoints that changed.
  On start it restores the snapshot and replays the journal after it; events
  already recorded are recognised by (id, revision) and not recorded or
  alerted twice.

The engine's window onto late readings (``engine/window.py``) is the journal
itself (``JournalWindow``), bounded by the seq of the row being applied, so a
restart that replays the journal sees exactly what the first run saw.
"""

from __future__ import annotations

import fcntl
import gc
import json
import logging
import os
import queue
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from .config import Config
from .engine import Engine, Event
from .engine.inputs import Inspection, Reading
from .engine.summary import site_summary
from .ingest import Ingest, Message
from .models import Rejection, parse_message
from .mqttproc import IngestProcess
from .store import DeadLetterIn, EngineSnapshot, JournalIn, JournalRow, Store
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
#: The recorded status of sites with new input is brought up to date this often
#: (and at once with any event, in the same transaction); while a backlog drains,
#: less often: every site has new input then, and the drain comes first.
STATUS_EVERY_S = 0.5
STATUS_BACKLOG_S = 5.0
#: Between full garbage collections (see ``_keep_heap``).
FULL_GC_EVERY_S = 3600.0
#: The owner name of the daemon's engine snapshots in the store.
ENGINE_OWNER = "engine"


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


class JournalWindow:
    """The engine's window onto late readings: the journal, up to the row being applied.

    ``upto_seq`` is set before each row is applied, so a re-fold sees the rows
    applied before it and itself, never rows applied after it: a replay of the
    journal after a restart makes the same events as the first run did.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self.upto_seq: int | None = None

    def add(self, reading: Reading) -> None:
        """Already in the journal."""

    def readings(self, site: str, sensors: Sequence[str], since_ms: int) -> list[Reading]:
        return [Reading.from_json(body) for body in self.store.journal_readings(
            site, sensors, since_ms, self.upto_seq)]

    def compact(self, site: str, before_ms: int) -> None:
        """The journal keeps everything."""

    def dump(self) -> Any:
        return None


def apply_item(engine: Engine, item: Reading | Inspection) -> list[Event]:
    """Feed one input to the engine, unless the configuration no longer has its site or
    sensor (the row was journaled under another configuration: kept, skipped)."""
    se = engine.sites.get(item.site)
    if se is None or (isinstance(item, Reading) and item.sensor not in se.health):
        return []
    return engine.apply(item)


def apply_row(engine: Engine, row: JournalRow) -> list[Event]:
    """Feed one journal row to the engine (the engine's window must stand at ``row.seq``)."""
    if row.kind == "reading":
        return apply_item(engine, Reading.from_json(row.body))
    if row.kind == "inspection":
        return apply_item(engine, Inspection.from_json(row.body))
    if row.kind == "tick":
        return engine.tick(int(row.body["now_ms"]))
    log.warning("journal row %s has unknown kind %r; skipped", row.seq, row.kind)
    return []


# --------------------------------------------------------------------------- snapshots


@dataclass
class SnapshotImage:
    """One engine snapshot, taken on the engine's thread, to be written anywhere."""

    applied_seq: int
    data: dict[str, Any]
    put: list[tuple[str, int, str]]
    keep_from: dict[str, int]
    checkpoints: dict[str, dict[int, str]]
    rows: int
    replace_all: bool


class Snapshots:
    """Engine snapshots of one owner: state, not readings, and only what changed.

    ``take`` (on the engine's thread) dumps the engine and splits the timeline
    checkpoints off: a checkpoint is immutable JSON text, so it is written once
    and kept in the store until compaction passes it; the rest (the *head*:
    each fold's current state, the facts still open, the clocks) is small.
    ``write`` (on any thread, with its own store connection) stores the image
    in one transaction. Which checkpoints the store holds is tracked by
    identity of their text, so finding what changed costs no serialisation.
    """

    def __init__(self, owner: str, written: dict[str, dict[int, str]] | None = None) -> None:
        self.owner = owner
        self.written: dict[str, dict[int, str]] = written or {}
        #: After a rebuild, the store's checkpoints belong to a state that is gone.
        self.replace_all = written is None

    def take(self, engine: Engine, applied_seq: int, rows: int) -> SnapshotImage:
        data = engine.dump()
        put: list[tuple[str, int, str]] = []
        keep_from: dict[str, int] = {}
        now: dict[str, dict[int, str]] = {}
        for site_id, sd in data["sites"].items():
            for name, td in sd["timelines"].items():
                full = f"{site_id}/{name}"
                had = self.written.get(full, {})
                cps = td["checkpoints"]
                now[full] = {at: text for at, text in cps}
                put += [(full, at, text) for at, text in cps if had.get(at) is not text]
                keep_from[full] = cps[0][0]
                td["checkpoints"] = [at for at, _ in cps]
        return SnapshotImage(applied_seq, data, put, keep_from, now, rows, self.replace_all)

    def write(self, store: Store, image: SnapshotImage, *, created_ms: int) -> None:
        head = json.dumps(image.data, separators=(",", ":"), allow_nan=False)
        store.save_engine_snapshot(self.owner, image.applied_seq, head, created_ms=created_ms,
                                   put=image.put, keep_from=image.keep_from,
                                   replace_all=image.replace_all)
        self.written = image.checkpoints
        self.replace_all = False


def snapshot_data(snap: EngineSnapshot) -> dict[str, Any]:
    """``Engine.dump()`` again, from a stored snapshot (``KeyError`` if rows are missing)."""
    data: dict[str, Any] = json.loads(snap.head)
    for site_id, sd in data["sites"].items():
        for name, td in sd["timelines"].items():
            texts = snap.checkpoints[f"{site_id}/{name}"]
            td["checkpoints"] = [[at, texts[at]] for at in td["checkpoints"]]
    return data


def restore_engine(config: Config, store: Store, window: JournalWindow, owner: str
                   ) -> tuple[Engine, int, Snapshots]:
    """The owner's engine from its snapshot, or a new one (seq 0) when there is none or
    it cannot be used (another configuration, another version): the journal is replayed."""
    snap = store.load_engine_snapshot(owner)
    if snap is not None:
        try:
            engine = Engine.restore(config, snapshot_data(snap), window)
            return engine, snap.applied_seq, Snapshots(owner, snap.checkpoints)
        except (KeyError, ValueError, TypeError) as exc:
            log.warning("snapshot at journal %s unusable (%s); replaying the journal",
                        snap.applied_seq, exc)
    return Engine(config, window), 0, Snapshots(owner)


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
    routes: Callable[[dict[str, Any]], list[str]] | None = None
    clock: Callable[[], float] = time.time
    #: Called after events with alerts were recorded (wakes the delivery worker).
    on_alerts: Callable[[], None] | None = None
    #: The site status text last recorded, per site, and the sites with input since.
    status_written: dict[str, str] = field(default_factory=dict)
    dirty_sites: set[str] = field(default_factory=set)

    @classmethod
    def restore(cls, config: Config, store: Store, *, clock: Callable[[], float] = time.time,
                routes: Callable[[dict[str, Any]], list[str]] | None = None) -> EngineHost:
        window = JournalWindow(store)
        engine, seq, snapshots = restore_engine(config, store, window, ENGINE_OWNER)
        return cls(config, store, engine, window, snapshots, seq, routes=routes, clock=clock)

    def catch_up(self, *, record: bool = True, until: int | None = None) -> int:
        """Apply every journal row after ``applied_seq`` (up to ``until``) and record the
        events; return the count."""
        total = 0
        while True:
            rows = self.store.journal_after(self.applied_seq, limit=5000)
            if until is not None:
                rows = [r for r in rows if r.seq <= until]
            if not rows:
                return total
            events: list[Event] = []
            for row in rows:
                self.window.upto_seq = row.seq
                events += apply_row(self.engine, row)
                if "site" in row.body:
                    self.dirty_sites.add(str(row.body["site"]))
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
        for seq, item, _ in items:
            self.window.upto_seq = seq
            events += apply_item(self.engine, item)
            self.dirty_sites.add(item.site)
        last_seq, _, received = items[-1]
        self._applied(last_seq, received, len(items))
        self.record(events)

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
        statuses = self._status_changes(None if status else {e.fact.site for e in events})
        if not events and not statuses:
            return 0
        new = self.store.record_events([e.to_json() for e in events], self.applied_seq,
                                       recorded_ms=self.now_ms(), routes=self.routes,
                                       statuses=statuses)
        self.status_written.update(statuses)
        if new:
            for e in events:
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
            text = json.dumps(site_summary(self.engine, site_id), separators=(",", ":"))
            if self.status_written.get(site_id) != text:
                changed[site_id] = text
        self.dirty_sites -= sites
        return changed

    def tick(self) -> list[Event]:
        """Tick on the wall clock; journal the tick when it changed anything; record the
        sites' status."""
        now = self.now_ms()
        if self.lag_ms is not None:
            self.store.meta_set("lag_ms", self.lag_ms)
        events = self.engine.tick(now)
        if events:
            (seq,) = self.store.commit_batch([JournalIn("tick", None, None, now, {"now_ms": now},
                                                        None, now)])
            if seq is not None:
                self.applied_seq = max(self.applied_seq, seq)
        self.dirty_sites.update(s.id for s in self.config.sites)
        self.record(events, status=True)
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


class SnapshotWriter:
    """Writes snapshot images on a thread of its own, with its own store connection,
    so a snapshot never stalls acknowledgements. One image at a time; a failure is
    logged loudly and reported to the engine thread, which tries again later."""

    def __init__(self, config: Config, snapshots: Snapshots,
                 clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.snapshots = snapshots
        self.clock = clock
        self._inbox: queue.Queue[SnapshotImage | None] = queue.Queue(maxsize=1)
        self._outcomes: queue.Queue[tuple[SnapshotImage, bool]] = queue.Queue()
        self.busy = False
        self._thread = threading.Thread(target=self._run, name="snapshots", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def submit(self, image: SnapshotImage) -> None:
        self.busy = True
        self._inbox.put(image)

    def outcomes(self) -> list[tuple[SnapshotImage, bool]]:
        """Images written (True) or failed (False) since the last call."""
        out = []
        while True:
            try:
                out.append(self._outcomes.get_nowait())
            except queue.Empty:
                return out

    def stop(self) -> None:
        self._inbox.put(None)
        self._thread.join(timeout=60)

    def _run(self) -> None:
        with open_store(self.config) as store:
            while True:
                image = self._inbox.get()
                if image is None:
                    return
                ok = _write_snapshot(self.snapshots, store, image, self.clock)
                self.busy = False
                self._outcomes.put((image, ok))


def _write_snapshot(snapshots: Snapshots, store: Store, image: SnapshotImage,
                    clock: Callable[[], float]) -> bool:
    started = time.monotonic()
    try:
        snapshots.write(store, image, created_ms=round(clock() * 1000))
    except Exception:
        log.exception("snapshot at journal %s FAILED; ingest and alerts go on, it is tried"
                      " again later (until one succeeds, a restart replays the journal from"
                      " the last good snapshot)", image.applied_seq)
        return False
    log.debug("snapshot at journal %s written in %.3f s (%d checkpoint(s) new)",
              image.applied_seq, time.monotonic() - started, len(image.put))
    return True


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


class Acker(Protocol):
    """What acknowledges a batch to the broker (``Ingest``)."""

    def ack(self, messages: list[Message]) -> int: ...


class Daemon:
    """``stormwatch run``: ingest, journal, engine, events, until told to stop."""

    def __init__(self, config: Config, *, clock: Callable[[], float] = time.time,
                 routes: Callable[[dict[str, Any]], list[str]] | None = None,
                 workers: list[Worker] | None = None, tick_every_s: float = TICK_EVERY_S,
                 mqtt_protocol: int | None = None, mqtt_process: bool = False,
                 stop_event: threading.Event | None = None) -> None:
        """``mqtt_process``: run the MQTT client in a process of its own
        (``mqttproc.py``; ``stormwatch run`` does), not on a thread of this one."""
        self.config = config
        self.mqtt_protocol = mqtt_protocol
        self.mqtt_process = mqtt_process
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
        started = time.monotonic()
        host = EngineHost.restore(self.config, store, clock=self.clock, routes=self.routes)
        restored_at = host.applied_seq
        replayed = host.catch_up()
        log.info("engine restored from the snapshot at journal %s and %s later row(s) in"
                 " %.1f s", restored_at, replayed, time.monotonic() - started)
        host.on_alerts = self._wake_workers
        host.record_status()
        _keep_heap(full=True)
        writer = SnapshotWriter(self.config, host.snapshots, self.clock)
        writer.start()
        sites = [s.id for s in self.config.sites]
        ingest: Ingest | IngestProcess
        if self.mqtt_process:
            ingest = IngestProcess(self.config.broker, self.queue, sites=sites, clock=self.clock,
                                   protocol=self.mqtt_protocol, connected=self.connected,
                                   log_format=self.config.log_format,
                                   log_level=logging.getLogger().getEffectiveLevel())
        else:
            ingest = Ingest(self.config.broker, self.queue, sites=sites, clock=self.clock,
                            protocol=self.mqtt_protocol, connected=self.connected)
        ingest.start()
        worker_stop = threading.Event()
        threads = [threading.Thread(target=_run_worker, args=(w, worker_stop), name=w.name,
                                    daemon=True) for w in self.workers]
        for t in threads:
            t.start()
        self.notify.send("READY=1")
        last_tick = last_snapshot = last_status = last_full_gc = time.monotonic()
        snapshot_ok_after = 0.0
        every_s = self.config.daemon.snapshot_every_s
        every_rows = self.config.daemon.snapshot_every_rows
        try:
            while not self.stop_event.is_set():
                batch = self._take_batch(timeout=0.05)
                if batch:
                    self.ingest_batch(store, ingest, host, batch)
                if store.journal_max_seq() > host.applied_seq:
                    host.catch_up()
                now = time.monotonic()
                caught_up = ingest.connected.is_set() and len(batch) < BATCH_MAX and \
                    self.queue.empty()
                if (now - last_tick >= self.tick_every_s and caught_up) or \
                        now - last_tick >= max(TICK_AT_LEAST_EVERY_S, self.tick_every_s):
                    host.tick()
                    last_tick = last_status = now
                elif host.dirty_sites and now - last_status >= (
                        STATUS_EVERY_S if caught_up else STATUS_BACKLOG_S):
                    host.record([], status=True)
                    last_status = now
                for image, ok in writer.outcomes():
                    if not ok:
                        host.rows_since_snapshot += image.rows
                        snapshot_ok_after = now + self.config.daemon.snapshot_retry_s
                if not writer.busy and now >= snapshot_ok_after and (
                        host.rows_since_snapshot >= every_rows or
                        (host.rows_since_snapshot and now - last_snapshot >= every_s)):
                    writer.submit(host.take_snapshot())
                    last_snapshot = now
                    _keep_heap(full=now - last_full_gc >= FULL_GC_EVERY_S)
                    if now - last_full_gc >= FULL_GC_EVERY_S:
                        last_full_gc = now
                self.notify.watchdog()
            self.notify.send("STOPPING=1")
            log.info("stopping: draining %s queued message(s)", self.queue.qsize())
            # Drain what the network thread already handed over, while we can still ack.
            while True:
                batch = self._take_batch(timeout=0.2)
                if not batch:
                    break
                self.ingest_batch(store, ingest, host, batch)
        finally:
            ingest.stop()
            writer.stop()
        host.catch_up()
        host.record_status()
        for image, ok in writer.outcomes():
            if not ok:
                host.rows_since_snapshot += image.rows
        self._snapshot(host)
        worker_stop.set()
        self._wake_workers()
        for t in threads:
            t.join(timeout=10)
        log.info("stopped at journal %s", host.applied_seq)
        return 0

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
        except Exception:
            log.exception("snapshot at journal %s FAILED (until one succeeds, a restart"
                          " replays the journal from the last good snapshot)", host.applied_seq)
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
                     batch: list[Message]) -> None:
        """One batch from the queue to the engine: parse, journal (rejects to the dead
        letters), acknowledge, apply, record. ``bench/season.py`` drives this too."""
        journal: list[JournalIn] = []
        items: list[tuple[Reading | Inspection, int]] = []
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
                items.append((item, m.received_ms))
        seqs = store.commit_batch(journal, dead)
        # Only now, with the batch on disk, may the broker forget it.
        ingest.ack(batch)
        # The engine takes the batch from memory; redeliveries (no seq) are not input.
        host.apply_committed([(seq, item, received) for seq, (item, received)
                              in zip(seqs, items, strict=True) if seq is not None])


def _keep_heap(*, full: bool) -> None:
    """Keep the cyclic garbage collector off the engine's long-lived objects.

    The engine holds a few hundred thousand objects for as long as the daemon
    runs; each full collection walks them all (about 100 ms for a hundred
    sites), at random moments, and that was the tail of the alert latency.
    ``gc.freeze`` moves every object alive now out of the collector's sight
    (reference counting still frees them). Done after each snapshot, so what
    survived that long counts as long-lived; once an hour (``full``) the
    frozen set is put back and collected, so cyclic garbage cannot pile up.
    """
    if full:
        gc.unfreeze()
        gc.collect()
    gc.freeze()


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

"""The InfluxDB exporter: journal and events → line protocol → InfluxDB, from cursors.

Theory of operation
-------------------
The journal is the spool (monitor/README.md, "Architecture"). The exporter keeps two cursors in the
store: ``cursor.influx`` (the last journal ``seq`` whose points InfluxDB has
stored) and ``cursor.influx_events`` (the same for the events table). One
pass of the loop (``ExportSession.step``):

1. *Fill*: read rows after the cursors, turn each into points (raw reading,
   derived measurements from the engine replica, event revisions; see
   ``derive.py``) until ``batch_size`` points are buffered. Points with the
   same identity (series and time) are merged in the buffer, the later
   values winning, exactly as InfluxDB would.
2. *Write* the buffer in requests of at most ``batch_size`` lines.
3. Only when every line is stored (or dead-lettered, below) do the cursors
   move, together with the exporter's status, in one SQLite transaction.

So nothing is skipped: a crash, a restart or an outage leaves the cursors
where InfluxDB's data ends, and the same rows are turned into the same
points again. Nothing is doubled either: a point's identity is its series
and timestamp, so writing it again replaces it with itself.

While InfluxDB is unreachable (or refuses every request: authentication, a
missing bucket) the buffer is kept and retried with exponential backoff (1 s
doubling to ``MAX_BACKOFF_S``, ±20 % jitter so many daemons do not return in
step); the cursors stay; the daemon goes on ingesting and alerting, because
this runs in its own thread with its own SQLite connection, and the engine
thread never waits for it. The lag (rows and seconds behind) is logged at
the first failure and then every ``LAG_LOG_EVERY_S``, and ``status --json``
computes it from the cursor (``export.behind_rows``, ``export.behind_s``).
When InfluxDB answers again, the backlog drains in journal order, batch by
batch.

A point InfluxDB refuses as malformed (``writers.Rejected``) is found by
splitting the request in halves until the refused lines stand alone; each
goes to the dead-letter table (reason ``influx_rejected``, the line as the
payload, InfluxDB's message as the detail) and the rest of the batch is
written. A crash between the dead letter and the cursor move can record that
line twice; nothing is lost.

The wall-clock measurements (``clock``, ``health``, ``site`` from the
replica's state; ``daemon`` self-metrics) are written once a minute, stamped
on the minute, and only while the replica is caught up with the journal:
during a backlog they would describe the past as if it were now.

The replica is restored from the newest engine snapshot at or before the
cursor: the exporter's own (kept in ``meta`` with the cursor, every
``SNAPSHOT_EVERY_ROWS`` rows or ``SNAPSHOT_EVERY_S``) or one of the
daemon's. Rows between the snapshot and the cursor are applied without being
written. Without any, the journal is replayed from the start.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...config import Config
from ...contract.times import MS_PER_MINUTE, WallClock
from ...engine import Engine
from ...host.snapshots import ENGINE_OWNER, snapshot_data
from ...host.window import JournalWindow
from ...store import DeadLetterIn, Store
from ...store.exportstate import (
    CURSOR,
    DEAD_LETTER_REASON,
    EVENTS_CURSOR,
    META_ERROR,
    META_ERROR_SINCE,
    META_LAST_WRITE,
    META_SNAPSHOT,
)
from .derive import Replica, event_points, minute_points
from .lineprotocol import Int, Point
from .writers import Rejected, Unavailable, Writer, make_writer

log = logging.getLogger("stormwatch.export")


#: Journal rows read per query while filling a batch.
ROWS_PER_READ = 1000
#: Seconds between passes when there is nothing to write.
POLL_S = 1.0
FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0
#: While an outage lasts, the lag is logged this often (each retry logs at debug).
LAG_LOG_EVERY_S = 60.0
SNAPSHOT_EVERY_ROWS = 20_000
SNAPSHOT_EVERY_S = 600.0
#: On shutdown, keep draining at most this long (the daemon joins workers for 10 s).
FINISH_S = 5.0



@dataclass
class Buffer:
    """Points waiting to be written, and where the cursors go once they are."""

    points: dict[tuple[str, int], Point] = field(default_factory=dict)
    journal_to: int = 0
    events_to: int = 0
    rows: int = 0
    #: The encoded lines, and how many of them are stored (resume after an outage).
    lines: list[str] | None = None
    written: int = 0

    def add(self, points: list[Point]) -> None:
        for p in points:
            old = self.points.get(p.identity)
            if old is None:
                self.points[p.identity] = p
            else:
                # InfluxDB merges fields of the same point; so does the buffer.
                old.fields.update(p.fields)

    def __len__(self) -> int:
        return len(self.points)


class ExportSession:
    """The exporter's state over one store connection; ``step()`` is one pass.

    Used by the worker thread (``InfluxExporter``) and directly by tests and
    benchmarks, which drive it without a daemon.
    """

    def __init__(self, config: Config, store: Store, writer: Writer, *,
                 clock: WallClock = time.time, max_backoff_s: float = MAX_BACKOFF_S) -> None:
        if config.influx is None:
            raise ValueError("the configuration has no influx section")
        self.config = config
        self.store = store
        self.writer = writer
        self.clock = clock
        self.max_backoff_s = max_backoff_s
        self.batch_size = config.influx.batch_size
        self.cursor = store.state.cursor(CURSOR)
        self.events_cursor = store.state.cursor(EVENTS_CURSOR)
        self.replica = restore_replica(config, store, self.cursor)
        self.buffer: Buffer | None = None
        self.caught_up = False
        self.failures = 0
        self.outage_since: float | None = None
        self.last_lag_log = 0.0
        self.last_minute = 0
        self.rows_since_snapshot = 0
        self.last_snapshot = time.monotonic()
        self.points_written = 0
        self.dead_letters = 0
        self.started = clock()

    # ------------------------------------------------------------------ the loop

    def step(self) -> float:
        """One pass: fill, write, move the cursors. Returns seconds to wait before the next."""
        if self.buffer is None:
            buf = self._fill()
            if self.caught_up:
                self._add_minute_points(buf)
            if not buf:
                if buf.rows:  # rows without points (ticks): just move the cursors
                    self._commit(buf)
                    return 0.0
                return POLL_S
            self.buffer = buf
        try:
            self._write(self.buffer)
        except Unavailable as exc:
            return self._failed(str(exc))
        self._recovered()
        self._commit(self.buffer)
        self.buffer = None
        return 0.0 if not self.caught_up else POLL_S

    def drain(self, timeout_s: float = 60.0) -> bool:
        """Step until caught up (True) or an outage / the timeout stops it (False)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            wait = self.step()
            if self.failures:
                return False
            if self.buffer is None and self.caught_up and wait > 0:
                return True
        return False

    def finish(self, timeout_s: float = FINISH_S) -> None:
        """On shutdown: drain what can be drained quickly, snapshot the replica."""
        if not self.failures:
            self.drain(timeout_s)
        if self.rows_since_snapshot:
            self._save_snapshot()

    # ------------------------------------------------------------------ filling

    def _fill(self) -> Buffer:
        buf = Buffer(journal_to=self.replica.position, events_to=self.events_cursor)
        exhausted = False
        while len(buf) < self.batch_size:
            rows = self.store.journal.after(buf.journal_to, limit=ROWS_PER_READ)
            for row in rows:
                buf.add(self.replica.apply(row))
                buf.journal_to = row.seq
                buf.rows += 1
                if len(buf) >= self.batch_size:
                    break
            else:
                if len(rows) < ROWS_PER_READ:
                    exhausted = True
                    break
        events_exhausted = False
        while len(buf) < self.batch_size:
            events = self.store.events.after(buf.events_to, limit=ROWS_PER_READ)
            for stored in events:
                event = stored.event
                earlier = self.store.events.revisions(event.id) if event.revision else []
                buf.add(event_points(event, earlier))
                buf.events_to = stored.seq
                buf.rows += 1
                if len(buf) >= self.batch_size:
                    break
            else:
                if len(events) < ROWS_PER_READ:
                    events_exhausted = True
                    break
        self.caught_up = exhausted and events_exhausted
        return buf

    def _add_minute_points(self, buf: Buffer) -> None:
        """The wall-clock points, once a minute, when the replica has caught up."""
        now_ms = round(self.clock() * 1000)
        minute = now_ms // MS_PER_MINUTE
        if minute <= self.last_minute:
            return
        self.last_minute = minute
        buf.add(minute_points(self.replica.engine, self.config, now_ms))
        buf.add([self._daemon_point(now_ms)])

    def _daemon_point(self, now_ms: int) -> Point:
        store = self.store
        behind, first_ms = store.journal.backlog(self.replica.position)
        counters = store.journal.counters()
        journal_seq = store.journal.max_seq()
        return Point.make("daemon", {"instance": self.config.broker.client_id}, {
            "accepted": Int(counters.get("accepted", 0)),
            "duplicates": Int(counters.get("duplicates", 0)),
            # Ingest rejects only: the exporter's own dead letters are export_dead_letters.
            "rejected": Int(sum(v for k, v in counters.items() if k.startswith("rejected.")
                                and k != f"rejected.{DEAD_LETTER_REASON}")),
            "journal_seq": Int(journal_seq),
            "engine_behind_rows": Int(max(0, journal_seq - store.events.applied_seq())),
            "export_behind_rows": Int(behind),
            "export_behind_s": round(max(0, now_ms - first_ms) / 1000, 3) if first_ms else 0.0,
            "export_points": Int(self.points_written),
            "export_dead_letters": Int(self.dead_letters),
            "uptime_s": round(self.clock() - self.started, 1),
        }, now_ms // MS_PER_MINUTE * MS_PER_MINUTE)

    # ------------------------------------------------------------------ writing

    def _write(self, buf: Buffer) -> None:
        if buf.lines is None:
            buf.lines = [line for p in buf.points.values() if (line := p.encode()) is not None]
        lines = buf.lines
        while buf.written < len(lines):
            chunk = lines[buf.written:buf.written + self.batch_size]
            rejected = self._write_split(chunk)
            if rejected:
                self._dead_letter(rejected)
            buf.written += len(chunk)
            self.points_written += len(chunk) - len(rejected)

    def _write_split(self, lines: list[str]) -> list[tuple[str, str]]:
        """Write; on ``Rejected`` split in halves until the refused lines stand alone.

        Returns the refused lines with InfluxDB's message. ``Unavailable``
        propagates: the whole buffer is retried later (rewrites are harmless).
        """
        try:
            self.writer.write(lines)
            return []
        except Rejected as exc:
            if len(lines) == 1:
                return [(lines[0], str(exc))]
        mid = len(lines) // 2
        return self._write_split(lines[:mid]) + self._write_split(lines[mid:])

    def _dead_letter(self, rejected: list[tuple[str, str]]) -> None:
        now_ms = round(self.clock() * 1000)
        letters = [DeadLetterIn(f"influx/{line.split(',', 1)[0].split(' ', 1)[0]}",
                                line.encode("utf-8"), DEAD_LETTER_REASON, message[:1000], now_ms)
                   for line, message in rejected]
        self.store.journal.commit([], letters)
        self.dead_letters += len(letters)
        for line, message in rejected[:3]:
            log.warning("InfluxDB refused a point; kept as a dead letter (%s): %s",
                        message, line[:200])
        if len(rejected) > 3:
            log.warning("... and %s more refused point(s) dead-lettered", len(rejected) - 3)

    def _commit(self, buf: Buffer) -> None:
        now_ms = round(self.clock() * 1000)
        meta: dict[str, int | str] = {META_LAST_WRITE: now_ms}
        self.rows_since_snapshot += buf.journal_to - self.cursor
        self.cursor, self.events_cursor = buf.journal_to, buf.events_to
        if self.rows_since_snapshot >= SNAPSHOT_EVERY_ROWS or (
                self.rows_since_snapshot and
                time.monotonic() - self.last_snapshot >= SNAPSHOT_EVERY_S):
            meta[META_SNAPSHOT] = self._snapshot_text()
            self.rows_since_snapshot = 0
            self.last_snapshot = time.monotonic()
        self.store.state.set_cursors({CURSOR: self.cursor, EVENTS_CURSOR: self.events_cursor}, meta)

    def _snapshot_text(self) -> str:
        return json.dumps({"seq": self.replica.position, "engine": self.replica.engine.dump()},
                          separators=(",", ":"), allow_nan=False)

    def _save_snapshot(self) -> None:
        if self.buffer is not None:
            return  # the replica is ahead of the cursor: its state is not the cursor's
        self.store.state.meta_set(META_SNAPSHOT, self._snapshot_text())
        self.rows_since_snapshot = 0
        self.last_snapshot = time.monotonic()

    # ------------------------------------------------------------------ outages

    def _failed(self, reason: str) -> float:
        self.failures += 1
        now = self.clock()
        delay = min(self.max_backoff_s, FIRST_BACKOFF_S * 2.0 ** (self.failures - 1))
        delay *= float(random.uniform(0.8, 1.2))
        first = self.outage_since is None
        if first:
            self.outage_since = now
            self.store.state.set_cursors({}, {META_ERROR: reason[:500],
                                        META_ERROR_SINCE: round(now * 1000)})
        if first or now - self.last_lag_log >= LAG_LOG_EVERY_S:
            self.last_lag_log = now
            behind, first_ms = self.store.journal.backlog(self.cursor)
            age = max(0.0, now - first_ms / 1000) if first_ms is not None else 0.0
            log.warning("InfluxDB write to %s failed: %s; export paused, %s journal row(s) "
                        "behind (%.0f s); retrying in %.1f s", self.writer.target, reason,
                        behind, age, delay)
        else:
            log.debug("InfluxDB still unavailable (%s); retry %s in %.1f s", reason,
                      self.failures, delay)
        return delay

    def _recovered(self) -> None:
        if self.outage_since is None:
            return
        behind, _ = self.store.journal.backlog(self.cursor)
        log.info("InfluxDB %s reachable again after %.0f s; draining %s journal row(s)",
                 self.writer.target, self.clock() - self.outage_since, behind)
        self.failures = 0
        self.outage_since = None
        self.store.state.set_cursors({}, {META_ERROR: "", META_ERROR_SINCE: 0})


def restore_replica(config: Config, store: Store, cursor: int) -> Replica:
    """An engine replica at exactly ``cursor``: from the best snapshot, then the journal."""
    candidates: list[tuple[int, Callable[[], dict[str, Any]], str]] = []
    own = store.state.meta_get(META_SNAPSHOT)
    if isinstance(own, str) and own:
        try:
            data = json.loads(own)
            if int(data["seq"]) <= cursor:
                candidates.append((int(data["seq"]), lambda: dict(data["engine"]),
                                   "the exporter's"))
        except (ValueError, KeyError, TypeError):
            log.warning("the exporter's engine snapshot is unreadable; not using it")
    daemons = store.state.load_snapshot(ENGINE_OWNER)
    if daemons is not None and daemons.applied_seq <= cursor:
        candidates.append((daemons.applied_seq, lambda: snapshot_data(daemons),
                           "the daemon's"))
    window = JournalWindow(store)
    replica: Replica | None = None
    for seq, load, whose in sorted(candidates, key=lambda c: -c[0]):
        try:
            replica = Replica(config, Engine.restore(config, load(), window), seq, window)
            log.debug("export replica restored from %s snapshot at journal %s", whose, seq)
            break
        except (KeyError, ValueError, TypeError) as exc:
            log.warning("%s snapshot at journal %s does not fit this configuration (%s)",
                        whose, seq, exc)
    if replica is None:
        replica = Replica(config, Engine(config, window), 0, window)
    skipped = 0
    while replica.position < cursor:
        rows = store.journal.after(replica.position, limit=5000)
        rows = [r for r in rows if r.seq <= cursor]
        if not rows:
            break
        for row in rows:
            replica.skip(row)
        skipped += len(rows)
        if rows[-1].seq >= cursor:
            break
    replica.position = max(replica.position, cursor)
    if skipped:
        log.info("export replica caught up to journal %s (%s rows replayed)", cursor, skipped)
    return replica


class InfluxExporter:
    """The worker (``monitor.sinks.registry``): an ``ExportSession`` in the daemon's thread pool."""

    name = "export-influx"

    def __init__(self, config: Config, clock: WallClock = time.time,
                 writer_factory: Callable[[], Writer] | None = None) -> None:
        if config.influx is None:
            raise ValueError("the configuration has no influx section")
        self.config = config
        self.clock = clock
        influx = config.influx
        self.writer_factory = writer_factory or (lambda: make_writer(influx))
        self._wake = threading.Event()

    def wake(self) -> None:
        """Events were recorded; the exporter's own poll finds them soon enough, but
        the daemon wakes it at shutdown too."""
        self._wake.set()

    def run(self, stop: threading.Event) -> None:
        writer = self._writer(stop)
        if writer is None:
            return
        try:
            with Store.in_dir(self.config.state_dir) as store:
                session = ExportSession(self.config, store, writer, clock=self.clock)
                log.info("exporting to InfluxDB %s from journal %s, events %s",
                         writer.target, session.cursor, session.events_cursor)
                while not stop.is_set():
                    if self._wake.wait(session.step()):
                        self._wake.clear()
                session.finish()
        finally:
            writer.close()

    def _writer(self, stop: threading.Event) -> Writer | None:
        """The writer, once its secret files can be read (an unreadable one is retried)."""
        while not stop.is_set():
            try:
                return self.writer_factory()
            except OSError as exc:
                log.error("InfluxDB export cannot start: %s; retrying in 60 s", exc)
                stop.wait(60.0)
        return None


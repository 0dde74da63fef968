"""Store-and-forward: the on-disk SQLite buffer between the sensors and the broker.

Theory of operation
-------------------
1. **Commit before publish.** A reading gets its ``seq`` and its exact payload
   bytes inside the transaction that stores it, together with everything the
   reading changed: the sensor's next ``seq``, the rain counter ``tips_total``,
   the driver's state (the csv driver's file offset) and the status counts.
   Only committed rows are ever handed to MQTT (``pending``).
2. **Delete on PUBACK only.** A row leaves the buffer when the broker has
   acknowledged its publish (``delete``), or when the bound drops it (4).
3. **SIGKILL or power cut at any moment** loses nothing committed (WAL,
   ``synchronous=FULL``: a commit is on disk when it returns) and can publish a
   row again only with the same bytes, hence the same ``seq`` (the daemon drops
   exact redeliveries): the payload is stored, never rebuilt. A reading not yet
   committed was never published; its driver state was not committed either,
   so the csv driver reads that row again and it gets the ``seq`` it would have.
4. **Bounded.** Past ``max_bytes`` the oldest rows are deleted in the same
   transaction as the insert that overflowed, and counted per sensor in
   ``dropped`` (persistent, published in status). A row's size is its payload
   and topic plus ``ROW_OVERHEAD`` for SQLite's record and index, so the bound
   is close to the file's size.
5. **Order.** Rows are published in commit order (``id``, AUTOINCREMENT: never
   reused, even after deletes), so each sensor's backlog goes out in ``seq``
   order with its original timestamps.

The buffer has one writer, the node's main thread; ``Buffer.transaction`` is
the one place a write transaction is opened.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Final

#: Bytes counted per row on top of its payload and topic (record header, rowid, index entry).
ROW_OVERHEAD: Final = 64
#: Rows deleted per statement when the bound is exceeded.
_DROP_CHUNK: Final = 500

_SCHEMA = """
CREATE TABLE IF NOT EXISTS readings (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sensor TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ts_ms INTEGER NOT NULL,
    topic TEXT NOT NULL,
    payload BLOB NOT NULL,
    size INTEGER NOT NULL,
    UNIQUE (sensor, seq)
);
CREATE TABLE IF NOT EXISTS sensors (
    id TEXT PRIMARY KEY,
    next_seq INTEGER NOT NULL,
    tips_total INTEGER,
    last_counter INTEGER,
    driver_state TEXT,
    readings INTEGER NOT NULL DEFAULT 0,
    out_of_range INTEGER NOT NULL DEFAULT 0,
    discarded INTEGER NOT NULL DEFAULT 0,
    dropped INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta (key, value) VALUES ('buffered_bytes', 0);
"""


@dataclass(slots=True)
class SensorState:
    """One sensor's persistent state; changed inside a transaction, saved at its commit."""

    id: str
    next_seq: int
    #: The node's own rain counter (None until the first rain reading).
    tips_total: int | None = None
    #: The hardware counter's raw value at the last rain reading committed.
    last_counter: int | None = None
    driver_state: str | None = None
    readings: int = 0
    out_of_range: int = 0
    discarded: int = 0
    dropped: int = 0


_COLUMNS = tuple(f.name for f in fields(SensorState))


@dataclass(frozen=True, slots=True)
class Pending:
    """A committed reading waiting for its PUBACK."""

    id: int
    sensor: str
    seq: int
    topic: str
    payload: bytes


class Transaction:
    """The changes of one write transaction (``Buffer.transaction``)."""

    def __init__(self, conn: sqlite3.Connection, new_seq: Callable[[], int]) -> None:
        self._conn = conn
        self._new_seq = new_seq
        self._states: dict[str, SensorState] = {}
        self.added_bytes = 0
        #: Readings the bound dropped in this transaction, by sensor.
        self.dropped: Counter[str] = Counter()

    def sensor(self, sensor_id: str) -> SensorState:
        """The sensor's state, to change in place; saved when the transaction commits."""
        state = self._states.get(sensor_id)
        if state is None:
            state = _load(self._conn, sensor_id) or SensorState(sensor_id, self._new_seq())
            self._states[sensor_id] = state
        return state

    def add(self, state: SensorState, ts_ms: int, topic: str,
            payload: Callable[[int], bytes]) -> int:
        """Store one reading with the sensor's next ``seq``; ``payload(seq)`` makes its bytes.

        Returns the ``seq``.
        """
        seq = state.next_seq
        body = payload(seq)
        size = len(body) + len(topic.encode()) + ROW_OVERHEAD
        self._conn.execute("INSERT INTO readings (sensor, seq, ts_ms, topic, payload, size)"
                           " VALUES (?, ?, ?, ?, ?, ?)",
                           (state.id, seq, ts_ms, topic, body, size))
        state.next_seq = seq + 1
        state.readings += 1
        self.added_bytes += size
        return seq

    def _save(self) -> None:
        marks = ", ".join("?" for _ in _COLUMNS)
        self._conn.executemany(
            f"INSERT OR REPLACE INTO sensors ({', '.join(_COLUMNS)}) VALUES ({marks})",
            [tuple(getattr(s, c) for c in _COLUMNS) for s in self._states.values()])


def _load(conn: sqlite3.Connection, sensor_id: str) -> SensorState | None:
    row = conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM sensors WHERE id = ?",
                       (sensor_id,)).fetchone()
    return SensorState(*row) if row is not None else None


class Buffer:
    """The SQLite buffer at ``path``, bounded by ``max_bytes`` (see the module docstring).

    ``first_seq()`` gives the ``seq`` a sensor new to this buffer starts at.
    """

    def __init__(self, path: str | Path, max_bytes: int,
                 first_seq: Callable[[], int] = lambda: 1) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self._first_seq = first_seq
        # isolation_level=None: transactions are opened explicitly (BEGIN IMMEDIATE).
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.execute("PRAGMA busy_timeout=5000")
        self._conn.executescript(_SCHEMA)
        #: Readings dropped by the bound, by sensor, since the owner last cleared it.
        self.dropped_since: Counter[str] = Counter()

    def close(self) -> None:
        self._conn.close()

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """One write transaction: commits (after enforcing the bound) or rolls back."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            tx = Transaction(conn, self._first_seq)
            yield tx
            if tx.added_bytes:
                total = self._bump_bytes(tx.added_bytes)
                if total > self.max_bytes:
                    self._drop_oldest(tx, total - self.max_bytes)
            tx._save()
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        self.dropped_since.update(tx.dropped)

    def _bump_bytes(self, delta: int) -> int:
        self._conn.execute("UPDATE meta SET value = value + ? WHERE key = 'buffered_bytes'",
                           (delta,))
        return int(self._conn.execute(
            "SELECT value FROM meta WHERE key = 'buffered_bytes'").fetchone()[0])

    def _drop_oldest(self, tx: Transaction, excess_bytes: int) -> None:
        dropped: Counter[str] = Counter()
        freed = 0
        while freed < excess_bytes:
            rows = self._conn.execute("SELECT id, sensor, size FROM readings ORDER BY id LIMIT ?",
                                      (_DROP_CHUNK,)).fetchall()
            if not rows:
                break
            upto = rows[-1][0]
            for row_id, sensor, size in rows:
                freed += size
                dropped[sensor] += 1
                if freed >= excess_bytes:
                    upto = row_id
                    break
            self._conn.execute("DELETE FROM readings WHERE id <= ?", (upto,))
        self._bump_bytes(-freed)
        for sensor, n in dropped.items():
            tx.sensor(sensor).dropped += n
        tx.dropped.update(dropped)

    def delete(self, ids: Sequence[int]) -> int:
        """Remove acknowledged rows; how many were still there (a dropped one is not)."""
        if not ids:
            return 0
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            gone = count = 0
            for start in range(0, len(ids), _DROP_CHUNK):
                chunk = ids[start:start + _DROP_CHUNK]
                marks = ", ".join("?" for _ in chunk)
                n, size = conn.execute(f"SELECT count(*), ifnull(sum(size), 0) FROM readings"
                                       f" WHERE id IN ({marks})", chunk).fetchone()
                conn.execute(f"DELETE FROM readings WHERE id IN ({marks})", chunk)
                count += n
                gone += size
            if gone:
                self._bump_bytes(-gone)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return int(count)

    def pending(self, after_id: int, limit: int) -> list[Pending]:
        """Committed rows after ``after_id`` in commit order, at most ``limit``."""
        return [Pending(*row) for row in self._conn.execute(
            "SELECT id, sensor, seq, topic, payload FROM readings WHERE id > ? ORDER BY id"
            " LIMIT ?", (after_id, limit))]

    def state(self, sensor_id: str) -> SensorState | None:
        """A sensor's committed state (None for a sensor this buffer never saw)."""
        return _load(self._conn, sensor_id)

    def buffered(self) -> Counter[str]:
        """Readings waiting for a PUBACK, by sensor."""
        return Counter(dict(self._conn.execute(
            "SELECT sensor, count(*) FROM readings GROUP BY sensor").fetchall()))

    def buffered_bytes(self) -> int:
        return int(self._conn.execute(
            "SELECT value FROM meta WHERE key = 'buffered_bytes'").fetchone()[0])

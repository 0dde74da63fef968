"""Store-and-forward: the on-disk SQLite buffer between the sensors and the broker.

Theory of operation
-------------------
1. **Commit before publish.** A reading gets its ``seq`` and its exact payload
   bytes inside the transaction that stores it, together with everything the
   reading changed: the sensor's next ``seq``, the rain counter ``tips_total``,
   the driver's state (the csv driver's file offset) and the status counts.
   Only committed rows are ever handed to MQTT (``pending``).
2. **Delete on confirmation only.** After its PUBACK a row stays, marked
   ``published`` (``acknowledged``); it leaves the buffer when the daemon's
   ``journaled`` confirmation covers its ``seq`` (``confirm``: every row of
   the sensor up to it), or when the bound drops it (4). In the PUBACK
   fallback (``confirm.py``) a published row goes at once, but only with every
   row of its sensor before it (``acknowledged(release=...)``). So each
   sensor's rows are always one run of ``seq`` from its lowest
   (``oldest_seq``, which status reports) to its newest: the daemon's
   contiguous confirmation rule depends on it. ``unpublish`` makes a sensor's
   published rows go out again (unconfirmed too long).
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

The buffer has one writer, the node's main thread; ``Buffer._write`` is the
one place a write transaction is opened (``transaction`` for readings).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Final

#: Bytes counted per row on top of its payload and topic (record header, rowid, index entry).
ROW_OVERHEAD: Final = 64
#: Rows deleted per statement when the bound is exceeded.
_DROP_CHUNK: Final = 500
#: Columns added since the first release, for a buffer written by an older runtime:
#: its rows were never confirmed (published 0: they go out again at once).
_ADDED_COLUMNS: Final = (
    ("readings", "published", "INTEGER NOT NULL DEFAULT 0"),
    ("sensors", "confirm", "TEXT NOT NULL DEFAULT 'journaled'"),
    ("sensors", "confirmed_seq", "INTEGER"),
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS readings (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sensor TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ts_ms INTEGER NOT NULL,
    topic TEXT NOT NULL,
    payload BLOB NOT NULL,
    size INTEGER NOT NULL,
    published INTEGER NOT NULL DEFAULT 0,
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
    dropped INTEGER NOT NULL DEFAULT 0,
    confirm TEXT NOT NULL DEFAULT 'journaled',
    confirmed_seq INTEGER
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
    #: ``journaled`` (rows wait for the daemon's confirmation) or ``puback`` (the fallback).
    confirm: str = "journaled"
    #: The highest ``seq`` a confirmation named (None: none ever came).
    confirmed_seq: int | None = None


_COLUMNS = tuple(f.name for f in fields(SensorState))
#: A sensor's published rows below its first unpublished one (parameters: sensor twice).
_RELEASABLE: Final = ("sensor = ? AND published = 1 AND seq < ifnull((SELECT min(seq) FROM"
                      " readings WHERE sensor = ? AND published = 0), 9223372036854775807)")


@dataclass(frozen=True, slots=True)
class Pending:
    """A committed reading waiting to be published."""

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
        for table, column, decl in _ADDED_COLUMNS:
            have = {row[1] for row in self._conn.execute(f"PRAGMA table_info({table})")}
            if column not in have:
                self._conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")
        #: Readings dropped by the bound, by sensor, since the owner last cleared it.
        self.dropped_since: Counter[str] = Counter()

    def close(self) -> None:
        self._conn.close()

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """One write transaction: commits (after enforcing the bound) or rolls back."""
        with self._write() as conn:
            tx = Transaction(conn, self._first_seq)
            yield tx
            if tx.added_bytes:
                total = self._bump_bytes(tx.added_bytes)
                if total > self.max_bytes:
                    self._drop_oldest(tx, total - self.max_bytes)
            tx._save()
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

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction without a reading (deletes, marks): commits or rolls back."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _delete(self, conn: sqlite3.Connection, where: str, params: Sequence[object]) -> int:
        """Delete the rows ``where`` says, keeping ``buffered_bytes``; how many went."""
        n, size = conn.execute(f"SELECT count(*), ifnull(sum(size), 0) FROM readings"
                               f" WHERE {where}", params).fetchone()
        if n:
            conn.execute(f"DELETE FROM readings WHERE {where}", params)
            self._bump_bytes(-size)
        return int(n)

    def acknowledged(self, ids: Sequence[int], release: Collection[str] = ()) -> int:
        """Mark rows published (their PUBACK came); then, for the sensors in ``release``
        (the PUBACK fallback), delete their published rows below their first unpublished
        one. One transaction; how many rows were deleted."""
        gone = 0
        with self._write() as conn:
            for start in range(0, len(ids), _DROP_CHUNK):
                chunk = ids[start:start + _DROP_CHUNK]
                marks = ", ".join("?" for _ in chunk)
                conn.execute(f"UPDATE readings SET published = 1 WHERE id IN ({marks})", chunk)
            for sensor in release:
                gone += self._delete(conn, _RELEASABLE, (sensor, sensor))
        return gone

    def confirm(self, sensor: str, seq: int) -> int:
        """The daemon journaled every reading of ``sensor`` up to ``seq``: delete them and
        note ``seq``. One transaction; how many rows were deleted."""
        with self._write() as conn:
            gone = self._delete(conn, "sensor = ? AND seq <= ?", (sensor, seq))
            conn.execute("UPDATE sensors SET confirmed_seq = ? WHERE id = ? AND"
                         " (confirmed_seq IS NULL OR confirmed_seq < ?)", (seq, sensor, seq))
        return gone

    def set_mode(self, sensor: str, mode: str) -> int:
        """Note the sensor's mode (``journaled`` or ``puback``); in ``puback`` its
        published rows are deleted at once (as ``acknowledged`` would). How many went."""
        with self._write() as conn:
            conn.execute("UPDATE sensors SET confirm = ? WHERE id = ?", (mode, sensor))
            return self._delete(conn, _RELEASABLE, (sensor, sensor)) if mode == "puback" else 0

    def unpublish(self, sensor: str) -> int:
        """Make the sensor's published rows go out again (``pending`` sees them); how many."""
        with self._write() as conn:
            return conn.execute("UPDATE readings SET published = 0 WHERE sensor = ? AND"
                                " published = 1", (sensor,)).rowcount

    def waiting(self) -> Counter[str]:
        """Rows published and not yet confirmed, by sensor."""
        return Counter(dict(self._conn.execute(
            "SELECT sensor, count(*) FROM readings WHERE published = 1 GROUP BY sensor")))

    def oldest_seq(self, sensor: str) -> int | None:
        """The sensor's lowest ``seq`` still held; its next ``seq`` when it holds none (all
        before are confirmed or dropped); None for a sensor this buffer never saw."""
        (low,) = self._conn.execute("SELECT min(seq) FROM readings WHERE sensor = ?",
                                    (sensor,)).fetchone()
        if low is not None:
            return int(low)
        state = self.state(sensor)
        return state.next_seq if state is not None else None

    def pending(self, after_id: int, limit: int) -> list[Pending]:
        """Committed rows after ``after_id`` not yet published, in commit order, at most
        ``limit``."""
        return [Pending(*row) for row in self._conn.execute(
            "SELECT id, sensor, seq, topic, payload FROM readings WHERE id > ? AND"
            " published = 0 ORDER BY id LIMIT ?", (after_id, limit))]

    def state(self, sensor_id: str) -> SensorState | None:
        """A sensor's committed state (None for a sensor this buffer never saw)."""
        return _load(self._conn, sensor_id)

    def buffered(self) -> Counter[str]:
        """Readings held (not yet confirmed), by sensor."""
        return Counter(dict(self._conn.execute(
            "SELECT sensor, count(*) FROM readings GROUP BY sensor").fetchall()))

    def buffered_bytes(self) -> int:
        return int(self._conn.execute(
            "SELECT value FROM meta WHERE key = 'buffered_bytes'").fetchone()[0])

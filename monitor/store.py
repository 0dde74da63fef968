"""The durable store: one SQLite file (``state_dir/stormwatch.db``) behind the daemon.

Theory of operation
-------------------
DESIGN § 2 makes the journal the spool: an MQTT message is acknowledged only
after the transaction holding its reading has committed. Everything else is
derived from the journal with cursors, so this file holds

``journal``       every accepted input (reading, inspection, clock tick) with a
                  monotonic ``seq``; the engine replays it from its cursor
                  (``meta.applied_seq``) after a restart.
``dead_letters``  every rejected message with its raw bytes and reason (§ 3).
``counters``      running totals for ``status --json`` (accepted, duplicates,
                  ``rejected.<reason>``) that survive restarts and pruning.
``events``        every revision of every § 5 domain event, unique on (id, revision).
``outbox``        one row per (event revision, route tag): the transactional outbox
                  a delivery worker drains (§ 2, "Alerts go through a transactional outbox").
                  A row settled without sending (``monitor/notify/policy.py``: superseded,
                  not a correction) is ``delivered`` with ``withheld`` saying why and no
                  ``delivered_ms``.
``outbox_receipts`` which targets (Apprise URLs, by key) confirmed which outbox row: a
                  tag may name several targets, and a retry after a partial failure, or
                  a restart, must not send again to those that already took the alert.
``logbook``       the site log book of § 134-9A(2), an append-only hash chain.
``snapshots``     engine state at some ``applied_seq``, so a restart replays only
                  the tail of the journal; one row per ``owner`` (the daemon's
                  engine, the exporter's replica) for engine snapshots.
``checkpoints``   the timeline checkpoints of the owner's newest engine snapshot,
                  a row each: they are written once and kept until compaction
                  passes them, so a snapshot writes only what changed since the
                  one before (``save_engine_snapshot``).
``site_status``   what ``stormwatch status`` shows of each site, kept current by
                  the daemon, so the command answers at once at any journal size.
``meta``          schema version, ``applied_seq``, the log book head, cursors.

Invariants:

* One transaction per call that writes. ``record_events`` writes the events,
  their outbox rows, their log book rows and the new ``applied_seq`` together,
  so after a crash either all of them exist or the engine replays the same
  journal rows and produces them again, and ``ON CONFLICT DO NOTHING`` on
  (id, revision) makes that second attempt a no-op.
* Idempotence by content. A journal row is identified by
  (time, hash of the canonical JSON of its body, which names the site and
  sensor); an MQTT QoS 1 redelivery of a message already journaled changes
  nothing but the ``duplicates`` counter. Rows without a site or sensor
  (ticks, inspections) store ``''`` there.
* Durability. WAL with ``synchronous=FULL`` fsyncs the log on every commit, so
  a committed (hence acknowledged) row survives power loss, not only a crash
  of the process. Callers batch (many rows per commit) to pay that fsync once
  per batch instead of once per message.
* Concurrency. One connection per ``Store``, used from one thread (sqlite3's
  ``check_same_thread`` enforces it). WAL lets readers (the CLI opens
  ``readonly=True``) read while the daemon writes; writers take the write lock
  up front (``BEGIN IMMEDIATE``), so a second writer waits ``busy_timeout``
  instead of failing half-way through a transaction.

The log book chain: row *n* stores the canonical JSON of its content (seq,
recorded_ms, site, type, event id, revision, event body), ``prev_hash`` = the
hash of row *n-1* (64 zeros for row 1) and ``hash`` = SHA-256(prev_hash +
canonical). The head (last seq and hash) is also kept in ``meta`` and new rows
are numbered from it, so deleting rows at the end leaves a visible gap too.
Triggers refuse UPDATE and DELETE. None of this stops someone who can rewrite
the whole file and recompute every hash; it makes every partial edit visible
to ``logbook_verify``. Anchoring the head hash outside the machine (printed in
each report) is what closes that last gap.

Portability: no ``STRICT`` tables and no ``RETURNING`` (SQLite 3.35+/3.37+), so
the older SQLite of a Raspberry Pi OS release still opens the file (UPSERT's
``ON CONFLICT`` needs 3.24, 2018).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

from .engine.times import iso, parse_iso

DB_NAME: Final = "stormwatch.db"
#: The ``prev_hash`` of the first log book row.
GENESIS_HASH: Final = "0" * 64
#: How long a statement waits for another connection's lock before failing.
#: The CLI reads while the daemon commits a batch (milliseconds), so a few
#: seconds is generous without hanging a command on a wedged daemon.
BUSY_TIMEOUT_MS: Final = 5000
#: Journal kinds counted as ingest (``accepted``/``duplicates``); ticks are the
#: daemon's own clock, not input, and would inflate ``ingest.accepted``.
INGEST_KINDS: Final = ("reading", "inspection")
LOGBOOK_TRIGGERS: Final = frozenset({"logbook_no_update", "logbook_no_delete"})
#: Bytes of SHA-256 kept as a journal row's identity: 128 bits make a collision
#: (which would drop a reading as a "duplicate") negligible for any realistic
#: journal, at half the index size of the full digest.
IDENT_BYTES: Final = 16

_RESERVED_META: Final = frozenset(
    {"schema_version", "applied_seq", "logbook_head_seq", "logbook_head_hash"})

JournalKind = Literal["reading", "inspection", "tick"]


class StoreError(Exception):
    """The database cannot be used as asked (missing, newer schema, read-only)."""


@dataclass(frozen=True, slots=True)
class JournalIn:
    """One accepted input, as ``commit_batch`` takes it.

    ``body`` is ``Reading.to_json()``, ``Inspection.to_json()`` or ``{"now_ms": ...}``.
    """

    kind: JournalKind
    site: str | None
    sensor: str | None
    ts_ms: int
    body: dict[str, Any]
    topic: str | None = None
    received_ms: int | None = None


@dataclass(frozen=True, slots=True)
class JournalRow:
    """One journal row as replay reads it back."""

    seq: int
    kind: str
    body: dict[str, Any]
    received_ms: int | None


@dataclass(frozen=True, slots=True)
class EngineSnapshot:
    """An engine snapshot as stored: the head (everything but checkpoint states, as
    JSON text) and the checkpoint states by timeline name and instant."""

    applied_seq: int
    head: str
    checkpoints: dict[str, dict[int, str]]


@dataclass(frozen=True, slots=True)
class DeadLetterIn:
    """One rejected message, kept with its raw bytes (DESIGN § 3)."""

    topic: str | None
    payload: bytes
    reason: str
    detail: str
    received_ms: int


def canonical(obj: Any) -> str:
    """The one JSON spelling of ``obj``: sorted keys, compact, UTF-8 as is.

    ``allow_nan=False``: NaN/Infinity are not JSON; ingest rejects them before
    they get here, so meeting one is a bug that must not be written to disk.
    """
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _chain_hash(prev_hash: str, content: str) -> str:
    return _sha256(prev_hash + content)


def _logbook_content(seq: int, recorded_ms: int, site: str, type_: str, event_id: str,
                     revision: int, body: Any) -> dict[str, Any]:
    """What a log book row seals; ``logbook_verify`` rebuilds it from the columns."""
    return {"seq": seq, "recorded_ms": recorded_ms, "site": site, "type": type_,
            "event_id": event_id, "revision": revision, "body": body}


def _rows_label(first: int, last: int) -> str:
    return f"logbook row {first}" if first == last else f"logbook rows {first}-{last}"


# Schema: migration *n* (0-based) brings the file from version n to n + 1.
# Each is a list of single statements, run inside one transaction with the
# version bump, so a crash mid-migration leaves the old version intact.
_MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    (
        # seq is AUTOINCREMENT so it never goes back, even if the newest rows are
        # ever pruned: applied_seq and the exporter's cursor rely on it. An
        # ignored duplicate may still use up a number, so seqs can have gaps.
        """CREATE TABLE journal (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL CHECK (kind IN ('reading', 'inspection', 'tick')),
            site TEXT,
            sensor TEXT,
            ts_ms INTEGER NOT NULL,
            ident BLOB NOT NULL,
            body TEXT NOT NULL,
            topic TEXT,
            received_ms INTEGER
        )""",
        # The identity of a row. ifnull: NULLs are distinct in a UNIQUE index, so
        # a tick (no site, no sensor) would never be recognised as a repeat
        # without it. ts_ms is part of the body, so it adds nothing to identity;
        # it is here because it puts a new row near the end of its sensor's
        # range instead of at a random place (the hash): measured 4.5x faster
        # inserts at 200k rows, as each commit touches and fsyncs far fewer
        # index pages. The index leads with kind, so journal_count is answered
        # from it.
        """CREATE UNIQUE INDEX journal_identity
            ON journal (kind, ifnull(site, ''), ifnull(sensor, ''), ts_ms, ident)""",
        """CREATE TABLE dead_letters (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            topic TEXT,
            payload BLOB NOT NULL,
            reason TEXT NOT NULL,
            detail TEXT NOT NULL,
            received_ms INTEGER NOT NULL
        )""",
        "CREATE INDEX dead_letters_reason ON dead_letters (reason)",
        "CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID",
        # at_ms beside the ISO text: iso() drops zero milliseconds, so the text
        # does not sort in time order ("...:00Z" > "...:00.500Z").
        """CREATE TABLE events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL,
            revision INTEGER NOT NULL,
            type TEXT NOT NULL,
            site TEXT NOT NULL,
            at TEXT NOT NULL,
            at_ms INTEGER NOT NULL,
            retracted INTEGER NOT NULL DEFAULT 0 CHECK (retracted IN (0, 1)),
            body TEXT NOT NULL,
            recorded_ms INTEGER NOT NULL,
            UNIQUE (id, revision)
        )""",
        """CREATE TABLE outbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            event_seq INTEGER NOT NULL REFERENCES events (seq),
            alert_id TEXT NOT NULL,
            tag TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'delivered', 'failed')),
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_ms INTEGER NOT NULL,
            last_error TEXT,
            delivered_ms INTEGER,
            UNIQUE (alert_id, tag)
        )""",
        # Partial: the worker only ever asks for pending rows; delivered ones
        # pile up forever and should not weigh on that index.
        "CREATE INDEX outbox_due ON outbox (next_attempt_ms) WHERE status = 'pending'",
        "CREATE INDEX outbox_event ON outbox (event_seq)",
        # seq is assigned by the store (head + 1), not by SQLite: it is part of
        # the sealed content, so it must be known before the insert.
        """CREATE TABLE logbook (
            seq INTEGER PRIMARY KEY,
            recorded_ms INTEGER NOT NULL,
            site TEXT NOT NULL,
            type TEXT NOT NULL,
            event_id TEXT NOT NULL,
            revision INTEGER NOT NULL,
            body TEXT NOT NULL,
            canonical TEXT NOT NULL,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL
        )""",
        """CREATE TRIGGER logbook_no_update BEFORE UPDATE ON logbook
            BEGIN SELECT RAISE(ABORT, 'the log book is append-only'); END""",
        """CREATE TRIGGER logbook_no_delete BEFORE DELETE ON logbook
            BEGIN SELECT RAISE(ABORT, 'the log book is append-only'); END""",
        """CREATE TABLE snapshots (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            applied_seq INTEGER NOT NULL,
            created_ms INTEGER NOT NULL,
            data TEXT NOT NULL
        )""",
    ),
    (
        # Alert delivery (monitor/notify): per-target receipts, why a row was
        # settled without sending, and when a row was made (escalation rows are
        # made long after their event; NULL = the event's recorded_ms).
        """CREATE TABLE outbox_receipts (
            outbox_id INTEGER NOT NULL REFERENCES outbox (id),
            target TEXT NOT NULL,
            delivered_ms INTEGER NOT NULL,
            PRIMARY KEY (outbox_id, target)
        ) WITHOUT ROWID""",
        "ALTER TABLE outbox ADD COLUMN withheld TEXT",
        "ALTER TABLE outbox ADD COLUMN created_ms INTEGER",
        "CREATE INDEX outbox_alert ON outbox (alert_id)",
    ),
    (
        # Identity on plain columns, time first. The old index led with kind,
        # site and sensor (on ifnull() expressions): every batch then touched a
        # leaf page per sensor, and each touched page is written to the WAL and
        # fsynced at commit, so inserts cost four times as much with 400
        # sensors (bench/README.md). Time first puts a batch's rows together at
        # the end of the index. The body's hash names the site and sensor (they
        # are in the body), and the same index serves "these sensors' readings
        # since t", which the engine asks when a late reading is refolded
        # (rarely: see engine/timeline.py).
        "UPDATE journal SET site = '' WHERE site IS NULL",
        "UPDATE journal SET sensor = '' WHERE sensor IS NULL",
        "DROP INDEX journal_identity",
        "CREATE UNIQUE INDEX journal_key ON journal (ts_ms, ident)",
        "ALTER TABLE snapshots ADD COLUMN owner TEXT NOT NULL DEFAULT 'engine'",
        "CREATE INDEX snapshots_owner ON snapshots (owner, id)",
        """CREATE TABLE checkpoints (
            owner TEXT NOT NULL,
            timeline TEXT NOT NULL,
            at_ms INTEGER NOT NULL,
            state TEXT NOT NULL,
            PRIMARY KEY (owner, timeline, at_ms)
        ) WITHOUT ROWID""",
        """CREATE TABLE site_status (
            site TEXT PRIMARY KEY,
            updated_ms INTEGER NOT NULL,
            applied_seq INTEGER NOT NULL,
            data TEXT NOT NULL
        ) WITHOUT ROWID""",
    ),
)
SCHEMA_VERSION: Final = len(_MIGRATIONS)


class Store:
    """The SQLite store. One instance = one connection = one thread.

    ``readonly=True`` opens the file read-only (the CLI beside a running
    daemon); it never creates or migrates, and every writing method raises
    ``StoreError``.
    """

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        if readonly:
            if not self.path.is_file():
                raise StoreError(f"{self.path}: no such database")
            conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,
                                   isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: no implicit transactions; every transaction
            # here is explicit, so its boundaries are the ones documented above.
            conn = sqlite3.connect(self.path, isolation_level=None,
                                   timeout=BUSY_TIMEOUT_MS / 1000)
        self._conn = conn
        try:
            self._configure()
            if readonly:
                self._check_version()
            else:
                self._migrate()
        except BaseException:
            conn.close()
            raise

    @classmethod
    def in_dir(cls, state_dir: str | Path, *, readonly: bool = False) -> Store:
        """The store of a daemon whose ``state_dir`` is given."""
        return cls(Path(state_dir) / DB_NAME, readonly=readonly)

    # -- connection, transactions, schema -------------------------------------

    def _configure(self) -> None:
        conn = self._conn
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        if self.readonly:
            conn.execute("PRAGMA query_only = ON")
            return
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            # WAL needs shared memory; it is refused e.g. on network file systems.
            # Without it the CLI's reads would block the daemon's commits.
            raise StoreError(f"{self.path}: cannot use WAL journal mode (got {mode!r})")
        # FULL, not WAL's usual NORMAL: NORMAL may lose the last commits on power
        # loss, and those rows have already been acknowledged to the broker.
        conn.execute("PRAGMA synchronous = FULL")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; rolled back if anything in it raises."""
        if self.readonly:
            raise StoreError(f"{self.path}: store opened read-only")
        conn = self._conn
        # IMMEDIATE takes the write lock now. A deferred transaction that reads
        # first and writes later cannot wait for the lock in WAL mode (it gets
        # SQLITE_BUSY at once, as its snapshot may be stale), so it would fail
        # instead of waiting busy_timeout behind another writer.
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: several SELECTs see the same snapshot."""
        conn = self._conn
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    def _migrate(self) -> None:
        with self._write() as conn:
            # value has no declared type: it keeps ints as ints and text as text.
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value NOT NULL)"
                         " WITHOUT ROWID")
            version = int(self._meta(conn, "schema_version", 0))
            if version > SCHEMA_VERSION:
                raise StoreError(f"{self.path}: schema version {version} is newer than this"
                                 f" stormwatch understands ({SCHEMA_VERSION}); upgrade it")
            for statements in _MIGRATIONS[version:]:
                for statement in statements:
                    conn.execute(statement)
            self._set_meta(conn, "schema_version", SCHEMA_VERSION)

    def _check_version(self) -> None:
        conn = self._conn
        has_meta = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
        version = int(self._meta(conn, "schema_version", 0)) if has_meta else 0
        if version != SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: schema version {version}, this stormwatch needs {SCHEMA_VERSION};"
                " open it once read-write (start the daemon) to create or migrate it")

    @staticmethod
    def _meta(conn: sqlite3.Connection, key: str, default: Any = None) -> Any:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else row[0]

    @staticmethod
    def _set_meta(conn: sqlite3.Connection, key: str, value: int | str) -> None:
        conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)"
                     " ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))

    @staticmethod
    def _bump(conn: sqlite3.Connection, counts: dict[str, int]) -> None:
        conn.executemany(
            "INSERT INTO counters (name, value) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET value = value + excluded.value",
            [(name, n) for name, n in counts.items() if n])

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- journal ---------------------------------------------------------------

    def commit_batch(self, journal: Sequence[JournalIn],
                     dead: Sequence[DeadLetterIn] = ()) -> list[int | None]:
        """Journal accepted inputs and dead-letter rejects in ONE transaction.

        Returns, per journal row, its new ``seq``, or ``None`` when the same
        (site, sensor, body) is already journaled (an MQTT redelivery) or
        appears earlier in this batch. When this returns, the rows are on disk.
        """
        if not journal and not dead:
            return []
        rows: list[tuple[Any, ...]] = []
        for item in journal:
            # ts_ms is in the identity index (see the schema); it must be the
            # body's own time, or a redelivery could look like a new reading.
            body_ts = item.body.get("ts_ms", item.body.get("now_ms", item.ts_ms))
            if body_ts != item.ts_ms:
                raise ValueError(f"journal row ts_ms {item.ts_ms} differs from its body's"
                                 f" {body_ts}")
            text = canonical(item.body)
            ident = hashlib.sha256(text.encode("utf-8")).digest()[:IDENT_BYTES]
            rows.append((item.kind, item.site or "", item.sensor or "", item.ts_ms, ident, text,
                         item.topic, item.received_ms))
        seqs: list[int | None] = []
        with self._write() as conn:
            if rows:
                seqs = self._insert_journal(conn, rows)
            counts: Counter[str] = Counter()
            for item, seq in zip(journal, seqs, strict=True):
                if item.kind in INGEST_KINDS:
                    counts["accepted" if seq is not None else "duplicates"] += 1
            for letter in dead:
                counts[f"rejected.{letter.reason}"] += 1
            if dead:
                conn.executemany(
                    "INSERT INTO dead_letters (topic, payload, reason, detail, received_ms)"
                    " VALUES (?, ?, ?, ?, ?)",
                    [(d.topic, bytes(d.payload), d.reason, d.detail, d.received_ms)
                     for d in dead])
            self._bump(conn, counts)
        return seqs

    @staticmethod
    def _insert_journal(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]
                        ) -> list[int | None]:
        """Insert rows numbered from the journal's next seq; a row that is already
        there (the identity index) is skipped and gets None."""
        # We hold the write lock, so the numbers are ours. sqlite_sequence, not
        # max(seq): AUTOINCREMENT never hands out a number twice, even one whose
        # row is gone, and numbering the rows ourselves keeps that promise.
        found = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'journal'").fetchone()
        top = conn.execute("SELECT ifnull(max(seq), 0) FROM journal").fetchone()[0]
        first = max(top, found[0] if found else 0) + 1
        before = conn.total_changes
        # ON CONFLICT DO NOTHING, not INSERT OR IGNORE: OR IGNORE would also
        # silently skip a row failing a CHECK or NOT NULL constraint and report
        # it as a duplicate; DO NOTHING skips only uniqueness conflicts.
        conn.executemany(
            "INSERT INTO journal (seq, kind, site, sensor, ts_ms, ident, body, topic, received_ms)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [(first + i, *row) for i, row in enumerate(rows)])
        if conn.total_changes - before == len(rows):
            return list(range(first, first + len(rows)))
        # Some were duplicates (redeliveries): which numbers were taken? A range
        # scan of the primary key, only in this rare case.
        taken = {seq for (seq,) in conn.execute(
            "SELECT seq FROM journal WHERE seq >= ? AND seq < ?", (first, first + len(rows)))}
        return [first + i if first + i in taken else None for i in range(len(rows))]

    def journal_after(self, seq: int, limit: int = 10000) -> list[JournalRow]:
        """Journal rows with ``seq`` greater than the given one, ascending (the replay path)."""
        return [JournalRow(s, kind, json.loads(body), received)
                for s, kind, body, received in self._conn.execute(
                    "SELECT seq, kind, body, received_ms FROM journal WHERE seq > ?"
                    " ORDER BY seq LIMIT ?", (seq, limit))]

    def journal_count(self, kinds: Sequence[str] = INGEST_KINDS) -> int:
        """Journal rows of these kinds. The default (readings and inspections) is the
        ``accepted`` counter, kept with every commit: counting a large journal
        takes seconds."""
        if tuple(kinds) == INGEST_KINDS:
            return self.counter("accepted")
        if not kinds:
            return 0
        marks = ", ".join("?" * len(kinds))
        return int(self._conn.execute(
            f"SELECT count(*) FROM journal WHERE kind IN ({marks})", tuple(kinds)).fetchone()[0])

    def journal_readings(self, site: str, sensors: Sequence[str], since_ms: int,
                         upto_seq: int | None = None) -> list[dict[str, Any]]:
        """The bodies of the sensors' messages (readings and status) at or after
        ``since_ms``, up to journal ``upto_seq``, in journal order. The identity
        index gives the time range; every row in it is looked at, so this is
        for the rare late reading, not for reading a sensor's history."""
        marks = ", ".join("?" * len(sensors))
        # INDEXED BY: without statistics the planner would scan the whole table.
        sql = (f"SELECT body FROM journal INDEXED BY journal_key WHERE ts_ms >= ? AND site = ?"
               f" AND sensor IN ({marks}) AND kind = 'reading'")
        params: list[Any] = [since_ms, site, *sensors]
        if upto_seq is not None:
            sql += " AND seq <= ?"
            params.append(upto_seq)
        return [json.loads(body) for (body,) in self._conn.execute(sql + " ORDER BY seq",
                                                                     params)]

    def journal_max_seq(self) -> int:
        """The newest journal ``seq``; 0 when the journal is empty."""
        return int(self._conn.execute("SELECT ifnull(max(seq), 0) FROM journal").fetchone()[0])

    def reject_counts(self) -> dict[str, int]:
        """Dead letters by reason (what the table holds; ``counters`` keeps the totals)."""
        return {reason: n for reason, n in self._conn.execute(
            "SELECT reason, count(*) FROM dead_letters GROUP BY reason ORDER BY reason")}

    def dead_letters(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest dead letters first, each with its raw ``payload`` bytes."""
        return [{"id": id_, "topic": topic, "payload": payload, "reason": reason,
                 "detail": detail, "received_ms": received}
                for id_, topic, payload, reason, detail, received in self._conn.execute(
                    "SELECT id, topic, payload, reason, detail, received_ms FROM dead_letters"
                    " ORDER BY id DESC LIMIT ?", (limit,))]

    def counter(self, name: str) -> int:
        row = self._conn.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()
        return 0 if row is None else int(row[0])

    def counters(self) -> dict[str, int]:
        return {name: int(value) for name, value in self._conn.execute(
            "SELECT name, value FROM counters ORDER BY name")}

    # -- meta and cursors (the exporter's position in the journal, and the like) ---

    def meta_get(self, key: str) -> int | str | None:
        """A value the daemon publishes for the CLI (e.g. ``lag_ms``); None when unset."""
        value = self._meta(self._conn, key)
        return value if value is None or isinstance(value, (int, str)) else str(value)

    def meta_set(self, key: str, value: int | str) -> None:
        """Set a meta value in its own transaction. The store's own keys
        (``schema_version``, ``applied_seq``, ``logbook_head_*``) are refused:
        they change only together with the rows they describe."""
        if key in _RESERVED_META:
            raise ValueError(f"meta key {key!r} is maintained by the store")
        with self._write() as conn:
            self._set_meta(conn, key, value)

    def cursor(self, name: str) -> int:
        """A named position in the journal (e.g. the InfluxDB exporter's); 0 when unset."""
        return int(self._meta(self._conn, f"cursor.{name}", 0))

    def set_cursor(self, name: str, seq: int) -> None:
        with self._write() as conn:
            self._set_meta(conn, f"cursor.{name}", seq)

    def set_cursors(self, cursors: Mapping[str, int],
                    meta: Mapping[str, int | str] | None = None) -> None:
        """Move several cursors and set meta values in ONE transaction.

        The InfluxDB exporter moves its journal and events cursors together
        with what it publishes about itself (last write, its engine replica's
        snapshot at exactly that position), so they never disagree after a crash.
        """
        for key in meta or {}:
            if key in _RESERVED_META:
                raise ValueError(f"meta key {key!r} is maintained by the store")
        with self._write() as conn:
            for name, seq in cursors.items():
                self._set_meta(conn, f"cursor.{name}", seq)
            for key, value in (meta or {}).items():
                self._set_meta(conn, key, value)

    def journal_backlog(self, after_seq: int) -> tuple[int, int | None]:
        """(journal rows after ``after_seq``, arrival ms of the first of them or None).

        What an exporter at ``after_seq`` is behind by. The first row's
        ``received_ms`` (its ``ts_ms`` when it has none) dates the backlog.
        Reads one snapshot, so the count and the date agree.
        """
        with self._read() as conn:
            (count,) = conn.execute("SELECT count(*) FROM journal WHERE seq > ?",
                                    (after_seq,)).fetchone()
            first = conn.execute(
                "SELECT ifnull(received_ms, ts_ms) FROM journal WHERE seq > ? ORDER BY seq"
                " LIMIT 1", (after_seq,)).fetchone()
        return int(count), (None if first is None else int(first[0]))

    # -- events, outbox, log book ---------------------------------------------

    def record_events(self, events: Sequence[dict[str, Any]], applied_seq: int, *,
                      recorded_ms: int,
                      routes: Callable[[dict[str, Any]], list[str]] | None = None,
                      statuses: Mapping[str, str] | None = None) -> int:
        """Store § 5 events with their outbox and log book rows and the engine cursor,
        and the sites' status as it stands after them (``statuses``, JSON text by site).

        ONE transaction. An event whose (id, revision) is already stored is
        skipped entirely (no second outbox or log book row), so re-recording
        after a crash between the engine and this commit is harmless. Returns
        the number of newly stored events.
        """
        inserted = 0
        with self._write() as conn:
            if statuses:
                self._put_status(conn, statuses, applied_seq, recorded_ms)
            head_seq = int(self._meta(conn, "logbook_head_seq", 0))
            head_hash = str(self._meta(conn, "logbook_head_hash", GENESIS_HASH))
            for event in events:
                revision = int(event.get("revision", 0))
                body = canonical(event)
                cur = conn.execute(
                    "INSERT INTO events (id, revision, type, site, at, at_ms, retracted, body,"
                    " recorded_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (event["id"], revision, event["type"], event["site"], event["at"],
                     parse_iso(event["at"]), int(bool(event.get("retracted", False))), body,
                     recorded_ms))
                if cur.rowcount == 0:
                    continue
                inserted += 1
                if routes is not None:
                    alert_id = f"{event['id']}:{revision}"
                    conn.executemany(
                        "INSERT INTO outbox (event_seq, alert_id, tag, status, attempts,"
                        " next_attempt_ms) VALUES (?, ?, ?, 'pending', 0, ?)"
                        " ON CONFLICT DO NOTHING",  # a tag routed twice is one alert
                        [(cur.lastrowid, alert_id, tag, recorded_ms) for tag in routes(event)])
                head_seq += 1
                content = canonical(_logbook_content(
                    head_seq, recorded_ms, event["site"], event["type"], event["id"], revision,
                    event))
                row_hash = _chain_hash(head_hash, content)
                conn.execute(
                    "INSERT INTO logbook (seq, recorded_ms, site, type, event_id, revision,"
                    " body, canonical, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (head_seq, recorded_ms, event["site"], event["type"], event["id"], revision,
                     body, content, head_hash, row_hash))
                head_hash = row_hash
            if inserted:
                self._set_meta(conn, "logbook_head_seq", head_seq)
                self._set_meta(conn, "logbook_head_hash", head_hash)
            self._set_meta(conn, "applied_seq", applied_seq)
        return inserted

    def applied_seq(self) -> int:
        """The journal ``seq`` the recorded events reflect; 0 when unset."""
        return int(self._meta(self._conn, "applied_seq", 0))

    def events(self, site: str | None = None,
               types: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Every stored revision of every event, in the order they were stored."""
        sql = "SELECT body FROM events WHERE 1"
        params: list[Any] = []
        if site is not None:
            sql += " AND site = ?"
            params.append(site)
        if types is not None:
            sql += f" AND type IN ({', '.join('?' * len(types))})"
            params.extend(types)
        return [json.loads(body) for (body,) in self._conn.execute(sql + " ORDER BY seq", params)]

    def latest_event(self, event_id: str) -> dict[str, Any] | None:
        """The latest stored revision of one event id (retracted or not), or None."""
        row = self._conn.execute("SELECT body FROM events WHERE id = ?"
                                 " ORDER BY revision DESC LIMIT 1", (event_id,)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def current_events(self, site: str | None = None) -> list[dict[str, Any]]:
        """The authoritative set (DESIGN § 2): the latest revision of each id,
        without the retracted ones, ordered by (event time, id)."""
        sql = ("SELECT e.body FROM events AS e"
               " JOIN (SELECT id, max(revision) AS revision FROM events GROUP BY id) AS latest"
               " ON latest.id = e.id AND latest.revision = e.revision"
               " WHERE e.retracted = 0")
        params: tuple[Any, ...] = ()
        if site is not None:
            sql += " AND e.site = ?"
            params = (site,)
        return [json.loads(body) for (body,) in self._conn.execute(
            sql + " ORDER BY e.at_ms, e.id", params)]

    def events_after(self, seq: int, limit: int = 1000) -> list[tuple[int, dict[str, Any]]]:
        """Stored event revisions with ``seq`` above the given one, ascending, as (seq, event).

        The events table in the order it was written: a reader with a cursor
        (the InfluxDB exporter) sees every revision once, later revisions after
        earlier ones.
        """
        return [(int(s), json.loads(body)) for s, body in self._conn.execute(
            "SELECT seq, body FROM events WHERE seq > ? ORDER BY seq LIMIT ?", (seq, limit))]

    def events_max_seq(self) -> int:
        """The newest events ``seq``; 0 when no event is stored."""
        return int(self._conn.execute("SELECT ifnull(max(seq), 0) FROM events").fetchone()[0])

    def events_count_after(self, seq: int) -> int:
        return int(self._conn.execute("SELECT count(*) FROM events WHERE seq > ?",
                                      (seq,)).fetchone()[0])

    def event_revisions(self, event_id: str) -> list[dict[str, Any]]:
        """Every stored revision of one event id, oldest first (served by UNIQUE (id, revision))."""
        return [json.loads(body) for (body,) in self._conn.execute(
            "SELECT body FROM events WHERE id = ? ORDER BY revision", (event_id,))]

    # -- snapshots -------------------------------------------------------------

    def latest_snapshot(self, owner: str = "engine") -> tuple[int, dict[str, Any]] | None:
        """The most recently saved snapshot of ``owner`` as (applied_seq, data), or None.

        Most recently *saved*, not highest ``applied_seq``: after a rebuild from
        scratch the new, lower snapshot is the one that matches the engine.
        """
        row = self._conn.execute(
            "SELECT applied_seq, data FROM snapshots WHERE owner = ? ORDER BY id DESC LIMIT 1",
            (owner,)).fetchone()
        return None if row is None else (int(row[0]), json.loads(row[1]))

    def save_engine_snapshot(self, owner: str, applied_seq: int, head: str, *,
                             created_ms: int, put: Sequence[tuple[str, int, str]],
                             keep_from: Mapping[str, int], replace_all: bool = False) -> None:
        """Store an engine snapshot of ``owner`` in ONE transaction: its ``head`` (JSON
        text), the checkpoint states that are new or changed since the last one
        (``put``: timeline, instant, state), and, per timeline, the instant below
        which its checkpoints are gone (``keep_from``, its compacted base). The
        owner's previous snapshot row is replaced; ``replace_all`` drops all its
        checkpoint rows first (the engine was rebuilt: ``put`` is then all of them)."""
        with self._write() as conn:
            conn.execute("DELETE FROM snapshots WHERE owner = ?", (owner,))
            if replace_all:
                conn.execute("DELETE FROM checkpoints WHERE owner = ?", (owner,))
            conn.execute("INSERT INTO snapshots (applied_seq, created_ms, data, owner)"
                         " VALUES (?, ?, ?, ?)", (applied_seq, created_ms, head, owner))
            conn.executemany("DELETE FROM checkpoints WHERE owner = ? AND timeline = ?"
                             " AND at_ms < ?",
                             [(owner, name, at) for name, at in keep_from.items()])
            conn.executemany("INSERT INTO checkpoints (owner, timeline, at_ms, state)"
                             " VALUES (?, ?, ?, ?) ON CONFLICT (owner, timeline, at_ms)"
                             " DO UPDATE SET state = excluded.state",
                             [(owner, name, at, text) for name, at, text in put])

    def load_engine_snapshot(self, owner: str = "engine") -> EngineSnapshot | None:
        """The owner's snapshot as ``save_engine_snapshot`` stored it, or None; read in
        one transaction, so the head and its checkpoints belong together."""
        with self._read() as conn:
            row = conn.execute("SELECT applied_seq, data FROM snapshots WHERE owner = ?"
                               " ORDER BY id DESC LIMIT 1", (owner,)).fetchone()
            if row is None:
                return None
            checkpoints: dict[str, dict[int, str]] = {}
            for name, at, text in conn.execute(
                    "SELECT timeline, at_ms, state FROM checkpoints WHERE owner = ?", (owner,)):
                checkpoints.setdefault(name, {})[int(at)] = text
        return EngineSnapshot(int(row[0]), str(row[1]), checkpoints)

    def snapshot_size(self, owner: str = "engine") -> int:
        """Bytes of the owner's snapshot: its head and its checkpoint rows."""
        (head,) = self._conn.execute("SELECT ifnull(sum(length(data)), 0) FROM snapshots"
                                     " WHERE owner = ?", (owner,)).fetchone()
        (rows,) = self._conn.execute("SELECT ifnull(sum(length(state)), 0) FROM checkpoints"
                                     " WHERE owner = ?", (owner,)).fetchone()
        return int(head) + int(rows)

    # -- site status -------------------------------------------------------------

    @staticmethod
    def _put_status(conn: sqlite3.Connection, statuses: Mapping[str, str], applied_seq: int,
                    updated_ms: int) -> None:
        conn.executemany(
            "INSERT INTO site_status (site, updated_ms, applied_seq, data) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (site) DO UPDATE SET updated_ms = excluded.updated_ms,"
            " applied_seq = excluded.applied_seq, data = excluded.data",
            [(site, updated_ms, applied_seq, text) for site, text in statuses.items()])

    def site_statuses(self) -> dict[str, tuple[int, int, dict[str, Any]]]:
        """The recorded status of every site: (updated_ms, applied_seq, data)."""
        return {site: (int(updated), int(seq), json.loads(data))
                for site, updated, seq, data in self._conn.execute(
                    "SELECT site, updated_ms, applied_seq, data FROM site_status")}

    # -- outbox ----------------------------------------------------------------

    def outbox_due(self, now_ms: int, limit: int = 100) -> list[dict[str, Any]]:
        """Pending alerts whose next attempt is due, oldest due first, with their event.

        ``created_ms`` is when the row was made (its event's ``recorded_ms`` for
        routed rows), the start of its escalation and give-up timers.
        """
        return [{"id": id_, "event_seq": event_seq, "alert_id": alert_id, "tag": tag,
                 "attempts": attempts, "next_attempt_ms": next_ms, "last_error": error,
                 "created_ms": created, "event": json.loads(body)}
                for id_, event_seq, alert_id, tag, attempts, next_ms, error, created, body
                in self._conn.execute(
                    "SELECT o.id, o.event_seq, o.alert_id, o.tag, o.attempts,"
                    " o.next_attempt_ms, o.last_error, ifnull(o.created_ms, e.recorded_ms),"
                    " e.body"
                    " FROM outbox AS o JOIN events AS e ON e.seq = o.event_seq"
                    " WHERE o.status = 'pending' AND o.next_attempt_ms <= ?"
                    " ORDER BY o.next_attempt_ms, o.id LIMIT ?", (now_ms, limit))]

    def outbox_mark(self, outbox_id: int, *, delivered: bool, now_ms: int,
                    error: str | None = None, next_attempt_ms: int | None = None) -> None:
        """Record one delivery attempt of a pending alert.

        delivered            -> ``delivered`` at ``now_ms``;
        failed, with a retry -> stays ``pending`` until ``next_attempt_ms``;
        failed, no retry     -> ``failed`` (given up; kept for the record).
        """
        if delivered:
            sql = ("UPDATE outbox SET status = 'delivered', attempts = attempts + 1,"
                   " delivered_ms = ?, last_error = NULL WHERE id = ? AND status = 'pending'")
            params: tuple[Any, ...] = (now_ms, outbox_id)
        elif next_attempt_ms is not None:
            sql = ("UPDATE outbox SET attempts = attempts + 1, last_error = ?,"
                   " next_attempt_ms = ? WHERE id = ? AND status = 'pending'")
            params = (error, next_attempt_ms, outbox_id)
        else:
            sql = ("UPDATE outbox SET status = 'failed', attempts = attempts + 1,"
                   " last_error = ? WHERE id = ? AND status = 'pending'")
            params = (error, outbox_id)
        with self._write() as conn:
            if conn.execute(sql, params).rowcount != 1:
                # An outcome is recorded once; a second one is a worker bug.
                raise StoreError(f"outbox row {outbox_id} does not exist or is not pending")

    def outbox(self) -> list[dict[str, Any]]:
        """Every outbox row (without the event body), in creation order."""
        cols = ("id", "event_seq", "alert_id", "tag", "status", "attempts", "next_attempt_ms",
                "last_error", "delivered_ms", "withheld", "created_ms")
        return [dict(zip(cols, row, strict=True)) for row in self._conn.execute(
            f"SELECT {', '.join(cols)} FROM outbox ORDER BY id")]

    def outbox_summary(self) -> dict[str, Any]:
        """Alert delivery at a glance (``status --json``): rows by status, how many
        were withheld as noise, and when the oldest still-pending row was created."""
        counts = {"pending": 0, "delivered": 0, "failed": 0, "withheld": 0}
        for status, withheld, n in self._conn.execute(
                "SELECT status, withheld IS NOT NULL, count(*) FROM outbox"
                " GROUP BY status, withheld IS NOT NULL"):
            if withheld:
                counts["withheld"] += n
            else:
                counts[status] = counts.get(status, 0) + n
        # Routed rows take their creation time from their event (see outbox_due).
        (oldest,) = self._conn.execute(
            "SELECT min(coalesce(o.created_ms, e.recorded_ms)) FROM outbox AS o"
            " JOIN events AS e ON e.seq = o.event_seq WHERE o.status = 'pending'").fetchone()
        return {**counts, "oldest_pending_ms": oldest}

    def outbox_receipt(self, outbox_id: int, target: str, *, now_ms: int) -> None:
        """Record that one target confirmed a pending row (before the row is settled).

        Its own transaction, right after the send: the window in which a crash
        makes a target receive the alert twice is this one commit.
        """
        with self._write() as conn:
            conn.execute("INSERT INTO outbox_receipts (outbox_id, target, delivered_ms)"
                         " VALUES (?, ?, ?) ON CONFLICT DO NOTHING", (outbox_id, target, now_ms))

    def outbox_receipts(self, alert_id: str) -> set[str]:
        """The targets that confirmed the alert, through any of its rows (tags)."""
        return {target for (target,) in self._conn.execute(
            "SELECT r.target FROM outbox_receipts AS r JOIN outbox AS o ON o.id = r.outbox_id"
            " WHERE o.alert_id = ?", (alert_id,))}

    def outbox_withhold(self, outbox_id: int, reason: str, *, now_ms: int) -> None:
        """Settle a pending row without sending it; ``reason`` is kept in ``withheld``."""
        with self._write() as conn:
            if conn.execute("UPDATE outbox SET status = 'delivered', withheld = ?,"
                            " last_error = NULL, next_attempt_ms = ?"
                            " WHERE id = ? AND status = 'pending'",
                            (reason, now_ms, outbox_id)).rowcount != 1:
                raise StoreError(f"outbox row {outbox_id} does not exist or is not pending")

    def outbox_escalate(self, outbox_id: int, tag: str, *, now_ms: int) -> str | None:
        """Add a pending row sending row ``outbox_id``'s event to ``tag`` as an escalation.

        Its alert id is ``{alert_id}/esc-{the row's tag}``, unique with ``tag``:
        returns it, or None when that escalation exists already (so escalating
        is idempotent across retries and restarts).
        """
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO outbox (event_seq, alert_id, tag, status, attempts,"
                " next_attempt_ms, created_ms)"
                " SELECT event_seq, alert_id || '/esc-' || tag, ?, 'pending', 0, ?, ?"
                " FROM outbox WHERE id = ? ON CONFLICT DO NOTHING",
                (tag, now_ms, now_ms, outbox_id))
            if cur.rowcount != 1:
                return None
            row = conn.execute("SELECT alert_id FROM outbox WHERE id = ?",
                               (cur.lastrowid,)).fetchone()
        return str(row[0])

    def outbox_alerts(self, *, site: str | None = None, types: Sequence[str] | None = None,
                      tag: str | None = None, event_id: str | None = None
                      ) -> list[dict[str, Any]]:
        """Outbox rows with their event, in event time order: what was (to be) sent.

        Each: ``id``, ``alert_id``, ``tag``, ``status``, ``attempts``, ``last_error``,
        ``withheld``, ``created_ms``, ``event_id``, ``revision``, ``type``, ``at_ms``,
        ``event`` (the body).
        """
        sql = ("SELECT o.id, o.alert_id, o.tag, o.status, o.attempts, o.last_error, o.withheld,"
               " ifnull(o.created_ms, e.recorded_ms), e.id, e.revision, e.type, e.at_ms, e.body"
               " FROM outbox AS o JOIN events AS e ON e.seq = o.event_seq WHERE 1")
        params: list[Any] = []
        for column, value in (("e.site", site), ("o.tag", tag), ("e.id", event_id)):
            if value is not None:
                sql += f" AND {column} = ?"
                params.append(value)
        if types is not None:
            sql += f" AND e.type IN ({', '.join('?' * len(types))})"
            params.extend(types)
        cols = ("id", "alert_id", "tag", "status", "attempts", "last_error", "withheld",
                "created_ms", "event_id", "revision", "type", "at_ms")
        out = []
        for row in self._conn.execute(sql + " ORDER BY e.at_ms, e.revision, o.id", params):
            item = dict(zip(cols, row[:-1], strict=True))
            item["event"] = json.loads(row[-1])
            out.append(item)
        return out

    # -- log book ----------------------------------------------------------------

    def logbook(self, site: str | None = None) -> list[dict[str, Any]]:
        """Log book rows in order (§ 134-9A(2)); ``body`` is the event as recorded."""
        sql = ("SELECT seq, recorded_ms, site, type, event_id, revision, body, prev_hash, hash"
               " FROM logbook")
        params: tuple[Any, ...] = ()
        if site is not None:
            sql += " WHERE site = ?"
            params = (site,)
        return [{"seq": seq, "recorded_at": iso(recorded), "site": row_site, "type": type_,
                 "event_id": event_id, "revision": revision, "body": json.loads(body),
                 "prev_hash": prev, "hash": row_hash}
                for seq, recorded, row_site, type_, event_id, revision, body, prev, row_hash
                in self._conn.execute(sql + " ORDER BY seq", params)]

    def logbook_head(self) -> tuple[int, str]:
        """(seq, hash) of the newest row as the store recorded it; (0, zeros) when empty.

        Worth printing in reports: a copy of the head held elsewhere is what
        makes even a full rewrite of the chain detectable.
        """
        with self._read() as conn:
            return (int(self._meta(conn, "logbook_head_seq", 0)),
                    str(self._meta(conn, "logbook_head_hash", GENESIS_HASH)))

    def logbook_verify(self) -> list[str]:
        """Check the log book chain; one readable line per problem, [] when intact.

        Every row is rebuilt from its columns (not trusted from its stored
        canonical text) and rehashed. Reported: edited rows (naming the fields
        that differ from what was sealed), altered hashes, broken or reordered
        links, deleted rows (gaps in seq, or rows missing before the recorded
        head), rows appended behind the store's back, and missing triggers.
        """
        with self._read() as conn:
            rows = conn.execute(
                "SELECT seq, recorded_ms, site, type, event_id, revision, body, canonical,"
                " prev_hash, hash FROM logbook ORDER BY seq").fetchall()
            head_seq = int(self._meta(conn, "logbook_head_seq", 0))
            head_hash = str(self._meta(conn, "logbook_head_hash", GENESIS_HASH))
            triggers = {name for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'logbook'")}
        problems: list[str] = []
        missing = sorted(LOGBOOK_TRIGGERS - triggers)
        if missing:
            problems.append(f"logbook: append-only trigger(s) {', '.join(missing)} missing"
                            " (dropped?)")

        # First pass: what each row's hash should be, from its own columns.
        expected: list[str | None] = []
        rebuilt: list[dict[str, Any] | None] = []
        for seq, recorded, site, type_, event_id, revision, body, _, prev, _ in rows:
            try:
                content = _logbook_content(seq, recorded, site, type_, event_id, revision,
                                           json.loads(body))
                expected.append(_chain_hash(prev, canonical(content)))
                rebuilt.append(content)
            except (TypeError, ValueError):
                expected.append(None)
                rebuilt.append(None)
        seq_of_hash: dict[str, int] = {}
        for row, want in zip(rows, expected, strict=True):
            seq_of_hash.setdefault(row[9], row[0])
            if want is not None:
                seq_of_hash.setdefault(want, row[0])

        prev_seq = 0
        prev_hashes: tuple[str | None, ...] = (GENESIS_HASH,)
        for i, row in enumerate(rows):
            seq, stored_canonical, prev, stored_hash = row[0], row[7], row[8], row[9]
            label = f"logbook row {seq}"
            # Links: a gap is reported as such; the link across it cannot be checked.
            if seq > prev_seq + 1:
                problems.append(f"{_rows_label(prev_seq + 1, seq - 1)}: missing (deleted)")
            elif prev not in prev_hashes:
                other = seq_of_hash.get(prev)
                if other is not None and other != seq:
                    problems.append(f"{label}: links to row {other} instead of row {prev_seq}"
                                    " (chain reordered)")
                elif prev_seq == 0:
                    problems.append(f"{label}: prev_hash is not the genesis value (chain broken)")
                else:
                    problems.append(f"{label}: prev_hash does not match row {prev_seq}'s hash"
                                    f" (chain broken, or row {prev_seq} rewritten)")
            # Content: rebuilt from the columns, compared with what was sealed.
            fields, want = rebuilt[i], expected[i]
            if fields is None or want is None:
                problems.append(f"{label}: edited (body is not valid JSON)")
            elif canonical(fields) != stored_canonical:
                problems.append(f"{label}: edited ({_changed_fields(fields, stored_canonical)}"
                                " changed since it was sealed)")
            elif want != stored_hash:
                # Content and its canonical text agree but not the hash. If the
                # next link still points at the hash the content deserves, only
                # the hash column was touched; otherwise both were edited.
                successor = rows[i + 1][8] if i + 1 < len(rows) else (
                    head_hash if head_seq == seq else None)
                if successor == want:
                    problems.append(f"{label}: hash altered (content intact)")
                else:
                    problems.append(f"{label}: edited (content does not match its hash)")
            prev_seq = seq
            prev_hashes = (stored_hash, want)

        last_seq = rows[-1][0] if rows else 0
        if head_seq > last_seq:
            problems.append(f"{_rows_label(last_seq + 1, head_seq)}: missing at the end"
                            " (deleted)")
        elif head_seq < last_seq:
            problems.append(f"{_rows_label(head_seq + 1, last_seq)}: not written by stormwatch"
                            f" (its recorded head is row {head_seq})")
        elif rows and head_hash not in prev_hashes:
            problems.append(f"logbook row {last_seq}: hash differs from the recorded head")
        return problems


def _changed_fields(content: dict[str, Any], stored_canonical: str) -> str:
    """Which sealed fields the columns no longer match, for a readable verdict."""
    try:
        sealed = json.loads(stored_canonical)
    except ValueError:
        return "canonical text"
    if not isinstance(sealed, dict):
        return "canonical text"
    changed = sorted(k for k in content.keys() | sealed.keys()
                     if content.get(k) != sealed.get(k))
    return ", ".join(changed) if changed else "canonical text"

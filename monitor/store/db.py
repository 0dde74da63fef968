"""One SQLite connection, its transactions, the schema version and the ``meta`` table.

Every part of the store (``journal``, ``events``, ``outbox``, ``state``) works
through one ``Db``: one connection used from one thread (sqlite3's
``check_same_thread`` enforces it), and one way to write (``write``: ``BEGIN
IMMEDIATE`` ... ``COMMIT``, rolled back on any error) and to read several
statements from one snapshot (``read``). A transaction that spans parts
(``EventLog.record`` writes events, outbox rows, log book rows, site status
and the engine cursor together) passes its connection to their ``conn``-level
helpers.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Final

from ..contract.admission import canonical as canonical  # the one JSON spelling, shared
from ..contract.events import Event
from ..errors import UserError
from .schema import MIGRATIONS, SCHEMA_VERSION

DB_NAME: Final = "stormwatch.db"
#: How long a statement waits for another connection's lock before failing.
#: The CLI reads while the daemon commits a batch (milliseconds), so a few
#: seconds is generous without hanging a command on a wedged daemon.
BUSY_TIMEOUT_MS: Final = 5000
#: Meta keys that change only together with the rows they describe.
RESERVED_META: Final = frozenset(
    {"schema_version", "applied_seq", "logbook_head_seq", "logbook_head_hash"})


class StoreError(UserError):
    """The database cannot be used as asked (missing, newer schema, read-only)."""


@contextmanager
def read_snapshot(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One read transaction on ``conn``, unless the caller holds one already (then its
    snapshot is the one read)."""
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


def load_event(body: str) -> Event:
    """The typed event of a stored ``body`` (its canonical JSON)."""
    return Event.from_json(json.loads(body))


class Db:
    """The connection. ``readonly=True`` opens the file read-only (the CLI beside a
    running daemon): it never creates or migrates, and ``write`` raises."""

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
            # here is explicit, so its boundaries are the ones documented.
            conn = sqlite3.connect(self.path, isolation_level=None,
                                   timeout=BUSY_TIMEOUT_MS / 1000)
        self.conn = conn
        try:
            self._configure()
            if readonly:
                self._check_version()
            else:
                self._migrate()
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; rolled back if anything in it raises."""
        if self.readonly:
            raise StoreError(f"{self.path}: store opened read-only")
        with immediate(self.conn) as conn:
            yield conn

    def read(self) -> AbstractContextManager[sqlite3.Connection]:
        """One read transaction: several SELECTs see the same snapshot."""
        return read_snapshot(self.conn)

    # -- meta: small named values ---------------------------------------------

    def meta(self, key: str, default: Any = None) -> Any:
        return get_meta(self.conn, key, default)

    def set_meta(self, values: Mapping[str, int | str]) -> None:
        """Set meta values in one transaction. The store's own keys (``RESERVED_META``)
        are refused: they change only together with the rows they describe."""
        for key in values:
            if key in RESERVED_META:
                raise ValueError(f"meta key {key!r} is maintained by the store")
        with self.write() as conn:
            for key, value in values.items():
                put_meta(conn, key, value)

    # -- setting up --------------------------------------------------------------

    def _configure(self) -> None:
        conn = self.conn
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        if self.readonly:
            conn.execute("PRAGMA query_only = ON")
            return
        if conn.execute("PRAGMA page_count").fetchone()[0] == 0:
            # A new file: pages freed by the archive (``archive.py``) can then be
            # given back to the file system (``PRAGMA incremental_vacuum``). Only
            # before the first table, and before WAL mode writes the header; an
            # older file is converted once by ``stormwatch archive`` (a VACUUM).
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            # WAL needs shared memory; it is refused e.g. on network file systems.
            # Without it the CLI's reads would block the daemon's commits.
            raise StoreError(f"{self.path}: cannot use WAL journal mode (got {mode!r})")
        # FULL, not WAL's usual NORMAL: NORMAL may lose the last commits on power
        # loss, and those rows have already been acknowledged to the broker.
        conn.execute("PRAGMA synchronous = FULL")

    def _migrate(self) -> None:
        if self._current():
            # Nothing to do, so nothing written: a daemon restarting on a full
            # disk must be able to open its store (and wait for space).
            return
        with self.write() as conn:
            # value has no declared type: it keeps ints as ints and text as text.
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value NOT NULL)"
                         " WITHOUT ROWID")
            version = int(get_meta(conn, "schema_version", 0))
            if version > SCHEMA_VERSION:
                raise StoreError(f"{self.path}: schema version {version} is newer than this"
                                 f" stormwatch understands ({SCHEMA_VERSION}); upgrade it")
            for statements in MIGRATIONS[version:]:
                for statement in statements:
                    conn.execute(statement)
            put_meta(conn, "schema_version", SCHEMA_VERSION)

    def _current(self) -> bool:
        """Whether the file is at this stormwatch's schema version (read only; the
        migration checks again under the write lock)."""
        conn = self.conn
        has_meta = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
        return bool(has_meta) and int(get_meta(conn, "schema_version", 0)) == SCHEMA_VERSION

    def _check_version(self) -> None:
        conn = self.conn
        has_meta = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
        version = int(get_meta(conn, "schema_version", 0)) if has_meta else 0
        if version != SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: schema version {version}, this stormwatch needs {SCHEMA_VERSION};"
                " open it once read-write (start the daemon) to create or migrate it")


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction on ``conn`` (opened with ``isolation_level=None``),
    rolled back if anything in it raises.

    IMMEDIATE takes the write lock now. A deferred transaction that reads first
    and writes later cannot wait for the lock in WAL mode (it gets SQLITE_BUSY
    at once, as its snapshot may be stale), so it would fail instead of waiting
    busy_timeout behind another writer.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def get_meta(conn: sqlite3.Connection, key: str, default: Any = None) -> Any:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return default if row is None else row[0]


def put_meta(conn: sqlite3.Connection, key: str, value: int | str) -> None:
    conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)"
                 " ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))


def bump(conn: sqlite3.Connection, counts: Mapping[str, int]) -> None:
    """Add to the running totals of ``counters`` (inside the caller's transaction)."""
    conn.executemany(
        "INSERT INTO counters (name, value) VALUES (?, ?)"
        " ON CONFLICT (name) DO UPDATE SET value = value + excluded.value",
        [(name, n) for name, n in counts.items() if n])


def is_disk_full(exc: BaseException) -> bool:
    """Whether a write failed for lack of space: SQLite's ``SQLITE_FULL`` ("database or
    disk is full"), which it reports when the file system says ``ENOSPC``."""
    return isinstance(exc, sqlite3.OperationalError) and (
        exc.sqlite_errorcode == sqlite3.SQLITE_FULL or "disk is full" in str(exc))

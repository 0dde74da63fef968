"""The engine's state on disk: its snapshots, each site's recorded status, and cursors.

``snapshots`` holds, per ``owner`` (the daemon's engine, the exporter's
replica), the newest engine snapshot's *head* (everything but checkpoint
states, as JSON) at some ``applied_seq``, so a restart replays only the tail
of the journal; ``checkpoints`` holds that snapshot's timeline checkpoints, a
row each, written once and kept until compaction passes them, so a snapshot
writes only what changed since the one before (``save_snapshot``).
``site_status`` is what ``stormwatch status`` shows of each site, kept current
by the daemon (with the events it reflects: ``put_status``), so the command
answers at once at any journal size. ``meta`` holds named positions in the
journal (``cursor.*``, e.g. the InfluxDB exporter's) and small values the
daemon publishes for the commands.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .db import RESERVED_META, Db, get_meta, put_meta


@dataclass(frozen=True, slots=True)
class EngineSnapshot:
    """An engine snapshot as stored: the head (everything but checkpoint states, as
    JSON text) and the checkpoint states by timeline name and instant."""

    applied_seq: int
    head: str
    checkpoints: dict[str, dict[int, str]]


@dataclass(frozen=True, slots=True)
class SiteStatus:
    """A site's recorded status: when, at which journal position, and the summary."""

    updated_ms: int
    applied_seq: int
    data: dict[str, Any]


def put_status(conn: sqlite3.Connection, statuses: Mapping[str, str], applied_seq: int,
               updated_ms: int) -> None:
    """Replace the recorded status of these sites (inside the caller's transaction)."""
    conn.executemany(
        "INSERT INTO site_status (site, updated_ms, applied_seq, data) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (site) DO UPDATE SET updated_ms = excluded.updated_ms,"
        " applied_seq = excluded.applied_seq, data = excluded.data",
        [(site, updated_ms, applied_seq, text) for site, text in statuses.items()])


class State:
    """The ``snapshots``, ``checkpoints`` and ``site_status`` tables, and ``meta``."""

    def __init__(self, db: Db) -> None:
        self.db = db

    def latest_snapshot(self, owner: str = "engine") -> tuple[int, dict[str, Any]] | None:
        """The most recently saved snapshot of ``owner`` as (applied_seq, data), or None.

        Most recently *saved*, not highest ``applied_seq``: after a rebuild from
        scratch the new, lower snapshot is the one that matches the engine.
        """
        row = self.db.conn.execute(
            "SELECT applied_seq, data FROM snapshots WHERE owner = ? ORDER BY id DESC LIMIT 1",
            (owner,)).fetchone()
        return None if row is None else (int(row[0]), json.loads(row[1]))

    def save_snapshot(self, owner: str, applied_seq: int, head: str, *,
                      created_ms: int, put: Sequence[tuple[str, int, str]],
                             keep_from: Mapping[str, int], replace_all: bool = False) -> None:
        """Store an engine snapshot of ``owner`` in ONE transaction: its ``head`` (JSON
        text), the checkpoint states that are new or changed since the last one
        (``put``: timeline, instant, state), and, per timeline, the instant below
        which its checkpoints are gone (``keep_from``, its compacted base). The
        owner's previous snapshot row is replaced; ``replace_all`` drops all its
        checkpoint rows first (the engine was rebuilt: ``put`` is then all of them)."""
        with self.db.write() as conn:
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

    def snapshot_head(self, owner: str = "engine") -> tuple[int, str] | None:
        """(applied_seq, head JSON text) of the owner's snapshot, without its checkpoints:
        what the archive needs to know of it (its sites' horizons)."""
        row = self.db.conn.execute("SELECT applied_seq, data FROM snapshots WHERE owner = ?"
                                   " ORDER BY id DESC LIMIT 1", (owner,)).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def meta_number(self, key: str, path: str) -> int | None:
        """An integer inside a JSON meta value (``path`` as SQLite's ``json_extract``
        takes it), without loading the value into Python; None when absent."""
        row = self.db.conn.execute("SELECT json_extract(value, ?) FROM meta WHERE key = ?"
                                   " AND json_valid(value)", (path, key)).fetchone()
        return int(row[0]) if row is not None and isinstance(row[0], int) else None

    def cursors(self) -> dict[str, int]:
        """Every named position (``cursor.*`` in ``meta``), by name."""
        return {str(k)[len("cursor."):]: int(v) for k, v in self.db.conn.execute(
            "SELECT key, value FROM meta WHERE key LIKE 'cursor.%'")}

    def load_snapshot(self, owner: str = "engine") -> EngineSnapshot | None:
        """The owner's snapshot as ``save_snapshot`` stored it, or None; read in
        one transaction, so the head and its checkpoints belong together."""
        with self.db.read() as conn:
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
        (head,) = self.db.conn.execute("SELECT ifnull(sum(length(data)), 0) FROM snapshots"
                                     " WHERE owner = ?", (owner,)).fetchone()
        (rows,) = self.db.conn.execute("SELECT ifnull(sum(length(state)), 0) FROM checkpoints"
                                     " WHERE owner = ?", (owner,)).fetchone()
        return int(head) + int(rows)

    def site_statuses(self) -> dict[str, SiteStatus]:
        """The recorded status of every site."""
        return {site: SiteStatus(int(updated), int(seq), json.loads(data))
                for site, updated, seq, data in self.db.conn.execute(
                    "SELECT site, updated_ms, applied_seq, data FROM site_status")}

    def meta_get(self, key: str) -> int | str | None:
        """A value the daemon publishes for the CLI (e.g. ``lag_ms``); None when unset."""
        value = self.db.meta(key)
        return value if value is None or isinstance(value, (int, str)) else str(value)

    def meta_set(self, key: str, value: int | str) -> None:
        """Set a meta value in its own transaction. The store's own keys
        (``schema_version``, ``applied_seq``, ``logbook_head_*``) are refused:
        they change only together with the rows they describe."""
        self.db.set_meta({key: value})

    def meta_update(self, values: Mapping[str, int | str]) -> None:
        """Set several meta values in one transaction (see ``meta_set``)."""
        self.db.set_meta(values)

    def cursor(self, name: str) -> int:
        """A named position in the journal (e.g. the InfluxDB exporter's); 0 when unset."""
        return int(get_meta(self.db.conn, f"cursor.{name}", 0))

    def set_cursors(self, cursors: Mapping[str, int],
                    meta: Mapping[str, int | str] | None = None) -> None:
        """Move several cursors and set meta values in ONE transaction.

        The InfluxDB exporter moves its journal and events cursors together
        with what it publishes about itself (last write, its engine replica's
        snapshot at exactly that position), so they never disagree after a crash.
        """
        for key in meta or {}:
            if key in RESERVED_META:
                raise ValueError(f"meta key {key!r} is maintained by the store")
        with self.db.write() as conn:
            for name, seq in cursors.items():
                put_meta(conn, f"cursor.{name}", seq)
            for key, value in (meta or {}).items():
                put_meta(conn, key, value)

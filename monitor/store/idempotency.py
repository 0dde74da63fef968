"""Idempotency keys of the field app: each inspection submitted is recorded once.

Theory of operation. A phone that sent an inspection without an answer (the
network dropped, the offline queue fired twice) sends it again with the same
``Idempotency-Key``. ``claim`` inserts the key before anything is recorded, in
one SQLite transaction, so of two requests with one key exactly one goes on;
the other gets the stored answer (``Done``) or, while the first is still being
recorded, ``Pending``. ``finish`` stores the answer; ``release`` drops a claim
whose request was refused, so a corrected retry may use the key again. The
keys live in ``state_dir/web.sqlite`` (not in memory: a restart of the web app
must not record a retry twice).

A key is a person's own: the table's key is (person, key), so the same key
sent by two people is two keys, and nobody can block or read another's. With
the key is kept the SHA-256 of the request (``body_digest``: the site and the
parsed inspection as canonical JSON), so a retry is told from a different
inspection sent under a used key: that is a ``Conflict`` (the API answers 422),
never the first answer for a second inspection dropped in silence.

A ``web.sqlite`` of before (the key alone as the table's key, no digest) is
migrated in place when opened (``_migrate``); its rows keep their answers and
have no digest, so a retry of one of them is answered as before.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from typing import Any, Final

from ..contract.admission import canonical
from .db import immediate
from .sidedb import SideDb

_TABLE: Final = (
    "CREATE TABLE {name} (name TEXT NOT NULL, key TEXT NOT NULL, site TEXT NOT NULL,"
    " body_sha256 TEXT, created_ms INTEGER NOT NULL, status INTEGER, answer TEXT,"
    " PRIMARY KEY (name, key))")
#: The columns a table of before the digest has; ``_migrate`` copies them over.
_OLD_COLUMNS: Final = "name, key, site, created_ms, status, answer"


def body_digest(site: str, data: Any) -> str:
    """What identifies a request under its key: the SHA-256 of the site and the parsed
    inspection as canonical JSON (so key order and spacing do not matter). ``ValueError``
    for NaN or an infinity, which are not JSON."""
    text = canonical({"site": site, "inspection": data})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _migrate(conn: sqlite3.Connection) -> None:
    """Make the ``idempotency`` table this version's, in one transaction: create it, or
    rebuild one of before (keyed by the key alone, without the digest) with its rows."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(idempotency)")}
    if "body_sha256" in columns:
        return
    if not columns:
        conn.execute(_TABLE.format(name="idempotency"))
        return
    conn.execute(_TABLE.format(name="idempotency_new"))
    conn.execute(f"INSERT INTO idempotency_new ({_OLD_COLUMNS})"
                 f" SELECT {_OLD_COLUMNS} FROM idempotency")
    conn.execute("DROP TABLE idempotency")
    conn.execute("ALTER TABLE idempotency_new RENAME TO idempotency")


@dataclass(frozen=True, slots=True)
class Fresh:
    """The key is new and now claimed: record, then ``finish``."""


@dataclass(frozen=True, slots=True)
class Done:
    """The key was used: the answer it got (HTTP status, JSON body)."""

    status: int
    answer: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Pending:
    """The key is being recorded by another request right now."""


@dataclass(frozen=True, slots=True)
class Conflict:
    """The person used the key for another inspection (another site, another body)."""


class IdempotencyKeys(SideDb):
    """The keys in ``state_dir/web.sqlite``."""

    def _migrate(self, conn: sqlite3.Connection) -> None:
        _migrate(conn)

    def claim(self, key: str, name: str, site: str, digest: str, now_ms: int
              ) -> Fresh | Done | Pending | Conflict:
        """Claim ``name``'s ``key`` for the request of ``digest`` (``body_digest``)."""
        with self._lock, immediate(self._conn) as conn:
            row = conn.execute("SELECT site, body_sha256, status, answer FROM idempotency"
                               " WHERE name = ? AND key = ?", (name, key)).fetchone()
            if row is None:
                conn.execute("INSERT INTO idempotency (name, key, site, body_sha256,"
                             " created_ms) VALUES (?, ?, ?, ?, ?)",
                             (name, key, site, digest, now_ms))
                return Fresh()
        held_site, held_digest, status, answer = row
        if held_site != site or held_digest not in (None, digest):  # None: kept before
            return Conflict()
        if status is None:
            return Pending()
        return Done(int(status), json.loads(answer))

    def finish(self, key: str, name: str, status: int, answer: dict[str, Any]) -> None:
        with self._lock, immediate(self._conn) as conn:
            conn.execute("UPDATE idempotency SET status = ?, answer = ? WHERE name = ?"
                         " AND key = ?", (status, json.dumps(answer, sort_keys=True), name, key))

    def release(self, key: str, name: str) -> None:
        with self._lock, immediate(self._conn) as conn:
            conn.execute("DELETE FROM idempotency WHERE name = ? AND key = ?"
                         " AND status IS NULL", (name, key))

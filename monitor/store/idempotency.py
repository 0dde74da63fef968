"""Idempotency keys of the field app: each inspection submitted is recorded once.

Theory of operation. A phone that sent an inspection without an answer (the
network dropped, the offline queue fired twice) sends it again with the same
``Idempotency-Key``. ``claim`` inserts the key before anything is recorded, in
one SQLite transaction, so of two requests with one key exactly one goes on;
the other gets the stored answer (``Done``) or, while the first is still being
recorded, ``Pending``. ``finish`` stores the answer; ``release`` drops a claim
whose request was refused, so a corrected retry may use the key again. The
keys live in ``state_dir/web.sqlite`` (not in memory: a restart of the web app
must not record a retry twice). A key is bound to the person and the site it
was first used for: the same key from someone else is a conflict, not a replay.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from .db import immediate
from .sidedb import SideDb

_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS idempotency (key TEXT PRIMARY KEY, name TEXT NOT NULL,"
    " site TEXT NOT NULL, created_ms INTEGER NOT NULL, status INTEGER, answer TEXT)",
)


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
    """The key was used by another person or for another site."""


class IdempotencyKeys(SideDb):
    """The keys in ``state_dir/web.sqlite``."""

    SCHEMA = _SCHEMA

    def claim(self, key: str, name: str, site: str, now_ms: int
              ) -> Fresh | Done | Pending | Conflict:
        with self._lock, immediate(self._conn) as conn:
            row = conn.execute("SELECT name, site, status, answer FROM idempotency"
                               " WHERE key = ?", (key,)).fetchone()
            if row is None:
                conn.execute("INSERT INTO idempotency (key, name, site, created_ms)"
                             " VALUES (?, ?, ?, ?)", (key, name, site, now_ms))
                return Fresh()
        if (row[0], row[1]) != (name, site):
            return Conflict()
        if row[2] is None:
            return Pending()
        return Done(int(row[2]), json.loads(row[3]))

    def finish(self, key: str, status: int, answer: dict[str, Any]) -> None:
        with self._lock, immediate(self._conn) as conn:
            conn.execute("UPDATE idempotency SET status = ?, answer = ? WHERE key = ?",
                         (status, json.dumps(answer, sort_keys=True), key))

    def release(self, key: str) -> None:
        with self._lock, immediate(self._conn) as conn:
            conn.execute("DELETE FROM idempotency WHERE key = ? AND status IS NULL", (key,))

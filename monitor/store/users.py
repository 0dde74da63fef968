"""The people of the field app: who they are, and the tokens that say so.

Theory of operation
-------------------
§ 134-9A(2) asks for inspections by "a qualified professional"; the field
app lets one record them from a phone, and lets the stormwater management
officer read every site. Two roles: ``qp`` (reads and records on the sites
listed, every site when none is), ``officer`` (reads every site, records
nothing). No passwords are kept. A person signs in with a single-use link
(``issue_signin`` → ``redeem_signin``), which starts a session ("remember
this phone", ``new_session``); a script uses a bearer token
(``issue_api_token``).

Every token is 32 random bytes (``secrets.token_urlsafe``) handed out once
and stored only as its SHA-256: a copy of the file signs nobody in. A
sign-in token is used at most once: the row is marked in the same statement
that checks it, so two requests racing with one link cannot both win.
Expiry is judged against the caller's ``now_ms`` (the web app passes its
clock), never the wall clock read here.

The tables live in their own SQLite file, ``state_dir/users.sqlite``, not in
the daemon's database: the web app writes sessions while the daemon writes
the journal, and neither waits for the other's lock; the daemon's schema
and its migrations stay the journal's. The file is made mode 0600. One
``Users`` may be shared by the threads of a web server (one connection
behind a lock).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final, Literal, cast, get_args

from ..errors import UserError
from .db import immediate

Role = Literal["qp", "officer"]
ROLES: Final[tuple[str, ...]] = get_args(Role)

USERS_NAME: Final = "users.sqlite"
_BUSY_TIMEOUT_S: Final = 5.0
_MS_PER_DAY: Final = 86_400_000

_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS users (name TEXT PRIMARY KEY, role TEXT NOT NULL,"
    " email TEXT, sites TEXT NOT NULL)",
    # kind: signin (single use: used_ms), session, api (one per person).
    "CREATE TABLE IF NOT EXISTS tokens (hash TEXT PRIMARY KEY, kind TEXT NOT NULL,"
    " name TEXT NOT NULL REFERENCES users (name), expires_ms INTEGER, used_ms INTEGER)",
    "CREATE INDEX IF NOT EXISTS tokens_by_name ON tokens (name, kind)",
)


@dataclass(frozen=True, slots=True)
class User:
    """A person of the field app. ``sites``: where a ``qp`` may record (empty: every
    site); an officer reads every site whatever it says."""

    name: str
    role: Role
    email: str | None
    sites: tuple[str, ...] = ()

    def may_read(self, site: str) -> bool:
        if self.role == "officer":
            return True
        return not self.sites or site in self.sites

    def may_record(self, site: str) -> bool:
        """Recording an inspection is the qualified professional's (§ 134-9A(2))."""
        return self.role == "qp" and self.may_read(site)


def token_hash(token: str) -> str:
    """What is stored of a token: its SHA-256, hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _new_token() -> str:
    return secrets.token_urlsafe(32)


class Users:
    """The people and their tokens in ``state_dir/users.sqlite``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        new = not path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, isolation_level=None, timeout=_BUSY_TIMEOUT_S,
                               check_same_thread=False)
        self._conn = conn
        self._lock = threading.Lock()
        try:
            if new:
                os.chmod(path, 0o600)
            conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA journal_mode = WAL")
            with self._write() as c:
                for statement in _SCHEMA:
                    c.execute(statement)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise UserError(f"state_dir: cannot use {path}: {exc}") from None

    @classmethod
    def open(cls, state_dir: Path) -> Users:
        return cls(Path(state_dir) / USERS_NAME)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Users:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock, immediate(self._conn) as conn:
            yield conn

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            yield self._conn

    # -- people ----------------------------------------------------------------

    def add(self, user: User) -> None:
        """Add a person; ``UserError`` when the name is taken or the role unknown."""
        if user.role not in ROLES:
            raise UserError(f"role: {user.role!r} is not one of {', '.join(ROLES)}")
        try:
            with self._write() as conn:
                conn.execute("INSERT INTO users (name, role, email, sites) VALUES (?, ?, ?, ?)",
                             (user.name, user.role, user.email, json.dumps(list(user.sites))))
        except sqlite3.IntegrityError:
            raise UserError(f"name: there is already a user named {user.name!r}") from None

    def get(self, name: str) -> User | None:
        with self._read() as conn:
            row = conn.execute("SELECT name, role, email, sites FROM users WHERE name = ?",
                               (name,)).fetchone()
        return None if row is None else _user(row)

    def all(self) -> list[User]:
        with self._read() as conn:
            rows = conn.execute("SELECT name, role, email, sites FROM users ORDER BY name"
                                ).fetchall()
        return [_user(row) for row in rows]

    # -- tokens ----------------------------------------------------------------

    def _issue(self, name: str, kind: str, expires_ms: int | None, *,
               now_ms: int | None = None, replace: bool = False) -> str:
        token = _new_token()
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone() is None:
                raise UserError(f"name: there is no user named {name!r}")
            if replace:
                conn.execute("DELETE FROM tokens WHERE name = ? AND kind = ?", (name, kind))
            if now_ms is not None:  # what can never be used again need not be kept
                conn.execute("DELETE FROM tokens WHERE expires_ms <= ? OR used_ms IS NOT NULL",
                             (now_ms,))
            conn.execute("INSERT INTO tokens (hash, kind, name, expires_ms) VALUES (?, ?, ?, ?)",
                         (token_hash(token), kind, name, expires_ms))
        return token

    def _holder(self, token: str, kind: str, now_ms: int | None) -> User | None:
        with self._read() as conn:
            row = conn.execute(
                "SELECT u.name, u.role, u.email, u.sites FROM tokens t JOIN users u"
                " ON u.name = t.name WHERE t.hash = ? AND t.kind = ?"
                " AND (t.expires_ms IS NULL OR t.expires_ms > ?)",
                (token_hash(token), kind, now_ms if now_ms is not None else 0)).fetchone()
        return None if row is None else _user(row)

    def issue_signin(self, name: str, now_ms: int, ttl_s: int = 900) -> str:
        """A sign-in token for ``name``, good once, until ``ttl_s`` after ``now_ms``."""
        return self._issue(name, "signin", now_ms + ttl_s * 1000, now_ms=now_ms)

    def redeem_signin(self, token: str, now_ms: int) -> User | None:
        """The person a sign-in token was issued to, and the token used up; None for a
        token unknown, already used or expired."""
        with self._write() as conn:
            cursor = conn.execute(
                "UPDATE tokens SET used_ms = ? WHERE hash = ? AND kind = 'signin'"
                " AND used_ms IS NULL AND expires_ms > ?", (now_ms, token_hash(token), now_ms))
            if cursor.rowcount != 1:
                return None
            row = conn.execute(
                "SELECT u.name, u.role, u.email, u.sites FROM tokens t JOIN users u"
                " ON u.name = t.name WHERE t.hash = ?", (token_hash(token),)).fetchone()
        return None if row is None else _user(row)

    def new_session(self, name: str, now_ms: int, days: int | float) -> str:
        """A session id for ``name``, valid ``days`` from ``now_ms``."""
        return self._issue(name, "session", now_ms + int(days * _MS_PER_DAY), now_ms=now_ms)

    def session_user(self, session_id: str, now_ms: int) -> User | None:
        """Who a session belongs to; None when unknown, ended or expired."""
        return self._holder(session_id, "session", now_ms)

    def end_session(self, session_id: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM tokens WHERE hash = ? AND kind = 'session'",
                         (token_hash(session_id),))

    def issue_api_token(self, name: str) -> str:
        """A bearer token for ``name``; it replaces the person's previous one, which
        stops working (a token shown once and lost is replaced, not added to)."""
        return self._issue(name, "api", None, replace=True)

    def api_user(self, token: str) -> User | None:
        return self._holder(token, "api", None)


def _user(row: tuple[str, str, str | None, str]) -> User:
    name, role, email, sites = row
    return User(name=name, role=cast(Role, role), email=email,
                sites=tuple(str(s) for s in json.loads(sites)))

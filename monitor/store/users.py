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
(``issue_api_token``, valid ``API_TOKEN_DAYS`` unless the caller says).

Access ends in three ways, each taking effect on the person's very next
request, since every request looks its token up here: ``revoke`` deletes
every session, API token and unused sign-in link of a person (the person
stays and may be sent a new link); ``remove`` deletes the person with them;
``set_sites`` changes where a ``qp`` records. What was recorded is not here
(the journal and the log book keep each inspection with its inspector's
name), so none of them touches it. ``access`` counts what each person holds
that still works, for ``stormwatch user list``.

Every token is 32 random bytes (``secrets.token_urlsafe``) handed out once
and stored only as its SHA-256: a copy of the file signs nobody in. A
sign-in token is used at most once: the row is marked in the same statement
that checks it, so two requests racing with one link cannot both win.
Expiry is judged against the caller's ``now_ms`` (the web app passes its
clock), never the wall clock read here.

``_migrate`` brings a file of an older version up to date when it is opened
(``PRAGMA user_version``): version 1 gave API tokens an expiry, and a token
made before it expires ``API_TOKEN_DAYS`` after the upgrade (the one
expiry judged against the wall clock: the file has no caller's clock then).

The tables live in their own SQLite file, ``state_dir/users.sqlite``, not in
the daemon's database (``sidedb.py``: the web app writes sessions while the
daemon writes the journal, and neither waits for the other's lock). One
``Users`` may be shared by the threads of a web server (one connection
behind a lock).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import time
from dataclasses import dataclass
from typing import Any, Final, Literal, cast, get_args

from ..errors import UserError
from .sidedb import SideDb

Role = Literal["qp", "officer"]
ROLES: Final[tuple[str, ...]] = get_args(Role)

USERS_NAME: Final = "users.sqlite"
_MS_PER_DAY: Final = 86_400_000
#: How long an API token works unless ``issue_api_token`` is told otherwise.
API_TOKEN_DAYS: Final = 90
#: How long a sign-in link works, unless its maker says (``user link``, the mailed one).
SIGNIN_MINUTES: Final = 15
#: ``PRAGMA user_version`` of this file's layout (``_migrate``).
_VERSION: Final = 1

_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS users (name TEXT PRIMARY KEY, role TEXT NOT NULL,"
    " email TEXT, sites TEXT NOT NULL)",
    # kind: signin (single use: used_ms), session, api (one per person). Every kind
    # expires (expires_ms); an api token of version 0 had none (``_migrate``).
    "CREATE TABLE IF NOT EXISTS tokens (hash TEXT PRIMARY KEY, kind TEXT NOT NULL,"
    " name TEXT NOT NULL REFERENCES users (name), expires_ms INTEGER, used_ms INTEGER)",
    "CREATE INDEX IF NOT EXISTS tokens_by_name ON tokens (name, kind)",
)


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring an older file to ``_VERSION`` (inside the opening transaction)."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version < 1:  # API tokens without an expiry get one
        until = round(time.time() * 1000) + API_TOKEN_DAYS * _MS_PER_DAY
        conn.execute("UPDATE tokens SET expires_ms = ? WHERE kind = 'api'"
                     " AND expires_ms IS NULL", (until,))
    conn.execute(f"PRAGMA user_version = {_VERSION}")


@dataclass(frozen=True, slots=True)
class Access:
    """What works of a person's access: live sessions, their API token's expiry (None:
    no token), unused sign-in links."""

    sessions: int = 0
    api_until_ms: int | None = None
    links: int = 0


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


class Users(SideDb):
    """The people and their tokens in ``state_dir/users.sqlite``."""

    FILE = USERS_NAME
    PRAGMAS = ("PRAGMA foreign_keys = ON",)
    SCHEMA = _SCHEMA

    def _migrate(self, conn: sqlite3.Connection) -> None:
        _migrate(conn)

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

    def _issue(self, name: str, kind: str, now_ms: int, expires_ms: int, *,
               replace: bool = False) -> str:
        token = _new_token()
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone() is None:
                raise UserError(f"name: there is no user named {name!r}")
            if replace:
                conn.execute("DELETE FROM tokens WHERE name = ? AND kind = ?", (name, kind))
            # What can never be used again need not be kept.
            conn.execute("DELETE FROM tokens WHERE expires_ms <= ? OR used_ms IS NOT NULL",
                         (now_ms,))
            conn.execute("INSERT INTO tokens (hash, kind, name, expires_ms) VALUES (?, ?, ?, ?)",
                         (token_hash(token), kind, name, expires_ms))
        return token

    def _holder(self, token: str, kind: str, now_ms: int) -> User | None:
        with self._read() as conn:
            row = conn.execute(
                "SELECT u.name, u.role, u.email, u.sites FROM tokens t JOIN users u"
                " ON u.name = t.name WHERE t.hash = ? AND t.kind = ? AND t.expires_ms > ?",
                (token_hash(token), kind, now_ms)).fetchone()
        return None if row is None else _user(row)

    def issue_signin(self, name: str, now_ms: int, ttl_s: int = SIGNIN_MINUTES * 60) -> str:
        """A sign-in token for ``name``, good once, until ``ttl_s`` after ``now_ms``."""
        return self._issue(name, "signin", now_ms, now_ms + ttl_s * 1000)

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
        return self._issue(name, "session", now_ms, now_ms + int(days * _MS_PER_DAY))

    def session_user(self, session_id: str, now_ms: int) -> User | None:
        """Who a session belongs to; None when unknown, ended or expired."""
        return self._holder(session_id, "session", now_ms)

    def end_session(self, session_id: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM tokens WHERE hash = ? AND kind = 'session'",
                         (token_hash(session_id),))

    def issue_api_token(self, name: str, now_ms: int, days: float = API_TOKEN_DAYS) -> str:
        """A bearer token for ``name``, valid ``days`` from ``now_ms``; it replaces the
        person's previous one, which stops working (a token shown once and lost is
        replaced, not added to)."""
        return self._issue(name, "api", now_ms, now_ms + int(days * _MS_PER_DAY), replace=True)

    def api_user(self, token: str, now_ms: int) -> User | None:
        """Who an API token belongs to; None when unknown, replaced, revoked or expired."""
        return self._holder(token, "api", now_ms)

    # -- ending access -----------------------------------------------------------

    def access(self, now_ms: int) -> dict[str, Access]:
        """What still works of each person's access at ``now_ms``, by name (a person with
        nothing that works is absent)."""
        with self._read() as conn:
            return _live(conn, now_ms)

    def revoke(self, name: str, now_ms: int) -> Access:
        """End every session, API token and unused sign-in link of ``name`` at once; what
        of it still worked. ``UserError`` when there is no such person."""
        with self._write() as conn:
            return _end_all(conn, name, now_ms)

    def remove(self, name: str, now_ms: int) -> Access:
        """Remove ``name`` and everything that signs them in (``revoke``'s count)."""
        with self._write() as conn:
            ended = _end_all(conn, name, now_ms)
            conn.execute("DELETE FROM users WHERE name = ?", (name,))
        return ended

    def set_sites(self, name: str, sites: tuple[str, ...]) -> None:
        """Where ``name`` records from now on (empty: every site); ``UserError`` when there
        is no such person. Whether they may (the roster) is the caller's to check."""
        with self._write() as conn:
            cursor = conn.execute("UPDATE users SET sites = ? WHERE name = ?",
                                  (json.dumps(list(sites)), name))
            if cursor.rowcount != 1:
                raise UserError(f"name: there is no user named {name!r}")


#: A token kind, as the field of ``Access`` that counts it.
_COUNTED: Final = {"session": "sessions", "signin": "links", "api": "api_until_ms"}


def _live(conn: sqlite3.Connection, now_ms: int, name: str | None = None) -> dict[str, Access]:
    """What works at ``now_ms`` of each person's access (of ``name``'s alone if given)."""
    held: dict[str, dict[str, Any]] = {}
    for who, kind, count, until in conn.execute(
            "SELECT name, kind, COUNT(*), MAX(expires_ms) FROM tokens WHERE expires_ms > ?"
            " AND used_ms IS NULL AND (? IS NULL OR name = ?) GROUP BY name, kind",
            (now_ms, name, name)):
        held.setdefault(who, {})[_COUNTED[kind]] = until if kind == "api" else count
    return {who: Access(**fields) for who, fields in held.items()}


def _end_all(conn: sqlite3.Connection, name: str, now_ms: int) -> Access:
    """Delete every token of ``name`` (in the caller's transaction); what of them worked."""
    if conn.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone() is None:
        raise UserError(f"name: there is no user named {name!r}")
    ended = _live(conn, now_ms, name).get(name, Access())
    conn.execute("DELETE FROM tokens WHERE name = ?", (name,))
    return ended


def _user(row: tuple[str, str, str | None, str]) -> User:
    name, role, email, sites = row
    return User(name=name, role=cast(Role, role), email=email,
                sites=tuple(str(s) for s in json.loads(sites)))

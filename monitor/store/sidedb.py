"""The small SQLite files beside the daemon's database: ``web.sqlite``, ``users.sqlite``.

The field app keeps what only it needs (idempotency keys, ``idempotency.py``;
who uploaded which photo, ``uploads.py``) in ``state_dir/web.sqlite``, and the
people of the app and their tokens in ``state_dir/users.sqlite``
(``users.py``): files of their own, so that the app's writes never wait for
the daemon's lock nor the daemon's for its, and the daemon's schema and its
migrations stay the journal's. ``SideDb`` is the shape each table family
shares: one connection, the file made mode 0600 (the rows name people), in
WAL mode, with the family's ``PRAGMAS``, its ``SCHEMA`` created and its
``_migrate`` run in one transaction at opening; shared by the web server's
threads behind one lock: ``_write`` is a write transaction taken at once
(``db.immediate``), ``_read`` the connection under the lock. A file that is
no database (or cannot be written) is a ``UserError`` naming it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Final, TypeVar

from ..errors import UserError
from .db import BUSY_TIMEOUT_MS, immediate

WEB_DB: Final = "web.sqlite"

_Side = TypeVar("_Side", bound="SideDb")


class SideDb:
    """One table family in a file of the state directory: ``FILE`` its name,
    ``PRAGMAS`` and ``SCHEMA`` its statements, ``_migrate`` its upgrade."""

    FILE: ClassVar[str] = WEB_DB
    PRAGMAS: ClassVar[Sequence[str]] = ()
    SCHEMA: ClassVar[Sequence[str]] = ()

    def __init__(self, path: Path) -> None:
        self.path = path
        new = not path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, isolation_level=None,
                                     timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
        self._lock = threading.Lock()
        try:
            if new:
                os.chmod(path, 0o600)
            self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            for pragma in self.PRAGMAS:
                self._conn.execute(pragma)
            self._conn.execute("PRAGMA journal_mode = WAL")
            with self._write() as conn:
                for statement in self.SCHEMA:
                    conn.execute(statement)
                self._migrate(conn)
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise UserError(f"state_dir: cannot use {path}: {exc}") from None

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Bring the family's tables of an older file up to date (in the opening
        transaction, after ``SCHEMA``); nothing by default."""

    @classmethod
    def open(cls: type[_Side], state_dir: Path) -> _Side:
        return cls(Path(state_dir) / cls.FILE)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self: _Side) -> _Side:
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

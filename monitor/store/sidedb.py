"""The web app's own small SQLite file beside the daemon's: ``state_dir/web.sqlite``.

The field app keeps what only it needs (idempotency keys, ``idempotency.py``;
who uploaded which photo, ``uploads.py``) in a file of its own, so that its
writes never wait for the daemon's lock nor the daemon's for its. ``SideDb`` is
the shape each of its table families shares: one connection, made mode 0600
(the rows name people) in WAL mode with the family's tables created, shared by
the web server's threads behind one lock; ``_write`` is a write transaction
taken at once (``db.immediate``), ``_read`` the connection under the lock.
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

from .db import BUSY_TIMEOUT_MS, immediate

WEB_DB: Final = "web.sqlite"

_Side = TypeVar("_Side", bound="SideDb")


class SideDb:
    """One table family in ``state_dir/web.sqlite``: ``SCHEMA`` its statements."""

    SCHEMA: ClassVar[Sequence[str]] = ()

    def __init__(self, path: Path) -> None:
        new = not path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, isolation_level=None,
                                     timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
        self._lock = threading.Lock()
        if new:
            os.chmod(path, 0o600)
        self._conn.execute("PRAGMA journal_mode = WAL")
        for statement in self.SCHEMA:
            self._conn.execute(statement)

    @classmethod
    def open(cls: type[_Side], state_dir: Path) -> _Side:
        return cls(Path(state_dir) / WEB_DB)

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

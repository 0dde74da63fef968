"""The one way to open a daemon's state directory: its database, and its lock.

Every command and the daemon open the store here (``open_store``), so the
path of the database is named once (``db.DB_NAME``) and a state directory
that does not exist yet is made by the first writer. The lock
(``stormwatch.lock``) is held by a running daemon, or by a command writing
the database alone.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ..config import Config
from . import Store
from .db import DB_NAME

LOCK_NAME = "stormwatch.lock"


def db_path(config: Config) -> Path:
    """Where the daemon of ``config`` keeps its database."""
    return Path(config.state_dir) / DB_NAME


def open_store(config: Config, *, readonly: bool = False) -> Store:
    """The store of ``config``'s state directory (made first unless ``readonly``)."""
    if not readonly:
        Path(config.state_dir).mkdir(parents=True, exist_ok=True)
    return Store.in_dir(config.state_dir, readonly=readonly)


@contextmanager
def daemon_lock(config: Config, *, wait: bool = False) -> Iterator[IO[str] | None]:
    """The state directory's lock: held by a running daemon (or by a CLI writing alone).

    Yields the lock file when acquired, or None when another process holds it.
    """
    state = Path(config.state_dir)
    state.mkdir(parents=True, exist_ok=True)
    handle = open(state / LOCK_NAME, "a+", encoding="utf-8")  # noqa: SIM115 - held for the block
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield None
            return
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield handle
    finally:
        handle.close()

"""What every command shares: exit codes, one-line errors, the output, the state.

Exit codes (README.md, "Commands"): 0 ok, 1 a check failed, 2 bad usage or bad
configuration. A user error is one readable line on stderr, never a traceback:
a command raises ``UserError`` and ``cli.main`` prints it.

Standard output is a file like any other and can fail: ``> /dev/full``, a
full disk, a dead terminal. ``emit`` and ``flush_output`` turn such a failure
into ``OutputError`` (one line, exit 2). A closed pipe (``| head``) is not a
failure: it stays ``BrokenPipeError``, which ``main`` answers with exit 0.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..config import Config
from ..config.file import load_config
from ..errors import OutputError, UserError
from ..logs import configure
from ..store import Store, StoreError
from ..store.opening import db_path, open_store
from ..store.statedir import state_dir_problem

CONFIG_HELP = "the configuration (YAML; config/example.yaml documents it)"


def load(path: str) -> Config:
    """The configuration; a ``ConfigError`` (every problem, a line each) otherwise."""
    return load_config(path)


def site_config(args_config: str, site_id: str) -> Config:
    """The configuration of a command that names ``--site``; an unknown site is refused."""
    config = load(args_config)
    if config.site(site_id) is None:
        raise UserError(f"--site: unknown site {site_id!r} "
                         f"(configured: {', '.join(s.id for s in config.sites)})")
    return config


# --------------------------------------------------------------------------- output


def emit(text: str) -> None:
    """Write ``text`` to standard output (``OutputError`` when it cannot take it)."""
    try:
        sys.stdout.write(text)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputError(exc.strerror or str(exc)) from None


def flush_output() -> None:
    """Flush standard output now, while a failure can still be reported: the
    interpreter's own flush at exit would print a traceback-like complaint."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputError(exc.strerror or str(exc)) from None


def discard_output() -> None:
    """Point standard output at /dev/null: what a failed write left in the buffer is
    flushed again at exit, and must not fail a second time there."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError):  # no real file behind sys.stdout (a test's capture)
        pass


def write_file(flag: str, path: str, text: str | bytes) -> None:
    """Write an ``--out`` file (text as UTF-8, or bytes), or a usage error that says why it
    cannot be written."""
    target = Path(path)
    try:
        if isinstance(text, bytes):
            target.write_bytes(text)
        else:
            target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{flag}: cannot write {path}: {_why_not(target, exc)}") from None


def _why_not(target: Path, exc: OSError) -> str:
    # "No such file or directory" for a missing folder reads as if the file
    # itself were expected to exist; say which part is missing.
    parent = target.parent
    try:
        if isinstance(exc, IsADirectoryError) or target.is_dir():
            return "it is a directory (name a file in it)"
        if not parent.exists():
            return f"there is no folder {parent}"
        if not parent.is_dir():
            return f"{parent} is a file, not a folder"
    except OSError:
        pass
    return str(exc.strerror or exc)


# --------------------------------------------------------------------------- state


def check_state_dir(config: Config, *, write: bool, create: bool = False) -> None:
    """Refuse an unusable ``state_dir`` with one line naming the path (``statedir.py``)."""
    problem = state_dir_problem(config.state_dir, write=write, create=create)
    if problem is not None:
        raise UserError(f"state_dir: {problem}")


def require_database(config: Config, *, write: bool = False) -> Path:
    """The state database's path; a usage error naming it when it is missing or not a
    file (a command that would answer from no data must not answer at all)."""
    check_state_dir(config, write=write)
    path = db_path(config)
    try:
        found = path.is_file()
        missing = not found and not path.exists()
    except OSError as exc:  # e.g. no permission to look into state_dir
        raise UserError(f"state_dir: cannot read the database {path}: "
                         f"{exc.strerror or exc}") from None
    if missing:
        raise UserError(f"state_dir: no database at {path} (has `stormwatch run` run with"
                         " this configuration?)")
    if not found:
        raise UserError(f"state_dir: {path} is not a database file")
    return path


@contextmanager
def state_store(config: Config) -> Iterator[Store]:
    """The state database, opened read-only, for a command that reads it (``status``,
    ``logbook``, ``report``).

    A missing or unreadable database is a usage error (exit 2) naming its path:
    the command cannot know the state, and an empty answer ("OK (0 rows)", a
    report saying there is no data) would read as good news. Errors met while
    reading (a damaged file, a lock held past the busy timeout) say the same.
    """
    path = require_database(config)
    try:
        store = open_store(config, readonly=True)
    except StoreError as exc:
        # Its message starts with the path already.
        raise UserError(f"state_dir: {exc}") from None
    except (sqlite3.Error, OSError) as exc:
        # sqlite3 says "file is not a database" for a text file at the path.
        raise UserError(f"state_dir: cannot read the database {path}: {exc}") from None
    try:
        with store:
            yield store
    except sqlite3.Error as exc:
        raise UserError(f"state_dir: cannot read the database {path}: {exc}") from None


def setup_logging(config: Config, level: str) -> None:
    configure(config.log_format, getattr(logging, level.upper(), logging.INFO))

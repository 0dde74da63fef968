"""Whether a ``state_dir`` can be used, said before anything starts using it.

The daemon, the demo and the commands that write the state (``inspect``,
``site close``) create the directory, take its lock file and open the SQLite
database in it; the commands that read it open the database read-only. When
the path is unusable (a file where the directory should be, a directory
without permission, a database file that is not one) each of those steps
fails with its own exception, deep inside, in a thread for the demo. Checking
first turns every such case into one sentence naming the path, so the command
line can refuse it with exit 2 (README.md, "Commands") and the demo fails at once rather
than after its connection timeout.

The checks look at the file system only; they never create the database.
"""

from __future__ import annotations

import os
from pathlib import Path

from .db import DB_NAME

#: The first 16 bytes of every SQLite 3 database file.
SQLITE_MAGIC = b"SQLite format 3\x00"


def state_dir_problem(state_dir: str | Path, *, write: bool, create: bool = False) -> str | None:
    """What stops a command from using ``state_dir``, as one sentence naming the path,
    or None when nothing does.

    ``write``: the command writes there (the directory and an existing database
    must be writable). ``create``: a missing directory is created (the daemon,
    the demo); otherwise a missing directory is left for the caller to report
    as "no database", which says more than "no directory".
    """
    path = Path(state_dir)
    try:
        if path.exists():
            if not path.is_dir():
                return f"{path} is a file, not a directory"
        else:
            # A file on the way down (state_dir: /srv/x/state with /srv/x a file):
            # mkdir would say "Not a directory" without saying which.
            blocker = next((p for p in path.parents if p.exists()), None)
            if blocker is not None and not blocker.is_dir():
                return f"{path} cannot be a directory: {blocker} is a file"
            if not create:
                return None
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                return f"cannot create the directory {path}: {exc.strerror or exc}"
        if not os.access(path, os.R_OK | os.X_OK):
            return f"cannot read the database {path / DB_NAME}: no permission to enter {path}"
        if write and not os.access(path, os.W_OK):
            return f"no permission to write in the directory {path}"
        return database_problem(path / DB_NAME, write=write)
    except OSError as exc:  # e.g. a parent that may not be searched
        return f"cannot use {path}: {exc.strerror or exc}"


def database_problem(db: Path, *, write: bool) -> str | None:
    """What is wrong with an existing database file (None when it is absent: a new
    directory has none yet, and the readers say so themselves)."""
    if not db.exists():
        return None
    if not db.is_file():
        return f"{db} is not a database file"
    if not os.access(db, os.R_OK | (os.W_OK if write else 0)):
        return f"no permission to {'write' if write else 'read'} the database {db}"
    with open(db, "rb") as handle:
        head = handle.read(len(SQLITE_MAGIC))
    # An empty file is what SQLite itself leaves before its first write.
    if head and head != SQLITE_MAGIC:
        return f"{db} is not a database (not an SQLite file)"
    return None

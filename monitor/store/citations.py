"""Which photos the record names: every SHA-256 an inspection cites.

A photo named by an inspection is evidence and is never removed; one named by
none is in no chain and may be (``web/sweep.py``). The record is read where it
is kept, all of it: the journal's inspection rows (the input, whatever version
wrote them), the archive's (``archive.py``: rows moved out of the journal stay
the record), and, should a journal row ever be missing, the log book's
``inspection_recorded`` rows. An archive file that is missing or altered makes
the answer unknown (``ArchiveError``), never smaller: the caller then removes
nothing.

The journal and log book tables have no index on their kind or type, so each
is scanned once; an archive file is read with the filter pushed into Parquet,
which skips every row group whose ``kind`` statistics hold no inspection (most
of them: readings). A sweep runs at most hourly, in a thread of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pyarrow.parquet as pq

from ..contract.events import InspectionRecorded
from . import Store
from .archive import ArchiveError, check_file
from .db import read_snapshot


def cited_photos(store: Store, checked: set[str]) -> set[str]:
    """The SHA-256 of every photo an inspection names, in the journal, the archive and
    the log book. ``checked`` holds the archive files already hashed by this
    caller (they never change once recorded); ``ArchiveError`` when one fails."""
    conn = store.db.conn
    with read_snapshot(conn):
        bodies = [b for (b,) in conn.execute(
            "SELECT body FROM journal WHERE kind = 'inspection'")]
        bodies += [b for (b,) in conn.execute(
            "SELECT body FROM logbook WHERE type = ?", (InspectionRecorded.TYPE,))]
        files = store.journal.archive.files(conn=conn)
    out = _hashes(bodies)
    root = store.journal.archive.root
    for f in files:
        if f.name not in checked:
            problem = check_file(root, f)
            if problem is not None:
                raise ArchiveError(problem)
            checked.add(f.name)
        table = pq.read_table(root / f.name, columns=["body"],
                              filters=[("kind", "==", "inspection")])
        out |= _hashes(table.column("body").to_pylist())
    return out


def cited_at(store: Store, site: str, sha256: str) -> bool:
    """Whether an inspection recorded at ``site`` names the photo (its log book rows)."""
    rows = store.db.conn.execute(
        "SELECT body FROM logbook WHERE site = ? AND type = ? AND instr(body, ?) > 0",
        (site, InspectionRecorded.TYPE, sha256))
    return any(sha256 in _hashes([body]) for (body,) in rows)


def _hashes(bodies: Iterable[str]) -> set[str]:
    out: set[str] = set()
    for body in bodies:
        data: Any = json.loads(body)
        for photo in (data.get("photos") or []) if isinstance(data, dict) else []:
            if isinstance(photo, dict) and isinstance(photo.get("sha256"), str):
                out.add(photo["sha256"])
    return out

"""Which photos the record names: every SHA-256 an inspection, or a corrective action
reported done (``corrective_action_done``, journaled as an inspection row), cites.

A photo named by an inspection is evidence and is never removed; one named by
none is in no chain and may be (``web/sweep.py``). The record is read where it
is kept, all of it: the journal's inspection rows (the input, whatever version
wrote them), the archive's (``archive.py``: rows moved out of the journal stay
the record), and, should a journal row ever be missing, the log book's
``inspection_recorded`` rows. An archive file that is missing or altered makes
the answer unknown (``ArchiveError``), never smaller: the caller then removes
nothing.

The journal's and the archive's inspection rows come from
``Journal.inspection_rows`` (the journal's index leads with the kind; an
archive file is read with the filter pushed into Parquet), the one reader the
log book check uses too; the log book has no index on its type and is scanned
once. A sweep runs at most hourly, in a thread of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..contract.events import CorrectiveActionDone, InspectionRecorded
from . import Store
from .archive import ArchiveError


def cited_photos(store: Store, checked: set[str]) -> set[str]:
    """The SHA-256 of every photo an inspection names, in the journal, the archive and
    the log book. ``checked`` holds the archive files already hashed by this
    caller (they never change once recorded); ``ArchiveError`` when one fails."""
    rows, unread = store.journal.inspection_rows(archived=True, checked=checked)
    if unread:
        raise ArchiveError(f"archive file {unread[0]}")
    bodies = [b for (b,) in store.db.conn.execute(
        "SELECT body FROM logbook WHERE type IN (?, ?)",
        (InspectionRecorded.TYPE, CorrectiveActionDone.TYPE))]
    return _hashes(bodies) | {sha for row in rows for sha in _photo_hashes(row.body)}


def cited_at(store: Store, site: str, sha256: str) -> bool:
    """Whether an inspection recorded at ``site`` names the photo (its log book rows)."""
    rows = store.db.conn.execute(
        "SELECT body FROM logbook WHERE site = ? AND type = ? AND instr(body, ?) > 0",
        (site, InspectionRecorded.TYPE, sha256))
    return any(sha256 in _hashes([body]) for (body,) in rows)


def _hashes(bodies: Iterable[str]) -> set[str]:
    return {sha for body in bodies for sha in _photo_hashes(json.loads(body))}


def _photo_hashes(data: Any) -> set[str]:
    """The photos one inspection's body (a journal row's or an event's) names."""
    return {photo["sha256"] for photo in ((data.get("photos") or [])
                                         if isinstance(data, dict) else [])
            if isinstance(photo, dict) and isinstance(photo.get("sha256"), str)}

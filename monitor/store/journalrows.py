"""Archive and journal read as one: the rows after a seq, and a sensor's messages since t.

Theory of operation
-------------------
Once rows are archived (``archive.py``) a journal row lives in one of two
places: a Parquet file under ``state_dir/archive/`` or the ``journal`` table,
and for a short while in both (the file is recorded first, its rows leave the
journal after it, in short transactions). Every reader of the journal goes
through ``Journal.after`` and ``Journal.readings``, which take both places as
one journal:

``RowsAsOne``  the rows after a seq in seq order: a k-way merge (a heap) of
               the journal, read in chunks, and the archive files that hold
               later rows, each opened only when the merge reaches its first
               seq and read a row group at a time (a restore from the start of
               a season holds one small group of each month's files, not the
               season). A seq met twice is taken once. Before each chunk of
               the journal is read, the index is read again *in the same read
               transaction*: a file is recorded before its rows are deleted, so
               any row gone from that chunk is in a file the merge then knows.
``archived_readings``  a site's readings since an instant from its files that
               may hold some, for the late reading the engine re-folds
               (``host/window.py``); the caller merges them with the journal's.

The live daemon never gets here for old rows: what is archived lies before its
snapshot and before every site's horizon, so these paths serve a restore from
scratch (a new version of stormwatch, a lost snapshot), the exporter's replica
after a long pause, and the report, which reads a site's whole history.
"""

from __future__ import annotations

import heapq
import json
import sqlite3
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from .archive import ArchiveFile, ArchiveIndex, FileReader
from .db import read_snapshot

#: Journal rows read per query by the merge.
CHUNK_ROWS: Final = 5000
#: Archive files whose rows ``archived_readings`` keeps decoded (most recent first).
CACHED_FILES: Final = 8


@dataclass(frozen=True, slots=True)
class JournalRow:
    """One journal row as replay reads it back."""

    seq: int
    kind: str
    body: dict[str, Any]
    received_ms: int | None


#: One row while merged: (seq, kind, body text, received_ms).
_Raw = tuple[int, str, str, "int | None"]


class _Buffered:
    """A run of rows in seq order, read a part at a time: an archive file's row groups,
    or the journal's chunks. ``more()`` reads the next part (False: none now)."""

    def __init__(self) -> None:
        self.rows: list[_Raw] = []
        self.seqs: list[int] = []
        self.at = 0

    def fill(self, rows: list[_Raw]) -> bool:
        self.rows, self.seqs, self.at = rows, [r[0] for r in rows], 0
        return bool(rows)

    @property
    def empty(self) -> bool:
        return self.at >= len(self.rows)

    def upto(self, bound: int) -> list[_Raw]:
        """The buffered rows with seq ≤ ``bound``, taken."""
        end = bisect_right(self.seqs, bound, self.at)
        taken, self.at = self.rows[self.at:end], end
        return taken


class _FileRows(_Buffered):
    def __init__(self, reader: FileReader) -> None:
        super().__init__()
        self.reader = reader
        self.group = 0

    def more(self) -> bool:
        while self.group < self.reader.groups:
            c = self.reader.group(self.group, ("seq", "kind", "body", "received_ms"))
            self.group += 1
            if self.fill(list(zip(c["seq"], c["kind"], c["body"], c["received_ms"],
                                  strict=True))):
                return True
        return False


class RowsAsOne:
    """The journal's rows after a seq, from archive and journal as one (module docstring).

    The merge goes a slice at a time: every open source (the journal's chunk, a
    row group of each archive file the merge has reached) holds rows in seq
    order; everything up to the smallest last seq among them can be ordered now
    (one sort of a few sorted runs) and is handed out. ``take(limit)`` returns
    the next rows; ``Journal.after(returned)`` continues this merge instead of
    starting another.
    """

    def __init__(self, index: ArchiveIndex, conn: sqlite3.Connection, after_seq: int,
                 checked: set[str]) -> None:
        self.index = index
        self.conn = conn
        self.pos = after_seq
        self.checked = checked
        self.known: set[str] = set()
        #: Files not opened yet, by first seq; the open ones; the journal's chunk.
        self.waiting: list[ArchiveFile] = []
        self.files: list[_FileRows] = []
        self.journal = _Buffered()
        self.journal_seq = after_seq
        self.ready: list[_Raw] = []
        #: The last seq ``take`` returned: where ``Journal.after`` continues this merge.
        self.returned = after_seq

    @property
    def archive_done(self) -> bool:
        """No archive file is open or waiting: the rest is the journal's alone."""
        return not self.waiting and not self.files and not self.ready

    def _refill(self) -> None:
        """New files, and the journal's next chunk, from one read snapshot."""
        with read_snapshot(self.conn) as conn:
            for f in self.index.after(self.pos, conn):
                if f.name not in self.known:
                    self.known.add(f.name)
                    self.waiting.append(f)
            rows = conn.execute("SELECT seq, kind, body, received_ms FROM journal WHERE seq > ?"
                                " ORDER BY seq LIMIT ?",
                                (max(self.journal_seq, self.pos), CHUNK_ROWS)).fetchall()
        self.waiting.sort(key=lambda f: (f.first_seq, f.name))
        if self.journal.fill(rows):
            self.journal_seq = rows[-1][0]

    def _slice(self) -> bool:
        """Move the next ordered slice to ``ready``; False when nothing is left now."""
        if self.journal.empty:
            self._refill()
        self.files = [f for f in self.files if not f.empty or f.more()]
        while True:
            heads = [src.seqs[-1] for src in self.files]
            if not self.journal.empty:
                heads.append(self.journal.seqs[-1])
            # A file the merge has reached is opened before anything past its start.
            if self.waiting and (not heads or self.waiting[0].first_seq <= min(heads)):
                rows = _FileRows(FileReader(self.index.root, self.waiting.pop(0), self.checked))
                if rows.more():
                    self.files.append(rows)
                continue
            break
        if not heads:
            return False
        bound = min(heads)
        merged = self.journal.upto(bound)
        for src in self.files:
            merged += src.upto(bound)
        merged.sort(key=_seq)  # a few sorted runs: timsort merges them
        last = self.pos
        for row in merged:
            if row[0] > last:  # a seq in a file and still in the journal: once
                self.ready.append(row)
                last = row[0]
        self.pos = last
        return True

    def take(self, limit: int) -> list[JournalRow]:
        while len(self.ready) < limit and self._slice():
            pass
        out, self.ready = self.ready[:limit], self.ready[limit:]
        if out:
            self.returned = out[-1][0]
        return [JournalRow(s, k, json.loads(b), r) for s, k, b, r in out]


def _seq(row: _Raw) -> int:
    return row[0]


class ArchivedReadings:
    """A site's archived readings since an instant (``archived_readings``), with the
    last few files' rows kept decoded: the re-folds of one restore ask the same files
    again and again."""

    def __init__(self, index: ArchiveIndex, checked: set[str]) -> None:
        self.index = index
        self.checked = checked
        self.cache: dict[str, pa.Table] = {}

    def readings(self, site: str, sensors: Sequence[str], since_ms: int,
                 upto_seq: int | None, conn: sqlite3.Connection | None = None
                 ) -> list[tuple[int, dict[str, Any]]]:
        """(seq, body) of the sensors' messages at or after ``since_ms`` (up to
        ``upto_seq``) in the site's archive files, in seq order."""
        out: list[tuple[int, dict[str, Any]]] = []
        for f in self.index.covering(site, since_ms, upto_seq, conn):
            table = self._table(f)
            mask = pc.and_(pc.and_(pc.equal(table["kind"], "reading"),
                                   pc.is_in(table["sensor"], pa.array(list(sensors)))),
                           pc.greater_equal(table["ts_ms"], since_ms))
            if upto_seq is not None:
                mask = pc.and_(mask, pc.less_equal(table["seq"], upto_seq))
            picked = table.filter(mask)
            out += [(s, json.loads(b)) for s, b in zip(picked["seq"].to_pylist(),
                                                      picked["body"].to_pylist(), strict=True)]
        out.sort(key=lambda item: item[0])
        return out

    def _table(self, f: ArchiveFile) -> pa.Table:
        table = self.cache.pop(f.name, None)
        if table is None:
            table = FileReader(self.index.root, f, self.checked).table(
                ("seq", "kind", "sensor", "ts_ms", "body"))
        self.cache[f.name] = table
        while len(self.cache) > CACHED_FILES:
            del self.cache[next(iter(self.cache))]
        return table


def merge_by_seq(*parts: Sequence[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Bodies of several seq-ordered parts in seq order, a seq met twice taken once."""
    out: list[dict[str, Any]] = []
    last = None
    for seq, body in heapq.merge(*parts, key=lambda item: item[0]):
        if seq != last:
            out.append(body)
            last = seq
    return out

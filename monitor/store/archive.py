"""The archive: journal rows that can no longer change any event, in Parquet files.

Theory of operation
-------------------
The journal is the record, and the record is kept for years (five after final
stabilization under the NY SPDES construction permit), while the SQLite journal
costs about 250 bytes a reading. Rows that can no longer change any event
(older than the lateness window, covered by the engine snapshot and by every
cursor that reads the journal: ``host/archiving.py`` decides which) move into
compressed columnar files under ``state_dir/archive/``:

``archive/{site}/{site}.{YYYY-MM}.{first_seq}-{last_seq}.parquet``
    one file per site, month (the site's local month) and archive run: the
    rows of that site and month, in journal order, with their journal ``seq``.
    Journal ``seq`` numbers are never handed out twice, and a row leaves the
    journal once it is in a file, so the seq range makes a name that no other
    run can produce: a second run over the same month (rows that came late,
    or the rest of a month archived part-way) writes a *new* file beside the
    first, never into it. Ticks (the daemon's clock, no site) go to
    ``archive/_ticks/ticks.{YYYY-MM}....parquet`` by UTC month (``_`` is not a
    site id).

Columns: ``seq``, ``kind``, ``sensor``, ``ts_ms``, ``received_ms``, ``topic``
and ``body`` (the journal's canonical JSON text, byte for byte, so a row read
back is the row that was written). Integers are delta-encoded, names
dictionary-encoded, everything zstd-compressed: a few bytes a reading
(``bench/archive.py``). Row groups are small (``ROW_GROUP_ROWS``), so a reader
walking many files at once holds one small group of each.

Every file is recorded twice, in one transaction (``ArchiveIndex.record``):
its row in ``archive_files`` (the index readers use) and a log book row of type
``journal_archived`` holding its name, SHA-256, size, row count and seq and
time ranges, so the hash chain covers the archive: ``logbook verify`` rehashes
every file and names one that was edited or removed (``check_file``). A file
is written under a temporary name, fsynced, and linked to its final name
without replacing anything (``place``): stormwatch never deletes or rewrites an
archive file. A run that crashed after writing a file but before recording it
leaves that file unrecorded; the rows are still in the journal, and the next
run writes the same bytes again and adopts the file (or, were it different,
writes a new name beside it).

Readers (``journalrows.py``) take archive and journal as one; each file's
SHA-256 is checked against the index before its first use in a process.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.parquet as pq

from ..contract.times import iso
from ..errors import CheckFailed
from .db import Db
from .events import ARCHIVED, seal_record

ARCHIVE_DIR: Final = "archive"
#: The directory and file stem of tick rows (no site; not a valid site id).
TICKS: Final = "_ticks"
#: Rows per Parquet row group: what a reader decodes at a time from each file.
ROW_GROUP_ROWS: Final = 8192
#: zstd level: 9 costs a little more time than 3 for a fifth less space (bench/archive.py).
ZSTD_LEVEL: Final = 9
FORMAT: Final = "1"

SCHEMA: Final = pa.schema([
    pa.field("seq", pa.int64(), nullable=False),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("sensor", pa.string(), nullable=False),
    pa.field("ts_ms", pa.int64(), nullable=False),
    pa.field("received_ms", pa.int64()),
    pa.field("topic", pa.string()),
    pa.field("body", pa.string(), nullable=False),
])
COLUMNS: Final = tuple(SCHEMA.names)
_INTS: Final = ("seq", "ts_ms", "received_ms")


class ArchiveError(CheckFailed):
    """An archive file the index names cannot be used (missing, altered, unreadable):
    the record is not in order, so a command reading it exits 1 naming the file."""


@dataclass(frozen=True, slots=True)
class ArchiveFile:
    """One archive file as ``archive_files`` (and its log book row) record it."""

    name: str
    site: str
    month: str
    rows: int
    first_seq: int
    last_seq: int
    min_ts_ms: int
    max_ts_ms: int
    bytes: int
    sha256: str
    logbook_seq: int = 0
    created_ms: int = 0
    done: bool = False

    def record(self) -> dict[str, Any]:
        """The body of its log book row: what the chain seals about the file."""
        return {"type": ARCHIVED, "site": self.site, "at": iso(self.created_ms),
                "file": self.name, "sha256": self.sha256, "bytes": self.bytes,
                "rows": self.rows, "month": self.month, "first_seq": self.first_seq,
                "last_seq": self.last_seq, "from": iso(self.min_ts_ms),
                "to": iso(self.max_ts_ms)}


def archive_root(db_path: str | Path) -> Path:
    """The archive directory beside the database (``state_dir/archive``)."""
    return Path(db_path).parent / ARCHIVE_DIR


def file_name(site: str, month: str, first_seq: int, last_seq: int, attempt: int = 1) -> str:
    """The file's path under the archive root (module docstring)."""
    folder, stem = (TICKS, "ticks") if not site else (site, site)
    suffix = "" if attempt == 1 else f"-{attempt}"
    return f"{folder}/{stem}.{month}.{first_seq}-{last_seq}{suffix}.parquet"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --------------------------------------------------------------------------- writing


class PartWriter:
    """The rows of one (site, month) of a run, written to a temporary file in seq order."""

    def __init__(self, root: Path, site: str, month: str, tag: str) -> None:
        self.root = root
        self.site = site
        self.month = month
        folder = root / (site or TICKS)
        folder.mkdir(parents=True, exist_ok=True)
        self.tmp = folder / f".incoming-{os.getpid()}-{tag}.parquet"
        self.rows = 0
        self.first_seq = self.last_seq = 0
        self.min_ts_ms = self.max_ts_ms = 0
        #: Rows of the row group being gathered, as tuples in ``COLUMNS`` order.
        self._buf: list[tuple[Any, ...]] = []
        self._writer: pq.ParquetWriter | None = None

    def add(self, seq: int, kind: str, sensor: str, ts_ms: int, received_ms: int | None,
            topic: str | None, body: str) -> None:
        if self.rows and seq <= self.last_seq:
            raise ValueError(f"archive rows out of journal order ({seq} after {self.last_seq})")
        if not self.rows:
            self.first_seq, self.min_ts_ms, self.max_ts_ms = seq, ts_ms, ts_ms
        elif ts_ms < self.min_ts_ms:
            self.min_ts_ms = ts_ms
        elif ts_ms > self.max_ts_ms:
            self.max_ts_ms = ts_ms
        self.last_seq = seq
        self.rows += 1
        # A tuple a row, columns made once per group: the per-row cost is most of a run.
        self._buf.append((seq, kind, sensor, ts_ms, received_ms, topic, body))
        if len(self._buf) >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self._buf:
            return
        if self._writer is None:
            meta = {"stormwatch.format": FORMAT, "stormwatch.site": self.site,
                    "stormwatch.month": self.month}
            self._writer = pq.ParquetWriter(
                self.tmp, SCHEMA.with_metadata(meta), compression="zstd",
                compression_level=ZSTD_LEVEL, use_dictionary=["kind", "sensor", "topic"],
                column_encoding={c: "DELTA_BINARY_PACKED" for c in _INTS})
        columns = list(zip(*self._buf, strict=True))
        batch = pa.record_batch([pa.array(columns[i], SCHEMA.field(c).type)
                                 for i, c in enumerate(COLUMNS)], schema=SCHEMA)
        self._writer.write_batch(batch, row_group_size=ROW_GROUP_ROWS)
        self._buf = []

    def close(self) -> ArchiveFile:
        """Finish the file (fsynced); its description, named but not yet placed."""
        self._flush()
        if self._writer is None:
            raise ValueError("an archive part without rows")
        self._writer.close()
        with open(self.tmp, "rb") as handle:
            os.fsync(handle.fileno())
        return ArchiveFile(file_name(self.site, self.month, self.first_seq, self.last_seq),
                           self.site, self.month, self.rows, self.first_seq, self.last_seq,
                           self.min_ts_ms, self.max_ts_ms, self.tmp.stat().st_size,
                           sha256_of(self.tmp))

    def discard(self) -> None:
        """Drop the temporary file of a part that is not kept (never a placed file)."""
        if self._writer is not None:
            self._writer.close()
        self.tmp.unlink(missing_ok=True)


def place(root: Path, part: PartWriter, made: ArchiveFile,
          recorded: set[str]) -> ArchiveFile:
    """Give the temporary file its final name without replacing anything: ``os.link``
    fails on an existing name. An unrecorded file of the same name holding the
    same bytes (a run that crashed before recording it) is adopted; another one,
    or a recorded one, gets the next free name (``-2``, ``-3``, ...)."""
    attempt = 1
    while True:
        name = file_name(made.site, made.month, made.first_seq, made.last_seq, attempt)
        target = root / name
        try:
            os.link(part.tmp, target)
        except FileExistsError:
            if name not in recorded and sha256_of(target) == made.sha256:
                break
            attempt += 1
            continue
        break
    part.tmp.unlink()
    # Read-only, like the photos: the record is not edited by accident.
    target.chmod(0o444)
    _fsync_dir(target.parent)
    return ArchiveFile(name, made.site, made.month, made.rows, made.first_seq, made.last_seq,
                       made.min_ts_ms, made.max_ts_ms, made.bytes, made.sha256)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- reading


def check_file(root: Path, f: ArchiveFile) -> str | None:
    """What is wrong with a recorded file (one line naming it), or None."""
    path = root / f.name
    if not path.is_file():
        return f"archive file {path}: missing (removed)"
    try:
        digest = sha256_of(path)
    except OSError as exc:
        return f"archive file {path}: cannot be read ({exc.strerror or exc})"
    if digest != f.sha256:
        return (f"archive file {path}: edited (its SHA-256 differs from log book row"
                f" {f.logbook_seq})")
    return None


class FileReader:
    """One recorded archive file, its hash checked first, read a row group at a time."""

    def __init__(self, root: Path, f: ArchiveFile, checked: set[str]) -> None:
        if f.name not in checked:
            problem = check_file(root, f)
            if problem is not None:
                raise ArchiveError(f"{problem}; `stormwatch logbook verify` checks every file")
            checked.add(f.name)
        self.file = f
        self.parquet = pq.ParquetFile(root / f.name)

    @property
    def groups(self) -> int:
        return int(self.parquet.num_row_groups)

    def group(self, index: int, columns: Sequence[str] = COLUMNS) -> dict[str, list[Any]]:
        """One row group as Python lists by column."""
        table = self.parquet.read_row_group(index, columns=list(columns))
        return {name: table.column(name).to_pylist() for name in columns}

    def table(self, columns: Sequence[str] = COLUMNS) -> pa.Table:
        return self.parquet.read(columns=list(columns))


# --------------------------------------------------------------------------- the index


_FIELDS: Final = ("name, site, month, rows, first_seq, last_seq, min_ts_ms, max_ts_ms, bytes,"
                  " sha256, logbook_seq, created_ms, done")


def _file(row: Sequence[Any]) -> ArchiveFile:
    rows, first, last, lo, hi, size = (int(v) for v in row[3:9])
    return ArchiveFile(str(row[0]), str(row[1]), str(row[2]), rows, first, last, lo, hi, size,
                       str(row[9]), int(row[10]), int(row[11]), bool(row[12]))


class ArchiveIndex:
    """The ``archive_files`` table: which files hold which journal rows."""

    def __init__(self, db: Db) -> None:
        self.db = db
        self.root = archive_root(db.path)

    def files(self, site: str | None = None, conn: sqlite3.Connection | None = None
              ) -> list[ArchiveFile]:
        """Recorded files (of one site), in the order of their first seq."""
        sql = f"SELECT {_FIELDS} FROM archive_files"
        params: tuple[Any, ...] = ()
        if site is not None:
            sql += " WHERE site = ?"
            params = (site,)
        return [_file(r) for r in (conn or self.db.conn).execute(
            sql + " ORDER BY first_seq, name", params)]

    def after(self, seq: int, conn: sqlite3.Connection | None = None) -> list[ArchiveFile]:
        """Files holding any row with a seq above ``seq``."""
        return [_file(r) for r in (conn or self.db.conn).execute(
            f"SELECT {_FIELDS} FROM archive_files WHERE last_seq > ? ORDER BY first_seq, name",
            (seq,))]

    def top_seq(self) -> int:
        """The highest seq any file holds; 0 without an archive."""
        return int(self.db.conn.execute(
            "SELECT ifnull(max(last_seq), 0) FROM archive_files").fetchone()[0])

    def covering(self, site: str, since_ms: int, upto_seq: int | None,
                 conn: sqlite3.Connection | None = None) -> list[ArchiveFile]:
        """A site's files that may hold rows at or after ``since_ms`` up to ``upto_seq``."""
        sql = f"SELECT {_FIELDS} FROM archive_files WHERE site = ? AND max_ts_ms >= ?"
        params: list[Any] = [site, since_ms]
        if upto_seq is not None:
            sql += " AND first_seq <= ?"
            params.append(upto_seq)
        return [_file(r) for r in (conn or self.db.conn).execute(sql + " ORDER BY first_seq",
                                                                 params)]

    def record(self, files: Sequence[ArchiveFile], created_ms: int) -> list[ArchiveFile]:
        """Record placed files and seal a log book row for each, in ONE transaction."""
        out = []
        with self.db.write() as conn:
            for f in files:
                f = ArchiveFile(f.name, f.site, f.month, f.rows, f.first_seq, f.last_seq,
                                f.min_ts_ms, f.max_ts_ms, f.bytes, f.sha256, 0, created_ms)
                seq = seal_record(conn, created_ms, f.site, ARCHIVED, f"archive:{f.name}",
                                  f.record())
                conn.execute(f"INSERT INTO archive_files ({_FIELDS}) VALUES"
                             " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
                             (f.name, f.site, f.month, f.rows, f.first_seq, f.last_seq,
                              f.min_ts_ms, f.max_ts_ms, f.bytes, f.sha256, seq, created_ms))
                out.append(ArchiveFile(f.name, f.site, f.month, f.rows, f.first_seq,
                                       f.last_seq, f.min_ts_ms, f.max_ts_ms, f.bytes,
                                       f.sha256, seq, created_ms))
        return out

    def summary(self) -> dict[str, Any]:
        """What the archive holds: files, rows, bytes, the newest file's time (``status``)."""
        files, rows, size, newest = self.db.conn.execute(
            "SELECT count(*), ifnull(sum(rows), 0), ifnull(sum(bytes), 0), max(created_ms)"
            " FROM archive_files").fetchone()
        return {"files": int(files), "rows": int(rows), "bytes": int(size),
                "last_at": iso(int(newest)) if newest is not None else None}

    def pending(self) -> list[ArchiveFile]:
        """Files whose rows may still be in the journal (a run stopped part-way)."""
        return [f for f in self.files() if not f.done]

    def mark_done(self, name: str) -> None:
        with self.db.write() as conn:
            conn.execute("UPDATE archive_files SET done = 1 WHERE name = ?", (name,))

"""Moving journal rows into the archive, and giving the freed space back to the disk.

Theory of operation
-------------------
``move(store, cut)`` is one archive run. The *cut* says what may go (rows with
``seq`` up to ``cut.upto_seq`` and, per site, an event time before
``cut.before_ms[site]``; ``""`` is the ticks); ``host/archiving.py`` computes
it from the engine snapshot, the cursors and the configuration, and this
module trusts it. In order, each step safe to interrupt:

1. *Finish* what an interrupted run left: files recorded whose rows may still
   be in the journal (``done`` = 0) have those rows deleted now.
2. *Scan* the rows older than the newest bound, in journal order, through the
   time index; each row under its site's bound goes to the part of its site
   and month (``archive.PartWriter``), written in small row groups so memory
   stays bounded however long the run.
3. *Place and record* every part: fsynced, linked to a name nothing else has
   (``archive.place``), then recorded with its log book row, all files of the
   run in ONE transaction. Before that commit nothing has left the journal; a
   crash leaves at most an unrecorded file, which the next run adopts.
4. *Delete* the archived rows from the journal by seq, ``DELETE_ROWS`` per
   transaction, so the daemon's commits (which wait for the write lock) are
   held up by a fraction of a second at most; then mark the file ``done``.
   Until then readers take a seq once from whichever place has it.
5. *Shrink*: ``PRAGMA incremental_vacuum`` gives the free pages back to the file
   system, ``VACUUM_PAGES`` per transaction, and a WAL checkpoint truncates the
   database file to what is left. A database made before the archive existed
   has no auto-vacuum; its free pages are reused by new rows (the file stops
   growing), and ``convert=True`` (``stormwatch archive`` with the daemon
   stopped) converts it once with a full ``VACUUM``, which needs free space
   the size of the file.

An archive lock (``archive/.lock``) keeps two runs (the daemon's and a
command's) from archiving the same rows twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import sqlite3
import time
from array import array
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Final
from zoneinfo import ZoneInfo

from . import Store
from .archive import ArchiveFile, FileReader, PartWriter, archive_root, place
from .db import StoreError

#: Journal rows deleted per transaction (step 4).
DELETE_ROWS: Final = 5000
#: Pages given back per incremental vacuum (step 5): 8 MiB at 4 KiB a page.
VACUUM_PAGES: Final = 2048
#: Rows fetched per round trip of the scan (step 2).
FETCH_ROWS: Final = 10_000
LOCK_NAME: Final = ".lock"

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Cut:
    """What may leave the journal: rows with ``seq`` ≤ ``upto_seq`` whose event time is
    before ``before_ms`` of their site (``""``: ticks). Months are each site's local
    months (``zones``; UTC without one)."""

    upto_seq: int
    before_ms: Mapping[str, int]
    zones: Mapping[str, ZoneInfo] = field(default_factory=dict)


@dataclass
class Moved:
    """What a run did (or, dry, would do)."""

    files: list[ArchiveFile] = field(default_factory=list)
    #: (site, month) -> rows, for a dry run and the summary.
    groups: dict[tuple[str, str], int] = field(default_factory=dict)
    rows: int = 0
    finished: int = 0
    db_bytes_before: int = 0
    db_bytes_after: int = 0
    vacuumed: bool = False
    #: Why the file did not shrink, when it did not.
    no_shrink: str | None = None
    seconds: float = 0.0


def db_bytes(path: Path) -> int:
    """The database on disk: the file and its WAL."""
    total = 0
    for p in (path, path.with_name(path.name + "-wal")):
        with contextlib.suppress(FileNotFoundError):
            total += p.stat().st_size
    return total


def month_of(ts_ms: int, zone: ZoneInfo | None) -> str:
    at = datetime.fromtimestamp(ts_ms / 1000, tz=timezone.utc)
    return (at.astimezone(zone) if zone is not None else at).strftime("%Y-%m")


@contextlib.contextmanager
def archive_lock(root: Path) -> Iterator[None]:
    """The archive's lock; ``StoreError`` when another run holds it."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK_NAME, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreError(f"{root}: another archive run is in progress (the daemon's,"
                             " or another `stormwatch archive`); try again later") from None
        yield


def move(store: Store, cut: Cut, *, now_ms: int, dry_run: bool = False,
         convert: bool = False, progress: Progress | None = None) -> Moved:
    """One archive run (module docstring); ``dry_run`` only counts what would move."""
    say = progress or (lambda _: None)
    started = time.monotonic()
    root = archive_root(store.path)
    out = Moved(db_bytes_before=db_bytes(store.path))
    with archive_lock(root):
        if not dry_run:
            out.finished = _finish(store, say)
        parts = _scan(store, cut, root, dry_run, out, say)
        if parts and not dry_run:
            placed = []
            recorded = {f.name for f in store.journal.archive.files()}
            for part, seqs in parts.values():
                placed.append((place(root, part, part.close(), recorded), seqs))
            files = store.journal.archive.record([f for f, _ in placed], now_ms)
            say(f"recorded {len(files)} archive file(s) and their SHA-256 in the log book")
            for f, (_, seqs) in zip(files, placed, strict=True):
                _delete(store, f, seqs)
            out.files = files
            say(f"deleted {out.rows:,} archived row(s) from the journal")
        if not dry_run and (out.rows or out.finished):
            _shrink(store, out, convert, say)
    out.db_bytes_after = db_bytes(store.path)
    out.seconds = time.monotonic() - started
    return out


def _finish(store: Store, say: Progress) -> int:
    """Step 1: the rows of recorded files still in the journal."""
    finished = 0
    for f in store.journal.archive.pending():
        seqs = FileReader(store.journal.archive.root, f, set()).table(("seq",))["seq"]
        gone = _delete(store, f, array("q", seqs.to_pylist()))
        finished += gone
        if gone:
            say(f"finished an interrupted run: {gone:,} row(s) of {f.name} left the journal")
    return finished


def _scan(store: Store, cut: Cut, root: Path, dry_run: bool, out: Moved,
          say: Progress) -> dict[tuple[str, str], tuple[PartWriter, array[int]]]:
    """Step 2: the parts of this run, by (site, month), each with its rows' seqs."""
    parts: dict[tuple[str, str], tuple[PartWriter, array[int]]] = {}
    if not cut.before_ms or cut.upto_seq <= 0:
        return parts
    newest = max(cut.before_ms.values())
    cursor = store.db.conn.execute(
        "SELECT seq, kind, site, sensor, ts_ms, received_ms, topic, body FROM journal"
        " INDEXED BY journal_key WHERE ts_ms < ? AND seq <= ? ORDER BY seq",
        (newest, cut.upto_seq))
    months: dict[tuple[str, int], str] = {}
    report_at = 1_000_000
    try:
        while batch := cursor.fetchmany(FETCH_ROWS):
            for seq, kind, site, sensor, ts_ms, received_ms, topic, body in batch:
                bound = cut.before_ms.get(site)
                if bound is None or ts_ms >= bound:
                    continue
                day = (site, ts_ms // 900_000)  # zone offsets are whole quarter hours
                month = months.get(day)
                if month is None:
                    month = months[day] = month_of(ts_ms, cut.zones.get(site))
                key = (site, month)
                out.groups[key] = out.groups.get(key, 0) + 1
                out.rows += 1
                if dry_run:
                    continue
                held = parts.get(key)
                if held is None:
                    held = parts[key] = (PartWriter(root, site, month, str(len(parts))),
                                         array("q"))
                held[0].add(seq, kind, sensor, ts_ms, received_ms, topic, body)
                held[1].append(seq)
            if out.rows >= report_at:
                say(f"{'counted' if dry_run else 'archiving'}: {out.rows:,} row(s) so far")
                report_at += 1_000_000
    except BaseException:
        for part, _ in parts.values():
            part.discard()
        raise
    finally:
        cursor.close()
    return parts


def _delete(store: Store, f: ArchiveFile, seqs: array[int]) -> int:
    """Step 4: the file's rows leave the journal, a chunk per transaction; then ``done``."""
    gone = 0
    for start in range(0, len(seqs), DELETE_ROWS):
        with store.db.write() as conn:
            before = conn.total_changes
            conn.executemany("DELETE FROM journal WHERE seq = ?",
                             ((s,) for s in seqs[start:start + DELETE_ROWS]))
            gone += conn.total_changes - before
    store.journal.archive.mark_done(f.name)
    return gone


def _shrink(store: Store, out: Moved, convert: bool, say: Progress) -> None:
    """Step 5: free pages back to the file system."""
    conn = store.db.conn
    mode = int(conn.execute("PRAGMA auto_vacuum").fetchone()[0])
    if mode != 2:
        if not convert:
            out.no_shrink = ("the database was made before the archive existed, so its freed"
                             " pages are reused by new rows but not given back; run"
                             " `stormwatch archive` once with the daemon stopped to convert it")
            return
        size = db_bytes(store.path)
        free = shutil.disk_usage(store.path.parent).free
        if free < size * 1.2:
            out.no_shrink = (f"converting the database needs about {size / 1e6:,.0f} MB free"
                             f" beside it, and {free / 1e6:,.0f} MB are; its freed pages are"
                             " reused by new rows meanwhile")
            return
        say("converting the database for incremental vacuum (one full VACUUM, once)")
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        conn.execute("VACUUM")
    else:
        try:
            while int(conn.execute("PRAGMA freelist_count").fetchone()[0]):
                # executescript, not execute: the PRAGMA returns no rows, and
                # ``execute`` steps it once, which frees one page, not VACUUM_PAGES.
                conn.executescript(f"PRAGMA incremental_vacuum({VACUUM_PAGES});")
        except sqlite3.OperationalError as exc:
            out.no_shrink = (f"the database was busy ({exc}); the next run gives the rest"
                             " of the free pages back")
            return
    with contextlib.suppress(Exception):
        # Truncates the file to what is left; busy readers only delay it to a later one.
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    out.vacuumed = True

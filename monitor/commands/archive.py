"""``stormwatch archive``: move journal rows that can no longer change events into files.

The journal is the record and is kept for years, so nothing is deleted: rows
older than the bound (``--before DATE``, else ``archive.after_days`` [30]
before now), and older than every site's lateness window and the engine
snapshot, move into Parquet files under ``state_dir/archive/`` (one per site
and month), each file's SHA-256 sealed in the log book; the database gives
the space back. ``replay`` from the journal (a restart), ``report`` and
``logbook verify`` read archive and journal as one. With the daemon stopped
the first run also converts a database made before the archive existed so
that it can shrink (one full VACUUM); with the daemon running the command
archives beside it and says why the file does not shrink yet.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import date

from ..config import Config
from ..errors import EXIT_OK, UserError
from ..host.archiving import Plan, plan
from ..store.archive import archive_root
from ..store.db import StoreError
from ..store.opening import daemon_lock, db_path, open_store
from ..store.retention import Moved, move
from .common import CONFIG_HELP, emit, load, require_database
from .helptext import command_help


def cmd_archive(args: argparse.Namespace) -> int:
    config = load(args.config)
    before = _day(args.before) if args.before is not None else None
    require_database(config, write=not args.dry_run)
    now_ms = round(time.time() * 1000)
    # Holding the daemon's lock (when no daemon runs) keeps one from starting halfway
    # through a conversion; without it the archive lock keeps the daemon's own
    # archiver out, and the run goes on beside the daemon.
    with daemon_lock(config) as alone:
        try:
            with open_store(config, readonly=args.dry_run) as store:
                cut = plan(config, store, now_ms=now_ms, before=before)
                moved = move(store, cut.cut, now_ms=now_ms, dry_run=args.dry_run,
                             convert=alone is not None, progress=_progress)
        except StoreError as exc:
            raise UserError(f"state_dir: {exc}") from None
    emit(describe(config, cut, moved, dry_run=args.dry_run) + "\n")
    return EXIT_OK


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise UserError(f"--before: not a date (YYYY-MM-DD): {text!r}") from None


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def describe(config: Config, cut: Plan, moved: Moved, *, dry_run: bool) -> str:
    """What the run did (or would do), what bounded it, and the database's size."""
    root = archive_root(db_path(config))
    lines = []
    if not moved.rows:
        lines.append(f"nothing {'would be' if dry_run else 'was'} archived: no journal row is"
                     " both old enough and final yet")
    elif dry_run:
        lines.append(f"would archive {moved.rows:,} journal row(s) into {len(moved.groups)}"
                     f" file(s) under {root}:")
    else:
        size = sum(f.bytes for f in moved.files)
        lines.append(f"archived {moved.rows:,} journal row(s) into {len(moved.files)} file(s)"
                     f" under {root} ({size / 1e6:,.1f} MB, {size / moved.rows:.1f} bytes a"
                     f" row) in {moved.seconds:.1f} s; each file's SHA-256 is in the log book")
    for (site, month), rows in sorted(moved.groups.items()):
        lines.append(f"  {site or '(daemon ticks)':<24} {month}  {rows:>12,} row(s)")
    lines.append("bounded by:")
    lines += [f"  {hold}" for hold in cut.holds]
    if moved.finished:
        lines.append(f"finished an interrupted run: {moved.finished:,} row(s) left the journal")
    if not dry_run:
        lines.append(f"database: {moved.db_bytes_before / 1e6:,.1f} MB ->"
                     f" {moved.db_bytes_after / 1e6:,.1f} MB")
        if moved.no_shrink:
            lines.append(f"note: the database file does not shrink: {moved.no_shrink}")
    lines.append("stormwatch never deletes an archive file; `stormwatch logbook verify`"
                 " checks every one")
    return "\n".join(lines)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``archive`` command's parser."""
    p = sub.add_parser("archive", **command_help("archive"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--before", metavar="DATE",
                   help="archive rows before midnight of DATE in each site's zone (default:"
                        " archive.after_days, 30, before now); never past what is final")
    p.add_argument("--dry-run", action="store_true",
                   help="count what would move, per site and month; change nothing")
    p.set_defaults(func=cmd_archive)

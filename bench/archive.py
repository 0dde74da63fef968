#!/usr/bin/env python3
"""Benchmark: what the archive costs and saves — bytes a reading, time to archive,
replay speed from the archive against the journal.

What runs: ``--sites`` sites (default 100), each with a rain gauge (a node
``seq`` per reading), two turbidity probes and a sediment probe reading once a
minute, for ``--days`` days (default 30: a month, what one archive file holds
per site), journaled through ``Journal.commit`` (bodies are
``Reading.to_json()``, the journal's own encoding, with topics and arrival
times), ``--batch-minutes`` (10) of all sites a commit: the daemon commits a
batch at a time too, and the bytes a row do not depend on the batch. Then:

* ``journal B/reading``  the database on disk (file and WAL, after a checkpoint)
                         over the readings in it;
* ``archive``            one archive run over every row (``store/retention.move``:
                         scan, Parquet files per site and month, SHA-256 in the
                         log book, rows deleted, incremental vacuum), its time
                         and the archive's bytes a reading;
* ``replay``             every row read back through ``Journal.after`` (the path of
                         a restore from scratch and of the exporter's replica,
                         JSON decoding included), before the archive (all in the
                         journal) and after it (all in the files), median of
                         ``--repeats`` passes each, in rows/s.

Then one ``ratio:`` line: archive bytes a reading against the journal's, and
replay from the archive against replay from the journal (targets: at most 20
bytes a reading in the archive; replay from the archive at least 1.0 times as
fast). The engine is not run: its decisions do not depend on where a row is
kept (``tests/store/test_archive.py`` proves that), and leaving it out times the
storage alone.

Run: ``.venv/bin/python bench/archive.py`` (about 17 million rows, a few GB of
scratch disk in ``--dir`` or a temporary directory, tens of minutes on a small
machine); ``--sites 4 --days 3`` (``make bench-quick``) for its ratio line in
seconds.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from monitor.config import Config  # noqa: E402
from monitor.config.file import parse_config  # noqa: E402
from monitor.contract.inputs import Reading  # noqa: E402
from monitor.contract.times import MS_PER_MINUTE, parse_iso  # noqa: E402
from monitor.host.rows import journal_in  # noqa: E402
from monitor.store import Store  # noqa: E402
from monitor.store.archive import archive_root  # noqa: E402
from monitor.store.opening import open_store  # noqa: E402
from monitor.store.retention import Cut, db_bytes, move  # noqa: E402

START_MS = parse_iso("2026-04-01T04:00:00Z")  # local midnight in New York
PREFIX = "stormwatch/v1"
SENSORS = ("rg1", "tb-up", "tb-down", "trap1-depth")


def config(sites: int, state_dir: Path) -> Config:
    return parse_config({"state_dir": str(state_dir), "sites": [
        {"id": f"site-{i:03d}", "timezone": "America/New_York", "condition": "B",
         "sensors": [{"id": "rg1", "kind": "rain", "in_per_tip": 0.01},
                     {"id": "tb-up", "kind": "turbidity"},
                     {"id": "tb-down", "kind": "turbidity"},
                     {"id": "trap1-depth", "kind": "sediment"}]}
        for i in range(sites)]}, env={})


class Sites:
    """The readings of every site, a minute at a time: counters that only go up,
    probes that wander, a trap that fills; seeded."""

    def __init__(self, sites: int) -> None:
        self.rng = random.Random(11)
        self.ids = [f"site-{i:03d}" for i in range(sites)]
        self.tips = [0] * sites
        self.ntu = [8.0] * sites
        self.depth_in = [6.0] * sites
        self.seq = [0] * sites

    def minute(self, m: int) -> list[tuple[Reading, str, int]]:
        ts_ms = START_MS + m * MS_PER_MINUTE
        raining = (m // 1440) % 4 == 1 and 600 <= m % 1440 < 780
        out = []
        for i, site in enumerate(self.ids):
            self.seq[i] += 1
            if raining:
                self.tips[i] += self.rng.randint(0, 3)
            self.ntu[i] = max(0.5, self.ntu[i] + self.rng.gauss(0, 0.3))
            self.depth_in[i] = self.depth_in[i] + 0.002 if self.depth_in[i] < 30 else 6.0
            readings = (
                Reading(site, "rg1", "rain", ts_ms, tips_total=self.tips[i], seq=self.seq[i]),
                Reading(site, "tb-up", "turbidity", ts_ms, ntu=round(self.ntu[i], 2)),
                Reading(site, "tb-down", "turbidity", ts_ms,
                        ntu=round(self.ntu[i] + self.rng.random(), 2)),
                Reading(site, "trap1-depth", "sediment", ts_ms,
                        depth_in=round(self.depth_in[i], 2)),
            )
            out += [(r, f"{PREFIX}/{site}/{r.sensor}/reading", ts_ms + 700) for r in readings]
        return out


def fill(store: Store, sites: int, days: float, batch_minutes: int) -> int:
    """Journal the readings; how many."""
    sim = Sites(sites)
    minutes = round(days * 1440)
    total, said = 0, time.monotonic()
    for first in range(0, minutes, batch_minutes):
        batch = [journal_in(r, topic=t, received_ms=at)
                 for m in range(first, min(first + batch_minutes, minutes))
                 for r, t, at in sim.minute(m)]
        store.journal.commit(batch)
        total += len(batch)
        m = first + batch_minutes
        if time.monotonic() - said > 30:
            print(f"  journaled {total:,} readings (day {m / 1440:.1f} of {days:g})",
                  file=sys.stderr, flush=True)
            said = time.monotonic()
    store.db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    return total


def replay_rate(store: Store, repeats: int) -> tuple[float, int]:
    """Median rows/s of reading every row back through ``Journal.after``, and the rows."""
    rates, rows = [], 0
    for _ in range(repeats):
        journal = type(store.journal)(store.db)  # a fresh reader: no merge kept from before
        seq, rows, started = 0, 0, time.perf_counter()
        while batch := journal.after(seq, limit=5000):
            seq = batch[-1].seq
            rows += len(batch)
        rates.append(rows / (time.perf_counter() - started))
    return statistics.median(rates), rows


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    cfg = config(args.sites, work / "state")
    with open_store(cfg) as store:
        print(f"journaling {args.sites} sites x {len(SENSORS)} sensors x {args.days:g} days"
              f" of readings, {args.batch_minutes} minutes a commit ...", file=sys.stderr,
              flush=True)
        started = time.perf_counter()
        rows = fill(store, args.sites, args.days, args.batch_minutes)
        fill_s = time.perf_counter() - started
        journal_b = db_bytes(store.path)
        journal_rate, seen = replay_rate(store, args.repeats)
        assert seen == rows, f"replay read {seen} of {rows} rows"
        end_ms = START_MS + round(args.days * 1440) * MS_PER_MINUTE + 1
        cut = Cut(store.journal.max_seq(), {s: end_ms for s in (*Sites(args.sites).ids, "")})
        moved = move(store, cut, now_ms=end_ms,
                     progress=lambda line: print(f"  {line}", file=sys.stderr, flush=True))
        archive_b = sum(f.stat().st_size for f in archive_root(store.path).rglob("*.parquet"))
        archive_rate, seen = replay_rate(store, args.repeats)
        assert seen == rows, f"replay from the archive read {seen} of {rows} rows"
        left_b = db_bytes(store.path)
    return {"rows": rows, "fill_s": fill_s, "journal_b": journal_b, "archive_b": archive_b,
            "archive_s": moved.seconds, "files": len(moved.files), "left_b": left_b,
            "journal_rate": journal_rate, "archive_rate": archive_rate}


def report(args: argparse.Namespace, r: dict[str, Any]) -> None:
    rows = r["rows"]
    per_j, per_a = r["journal_b"] / rows, r["archive_b"] / rows
    print(f"archive: {args.sites} sites x {args.days:g} days, {rows:,} readings"
          f" (journaled in {r['fill_s']:.0f} s)")
    print(f"  journal   {r['journal_b'] / 1e6:10,.1f} MB  {per_j:7.1f} bytes a reading")
    print(f"  archive   {r['archive_b'] / 1e6:10,.1f} MB  {per_a:7.1f} bytes a reading"
          f"  ({r['files']} files, written in {r['archive_s']:.1f} s:"
          f" {rows / max(r['archive_s'], 1e-9):,.0f} rows/s)")
    print(f"  database after the archive run: {r['left_b'] / 1e6:,.1f} MB")
    print(f"  replay from the journal  {r['journal_rate']:10,.0f} rows/s")
    print(f"  replay from the archive  {r['archive_rate']:10,.0f} rows/s"
          f"  (median of {args.repeats})")
    speed = r["archive_rate"] / r["journal_rate"]
    print(f"ratio: archive/journal bytes a reading {per_a / per_j:.3f} ({per_a:.1f} B, target"
          f" at most 20 B); replay speed archive/journal {speed:.2f} (target at least 1.0);"
          f" a month of {args.sites} sites archived in {r['archive_s']:.0f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sites", type=int, default=100)
    ap.add_argument("--days", type=float, default=30.0)
    ap.add_argument("--batch-minutes", type=int, default=10,
                    help="minutes of readings of all sites per journal commit")
    ap.add_argument("--repeats", type=int, default=3, help="replay passes each way (median)")
    ap.add_argument("--dir", type=Path, help="scratch directory (default: a temporary one)")
    args = ap.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="stormwatch-bench-archive-"))
    try:
        report(args, run(args, work))
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

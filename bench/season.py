#!/usr/bin/env python3
"""Benchmark: a construction season through the daemon's own ingest path.

What runs: ``--sites`` sites (default 100), each with a rain gauge, two
turbidity probes and a sediment probe publishing once a minute, for ``--days``
days of event time (default 180). Storms come from seeded, real-looking
hyetographs (regional storms a few days apart, log-normal depth and duration,
a peaked intensity profile, each site its own share); inspections close most
clocks (a routine one weekly, a storm one the day after for four storms in
five) but a tenth of the sites are never inspected, so their overdue notices
pile up. Every minute's messages go through ``Daemon.ingest_batch``, the
daemon's own path from its MQTT queue on: parse, journal commit, the
acknowledgement (to no broker here: ``bench/ingest.py`` measures the MQTT
side), the engine, events, outbox and log book rows. The daemon's clock is the
simulated one; it ticks every 5 simulated minutes (recording the sites'
status) and snapshots every ``snapshot_every_rows`` (20 000) rows, as it
does live.

What it prints, at day 1, 30, 90 and 180 (and every ``--every`` days):

* ``us/reading``  median over the day's minutes of the time per reading
                  (ticks and snapshots included);
* ``rss MB``      this process's resident memory (the engine, the store's page
                  cache, Python's allocator);
* ``snap MB``     the engine snapshot in the store (head and checkpoint rows);
* ``snap s``      the time of the day's last snapshot (written by a thread of
                  its own in the daemon; here in line, to time it);
* ``restart s``   a fresh process restoring the engine from the store and
                  replaying the journal after the snapshot, as ``stormwatch run``
                  does on start, and ``restart MB`` its resident memory after.

* ``db MB``       the database on disk (file and WAL), and ``archive MB`` the
                  archive directory beside it.

Archiving is on (``archive: {after_days: 30}``, ``--no-archive`` turns it off):
the daemon's archiver (``monitor/daemon/archiver.py``) runs on the simulated
clock every three days, moving rows older than 30 days into Parquet files
and shrinking the database; each run is a child process of its own, as in
the daemon (``Archiver.step``). Here the simulation waits for it between two
minutes and times it on its own (``archive`` lines on stderr); in the daemon
it has a worker thread and no reading waits for it.

Then the ratio of each at the last day measured (180) to its value at the
first point measured on or after ``--base-day`` (30; the lateness window is
full from day 8 on): the target is that all five stay within 20 % (flat),
with a restart under 10 s at the last day. Absolute numbers depend on the
machine; the ratios are what to compare.

Resumable: with ``--dir`` the state directory, the simulation's state (the
sites, the dice, the archiver's next run) and the measurements so far are
kept there after every simulated day (``season-state.json``); run the same
command again and it carries on from the last finished day, restoring the
daemon's engine from its store as ``stormwatch run`` does (``--fresh``
starts over). A lock file (``season.lock``) refuses a second copy on the same
directory.

Run: ``.venv/bin/python bench/season.py --dir DIR`` (the full season takes
hours; ~10 GB of disk with archiving, ~25 GB without); ``--sites 10 --days
40`` for a look, ``--sites 4 --days 16 --every 8 --base-day 8`` (``make
bench-quick``) for its ratio line in half a minute.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import math
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from monitor.config import Config  # noqa: E402
from monitor.config.file import parse_config  # noqa: E402
from monitor.contract.times import MS_PER_MINUTE, parse_iso  # noqa: E402
from monitor.daemon.archiver import Archiver  # noqa: E402
from monitor.daemon.loop import Daemon  # noqa: E402
from monitor.host.engine import EngineHost  # noqa: E402
from monitor.sources.mqtt import Received  # noqa: E402
from monitor.store.archive import archive_root  # noqa: E402
from monitor.store.opening import open_store  # noqa: E402
from monitor.store.retention import db_bytes  # noqa: E402

START_MS = parse_iso("2026-04-01T04:00:00Z")  # local midnight in New York
PREFIX = "stormwatch/v1"
TICK_EVERY_MIN = 5
MEASURE_DAYS = (1, 30, 90, 180)


# --------------------------------------------------------------------------- the site


def config(sites: int, state_dir: Path, archive: bool = True) -> Config:
    site_list = []
    for i in range(sites):
        site_list.append({
            "id": f"site-{i:03d}", "timezone": "America/New_York", "condition": "B",
            "active_since": "2026-04-01",
            "rain": {"mode": "event_total"},
            "sensors": [
                {"id": "rg1", "kind": "rain", "in_per_tip": 0.01},
                {"id": "tb-up", "kind": "turbidity"},
                {"id": "tb-down", "kind": "turbidity"},
                {"id": "trap1-depth", "kind": "sediment"},
            ],
            "turbidity_pairs": [{"id": "outfall-1", "upstream": "tb-up",
                                 "downstream": "tb-down"}],
            "traps": [{"id": "trap-1", "sensor": "trap1-depth", "shape": "trapezoidal",
                       "bottom_length_ft": 20, "bottom_width_ft": 10, "side_slope": 2,
                       "design_depth_ft": 4}],
        })
    data: dict[str, Any] = {"state_dir": str(state_dir), "sites": site_list}
    if archive:
        data["archive"] = {"after_days": 30}
    return parse_config(data, env={})


@dataclass
class Storm:
    """One regional storm: when, how long, how much (the sites' shares vary)."""

    start_min: int
    minutes: int
    depth_in: float

    def intensity(self, m: int) -> float:
        """Share of the depth in minute ``m`` of the storm: a peak a third of the way in
        (the shape of a convective cell more than of a design storm)."""
        x = (m + 0.5) / self.minutes
        peak = 0.35
        return (x / peak if x < peak else (1 - x) / (1 - peak)) * 2 / self.minutes


def storms(days: int, rng: random.Random) -> list[Storm]:
    out = []
    t = rng.expovariate(1 / (3.5 * 1440))
    while t < days * 1440:
        minutes = max(20, int(rng.lognormvariate(math.log(240), 0.8)))
        depth = rng.lognormvariate(math.log(0.35), 0.9)
        out.append(Storm(int(t), minutes, depth))
        t += minutes + rng.expovariate(1 / (3.5 * 1440))
    return out


@dataclass
class SiteSim:
    """One site's sensors over time: its tip counter, probes and trap."""

    sid: str
    share: float
    inspects: bool
    tips: int = 0
    carry: float = 0.0
    depth_in: float = 3.0
    pending_inspection_min: list[int] = field(default_factory=list)


def rain_in(storm_list: list[Storm], minute: int) -> float:
    depth = 0.0
    for s in storm_list:
        if s.start_min <= minute < s.start_min + s.minutes:
            depth += s.depth_in * s.intensity(minute - s.start_min)
    return depth


def minute_messages(sims: list[SiteSim], minute: int, regional_in: float,
                    rng: random.Random) -> list[Received]:
    ts_ms = START_MS + minute * MS_PER_MINUTE
    ts = ts_ms // 1000
    received = ts_ms + 500
    out = []
    for sim in sims:
        sim.carry += regional_in * sim.share
        new = int(sim.carry / 0.01)
        sim.carry -= new * 0.01
        sim.tips += new
        raining = regional_in > 0
        up = 8 + rng.random() * 3 + (regional_in * 400 if raining else 0)
        down = up + (rng.random() * 12 if raining else rng.random())
        sim.depth_in += 0.0004 + (regional_in * 0.6 if raining else 0)
        base = f"{PREFIX}/{sim.sid}"
        out += [
            Received(f"{base}/rg1/reading", f'{{"ts":{ts},"tips_total":{sim.tips}}}'.encode(),
                    0, 0, 0, received),
            Received(f"{base}/tb-up/reading", f'{{"ts":{ts},"ntu":{up:.2f}}}'.encode(),
                    0, 0, 0, received),
            Received(f"{base}/tb-down/reading", f'{{"ts":{ts},"ntu":{down:.2f}}}'.encode(),
                    0, 0, 0, received),
            Received(f"{base}/trap1-depth/reading",
                    f'{{"ts":{ts},"depth_in":{sim.depth_in + rng.random() * 0.2:.2f}}}'.encode(),
                    0, 0, 0, received),
        ]
        if sim.inspects:
            day_min = minute % 1440
            day = minute // 1440
            if day_min == 15 * 60 and day % 7 == 6:
                out.append(_inspection(base, ts, "routine"))
            while sim.pending_inspection_min and sim.pending_inspection_min[0] <= minute:
                sim.pending_inspection_min.pop(0)
                out.append(_inspection(base, ts, "storm"))
        if sim.depth_in > 30 and sim.inspects and rng.random() < 0.001:
            sim.depth_in = 3.0  # cleaned out
    return out


def _inspection(base: str, ts: int, kind: str) -> Received:
    body = json.dumps({"ts": ts, "inspector": "J. Rivera", "kind": kind}).encode()
    return Received(f"{base}/inspection", body, 0, 0, 0, ts * 1000 + 500)


class NoBroker:
    """The acknowledgement goes nowhere: the MQTT side is ``bench/ingest.py``'s."""

    def ack(self, messages: list[Received]) -> int:
        return len(messages)


# --------------------------------------------------------------------------- measuring


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def restart(config_path: Path) -> dict[str, float]:
    """Restore in a fresh process, as ``stormwatch run`` does on start."""
    out = subprocess.run([sys.executable, __file__, "--restore-only", str(config_path)],
                         capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def restore_only(config_path: Path) -> None:
    data = json.loads(config_path.read_text())
    cfg = parse_config(data, env={})
    started = time.perf_counter()
    with open_store(cfg) as store:
        host = EngineHost.restore(cfg, store)
        replayed = host.catch_up(record=False)
    print(json.dumps({"restart_s": time.perf_counter() - started, "replayed": replayed,
                      "rss_mb": rss_mb()}))


STATE_FILE = "season-state.json"
LOCK_FILE = "season.lock"


def dir_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


@dataclass
class Run:
    """What a resumed run needs besides the store: the simulation and the measurements."""

    args: dict[str, Any]
    day: int
    sims: list[SiteSim]
    storm_list: list[Storm]
    rng_state: Any
    rows: list[dict[str, Any]]
    archiver_next_ms: int | None
    archive_runs: list[dict[str, Any]]

    def save(self, path: Path) -> None:
        data = {"args": self.args, "day": self.day,
                "sims": [vars(sim) for sim in self.sims],
                "storms": [vars(st) for st in self.storm_list],
                "rng": [self.rng_state[0], list(self.rng_state[1]), self.rng_state[2]],
                "rows": self.rows, "archiver_next_ms": self.archiver_next_ms,
                "archive_runs": self.archive_runs}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> Run:
        data = json.loads(path.read_text())
        rng = data["rng"]
        return cls(data["args"], data["day"], [SiteSim(**sim) for sim in data["sims"]],
                   [Storm(**st) for st in data["storms"]], (rng[0], tuple(rng[1]), rng[2]),
                   data["rows"], data["archiver_next_ms"], data["archive_runs"])


def new_run(args: argparse.Namespace, cfg: Config) -> tuple[Run, random.Random]:
    rng = random.Random(args.seed)
    storm_list = storms(args.days, rng)
    sims = [SiteSim(s.id, rng.uniform(0.6, 1.4), rng.random() >= 0.1) for s in cfg.sites]
    for storm in storm_list:
        for sim in sims:
            if sim.inspects and rng.random() < 0.8:
                sim.pending_inspection_min.append(storm.start_min + storm.minutes + 20 * 60)
    for sim in sims:
        sim.pending_inspection_min.sort()
    return Run(run_args(args), 0, sims, storm_list, rng.getstate(), [], None, []), rng


def run_args(args: argparse.Namespace) -> dict[str, Any]:
    """The arguments that make a run what it is (a resume must repeat them)."""
    return {"sites": args.sites, "days": args.days, "seed": args.seed,
            "archive": not args.no_archive}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sites", type=int, default=100)
    ap.add_argument("--days", type=int, default=180)
    ap.add_argument("--every", type=int, default=0,
                    help="also measure every N days (default: only days 1, 30, 90, 180)")
    ap.add_argument("--base-day", type=int, default=30,
                    help="the ratios divide the last day measured by the first measured "
                         "on or after this one (default 30)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--dir", type=Path, default=None,
                    help="state directory (default: a temp dir); a run there is resumed")
    ap.add_argument("--fresh", action="store_true", help="start over in --dir")
    ap.add_argument("--no-archive", action="store_true", help="no archiving (the journal grows)")
    ap.add_argument("--keep", action="store_true", help="keep the state directory")
    ap.add_argument("--restore-only", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.restore_only is not None:
        restore_only(args.restore_only)
        return 0

    workdir = args.dir or Path(tempfile.mkdtemp(prefix="stormwatch-season-"))
    workdir.mkdir(parents=True, exist_ok=True)  # a --dir that does not exist yet
    lock = open(workdir / LOCK_FILE, "a+")  # noqa: SIM115 - held until the process ends
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"season: another run holds {workdir / LOCK_FILE}; not starting a second",
              file=sys.stderr)
        return 2
    state = workdir / "state"
    state_file = workdir / STATE_FILE
    cfg = config(args.sites, state, archive=not args.no_archive)
    config_path = workdir / "season.json"
    resumed = state_file.exists() and not args.fresh
    if resumed:
        run = Run.load(state_file)
        if run.args != run_args(args):
            print(f"season: {state_file} is a run with {run.args}; give the same arguments,"
                  " or --fresh", file=sys.stderr)
            return 2
        rng = random.Random()
        rng.setstate(run.rng_state)
    else:
        shutil.rmtree(state, ignore_errors=True)
        state_file.unlink(missing_ok=True)
        run, rng = new_run(args, cfg)
    config_path.write_text(json.dumps(cfg.model_dump(mode="json")))
    measure = set(MEASURE_DAYS) | (set(range(args.every, args.days + 1, args.every))
                                   if args.every else set())
    measure = {d for d in measure if d <= args.days}
    print(f"season: {args.sites} sites x 4 sensors, one reading a minute, {args.days} days"
          f" ({args.sites * 4 * 1440 * args.days:,} readings), {len(run.storm_list)} storms;"
          f" archiving {'off' if args.no_archive else 'on'}; state in {state}"
          + (f"; resumed after day {run.day}" if resumed else ""), file=sys.stderr, flush=True)

    now_ms = START_MS + run.day * 1440 * MS_PER_MINUTE
    daemon = Daemon(cfg, clock=lambda: now_ms / 1000, routes=None, workers=[])
    archiver = Archiver(cfg, clock=lambda: now_ms / 1000) if cfg.archive is not None else None
    if archiver is not None:
        archiver.next_ms = run.archiver_next_ms
    broker = NoBroker()
    sims, storm_list, rows = run.sims, run.storm_list, run.rows
    with open_store(cfg) as store:
        started = time.perf_counter()
        host = EngineHost.restore(cfg, store, clock=lambda: now_ms / 1000)
        if resumed:
            replayed = host.catch_up()
            print(f"resumed: engine restored at journal {host.applied_seq - replayed} and"
                  f" {replayed} row(s) replayed in {time.perf_counter() - started:.1f} s",
                  file=sys.stderr, flush=True)
        every_rows = cfg.daemon.snapshot_every_rows
        for day in range(run.day, args.days):
            per_reading: list[float] = []
            snap_s = 0.0
            day_started = time.perf_counter()
            for m in range(1440):
                minute = day * 1440 + m
                now_ms = START_MS + minute * MS_PER_MINUTE + 30_000
                batch = minute_messages(sims, minute, rain_in(storm_list, minute), rng)
                t0 = time.perf_counter()
                daemon.ingest_batch(store, broker, host, batch)
                if minute % TICK_EVERY_MIN == 0:
                    host.tick()
                if host.rows_since_snapshot >= every_rows:
                    s0 = time.perf_counter()
                    host.snapshot()
                    snap_s = time.perf_counter() - s0
                per_reading.append((time.perf_counter() - t0) / len(batch) * 1e6)
                if archiver is not None and archiver.due(now_ms):
                    run.archive_runs.append(archive_run(archiver, store, day, now_ms))
            if (day + 1) in measure:
                host.snapshot()
                # A restart as after a crash: some rows after the snapshot to replay.
                for m in range(60):
                    now_ms = START_MS + ((day + 1) * 1440 + m) * MS_PER_MINUTE
                    daemon.ingest_batch(store, broker, host, minute_messages(
                        sims, (day + 1) * 1440 + m, 0.0, random.Random(m)))
                back = restart(config_path)
                journal_rows = int(store.db.conn.execute(
                    "SELECT count(*) FROM journal").fetchone()[0])
                row = {"day": day + 1, "us_per_reading": statistics.median(per_reading),
                       "rss_mb": rss_mb(), "snap_mb": store.state.snapshot_size() / 1e6,
                       "snap_s": snap_s, "restart_s": back["restart_s"],
                       "restart_mb": back["rss_mb"], "replayed": back["replayed"],
                       "db_mb": db_bytes(store.path) / 1e6, "journal_rows": journal_rows,
                       "archive_mb": dir_mb(archive_root(store.path)),
                       "resumed": resumed}
                rows.append(row)
                print_row(row)
            print(f"day {day + 1}/{args.days} ({time.perf_counter() - day_started:.1f} s)",
                  file=sys.stderr, flush=True)
            run.day, run.rng_state = day + 1, rng.getstate()
            run.archiver_next_ms = archiver.next_ms if archiver is not None else None
            run.save(state_file)
            resumed = False
        db_mb = db_bytes(store.path) / 1e6
        archive_mb = dir_mb(archive_root(store.path))
        archive_files = len(list(archive_root(store.path).rglob("*.parquet")))
    print(f"database: {db_mb:,.0f} MB; archive {archive_mb:,.0f} MB in {archive_files} file(s);"
          f" {len(run.archive_runs)} archive run(s); peak RSS of this process"
          f" {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3:.0f} MB")
    if run.archive_runs:
        secs = [r["seconds"] for r in run.archive_runs if r["rows"]]
        moved = sum(r["rows"] for r in run.archive_runs)
        size = sum(r["bytes"] for r in run.archive_runs)
        print(f"archive runs: {moved:,} rows moved, {size / max(moved, 1):.1f} bytes a row in"
              f" the archive; median {statistics.median(secs) if secs else 0:.1f} s a run")
    base = next((r for r in rows if r["day"] >= args.base_day), None)
    last = rows[-1] if rows else None
    if base is not None and last is not None and last is not base:
        print(f"\nday {last['day']} / day {base['day']} (target: within 1.2 of each other;"
              f" restart under 10 s):")
        ratios = []
        for key, label in (("us_per_reading", "per-reading cost"), ("rss_mb", "RSS"),
                           ("snap_mb", "snapshot size"), ("restart_s", "restart time"),
                           ("db_mb", "database size")):
            ratio = last[key] / base[key] if base[key] else float("nan")
            ratios.append(f"{label} {ratio:.2f}")
            print(f"  {label:<17} {ratio:5.2f}")
        print(f"ratio: day {last['day']} / day {base['day']} ({args.sites} sites): "
              f"{', '.join(ratios)} (target: within 1.2); restart at day {last['day']} "
              f"{last['restart_s']:.2f} s (target: under 10 s)")
    else:
        print(f"ratio: none (no day measured after day {args.base_day}: see --every, "
              "--base-day)")
    if not args.keep and args.dir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def archive_run(archiver: Archiver, store: Any, day: int, now_ms: int) -> dict[str, Any]:
    """One archive run in line, timed on its own."""
    t0 = time.perf_counter()
    moved = archiver.step(now_ms)
    seconds = time.perf_counter() - t0
    rows = moved.rows if moved is not None else 0
    size = sum(f.bytes for f in moved.files) if moved is not None else 0
    before = moved.db_bytes_before / 1e6 if moved is not None else 0.0
    after = moved.db_bytes_after / 1e6 if moved is not None else 0.0
    print(f"archive on day {day + 1}: {rows:,} rows into"
          f" {len(moved.files) if moved is not None else 0} file(s), {size / 1e6:.1f} MB"
          f" ({size / max(rows, 1):.1f} bytes a row), {seconds:.1f} s; database"
          f" {before:,.0f} -> {after:,.0f} MB"
          + (f" ({moved.no_shrink})" if moved is not None and moved.no_shrink else ""),
          file=sys.stderr, flush=True)
    return {"day": day + 1, "rows": rows, "bytes": size, "seconds": seconds,
            "db_before_mb": before, "db_after_mb": after}


def print_row(row: dict[str, Any]) -> None:
    print(f"day {row['day']:>4}: {row['us_per_reading']:7.1f} us/reading"
          f"  rss {row['rss_mb']:7.1f} MB  snapshot {row['snap_mb']:6.2f} MB"
          f" ({row['snap_s']:.2f} s)  restart {row['restart_s']:5.2f} s"
          f" ({row['restart_mb']:.0f} MB, {row['replayed']} rows replayed)"
          f"  db {row['db_mb']:7.0f} MB ({row['journal_rows']:,} rows)"
          f"  archive {row['archive_mb']:6.0f} MB" + ("  [resumed]" if row["resumed"] else ""),
          flush=True)


if __name__ == "__main__":
    raise SystemExit(main())

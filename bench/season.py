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

Then the ratio of each at the last day measured (180) to its value at the
first point measured on or after ``--base-day`` (30; the lateness window is
full from day 8 on), also as one ``ratio:`` line: the target is that all four
stay within 20 % (flat), with a restart under 10 s at the last day. Absolute
numbers depend on the machine; the ratios are what to compare.

Run: ``.venv/bin/python bench/season.py`` (the full season takes about an
hour and ~25 GB of disk for the journal, in ``--dir``); ``--sites 10 --days
40`` for a look, ``--sites 4 --days 16 --every 8 --base-day 8`` (``make
bench-quick``) for its ratio line in half a minute.
"""

from __future__ import annotations

import argparse
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
from monitor.daemon.loop import Daemon  # noqa: E402
from monitor.host.engine import EngineHost  # noqa: E402
from monitor.sources.mqtt import Received  # noqa: E402
from monitor.store.opening import open_store  # noqa: E402

START_MS = parse_iso("2026-04-01T04:00:00Z")  # local midnight in New York
PREFIX = "stormwatch/v1"
TICK_EVERY_MIN = 5
MEASURE_DAYS = (1, 30, 90, 180)


# --------------------------------------------------------------------------- the site


def config(sites: int, state_dir: Path) -> Config:
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
    return parse_config({"state_dir": str(state_dir), "sites": site_list}, env={})


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
    ap.add_argument("--dir", type=Path, default=None, help="state directory (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the state directory")
    ap.add_argument("--restore-only", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.restore_only is not None:
        restore_only(args.restore_only)
        return 0

    workdir = args.dir or Path(tempfile.mkdtemp(prefix="stormwatch-season-"))
    workdir.mkdir(parents=True, exist_ok=True)  # a --dir that does not exist yet
    state = workdir / "state"
    shutil.rmtree(state, ignore_errors=True)
    cfg = config(args.sites, state)
    config_path = workdir / "season.json"
    config_path.write_text(json.dumps(cfg.model_dump(mode="json")))
    rng = random.Random(args.seed)
    storm_list = storms(args.days, rng)
    sims = [SiteSim(s.id, rng.uniform(0.6, 1.4), rng.random() >= 0.1) for s in cfg.sites]
    for storm in storm_list:
        for sim in sims:
            if sim.inspects and rng.random() < 0.8:
                sim.pending_inspection_min.append(storm.start_min + storm.minutes + 20 * 60)
    for sim in sims:
        sim.pending_inspection_min.sort()
    measure = set(MEASURE_DAYS) | (set(range(args.every, args.days + 1, args.every))
                                   if args.every else set())
    measure = {d for d in measure if d <= args.days}
    print(f"season: {args.sites} sites x 4 sensors, one reading a minute, {args.days} days"
          f" ({args.sites * 4 * 1440 * args.days:,} readings), {len(storm_list)} storms;"
          f" state in {state}", file=sys.stderr)

    now_ms = START_MS
    daemon = Daemon(cfg, clock=lambda: now_ms / 1000, routes=None, workers=[])
    broker = NoBroker()
    rows: list[dict[str, Any]] = []
    with open_store(cfg) as store:
        host = EngineHost.restore(cfg, store, clock=lambda: now_ms / 1000)
        every_rows = cfg.daemon.snapshot_every_rows
        for day in range(args.days):
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
            if (day + 1) in measure:
                host.snapshot()
                # A restart as after a crash: some rows after the snapshot to replay.
                for m in range(60):
                    now_ms = START_MS + ((day + 1) * 1440 + m) * MS_PER_MINUTE
                    daemon.ingest_batch(store, broker, host, minute_messages(
                        sims, (day + 1) * 1440 + m, 0.0, random.Random(m)))
                back = restart(config_path)
                row = {"day": day + 1, "us_per_reading": statistics.median(per_reading),
                       "rss_mb": rss_mb(), "snap_mb": store.state.snapshot_size() / 1e6,
                       "snap_s": snap_s, "restart_s": back["restart_s"],
                       "restart_mb": back["rss_mb"], "replayed": back["replayed"]}
                rows.append(row)
                print(f"day {row['day']:>4}: {row['us_per_reading']:7.1f} us/reading"
                      f"  rss {row['rss_mb']:7.1f} MB  snapshot {row['snap_mb']:6.2f} MB"
                      f" ({row['snap_s']:.2f} s)  restart {row['restart_s']:5.2f} s"
                      f" ({row['restart_mb']:.0f} MB, {row['replayed']} rows replayed)",
                      flush=True)
            print(f"\rday {day + 1}/{args.days} ({time.perf_counter() - day_started:.1f} s)",
                  end="", file=sys.stderr, flush=True)
        print("", file=sys.stderr)
        journal_mb = Path(store.path).stat().st_size / 1e6
    print(f"journal file: {journal_mb:,.0f} MB; peak RSS"
          f" {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3:.0f} MB")
    base = next((r for r in rows if r["day"] >= args.base_day), None)
    last = rows[-1] if rows else None
    if base is not None and last is not None and last is not base:
        print(f"\nday {last['day']} / day {base['day']} (target: within 1.2 of each other;"
              f" restart under 10 s):")
        ratios = []
        for key, label in (("us_per_reading", "per-reading cost"), ("rss_mb", "RSS"),
                           ("snap_mb", "snapshot size"), ("restart_s", "restart time")):
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


if __name__ == "__main__":
    raise SystemExit(main())

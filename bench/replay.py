#!/usr/bin/env python3
"""Benchmark: ``stormwatch replay`` and ``stormwatch backtest`` on a year of ten gauges.

The input is what records look like when exported: ten rain gauges (one per
site, so each gauge's storms are its site's), each publishing its tip counter
every minute for ``--days`` days (default 365: 5.3 million rows), interleaved
in time order, as a replay CSV (``ts,site,sensor,tips_total``, ISO 8601 times).
The series are those of ``bench_replay.py`` (seeded, about 60 storms a year,
one counter reset).

Three things are timed on the same file, each ``--runs`` times (median):

* ``baseline``  what an analyst would write in pandas: read the CSV, parse
                the times, per gauge the counter differences (resets from
                zero) and the rolling 24-hour sum of rain. It answers less
                than the commands do (no events, no validation), so it is
                the floor for "work on every row of this file in Python".
* ``replay``    ``stormwatch replay --format jsonl`` as a process: every row
                validated, every rule of the engine (storms, clocks, sensor
                health), every event printed. Target: within 10x the baseline.
* ``backtest``  ``stormwatch backtest --format jsonl``: the vectorised storm
                rule (``monitor/rules/rain/rain_columns.py``), storms only. Target: within 2x.

Both commands must find the same storm events (ids and ``qualified_at``); the
script says so, and exits 1 if they differ. Ratios are against the baseline
of the same run: compare those, not seconds.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_replay import rain_series  # noqa: E402

IN_PER_TIP = 0.01
CONFIG = """\
state_dir: {state}
sites:
{sites}
"""
SITE = """\
  - id: bench-{n}
    rain: {{threshold_in: 0.5, mode: event_total, dry_gap_hours: 6}}
    sensors: [{{id: rg1, kind: rain, in_per_tip: {in_per_tip}, stale_after_minutes: 60}}]
"""


def write_inputs(workdir: Path, gauges: int, days: int, seed: int) -> tuple[Path, Path]:
    frames = []
    for g in range(gauges):
        series = rain_series(days, seed + g)
        frames.append(pd.DataFrame({"ts_ms": series.ts_ms, "g": g, "site": f"bench-{g + 1}",
                                    "tips_total": series.tips_total}))
    frame = pd.concat(frames).sort_values(["ts_ms", "g"], kind="stable")
    stamps = pd.to_datetime(frame["ts_ms"], unit="ms", utc=True).dt.strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    csv = workdir / "gauges.csv"
    pd.DataFrame({"ts": stamps, "site": frame["site"], "sensor": "rg1",
                  "tips_total": frame["tips_total"]}).to_csv(csv, index=False)
    sites = "".join(SITE.format(n=g + 1, in_per_tip=IN_PER_TIP) for g in range(gauges))
    config = workdir / "bench.yaml"
    config.write_text(CONFIG.format(state=workdir / "state", sites=sites))
    return csv, config


def baseline(csv: Path) -> float:
    """Read, parse times, counter differences per gauge, rolling 24 h per gauge."""
    started = time.perf_counter()
    frame = pd.read_csv(csv)
    frame["ts"] = pd.to_datetime(frame["ts"], utc=True, format="%Y-%m-%dT%H:%M:%SZ")
    total = 0.0
    for _, rows in frame.groupby("site", sort=False):
        tips = rows["tips_total"].to_numpy()
        diff = np.diff(tips, prepend=tips[0])
        diff = np.where(diff < 0, tips, diff) * IN_PER_TIP
        rolling = pd.Series(diff, index=rows["ts"].to_numpy()).rolling("24h").sum()
        total += float(rolling.max())
    if total < 0:
        raise AssertionError("unreachable")
    return time.perf_counter() - started


def command(args: list[str]) -> tuple[float, list[dict[str, object]]]:
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "monitor.cli", *args], capture_output=True,
                         text=True, cwd=ROOT, check=False)
    elapsed = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args[:1])} failed ({out.returncode}): {out.stderr[-2000:]}")
    return elapsed, [json.loads(line) for line in out.stdout.splitlines() if line]


Storm = tuple[object, object, object]


def storms_of_replay(events: list[dict[str, object]]) -> set[Storm]:
    started = {(e["site"], e["event_id"]) for e in events if e["type"] == "storm_started"}
    qualified = {(e["site"], e["event_id"]): e["qualified_at"] for e in events
                 if e["type"] == "storm_qualified"}
    return {(site, eid, qualified.get((site, eid))) for site, eid in started}


def storms_of_backtest(rows: list[dict[str, object]]) -> set[Storm]:
    return {(r["site"], r["event_id"], r["qualified_at"]) for r in rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gauges", type=int, default=10)
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--keep", type=Path, help="keep the CSV and config in this directory")
    args = ap.parse_args()

    workdir = args.keep or Path(tempfile.mkdtemp(prefix="stormwatch-replay-"))
    workdir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    csv, config = write_inputs(workdir, args.gauges, args.days, args.seed)
    rows = args.gauges * args.days * 1440
    print(f"input: {rows:,} rows ({csv.stat().st_size / 1e6:.0f} MB), {args.gauges} gauges x"
          f" {args.days} days, written in {time.perf_counter() - t0:.1f} s", file=sys.stderr)

    times: dict[str, list[float]] = {"baseline": [], "replay": [], "backtest": []}
    found: dict[str, set[Storm]] = {}
    for run in range(args.runs):
        print(f"run {run + 1}/{args.runs}", file=sys.stderr)
        times["baseline"].append(baseline(csv))
        elapsed, events = command(["replay", "--config", str(config), "--input", str(csv),
                                   "--format", "jsonl", "--quiet"])
        times["replay"].append(elapsed)
        found["replay"] = storms_of_replay(events)
        elapsed, storm_rows = command(["backtest", "--config", str(config), "--input",
                                       str(csv), "--format", "jsonl"])
        times["backtest"].append(elapsed)
        found["backtest"] = storms_of_backtest(storm_rows)

    base = statistics.median(times["baseline"])
    print(f"{rows:,} rows; medians of {args.runs} runs (ratio to the baseline of this run)")
    print(f"{'':<10} {'median s':>9} {'x baseline':>11} {'target':>7}   runs (s)")
    ratios = []
    for name, target in (("baseline", None), ("replay", 10.0), ("backtest", 2.0)):
        med = statistics.median(times[name])
        runs = " ".join(f"{t:.2f}" for t in times[name])
        tgt = f"{target:g}x" if target else ""
        print(f"{name:<10} {med:9.2f} {med / base:11.1f} {tgt:>7}   {runs}")
        if target:
            ratios.append(f"{name} {med / base:.1f}x (target {target:g}x)")
    same = found["replay"] == found["backtest"]
    print(f"storm events: replay {len(found['replay'])}, backtest {len(found['backtest'])};"
          f" {'the same ids and qualified_at' if same else 'DIFFERENT'}")
    print(f"ratio: {', '.join(ratios)} the pandas baseline ({rows:,} rows, median of "
          f"{args.runs}){'' if same else '; storm events DIFFERENT'}")
    if args.keep is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: a year of one-minute rain through the streaming fold and the backtest.

Times, on the same synthetic gauge (seeded, mostly dry, about 60 storms):

* ``baseline``   a plain Python loop that only sums the counter depths of the
                 readings: the floor for any code that touches each reading
                 in Python;
* ``streaming``  ``GaugeFold`` through a ``Timeline`` over every reading, as
                 the daemon and ``stormwatch replay`` run it (§ 134-9A(2)
                 storm rule, monitor/README.md, "The rules");
* ``backtest``   ``monitor.engine.rain_columns.storm_events`` over the same readings as
                 a DataFrame;
* ``replay``     optionally, the whole ``stormwatch replay`` command over the
                 series written as a CSV (``--csv FILE --replay CONFIG``).

Each is run ``--runs`` times (default 3) and the median is printed, in
seconds and as a ratio to the baseline of the same run: ratios survive a
slower or busier machine much better than seconds do. The storm counts of all
paths must agree, or the script exits with status 1. See ``bench/README.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from monitor.config import RainRules, SensorConfig
from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_MINUTE, parse_iso
from monitor.engine import Timeline
from monitor.rules.rain.rain import GaugeFold
from monitor.rules.rain.rain_columns import storm_events

SITE = "bench-site"
GAUGE = "rg1"
IN_PER_TIP = 0.01
#: A year in the past: ``stormwatch replay`` refuses rows later than the wall clock of
#: the run (future_timestamp), and a year from now would lose its tail to that.
START_MS = parse_iso("2025-01-01T00:00:00Z")
MODES = ("event_24h", "event_total", "rolling_24h")
DRY_GAP_MINUTES = 6 * 60

T = TypeVar("T")
Mode = Literal["event_24h", "event_total", "rolling_24h"]


# ----------------------------------------------------------------------------- the series


@dataclass(frozen=True)
class Series:
    ts_ms: npt.NDArray[np.int64]
    tips_total: npt.NDArray[np.int64]

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame({"ts": self.ts_ms, "gauge": GAUGE, "tips_total": self.tips_total})

    def readings(self) -> list[Reading]:
        return [Reading(SITE, GAUGE, "rain", ts, tips_total=tips)
                for ts, tips in zip(self.ts_ms.tolist(), self.tips_total.tolist(), strict=True)]


def rain_series(days: int, seed: int, storms_per_year: float = 60.0) -> Series:
    """A gauge counter published every minute for ``days`` days.

    Storms follow each other with at least the 6-hour dry gap plus an
    exponential wait, so about ``storms_per_year`` of them fit in a year; each
    lasts a log-normal time (median 5 h) and drops a log-normal depth (median
    0.35 in, so roughly a third reach 0.5 in), its tips bunched towards the
    first half (a Beta(2, 3) profile). A long storm with few tips can still
    split into two events, as real drizzle does. Halfway through, the node is
    reflashed during a dry minute and its counter restarts from 0.
    """
    rng = np.random.default_rng(seed)
    minutes = days * 24 * 60
    tips = np.zeros(minutes, dtype=np.int64)
    median_minutes, sigma = 300.0, 0.7
    mean_minutes = median_minutes * float(np.exp(sigma**2 / 2))
    wait = max(60.0, minutes / (storms_per_year * days / 365) - mean_minutes - DRY_GAP_MINUTES)
    start = float(rng.exponential(wait))
    while True:
        duration = float(np.clip(rng.lognormal(np.log(median_minutes), sigma), 20, 48 * 60))
        if start + duration >= minutes:
            break
        depth_in = float(np.clip(rng.lognormal(np.log(0.35), 0.9), IN_PER_TIP, 4.0))
        offsets = rng.beta(2.0, 3.0, max(1, round(depth_in / IN_PER_TIP))) * duration
        np.add.at(tips, (start + offsets).astype(np.int64), 1)
        start += duration + DRY_GAP_MINUTES + float(rng.exponential(wait))
    counter = 1000 + np.cumsum(tips)
    dry = np.flatnonzero(tips[minutes // 2:] == 0)
    if dry.size:
        reset = minutes // 2 + int(dry[0])
        counter[reset:] = np.cumsum(tips[reset:])
    ts = START_MS + np.arange(minutes, dtype=np.int64) * MS_PER_MINUTE
    return Series(ts, counter.astype(np.int64))


def write_replay_csv(series: Series, path: Path) -> None:
    """The series as ``stormwatch replay`` input: ``ts,site,sensor,tips_total``."""
    stamps = pd.to_datetime(series.ts_ms, unit="ms", utc=True).strftime("%Y-%m-%dT%H:%M:%SZ")
    pd.DataFrame({"ts": stamps, "site": SITE, "sensor": GAUGE,
                  "tips_total": series.tips_total}).to_csv(path, index=False)


# ----------------------------------------------------------------------------- the contenders

#: A storm as compared across paths: (event id, qualified_at in ms or None).
Storm = tuple[str, int | None]


def baseline(readings: list[Reading]) -> float:
    """Sum the depths of the readings (counter differences, resets counted from zero)."""
    total = 0
    previous: int | None = None
    for reading in readings:
        tips = cast(int, reading.tips_total)
        if previous is not None:
            total += tips - previous if tips >= previous else tips
        previous = tips
    return total * IN_PER_TIP


def streaming(readings: list[Reading], rules: RainRules, now_ms: int) -> list[Storm]:
    """The daemon's path: every reading through ``Timeline(GaugeFold)``."""
    tl: Timeline[Any] = Timeline(GaugeFold(
        SITE, GAUGE, rules, [SensorConfig(id=GAUGE, kind="rain", in_per_tip=IN_PER_TIP)]))
    for reading in readings:
        tl.insert(reading)
    tl.advance_to(now_ms)
    qualified = {f.fields["event_id"]: f.at_ms for f in tl.facts()
                 if f.type == "_gauge_qualified"}
    return sorted((f.fields["event_id"], qualified.get(f.fields["event_id"]))
                  for f in tl.facts() if f.type == "storm_started")


def backtest(frame: pd.DataFrame, rules: RainRules, now_ms: int) -> list[Storm]:
    """The vectorised path over the whole frame."""
    events = storm_events(frame, rules, {GAUGE: IN_PER_TIP}, now=now_ms)
    epoch, ms = pd.Timestamp(0, tz="UTC"), pd.Timedelta(1, unit="ms")
    return sorted((str(eid), None if pd.isna(q) else int((q - epoch) // ms))
                  for eid, q in zip(events["event_id"], events["qualified_at"], strict=True))


def replay(command: list[str]) -> int:
    """The whole CLI; returns the number of ``storm_started`` events it printed."""
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return sum(1 for line in done.stdout.splitlines()
               if line.strip() and json.loads(line).get("type") == "storm_started")


# ----------------------------------------------------------------------------- timing


@dataclass
class Timing:
    name: str
    seconds: list[float]
    storms: int | None

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def timed(name: str, runs: int, work: Callable[[], T]) -> tuple[Timing, T]:
    """Run ``work`` ``runs`` times; the result of the last run is returned with the timing."""
    seconds: list[float] = []
    result: T | None = None
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        result = work()
        seconds.append(time.perf_counter() - start)
    return Timing(name, seconds, None), cast(T, result)


def report(timings: list[Timing], base: Timing) -> None:
    print(f"{'':22}{'median s':>9} {'x baseline':>11} {'storms':>7}   runs (s)")
    for t in timings:
        runs = " ".join(f"{s:.3f}" for s in t.seconds)
        storms = "-" if t.storms is None else str(t.storms)
        print(f"{t.name:22}{t.median:>9.3f} {t.median / base.median:>11.1f} {storms:>7}   {runs}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mode", choices=[*MODES, "all"], default="event_24h")
    parser.add_argument("--csv", type=Path, help="also write the series as a replay CSV here")
    parser.add_argument("--replay", type=Path, metavar="CONFIG",
                        help="also time `stormwatch replay --config CONFIG --input CSV` "
                             "(needs --csv; CONFIG defines site bench-site with rain sensor rg1)")
    args = parser.parse_args(argv)
    if args.replay is not None and args.csv is None:
        parser.error("--replay needs --csv")

    series = rain_series(args.days, args.seed)
    frame = series.frame()
    start = time.perf_counter()
    readings = series.readings()
    build_s = time.perf_counter() - start
    now_ms = int(series.ts_ms[-1])
    print(f"series: {len(readings):,} one-minute counter readings of one gauge over "
          f"{args.days} days, seed {args.seed}, median of {args.runs} runs; building the "
          f"Reading objects took {build_s:.2f} s (not timed below)")
    if args.csv is not None:
        write_replay_csv(series, args.csv)
        print(f"wrote {args.csv} (ts,site,sensor,tips_total; site {SITE}, sensor {GAUGE})")

    base, depth_in = timed("baseline (sum depths)", args.runs, partial(baseline, readings))
    counts: set[int] = set()
    agree = True
    ratios: list[str] = []
    for mode in MODES if args.mode == "all" else (args.mode,):
        rules = RainRules(mode=cast(Mode, mode))
        slow, slow_storms = timed("streaming fold", args.runs,
                                  partial(streaming, readings, rules, now_ms))
        fast, fast_storms = timed("vectorised backtest", args.runs,
                                  partial(backtest, frame, rules, now_ms))
        slow.storms, fast.storms = len(slow_storms), len(fast_storms)
        counts |= {slow.storms, fast.storms}
        agree = agree and slow_storms == fast_storms
        qualified = sum(q is not None for _, q in fast_storms)
        same = ("agree on every event id and qualified_at" if slow_storms == fast_storms
                else "DISAGREE")
        print(f"\nmode {mode}: {depth_in:.2f} in of rain, {fast.storms} storm events, "
              f"{qualified} qualified; streaming and backtest {same}")
        report([base, slow, fast], base)
        ratios.append(f"{mode}: streaming fold {slow.median / base.median:.1f}x, vectorised "
                      f"backtest {fast.median / base.median:.1f}x")

    if args.replay is not None:
        exe = shutil.which("stormwatch") or str(Path(sys.executable).parent / "stormwatch")
        command = [exe, "replay", "--config", str(args.replay), "--input", str(args.csv),
                   "--format", "jsonl"]
        cli, cli_storms = timed("stormwatch replay", args.runs, partial(replay, command))
        cli.storms = cli_storms
        counts.add(cli_storms)
        print(f"\n{' '.join(command[1:])} (rules from the config; storm events depend only "
              f"on its dry gap)")
        report([base, cli], base)
        ratios.append(f"stormwatch replay {cli.median / base.median:.1f}x")

    for ratio in ratios:
        print(f"ratio: {ratio} the baseline loop ({len(readings):,} readings, median of "
              f"{args.runs})")
    if not agree or len(counts) != 1:
        print(f"storm events differ between the paths: counts {sorted(counts)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

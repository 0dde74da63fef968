#!/usr/bin/env python3
"""Run every benchmark of ``bench/``, one after the other; ``make bench`` and ``make bench-quick``.

Each script runs as its own process (``PYTHONPATH`` this checkout, so it
measures this code), its output shown as it comes. Every script ends with
one or more lines that start ``ratio:``, its results as ratios against a
baseline measured in the same run; when all have run, those lines are
printed again together, one block per script, so a whole run is read in one
screen. ``BENCHMARKS`` below is the list, with the arguments of each run:

* the full run (``make bench``) uses the parameters of the "Performance"
  table of ``bench/README.md``, so it reproduces that table (about 40
  minutes on the 2-core machine, season.py the most of it);
* ``--quick`` (``make bench-quick``) a small version of each, a few seconds
  to a minute apiece (about 2 minutes in all): the same code paths and the
  same ratio lines on less data and fewer runs, to see that every benchmark
  works and roughly where it stands. Its ratios are noisier; quote the full
  run's.

A script that fails (exit status not 0: a wrong result, a drain that never
finished) does not stop the others; the run ends with status 1 and names
it. No script fails on a time.

    .venv/bin/python bench/run.py                 # = make bench
    .venv/bin/python bench/run.py --quick         # = make bench-quick
    .venv/bin/python bench/run.py --quick hostile.py latency.py
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent

RATIO_PREFIX = "ratio:"


@dataclass(frozen=True)
class Benchmark:
    script: str
    full: tuple[str, ...]
    quick: tuple[str, ...]


BENCHMARKS = (
    Benchmark("archive.py", full=(), quick=("--sites", "4", "--days", "3", "--repeats", "1")),
    Benchmark("bench_replay.py", full=(), quick=("--runs", "1")),
    Benchmark("hostile.py", full=(), quick=("--runs", "1", "--batches", "50",
                                            "--old-max", "10000")),
    Benchmark("replay.py", full=(), quick=("--days", "30", "--runs", "1")),
    Benchmark("ingest.py", full=(), quick=("--readings", "20000", "--sites", "20",
                                           "--trials", "1")),
    Benchmark("latency.py", full=(), quick=("--trials", "10")),
    Benchmark("season.py", full=("--sites", "25", "--days", "180", "--every", "30"),
              quick=("--sites", "4", "--days", "16", "--every", "8", "--base-day", "8")),
    Benchmark("web.py", full=(), quick=("--sites", "10", "--weeks", "4", "--requests", "20",
                                        "--photos", "2")),
)


@dataclass
class Outcome:
    benchmark: Benchmark
    args: tuple[str, ...]
    returncode: int
    seconds: float
    ratios: list[str]


def run(benchmark: Benchmark, quick: bool) -> Outcome:
    args = benchmark.quick if quick else benchmark.full
    command = [sys.executable, str(BENCH / benchmark.script), *args]
    print(f"\n==== bench/{benchmark.script} {' '.join(args)}".rstrip(), flush=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    started = time.monotonic()
    ratios: list[str] = []
    with subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True,
                          bufsize=1) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            print(line, end="", flush=True)
            if line.startswith(RATIO_PREFIX):
                ratios.append(line[len(RATIO_PREFIX):].strip())
    return Outcome(benchmark, args, proc.returncode, time.monotonic() - started, ratios)


def summary(outcomes: list[Outcome], quick: bool) -> list[str]:
    lines = [f"==== ratios ({'bench-quick' if quick else 'bench'}; against baselines run in "
             "the same session, see bench/README.md)"]
    for o in outcomes:
        status = "" if o.returncode == 0 else f"; FAILED, exit {o.returncode}"
        lines.append(f"bench/{o.benchmark.script} {' '.join(o.args)}".rstrip()
                     + f" ({o.seconds:.0f} s{status})")
        lines += [f"  {ratio}" for ratio in o.ratios] or ["  (no ratio line)"]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="a short version of each benchmark (make bench-quick)")
    parser.add_argument("scripts", nargs="*", metavar="SCRIPT",
                        help="only these (e.g. hostile.py); default every benchmark")
    args = parser.parse_args(argv)
    known = {b.script: b for b in BENCHMARKS}
    unknown = [s for s in args.scripts if s not in known]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)}; known: {', '.join(known)}")
    chosen = [known[s] for s in args.scripts] if args.scripts else list(BENCHMARKS)
    outcomes = []
    try:
        for benchmark in chosen:
            outcomes.append(run(benchmark, args.quick))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    print("\n" + "\n".join(summary(outcomes, args.quick)))
    failed = [o.benchmark.script for o in outcomes if o.returncode != 0]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

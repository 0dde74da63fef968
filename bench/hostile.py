#!/usr/bin/env python3
"""Benchmark the costs of the defences against hostile input.

Two measurements, each as a ratio against a baseline run in the same session
(the machine is shared; absolute seconds do not carry over):

1. **Log redaction** (``monitor.logs.redact``) of a line holding an
   N-character topic of letters, the input that made the original regular
   expression quadratic, against that original expression (kept below as
   ``old_redact``). The original is timed only up to ``--old-max`` characters
   (it takes seconds beyond); the new one up to 60 000.
2. **Journal commits** (``Journal.commit``, ``synchronous=FULL`` on a real
   file) of batches of 1000 readings from 1000 sensors: readings that carry
   ``seq`` (so each batch is also looked up by (seq, site, sensor) and the
   ``journal_msg_seq`` index grows) against the same readings without
   ``seq`` (the baseline: identity by content only). Two numbering styles:
   ``bench`` (every sensor counts from 1, as ``bench/ingest.py`` publishes)
   and ``node`` (each sensor starts at its first boot's clock in ms × 1000,
   as ``sensors/node.py`` does, every sensor with its own boot spread over a
   year: the worst case, as each sensor's entries then sit on an index page
   of their own, and a batch touches one page per sensor).

    .venv/bin/python bench/hostile.py
    .venv/bin/python bench/hostile.py --batches 100 --runs 5
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from monitor.contract.inputs import Reading  # noqa: E402
from monitor.logs import redact  # noqa: E402
from monitor.store import JournalIn, Store  # noqa: E402

_OLD = [
    re.compile(r"(?P<pre>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]+:)(?P<secret>[^@\s]+)(?P<post>@)"),
    re.compile(r"(?P<pre>[?&](?:token|password|pass|key|secret|apikey)=)(?P<secret>[^&\s]+)"
               r"(?P<post>)", re.IGNORECASE),
]


def old_redact(text: str) -> str:
    """``redact`` as it was before its rewrite: quadratic on a long run of letters."""
    for pattern in _OLD:
        text = pattern.sub(lambda m: f"{m.group('pre')}***{m.group('post')}", text)
    return text


def timed(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bench_redact(runs: int, old_max: int) -> None:
    print("log redaction of a line with an N-character topic of letters (median s)")
    print(f"{'N':>8} {'old regex':>12} {'new':>12} {'old/new':>9}")
    ratio = ""
    for n in (1_000, 5_000, 10_000, 20_000, 60_000):
        line = (f"2026-05-01 12:00:00 WARNING stormwatch.daemon: rejected message on "
                f"stormwatch/v1/{'a' * n}/rg1/reading: bad_topic (topic: site id is invalid)")
        new = timed(lambda: redact(line), runs)  # noqa: B023 - timed at once
        if n <= old_max:
            old = timed(lambda: old_redact(line), runs)  # noqa: B023
            print(f"{n:>8} {old:>12.6f} {new:>12.6f} {old / new:>9.0f}")
            ratio = f"the old pattern {old / new:,.0f}x the new at {n:,} characters"
        else:
            print(f"{n:>8} {'(skipped)':>12} {new:>12.6f} {'':>9}")
    print(f"ratio: log redaction: {ratio or 'the old pattern not timed (--old-max)'}")


def readings(style: str, batches: int, sensors: int, with_seq: bool) -> list[list[JournalIn]]:
    rng = random.Random(7)
    boot = [1_735_689_600_000 + rng.randrange(365 * 86_400_000) for _ in range(sensors)]
    out = []
    t0 = 1_777_636_800_000
    for b in range(batches):
        batch = []
        for s in range(sensors):
            ts = t0 + b * 60_000 + s
            seq = (b + 1 if style == "bench" else boot[s] * 1000 + b) if with_seq else None
            site, sensor = f"site-{s // 10:03d}", f"tb{s % 10}"
            r = Reading(site=site, sensor=sensor, kind="turbidity", ts_ms=ts,
                        ntu=round(rng.uniform(5, 9), 2), seq=seq)
            batch.append(JournalIn("reading", site, sensor, ts, r.to_json(),
                                   f"stormwatch/v1/{site}/{sensor}/reading", ts + 5))
        out.append(batch)
    return out


def commit_all(batches: list[list[JournalIn]]) -> float:
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "stormwatch.db") as store:
        started = time.perf_counter()
        for batch in batches:
            store.journal.commit(batch)
        return time.perf_counter() - started


def bench_journal(runs: int, batches: int, sensors: int) -> None:
    total = batches * sensors
    print(f"\njournal commits: {batches} batches x {sensors} readings from {sensors} sensors,"
          " synchronous=FULL (median s)")
    print(f"{'seq style':>10} {'no seq':>9} {'with seq':>9} {'ratio':>7} {'us/reading':>11}")
    ratios = []
    for style in ("bench", "node"):
        base = statistics.median(commit_all(readings(style, batches, sensors, False))
                                 for _ in range(runs))
        with_seq = statistics.median(commit_all(readings(style, batches, sensors, True))
                                     for _ in range(runs))
        print(f"{style:>10} {base:>9.2f} {with_seq:>9.2f} {with_seq / base:>7.2f}"
              f" {with_seq / total * 1e6:>11.1f}")
        ratios.append(f"{style} {with_seq / base:.2f}")
    print(f"ratio: journal commits with seq / without ({batches} batches x {sensors} "
          f"readings): {', '.join(ratios)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--old-max", type=int, default=20_000,
                        help="longest topic to time the old regex on (default 20000)")
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--sensors", type=int, default=1000)
    args = parser.parse_args()
    bench_redact(args.runs, args.old_max)
    bench_journal(args.runs, args.batches, args.sensors)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

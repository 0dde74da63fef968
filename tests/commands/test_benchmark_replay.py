"""The dewatering turbidity benchmark through ``stormwatch replay``: a CSV of a probe's
``ntu`` readings gives the same ``turbidity_benchmark_exceeded`` as the engine fed the
same readings (EPA CGP 2022 Part 3.3.1; monitor/README.md, "Dewatering turbidity
benchmark"). The rule's own cases are in ``tests/rules/test_benchmark.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from monitor.config.file import load_config
from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_DAY, MS_PER_HOUR, iso, parse_iso
from monitor.engine import Engine

from ..support.daemonkit import cli
from ..support.smallsite import write_config
from ..support.util import SITE

#: A site under EPA's permit with a probe on its dewatering discharge.
DEWATERING = """\
state_dir: {state}
sites:
  - id: {site}
    timezone: America/New_York
    permits: [{{profile: epa-cgp-2022, dewatering: [tb-dw]}}]
    sensors:
      - {{id: rg1, kind: rain, in_per_tip: 0.01}}
      - {{id: tb-dw, kind: turbidity}}
"""
#: Monday 2026-05-04 00:00 in New York, the site's zone.
MONDAY = parse_iso("2026-05-04T00:00:00-04:00")
#: A reading at 10:00 local each day, 50 + 5 d NTU: (50 + 55 + ... + 80) / 7 = 65 NTU;
#: then one of the next Monday, so replay's time passes the week's end.
READINGS = [(MONDAY + d * MS_PER_DAY + 10 * MS_PER_HOUR, 50.0 + 5 * d) for d in range(7)] + [
    (MONDAY + 7 * MS_PER_DAY + MS_PER_HOUR, 12.0)]


def test_replay_gives_the_engines_benchmark_event(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, DEWATERING.format(state=tmp_path / "state", site=SITE))
    data = tmp_path / "rows.csv"
    data.write_text("ts,site,sensor,tips_total,ntu\n" + "".join(
        f"{iso(at)},{SITE},tb-dw,,{ntu}\n" for at, ntu in READINGS))
    proc = cli("replay", "--config", str(cfg), "--input", str(data), "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    replayed = [json.loads(line) for line in proc.stdout.splitlines()]
    found = [e for e in replayed if e["type"] == "turbidity_benchmark_exceeded"]
    assert [(e["week_from"], e["week_to"], e["mean_ntu"], e["samples"], e["permit"])
            for e in found] == [("2026-05-04T04:00:00Z", "2026-05-11T04:00:00Z", 65.0, 7,
                                 "epa-cgp-2022")]

    eng = Engine(load_config(cfg))
    for at, ntu in READINGS:
        eng.apply(Reading(SITE, "tb-dw", "turbidity", at, ntu=ntu))
    eng.tick(READINGS[-1][0])
    direct = [e.to_json() for e in eng.current_events()
              if e.type == "turbidity_benchmark_exceeded"]
    assert [_plain(e) for e in found] == [_plain(e) for e in direct]


def _plain(event: dict[str, Any]) -> dict[str, Any]:
    """The event without its revision (a count of changes, not of the rule)."""
    return {k: v for k, v in event.items() if k != "revision"}

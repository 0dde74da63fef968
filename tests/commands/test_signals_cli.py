"""Odd signals as a user meets them through ``replay`` and ``backtest`` (issue 28):
a rain logger that reboots near its counter's maximum, and a trap being cleaned out."""

from __future__ import annotations

import json
from pathlib import Path

from monitor.contract.times import MS_PER_MINUTE, iso, parse_iso

from ..support.daemonkit import cli
from .test_cli import SMALL, write_config

T0 = parse_iso("2026-05-01T12:00:00Z")


def test_a_logger_rebooting_near_its_maximum_is_no_storm_in_replay_or_backtest(
        tmp_path: Path) -> None:
    # rg1 every ten minutes from 12:00 UTC: 65 300 six times, 0 from 13:00 (the logger
    # rebooted), then 3, 8 and 12 at 13:30..13:50 and dry. Read as a 16-bit wrap, 13:00
    # would be 65 536 - 65 300 = 236 tips, 2.36 in in ten minutes: more than 4.0 in/h x
    # 1/6 h = 0.667 in, so it is a reset counting 0. The storm is 3 + 5 + 4 = 12 tips
    # (0.12 in, 13:30..13:50), not a qualifying 2.48 in one from 13:00.
    config = write_config(tmp_path, SMALL.format(state=tmp_path / "state"))
    totals = [65_300] * 6 + [0] * 3 + [3, 8, 12] + [12] * 40
    rows = [f"{iso(T0 + 10 * i * MS_PER_MINUTE)},branch-meadows,rg1,{total}"
            for i, total in enumerate(totals)]
    data = tmp_path / "rain.csv"
    data.write_text("\n".join(["ts,site,sensor,tips_total", *rows]) + "\n")
    args = ("--config", str(config), "--input", str(data))

    replay = cli("replay", *args)
    assert replay.returncode == 0, replay.stderr
    events = [e for e in map(json.loads, replay.stdout.splitlines())
              if e["type"] in ("counter_reset", "storm_started", "storm_qualified", "storm_ended")]
    assert [(e["type"], e["at"]) for e in events] == [
        ("counter_reset", "2026-05-01T13:00:00Z"), ("storm_started", "2026-05-01T13:30:00Z"),
        ("storm_ended", "2026-05-01T13:50:00Z")]
    assert (events[0]["tips_before"], events[0]["tips_after"]) == (65_300, 0)
    assert (events[2]["total_in"], events[2]["qualified"]) == (0.12, False)

    backtest = cli("backtest", *args)
    assert backtest.returncode == 0, backtest.stderr
    storms = [json.loads(line) for line in backtest.stdout.splitlines()]
    assert [(s["started_at"], s["ended_at"], s["total_in"], s["qualified"]) for s in storms] \
        == [("2026-05-01T13:30:00Z", "2026-05-01T13:50:00Z", 0.12, False)]

"""Odd signals as a user meets them through ``replay`` and ``backtest``:
a rain logger that reboots near its counter's maximum, and a trap being cleaned out."""

from __future__ import annotations

import json
from pathlib import Path

from monitor.contract.times import MS_PER_MINUTE, iso, parse_iso

from ..support.daemonkit import cli
from ..support.smallsite import SMALL, write_config
from ..support.trapkit import LASER_CM

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


def trap_site(tmp_path: Path) -> Path:
    """One site with the 10 x 10 x 4 ft box and its range finder 60 in above the bottom
    (a JSON document is YAML too)."""
    site = {"id": "branch-meadows", "timezone": "America/New_York", "condition": "B",
            "sensors": [{"id": "rg1", "kind": "rain"},
                        {"id": "box-depth", "kind": "sediment", "sensor_height_in": 60}],
            "traps": [{"id": "box", "sensor": "box-depth", "shape": "rectangular",
                       "bottom_length_ft": 10, "bottom_width_ft": 10, "design_depth_ft": 4}]}
    return write_config(tmp_path, json.dumps({"state_dir": str(tmp_path / "state"),
                                              "sites": [site]}))


def test_replay_of_a_laser_cleanout_demands_nothing_while_it_goes_on(tmp_path: Path) -> None:
    # The range finder of tests/support/trapkit.py (whole centimetres every 10 min from
    # 12:00 UTC, 60 in above a 10 x 10 x 4 ft box, fill = (152.4 - cm) / 121.92). Full
    # at 0.7415 from 12:40 (both thresholds);
    # the clean-out record at 15:30 (0.52, 0.2215 below), the median held 89 cm for three
    # readings (once the end of it: a new demand at 15:40); settled at 17:40 at 105 cm,
    # 47.4 / 121.92 = 0.3888, below both thresholds: nothing more.
    config = trap_site(tmp_path)
    rows = [f"{iso(T0 + 10 * i * MS_PER_MINUTE)},branch-meadows,box-depth,{cm / 2.54:.4f}"
            for i, cm in enumerate(LASER_CM)]
    data = tmp_path / "laser.csv"
    data.write_text("\n".join(["ts,site,sensor,distance_in", *rows]) + "\n")

    replay = cli("replay", "--config", str(config), "--input", str(data))
    assert replay.returncode == 0, replay.stderr
    traps = [e for e in map(json.loads, replay.stdout.splitlines()) if e["type"].startswith("trap")]
    assert [(e["type"], e["at"]) for e in traps] == [
        ("trap_fill", "2026-05-01T12:40:00Z"), ("trap_cleanout_required", "2026-05-01T12:40:00Z"),
        ("trap_cleaned", "2026-05-01T15:30:00Z")]
    assert (traps[2]["fill_before"], traps[2]["fill_after"]) == (0.7415, 0.3888)

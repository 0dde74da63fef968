"""Per-tip logger exports on the node: its ``csv`` driver drops double tips
(``sensors/drivers/csvfile.py``, the rain sensor's ``debounce_s``), and the node runtime
turns the kept ones into its persistent tips counter (monitor/README.md, "The rules").

Replay's side of the same rule, and the test that holds the two copies of it together,
are in ``tests/views/test_per_tip.py``.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from monitor.contract.times import iso
from sensors.config import CsvSensor
from sensors.drivers.csvfile import CsvReplay

from ..support.nodekit import Clock
from ..support.noderig import Site
from ..support.pertip import MIN, T0, bouncing_storm, card


def test_the_csv_driver_drops_double_tips_and_logs_them(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="sensors.drivers.csvfile")
    path = card(tmp_path, bouncing_storm())
    config = CsvSensor.model_validate({"id": "rg1", "kind": "rain", "driver": "csv",
                                       "file": str(path), "speed": "max"})
    driver = CsvReplay(config, "rg1", Clock(wall_s=0).monotonic)
    samples = driver.read()
    assert len(samples) == 52
    assert sum(s.tips or 0 for s in samples) == 46
    assert sum(s.discarded for s in samples) == 6
    doubles = [s.ts_ms for s in samples if s.discarded]
    assert doubles == [T0 + k * 2 * MIN + 1000 for k in (0, 5, 10, 15, 20, 25)]
    assert [r.getMessage() for r in caplog.records] == [
        "rg1: 6 double tip(s) dropped, each 1 s or less after the tip before (debounce_s);"
        " 6 since start"]


def test_the_node_turns_per_tip_rows_into_its_tips_total(tmp_path: Path) -> None:
    """Through the node runtime: the kept tips become its persistent counter; a double
    tip written after a restart of the node is still one (the last counted tip's time
    is part of the driver's committed state)."""
    path = card(tmp_path, [T0, T0 + 1000, T0 + 2 * MIN])
    gauge = {"id": "rg1", "kind": "rain", "driver": "csv", "file": str(path), "speed": "max"}
    site = Site(tmp_path, [gauge], wall_s=(T0 + 10 * MIN) / 1000)
    site.node.step()
    before = [site.check(t, p) for t, p in site.link.readings()]
    site.restart()
    with path.open("a", encoding="utf-8") as f:  # the logger writes on meanwhile
        f.write(f"{iso(T0 + 2 * MIN + 1000)},1\n{iso(T0 + 4 * MIN)},1\n")
    site.clock.advance(61)  # the driver looks for appended rows once a minute
    site.node.step()
    after = [site.check(t, p) for t, p in site.link.readings()]
    # (Unconfirmed readings are sent again after the restart: the same ones.)
    assert sorted({(r.ts_ms, r.tips_total) for r in before + after}) == [
        (T0, 1), (T0 + 2 * MIN, 2), (T0 + 4 * MIN, 3)]
    assert site.node.status_fields()["rg1"]["discarded"] == 2

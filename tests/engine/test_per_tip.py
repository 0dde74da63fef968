"""Per-tip logger exports, and their double tips (monitor/README.md, "The rules").

A public per-tip record holds 4-14 % of tips written 1 s after the tip before
(the bucket bouncing); counted, they make storms qualify that did not. Both
readers of such a file drop them: ``replay`` (``monitor/pertip.py``) and the
node's ``csv`` driver (``sensors/drivers/csvfile.py``), with the rain sensor's
``debounce_s`` [1.0], counting what they drop. The two sides have their own
copy of the rule (``sensors/`` imports nothing of ``monitor/``): a test holds
them together.
"""

from __future__ import annotations

import json
import logging
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from monitor.config.file import parse_config
from monitor.contract.times import MS_PER_MINUTE, iso, parse_iso
from monitor.sources.pertip import is_double_tip as replay_rule
from monitor.views.replay import replay
from sensors.config import CsvSensor
from sensors.counter import is_double_tip as node_rule
from sensors.drivers.csvfile import CsvReplay

from ..sensors.test_node_runtime import Site
from ..support.nodekit import Clock

ROOT = Path(__file__).resolve().parents[2]
SITE = "branch-meadows"
T0 = parse_iso("2026-05-01T12:00:00Z")
MIN = MS_PER_MINUTE


def doc(**gauge: Any) -> dict[str, Any]:
    return {"state_dir": "/tmp/stormwatch-test", "sites": [{
        "id": SITE, "timezone": "UTC", "condition": "B",
        "sensors": [{"id": "rg1", "kind": "rain", "in_per_tip": 0.01,
                     "reporting": "on_tip", **gauge},
                    {"id": "tb-up", "kind": "turbidity"}]}]}


def bouncing_storm() -> list[int]:
    """45 tips (0.45 in) 2 minutes apart from 12:00; the 1st, 6th, 11th ... 26th (6 of
    them) each followed 1 s later by a double tip; one more tip 2 s after the last."""
    tips = []
    for k in range(45):
        t = T0 + k * 2 * MIN
        tips.append(t)
        if k % 5 == 0 and k <= 25:
            tips.append(t + 1000)
    tips.append(T0 + 44 * 2 * MIN + 2000)  # 2 s: a real tip (46 in all)
    return tips


def per_tip_csv(path: Path, tips: list[int], *, column: bool = True) -> Path:
    """A replay file of the tips and a turbidity row: with a ``tips`` column of 1, or
    with no rain column at all (each rain row is a tip)."""
    if column:
        rows = ["ts,site,sensor,tips,ntu"] + [f"{iso(t)},{SITE},rg1,1," for t in tips]
        rows.append(f"{iso(T0)},{SITE},tb-up,,3.5")
    else:
        rows = ["ts,site,sensor,ntu"] + [f"{iso(t)},{SITE},rg1," for t in tips]
        rows.append(f"{iso(T0)},{SITE},tb-up,3.5")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def events_of(result: Any, kind: str) -> list[dict[str, Any]]:
    return [e.to_json() for e in result.events() if e.type == kind]


@pytest.mark.parametrize("column", [True, False], ids=["tips-column", "rows-without-counter"])
def test_replay_drops_double_tips_and_counts_them(tmp_path: Path, column: bool) -> None:
    csv = per_tip_csv(tmp_path / "tips.csv", bouncing_storm(), column=column)
    result = replay(parse_config(doc(), env={}), csv)
    assert result.rejected == {}
    assert result.per_tip is not None
    assert dict(result.per_tip.debounced) == {(SITE, "rg1"): 6}
    assert dict(result.per_tip.rows) == {(SITE, "rg1"): 52}
    # 46 real tips: 0.46 in, no storm clock. (Counted, the 6 doubles made it 0.52 in.)
    assert events_of(result, "storm_qualified") == []
    assert events_of(result, "storm_ended") == []  # still open when the record ends
    (started,) = events_of(result, "storm_started")
    assert started["started_at"] == iso(T0)
    assert result.engine.stats.accepted == 46 + 1  # the tips, and tb-up's row
    # With the doubles counted (debounce off) the same rows make a qualifying storm:
    # 0.50 in at the 50th counted tip, the 44th real one at 13:26.
    counted = replay(parse_config(doc(debounce_s=0), env={}), csv)
    (q,) = events_of(counted, "storm_qualified")
    assert (q["qualified_at"], q["total_in"]) == (iso(T0 + 43 * 2 * MIN), 0.5)
    assert counted.per_tip is not None and not counted.per_tip.debounced


def test_replay_says_on_stderr_what_it_dropped(tmp_path: Path) -> None:
    cfg = tmp_path / "stormwatch.yaml"
    config = doc()
    config["sites"][0]["sensors"][0].pop("reporting")  # an interval gauge: said too
    cfg.write_text(json.dumps(config), encoding="utf-8")
    csv = per_tip_csv(tmp_path / "tips.csv", bouncing_storm())
    proc = subprocess.run([sys.executable, "-m", "monitor.cli", "replay", "--config", str(cfg),
                           "--input", str(csv), "--format", "jsonl"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        f"replay: {SITE}/rg1: 52 per-tip row(s), 6 double tip(s) dropped (debounce_s)",
        f"replay: {SITE}/rg1: per-tip rows for a gauge with reporting: interval: its dry "
        "spells read as silences (set reporting: on_tip)"]


def test_a_bad_tips_cell_is_rejected_like_any_bad_value(tmp_path: Path) -> None:
    csv = tmp_path / "tips.csv"
    csv.write_text(f"ts,site,sensor,tips\n{iso(T0)},{SITE},rg1,1.5\n{iso(T0)},{SITE},rg1,-1\n"
                   f"not-a-time,{SITE},rg1,1\n", encoding="utf-8")
    result = replay(parse_config(doc(), env={}), csv)
    assert dict(result.rejected) == {"bad_value": 1, "negative_value": 1, "bad_timestamp": 1}
    assert result.engine.stats.accepted == 0


def card(tmp_path: Path, tips: list[int]) -> Path:
    path = tmp_path / "card.csv"
    path.write_text("ts,tips\n" + "".join(f"{iso(t)},1\n" for t in tips), encoding="utf-8")
    return path


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


def test_replay_and_the_node_agree_on_which_tips_are_double() -> None:
    rng = random.Random(10)
    for _ in range(200):
        debounce = rng.choice([0.0, 0.5, 1.0, 2.0])
        t, times = T0, []
        for _ in range(50):
            t += rng.choice([0, 500, 1000, 1001, 1500, 2000, 60_000])
            times.append(t)
        kept: dict[str, list[int]] = {"replay": [], "node": []}
        for name, rule in (("replay", replay_rule), ("node", node_rule)):
            last = None
            for ts in times:
                if not rule(last, ts, debounce):
                    kept[name].append(ts)
                    last = ts
        assert kept["replay"] == kept["node"]
    # And the rule itself, by hand: 1 s after is a double tip at debounce_s 1, 1.001 s not.
    assert [node_rule(T0, T0 + d, 1.0) for d in (0, 1000, 1001)] == [True, True, False]
    assert [replay_rule(T0, T0 + d, 1.0) for d in (0, 1000, 1001)] == [True, True, False]
    assert replay_rule(None, T0, 1.0) is False and node_rule(T0, T0 + 1, 0.0) is False

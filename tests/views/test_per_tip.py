"""Per-tip logger exports, and their double tips (monitor/README.md, "The rules").

A public per-tip record holds 4-14 % of tips written 1 s after the tip before
(the bucket bouncing); counted, they make storms qualify that did not. Both
readers of such a file drop them: ``replay`` (``monitor/sources/pertip.py``) and the
node's ``csv`` driver (``sensors/drivers/csvfile.py``), with the rain sensor's
``debounce_s`` [1.0], counting what they drop. The two sides have their own
copy of the rule (``sensors/`` imports nothing of ``monitor/``): a test here holds
them together. The node's side is tested in ``tests/sensors/test_node_per_tip.py``.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from monitor.config.file import parse_config
from monitor.contract.times import iso
from monitor.sources.pertip import is_double_tip as replay_rule
from monitor.views.replay import replay
from sensors.counter import is_double_tip as node_rule

from ..support.pertip import MIN, SITE, T0, bouncing_storm, doc, per_tip_csv

ROOT = Path(__file__).resolve().parents[2]


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

"""Replay of a site before and after its ``active_since`` (monitor/README.md, "The rules"):
the rules' side is in ``tests/engine/test_active_period.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..support.daemonkit import cli
from ..support.smallsite import write_site
from ..support.util import SITE

CLOCK_NOTICES = ("inspection_overdue", "inspection_due_soon", "inspection_missed",
                 "clock_closed")


def replay(tmp_path: Path, rows: list[str], extra: str = "") -> list[dict[str, Any]]:
    cfg = write_site(tmp_path, extra)
    data = tmp_path / "rows.csv"
    data.write_text("ts,site,sensor,tips_total,inspector\n" + "".join(
        f"{row}\n" for row in rows))
    proc = cli("replay", "--config", str(cfg), "--input", str(data), "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_replay_of_an_export_with_a_stray_row_counts_no_missed_week(tmp_path: Path) -> None:
    # A logger export: one row from its clock's reset two years back, then the site's.
    rows = ["2024-05-03T12:00:00Z,{s},rg1,7,"] + [
        f"2026-05-01T{h:02d}:00:00Z,{{s}},rg1,7," for h in range(12, 24)]
    events = replay(tmp_path, [r.format(s=SITE) for r in rows])
    assert [e for e in events if e["type"] in CLOCK_NOTICES] == []


def test_replay_of_a_storm_before_active_since_is_informational(tmp_path: Path) -> None:
    # 0.60 in from 10:00Z on May 1 (ten tips every ten minutes); the site starts May 10.
    rows = [f"2026-05-01T{10 + m // 60:02d}:{m % 60:02d}:00Z,{SITE},rg1,{m},"
            for m in range(0, 61, 10)] + [f"2026-05-12T00:00:00Z,{SITE},rg1,60,"]
    events = replay(tmp_path, rows, extra="    active_since: 2026-05-10\n")
    (q,) = [e for e in events if e["type"] == "storm_qualified"]
    assert (q["qualified_at"], q["due"], q["informational"], q["outside"]) == (
        "2026-05-01T10:50:00Z", None, True, "before_active_since")
    assert [e for e in events if e["type"] in CLOCK_NOTICES
            and e.get("clock") == "storm"] == []


def test_replay_and_backtest_of_a_stray_counter_row_find_the_site_storm(tmp_path: Path
                                                                          ) -> None:
    rows = ["2024-05-01T14:00:00Z,{s},rg1,1000,", "2026-05-01T14:00:00Z,{s},rg1,1520,",
            "2026-05-01T14:10:00Z,{s},rg1,1547,", "2026-05-01T14:20:00Z,{s},rg1,1571,",
            "2026-05-02T14:20:00Z,{s},rg1,1571,"]
    extra = "    active_since: 2026-05-01\n"
    events = replay(tmp_path, [r.format(s=SITE) for r in rows], extra=extra)
    assert [(e["started_at"], e["total_in"]) for e in events
            if e["type"] == "storm_ended"] == [("2026-05-01T14:10:00Z", 0.51)]
    proc = cli("backtest", "--config", str(tmp_path / "site.yaml"), "--input",
               str(tmp_path / "rows.csv"), "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    assert [(e["started_at"], e["total_in"]) for e in map(json.loads, proc.stdout.splitlines())
            ] == [("2026-05-01T14:10:00Z", 0.51)]

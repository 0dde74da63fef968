"""Routine inspections counted in calendar days through the command line: ``replay`` judges
the seventh day, ``check-config`` refuses a fraction of a day (monitor/README.md, "The
rules"). The rules' side is in ``tests/engine/test_calendar_days.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..support.daemonkit import cli
from ..support.smallsite import write_site
from ..support.util import SITE


def write(tmp_path: Path, extra: str = "") -> Path:
    return write_site(tmp_path, "    active_since: 2026-05-01\n" + extra)


def test_replay_judges_the_seventh_day_at_14_00_met(tmp_path: Path) -> None:
    data = tmp_path / "rows.csv"
    data.write_text(
        "ts,site,sensor,tips_total,inspector\n"
        f"2026-05-04T10:00:00-04:00,{SITE},inspection,,J. Rivera\n"
        f"2026-05-11T14:00:00-04:00,{SITE},inspection,,J. Rivera\n"
        f"2026-05-12T08:00:00-04:00,{SITE},rg1,0,\n")
    proc = cli("replay", "--config", str(write(tmp_path)), "--input", str(data),
               "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    events: list[dict[str, Any]] = [json.loads(line) for line in proc.stdout.splitlines()]
    closed = [(e["due"], e["inspected_at"], e["outcome"]) for e in events
              if e["type"] == "clock_closed"]
    assert closed == [("2026-05-09T03:59:59.999Z", "2026-05-04T14:00:00Z", "met"),
                      ("2026-05-12T03:59:59.999Z", "2026-05-11T18:00:00Z", "met")]
    assert not [e for e in events if e["type"] in ("inspection_missed", "inspection_overdue")]


def test_check_config_refuses_a_fraction_of_a_calendar_day(tmp_path: Path) -> None:
    proc = cli("check-config", str(write(tmp_path, "    routine_inspection_days: 3.5\n")))
    assert proc.returncode == 2
    assert "routine_inspection_days: 3.5 is not a whole number of days" in proc.stderr
    assert "routine_due: elapsed" in proc.stderr and "Traceback" not in proc.stderr
    ok = cli("check-config", str(write(
        tmp_path, "    routine_inspection_days: 3.5\n    routine_due: elapsed\n")))
    assert ok.returncode == 0, ok.stderr

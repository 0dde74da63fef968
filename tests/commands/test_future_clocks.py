"""The sample configuration's clock table, as the command prints it, lists no clock of next
year (monitor/README.md, "The rules").
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_sample_table_lists_no_clock_of_next_year() -> None:
    text = (ROOT / "config" / "README.md").read_text(encoding="utf-8")
    sample = (ROOT / "config" / "sample-readings.csv").read_text(encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "monitor.cli", "replay", "--config",
         str(ROOT / "config" / "example.yaml"), "--input", "-", "--format", "table"],
        input=sample, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    clocks = lines[lines.index("Inspection clocks (2 closed, 1 open, 0 overdue notices)") + 1:]
    clocks = clocks[:clocks.index("")]
    assert [line.split()[:2] + [line.split()[-1]] for line in clocks] == [
        ["storm", "storm-rg1-20260501T141000Z", "met"],
        ["routine", "routine-2026-05-01T04:00:00Z", "met"],
        ["routine", "routine-2026-05-02T13:30:00Z", "OPEN"],
    ]
    assert "2027" not in proc.stdout
    # The configuration reference shows these lines under the sample.
    for line in clocks:
        assert line.rstrip() in text

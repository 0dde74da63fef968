"""The suite's summary lines appear with and without pytest-xdist (``make test`` runs ``-n 2``).

Under xdist the scenarios run in worker processes; the lines reached the
summary only when they ran in the process that prints it, so ``make test``
lost them. Two tiny scenarios, one failing, run here as a pytest of their own
(through this suite's fixture and hook), in one process and in two workers.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CONFTEST = """\
from tests.reliability.conftest import counts, pytest_terminal_summary  # noqa: F401
"""
SCENARIOS = """\
def test_first_scenario(counts):
    counts.published = counts.journaled = 3

def test_second_scenario(counts):
    counts.published, counts.alerts_expected, counts.alerts_received = 5, 1, 0
    assert counts.alerts_received == counts.alerts_expected
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist -n 2"])
def test_each_scenario_has_its_line_in_the_summary(tmp_path: Path, workers: list[str]) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_scenarios.py").write_text(SCENARIOS)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *workers, "test_scenarios.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the second one fails
    section = proc.stdout.split("= reliability counts =", 1)[1].split("\n=", 1)[0]
    assert sorted(section.strip("=\n").splitlines()) == [
        "reliability: first_scenario published=3 journaled=3 exported=- alerted=-",
        "reliability: second_scenario published=5 journaled=0 exported=- alerted=0/1",
    ]

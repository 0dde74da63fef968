"""A site that cannot be watched does not pass as fine (monitor/README.md, "The rules").

A Condition A–C site has the storm duty of § 134-9A(2); without a rain gauge no
storm is ever seen. ``check-config`` warns (``--strict`` refuses) and does not
promise storm clocks; ``status``, ``report`` and the replay table say "storm
duty not monitored: no rain gauge" instead of counting zero storms.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from monitor.config.file import load_config
from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_MINUTE, parse_iso
from monitor.host.engine import EngineHost
from monitor.host.rows import journal_in
from monitor.store.opening import open_store

ROOT = Path(__file__).resolve().parents[2]
NO_GAUGE = "storm duty not monitored: no rain gauge"

CONFIG = """\
broker: {{host: 127.0.0.1, port: 1883}}
state_dir: {state}
notify: {{targets: [{{url: "console://"}}]}}
sites:
  - id: pond-lot
    timezone: America/New_York
    condition: {condition}
    sensors:
      - {{id: pond-depth, kind: sediment}}
    traps:
      - {{id: pond, sensor: pond-depth, shape: rectangular, bottom_length_ft: 20,
         bottom_width_ft: 10, design_depth_ft: 4}}
  - id: meadows
    timezone: America/New_York
    condition: B
    sensors:
      - {{id: rg1, kind: rain, in_per_tip: 0.01}}
"""
WARNING = ("sites.pond-lot.sensors: condition B has the storm duty of § 134-9A(2) (inspect "
           "within 24"
           " hours of every storm of 0.5 in or more), but the site has no sensor of kind rain:"
           f" {NO_GAUGE} (add the site's gauge)")


def write(tmp_path: Path, condition: str = "B") -> Path:
    path = tmp_path / "stormwatch.yaml"
    path.write_text(CONFIG.format(state=tmp_path / "state", condition=condition))
    return path


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "monitor.cli", *args], input=stdin,
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"})


def test_check_config_warns_and_does_not_promise_storm_clocks(tmp_path: Path) -> None:
    proc = cli("check-config", str(write(tmp_path)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [f"warning: {WARNING}"]
    pond, meadows = proc.stdout.split("; meadows (")
    routine = ("routine inspection clocks every 7 calendar days from its first readings (no "
               "active_since: a lone reading followed by a longer silence does not start it)")
    assert "storm inspection clocks" not in pond
    assert pond.endswith(f"; {routine}; {NO_GAUGE}")
    assert f"storm inspection clocks and {routine}" in meadows  # the site with a gauge


def test_check_config_strict_refuses(tmp_path: Path) -> None:
    proc = cli("check-config", "--strict", str(write(tmp_path)))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [WARNING]
    assert proc.stdout == ""


def test_a_site_without_the_duty_needs_no_gauge(tmp_path: Path) -> None:
    proc = cli("check-config", "--strict", str(write(tmp_path, condition="none")))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and NO_GAUGE not in proc.stdout


def test_replay_table_says_not_monitored(tmp_path: Path) -> None:
    rows = "ts,site,sensor,depth_in,tips_total\n" + "".join(
        f"2026-05-01T{h:02d}:00:00Z,pond-lot,pond-depth,{6 + h / 10},\n"
        f"2026-05-01T{h:02d}:00:00Z,meadows,rg1,,0\n" for h in range(10))
    proc = cli("replay", "--config", str(write(tmp_path)), "--input", "-", "--format", "table",
               stdin=rows)
    assert proc.returncode == 0, proc.stderr
    pond = proc.stdout.split("Site meadows")[0]
    assert f"Storms: {NO_GAUGE}" in pond.splitlines()
    assert "Storms (" not in pond
    # The site with a gauge still counts its (no) storms.
    assert "Storms (0, 0 qualifying)" in proc.stdout.split("Site meadows")[1]


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """A state directory with a day of trap readings for the site without a gauge."""
    path = write(tmp_path)
    config = load_config(path, env={})
    start = parse_iso("2026-05-01T12:00:00Z")
    items = [Reading(site="pond-lot", sensor="pond-depth", kind="sediment",
                     ts_ms=start + i * 60 * MS_PER_MINUTE, depth_in=6.0 + i / 10)
             for i in range(24)]
    with open_store(config) as store:
        host = EngineHost.restore(config, store)
        store.journal.commit([journal_in(it, topic=None, received_ms=None) for it in items])
        host.catch_up()
    return path


def test_status_says_not_monitored(state: Path) -> None:
    proc = cli("status", "--config", str(state), "--json")
    assert proc.returncode == 0, proc.stderr
    sites = json.loads(proc.stdout)["sites"]
    assert sites["pond-lot"]["storm_duty"] == NO_GAUGE
    assert sites["meadows"]["storm_duty"] == "monitored"
    text = cli("status", "--config", str(state)).stdout
    pond = text.split("meadows —")[0].split("pond-lot —")[1]
    assert f"  {NO_GAUGE}: no storm is seen, no 24-hour inspection is asked for" in \
        pond.splitlines()
    assert NO_GAUGE not in text.split("meadows —")[1]


def test_report_says_not_monitored(state: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    proc = cli("report", "--config", str(state), "--site", "pond-lot", "--from", "2026-05-01",
               "--to", "2026-05-03", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    html = out.read_text(encoding="utf-8")
    assert f"<td>Storms</td><td>{NO_GAUGE}</td>" in html
    assert f"<td>Storm inspections</td><td>{NO_GAUGE}</td>" in html
    assert "No storms in the period." not in html and "0 (0 qualified" not in html

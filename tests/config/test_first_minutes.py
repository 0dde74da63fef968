"""What a newcomer meets in the first minutes: output that reads right and
commands that work as printed.

* ``status`` said "+-0.87 NTU over background" for a downstream probe below
  its background; the demo and the replay table wrote the sign the same way,
  and the replay table and the report stopped with a traceback on a contrast
  judged without a background (basis ``absolute``: no upstream value).
* ``stormwatch demo --keep`` printed its follow-up commands as a bare
  ``stormwatch …``: "command not found" after ``make demo``, which leaves the
  program in ``.venv/bin/``.
* The ACL's header said sensors would one day name their node (they do) and
  that ``stormwatch inspect`` logs in to the broker (it writes the journal).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from monitor.config import invocation
from monitor.config.file import load_config
from monitor.contract.events import Event, Fact, TurbidityContrast
from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_MINUTE, parse_iso
from monitor.daemon.demo import SITE as DEMO_SITE
from monitor.daemon.demo import demo_config, write_demo_config
from monitor.daemon.demokept import add_people, explore
from monitor.daemon.demotimeline import describe
from monitor.host.engine import EngineHost
from monitor.host.rows import journal_in
from monitor.sources.acl import render_acl
from monitor.store.opening import open_store
from monitor.views.status import format_status, unknown_site

from ..support.daemonkit import SITE, write_config

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "config" / "example.yaml"
START = parse_iso("2026-05-01T12:00:00Z")


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "monitor.cli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"})


# --------------------------------------------------------------------------- signs


def _status_with(deltas: dict[str, float | None]) -> dict[str, object]:
    config = load_config(EXAMPLE, env={})
    sites = {}
    for site in config.sites:
        s = unknown_site(site)
        s["recorded_at"] = "2026-05-01T12:00:00Z"
        s["turbidity"] = {pid: {"state": "ok", "delta_ntu": d} for pid, d in deltas.items()}
        sites[site.id] = s
    return {"generated_at": "2026-05-01T12:00:00Z", "sites": sites,
            "journal": {"age_s": 1.0}, "ingest": {"accepted": 1, "rejected": {},
                                                 "journal_seq": 1, "applied_seq": 1},
            "daemon": {"age_s": 1.0, "stale": False, "state_written_at": "2026-05-01T12:00:00Z",
                       "wall_clock_step_s": None},
            "broker": {"state": "connected", "since": None}}


def test_status_says_the_sign_of_the_contrast_once() -> None:
    config = load_config(EXAMPLE, env={})
    text = format_status(config, _status_with({"below": -0.87, "above": 2.5, "none": None}))
    assert "  turbidity below: ok, -0.87 NTU over background" in text
    assert "  turbidity above: ok, +2.5 NTU over background" in text
    assert "  turbidity none: ok\n" in text
    assert "+-" not in text


def test_the_demo_timeline_says_the_sign_once_and_copes_without_background() -> None:
    cleared = TurbidityContrast(pair="outfall-1", state="cleared", basis="background",
                                started_at="2026-05-01T12:00:00Z", upstream_ntu=10.0,
                                downstream_ntu=9.13, delta_ntu=-0.87, limit_ntu=5.0,
                                upstream_at="2026-05-01T12:00:00Z")

    def contrast(**fields: Any) -> str:
        body = replace(cleared, **fields)
        return describe(Event(Fact(DEMO_SITE, START, "t1", body)),
                        demo_config(1, Path("state")).sites[0])

    assert contrast().endswith("outfall-1 cleared: -0.87 NTU (limit +5) (§ 134-8C)")
    assert "+6.5 NTU" in contrast(state="exceeded", delta_ntu=6.5)
    assert contrast(state="exceeded", basis="absolute", upstream_ntu=None, upstream_at=None,
                    delta_ntu=None, downstream_ntu=300.0, limit_ntu=250.0).endswith(
        "outfall-1 exceeded: 300 NTU, no usable background (limit 250) (§ 134-8C)")


def _absolute_contrast_csv(path: Path) -> Path:
    """90 minutes of a muddy downstream probe (300 NTU) and no upstream reading: no
    background, so the pair's absolute limit (250 NTU) decides, basis absolute."""
    rows = ["ts,site,sensor,ntu"]
    for m in range(0, 90, 2):
        rows.append(f"2026-05-01T{14 + m // 60:02d}:{m % 60:02d}:00Z,branch-meadows,tb-down,300")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_the_replay_table_shows_a_contrast_without_background(tmp_path: Path) -> None:
    csv = _absolute_contrast_csv(tmp_path / "muddy.csv")
    jsonl = _cli("replay", "--config", str(EXAMPLE), "--input", str(csv))
    (contrast,) = [line for line in jsonl.stdout.splitlines() if "turbidity_contrast" in line]
    assert '"basis":"absolute"' in contrast and '"upstream_ntu":null' in contrast
    proc = _cli("replay", "--config", str(EXAMPLE), "--input", str(csv), "--format", "table")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = [x for x in proc.stdout.splitlines() if "outfall-1  exceeded" in x]
    assert line.endswith("down 300 NTU, no usable background, limit 250 NTU"), line


def test_the_report_shows_a_contrast_without_background(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, 1883)
    config = load_config(cfg, env={})
    items = [Reading(site=SITE, sensor="tb-down", kind="turbidity",
                     ts_ms=START + m * MS_PER_MINUTE, ntu=300.0) for m in range(0, 90, 2)]
    with open_store(config) as store:
        host = EngineHost.restore(config, store)
        store.journal.commit([journal_in(it, topic=None, received_ms=None) for it in items])
        host.catch_up()
    out = tmp_path / "report.html"
    proc = _cli("report", "--config", str(cfg), "--site", SITE, "--from", "2026-05-01",
                "--to", "2026-05-01", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    html = out.read_text(encoding="utf-8")
    episodes = html.split("<h2>Turbidity episodes</h2>", 1)[1].split("</table>", 1)[0]
    # upstream, downstream, delta, limit: no background, so no upstream and no delta.
    assert "<td>—</td><td>300</td><td>—</td><td>250</td>" in episodes.replace("\n", ""), episodes


# --------------------------------------------------------------------------- printed commands


@pytest.fixture
def no_stormwatch_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")


def test_a_program_typed_as_a_path_is_printed_as_typed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_stormwatch_on_path: None) -> None:
    """``make demo`` runs ``.venv/bin/stormwatch demo`` from the repository."""
    exe = tmp_path / ".venv" / "bin" / "stormwatch"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [".venv/bin/stormwatch", "demo"])
    assert invocation.program() == ".venv/bin/stormwatch"
    # Run by systemd or a timer, the path is absolute and stays so.
    monkeypatch.setattr(sys, "argv", [str(exe), "logbook"])
    assert invocation.program() == str(exe)
    # On PATH, the bare name is enough.
    monkeypatch.setenv("PATH", f"{exe.parent}:/usr/bin:/bin")
    assert invocation.program() == "stormwatch"


def test_a_module_run_names_the_program_beside_its_interpreter(
        monkeypatch: pytest.MonkeyPatch, no_stormwatch_on_path: None) -> None:
    monkeypatch.setattr(sys, "argv", [str(ROOT / "monitor" / "cli.py")])
    beside = Path(sys.executable).parent / "stormwatch"
    expected = os.path.abspath(beside) if beside.is_file() else f"{sys.executable} -m monitor.cli"
    assert invocation.program() == expected


def test_the_demo_prints_commands_that_work_as_printed(
        tmp_path: Path, no_stormwatch_on_path: None) -> None:
    """Against a state directory with a database (the report test's), the commands
    the demo prints run through a shell without ``stormwatch`` on PATH (all but
    ``web``, which serves until stopped: ``tests/daemon/test_demo_kept.py``)."""
    cfg = write_demo_config(1883, tmp_path, web_port=8765)  # as the demo keeps it
    add_people(tmp_path, DEMO_SITE)
    config = load_config(cfg, env={})
    site = config.site(DEMO_SITE)
    assert site is not None
    gauge = site.gauges()[0].id
    items = [Reading(site=DEMO_SITE, sensor=gauge, kind="rain",
                     ts_ms=START + m * MS_PER_MINUTE, tips_total=m) for m in range(0, 120, 5)]
    with open_store(config) as store:
        host = EngineHost.restore(config, store)
        store.journal.commit([journal_in(it, topic=None, received_ms=None) for it in items])
        host.catch_up()
    text = explore(config, cfg, DEMO_SITE, (START // 1000, START // 1000 + 7200),
                   ZoneInfo("America/New_York"))
    commands = [line.strip()[2:] for line in text.splitlines() if line.startswith("  $ ")]
    assert " web --config " in commands[0]
    commands = [c for c in commands if " web --config " not in c]
    assert [c.split(" --config")[0].split(" ")[-1] for c in commands] == [
        "link", "status", "logbook", "report"]
    for command in commands:
        assert not command.startswith("stormwatch "), command
        proc = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True,
                              cwd=os.getcwd(), timeout=120,
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
                                   "MPLBACKEND": "Agg"})
        assert "not found" not in proc.stderr, (command, proc.stderr)
        assert proc.returncode == 0, (command, proc.stderr)
    assert (tmp_path / "demo-report.html").is_file()  # beside the kept state, not in the cwd


# --------------------------------------------------------------------------- the ACL's header


def test_the_acl_header_describes_the_accounts_as_they_are() -> None:
    config = load_config(EXAMPLE, env={})
    header = render_acl(config).split("\nuser ", 1)[0]
    assert "once sensors can name their node" not in header
    assert "SITE.NODE: a sensor node" in header and "`node:` in the" in header
    assert "`stormwatch inspect` writes the daemon's journal and does not use the\n#" \
        "       broker" in header
    assert "DES" "IGN" not in header
    # What the header says of node accounts is what the file grants.
    assert "\nuser branch-meadows.pi-1\n" in render_acl(config)

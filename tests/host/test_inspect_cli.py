"""``stormwatch inspect`` and ``stormwatch site close`` as a user meets them.

No daemon runs: the command takes the state lock itself, journals the input
and brings the engine up to date in the real SQLite database, so the log book
and ``status`` show the result at once. The broker port is closed on purpose.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from monitor.config.file import load_config
from monitor.contract.times import iso
from monitor.store.opening import open_store

from ..support.commandkit import ROSTER, assert_refused, stormwatch
from ..support.daemonkit import ROOT, SITE, write_config

ZONE = ZoneInfo("America/New_York")


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    """A configuration with a roster, and its (empty) database."""
    path = write_config(tmp_path, 1, sections=ROSTER)
    with open_store(load_config(path, env={})):
        pass
    return path


def inspect(cfg: Path, *args: str) -> Any:
    return stormwatch(cfg, ("inspect", "--site", SITE, *args))


def site_close(cfg: Path, *args: str) -> Any:
    """``stormwatch site close --config CFG --site SITE ARGS`` as a process."""
    return subprocess.run(
        [sys.executable, "-m", "monitor.cli", "site", "close", "--config", str(cfg),
         "--site", SITE, *args], capture_output=True, text=True, cwd=ROOT, timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})


def logbook(cfg: Path) -> list[dict[str, str]]:
    proc = stormwatch(cfg, ("logbook", "--site", SITE))
    assert proc.returncode == 0, proc.stderr
    return list(csv.DictReader(io.StringIO(proc.stdout)))


def status(cfg: Path) -> dict[str, Any]:
    proc = stormwatch(cfg, ("status", "--json"))
    assert proc.returncode == 0, proc.stderr
    site: dict[str, Any] = json.loads(proc.stdout)["sites"][SITE]
    return site


def test_an_inspection_in_the_future_is_refused(cfg: Path) -> None:
    """The issue's case: `--at 2027-06-01T00:00:00Z` left 1 053 overdue rows dated into
    2027 in the append-only log book. Now: exit 2, one line, nothing written."""
    proc = inspect(cfg, "--inspector", "J. Rivera", "--at", "2027-06-01T00:00:00Z")
    assert_refused(proc, "--at", "2027-06-01T00:00:00Z", "ahead")
    assert logbook(cfg) == []
    ahead = iso(round(time.time() * 1000) + 10 * 60_000)
    assert_refused(inspect(cfg, "--inspector", "J. Rivera", "--at", ahead), "--at")
    assert_refused(site_close(cfg, "--at", "2027-06-01"),
                   "--at", "ahead")
    assert logbook(cfg) == []


def test_a_name_off_the_roster_is_refused_with_the_roster(cfg: Path) -> None:
    proc = inspect(cfg, "--inspector", "Future Man")
    assert_refused(proc, "Future Man", "J. Rivera (CPESC 12345)", "A. Lee (NY PE 098765)")
    assert logbook(cfg) == []
    # A walk-through by someone else is recorded as kind other and closes nothing.
    proc = inspect(cfg, "--inspector", "site foreman", "--kind", "other")
    assert proc.returncode == 0, proc.stderr
    assert "closed no open clock" in proc.stdout
    (row,) = [r for r in logbook(cfg) if r["type"] == "inspection_recorded"]
    assert "kind=other" in row["details"] and "closes=" not in row["details"]


def test_a_joint_inspection_with_findings_and_a_corrective_action(cfg: Path) -> None:
    tomorrow = (datetime.now(ZONE) + timedelta(days=1)).date().isoformat()
    proc = inspect(cfg, "--inspector", "J. Rivera", "--inspector", "A. Lee",
                   "--finding", "silt-fence-north: undermined at station 2+40",
                   "--corrective-action", "re-trench the silt fence", "--due", tomorrow,
                   "--notes", "walked the whole perimeter")
    assert proc.returncode == 0, proc.stderr
    action_id = proc.stdout.split("Corrective actions: ")[1].split(" ")[0]
    assert action_id.startswith("ca-")
    (rec,) = [r for r in logbook(cfg) if r["type"] == "inspection_recorded"]
    details = rec["details"]
    assert "inspector=J. Rivera & A. Lee" in details
    # The first named certifies; A. Lee came along and carries no credential here.
    assert "credentials=CPESC 12345;" in details and "NY PE 098765" not in details
    assert "findings=silt-fence-north: undermined at station 2+40" in details
    assert f"corrective_actions={action_id}: re-trench the silt fence (due " in details
    assert "entered_at=" in details and "backdated" not in details
    (action,) = status(cfg)["corrective_actions"]
    assert (action["id"], action["inspector"], action["overdue"]) == (
        action_id, "J. Rivera & A. Lee", False)
    local_end = datetime.fromisoformat(f"{tomorrow}T00:00:00").replace(tzinfo=ZONE) \
        + timedelta(days=1)
    assert action["due"] == iso(round(local_end.timestamp() * 1000))

    proc = inspect(cfg, "--inspector", "J. Rivera", "--resolved", action_id)
    assert proc.returncode == 0, proc.stderr
    assert status(cfg)["corrective_actions"] == []


def test_a_resolved_id_that_names_no_open_action_is_refused(cfg: Path) -> None:
    """`--resolved ca-bogus` was sealed into the log book as a repair that resolved
    nothing. Now: exit 2, one line listing the ids that are open, nothing written; and an
    action resolved once is no longer open to resolve."""
    asked = inspect(cfg, "--inspector", "J. Rivera", "--corrective-action", "re-seed slope")
    assert asked.returncode == 0, asked.stderr
    action_id = asked.stdout.split("Corrective actions: ")[1].split(" ")[0]
    proc = inspect(cfg, "--inspector", "J. Rivera", "--resolved", "ca-bogus")
    assert_refused(proc, "--resolved: ca-bogus names no corrective action open at "
                   f"{SITE}", f"(open then: {action_id}); nothing was recorded")
    assert len([r for r in logbook(cfg) if r["type"] == "inspection_recorded"]) == 1
    done = inspect(cfg, "--inspector", "A. Lee", "--resolved", action_id)
    assert done.returncode == 0, done.stderr
    assert_refused(inspect(cfg, "--inspector", "J. Rivera", "--resolved", action_id),
                   f"--resolved: {action_id} names no corrective action open",
                   "(open then: none)")
    assert len([r for r in logbook(cfg) if r["type"] == "inspection_recorded"]) == 2


def test_a_backdated_inspection_is_accepted_and_marked(cfg: Path) -> None:
    three_days_ago = iso(round(time.time() * 1000) - 3 * 86_400_000)
    proc = inspect(cfg, "--inspector", "A. Lee", "--at", three_days_ago)
    assert proc.returncode == 0, proc.stderr
    rows = logbook(cfg)
    (rec,) = [r for r in rows if r["type"] == "inspection_recorded"]
    assert "backdated=True" in rec["details"] and "entered_at=" in rec["details"]
    (back,) = [r for r in rows if r["type"] == "inspection_backdated"]
    assert "inspector=A. Lee" in back["details"]


def test_bad_flags_are_one_line(cfg: Path) -> None:
    assert_refused(inspect(cfg, "--inspector", "J. Rivera", "--finding", "no colon here"),
                   "--finding", "PRACTICE: condition")
    assert_refused(inspect(cfg, "--inspector", "J. Rivera", "--corrective-action", "x",
                           "--due", "soon"), "--due")
    assert_refused(inspect(cfg, "--inspector", "J. Rivera", "--resolved", "Not An Id"),
                   "resolves")
    assert logbook(cfg) == []


def test_site_close_records_final_stabilization(cfg: Path) -> None:
    today = datetime.now(ZONE).date().isoformat()
    proc = site_close(cfg, "--at", today, "--by", "J. Rivera")
    assert proc.returncode == 0, proc.stderr
    assert "recorded in the log book" in proc.stdout
    (row,) = [r for r in logbook(cfg) if r["type"] == "site_closed"]
    assert "by=J. Rivera" in row["details"]
    local_midnight = datetime.fromisoformat(f"{today}T00:00:00").replace(tzinfo=ZONE)
    assert status(cfg)["closed_at"] == iso(round(local_midnight.timestamp() * 1000))


def test_inspect_and_site_close_refuse_a_missing_database(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, 1, sections=ROSTER)
    db = tmp_path / "state" / "stormwatch.db"
    assert_refused(inspect(cfg, "--inspector", "J. Rivera"), "no database", str(db))
    assert_refused(site_close(cfg), "no database", str(db))
    assert not db.exists()

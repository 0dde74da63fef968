"""``stormwatch site shutdown`` and ``site resume`` with no daemon running: the notice in the
log book, New York's shutdown cadence in ``status``, and a readable refusal without a
notice; ``inspect --maintenance`` (config/README.md, "Permits")."""

from __future__ import annotations

import csv
import io
import json
from datetime import date, timedelta
from pathlib import Path

from monitor.config.file import load_config
from monitor.store.opening import open_store

from ..support.daemonkit import cli, events_of
from ..support.smallsite import write_site
from ..support.util import SITE


def config(tmp_path: Path) -> Path:
    """The one site under Chapter 134 and New York's permit, with its (empty) database."""
    since = (date.today() - timedelta(days=10)).isoformat()
    path = write_site(tmp_path, f"    active_since: {since}\n"
                                "    permits: [village-branch-134, ny-gp-0-25-001]\n")
    with open_store(load_config(path, env={})):
        pass
    return path


def test_a_shutdown_is_logged_and_new_york_inspects_monthly(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    start = (date.today() - timedelta(days=2)).isoformat()
    done = cli("site", "shutdown", "--config", str(cfg), "--site", SITE, "--at", start,
               "--by", "J. Rivera", "--notice", "Winter shutdown; notice mailed to DEC")
    assert done.returncode == 0, done.stderr
    assert "temporary shutdown from" in done.stdout and "recorded in the log book" in done.stdout
    book = cli("logbook", "--config", str(cfg), "--site", SITE)
    rows = list(csv.DictReader(io.StringIO(book.stdout)))
    assert [r["type"] for r in rows if r["type"] == "site_shutdown"] == ["site_shutdown"]
    status = json.loads(cli("status", "--config", str(cfg), "--json").stdout)
    ny = [c for c in status["sites"][SITE]["open_clocks"] if c["permit"] == "ny-gp-0-25-001"]
    assert len(ny) == 1 and ny[0]["clock"] == "routine"
    # 30 calendar days from the shutdown's first day (ends of local days: 28 to 31 days on).
    assert 27 * 24 < ny[0]["hours_left"] <= 29 * 24
    resumed = cli("site", "resume", "--config", str(cfg), "--site", SITE)
    assert resumed.returncode == 0, resumed.stderr
    assert "work resumed" in resumed.stdout
    status = json.loads(cli("status", "--config", str(cfg), "--json").stdout)
    ny = [c for c in status["sites"][SITE]["open_clocks"] if c["permit"] == "ny-gp-0-25-001"]
    assert len(ny) == 1 and 6 * 24 < ny[0]["hours_left"] <= 8 * 24


def test_a_shutdown_without_a_notice_is_refused(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    proc = cli("site", "shutdown", "--config", str(cfg), "--site", SITE, "--notice", " ")
    assert proc.returncode == 2
    assert "--notice: the written notice of the shutdown is required" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_inspect_records_routine_maintenance_as_such(tmp_path: Path) -> None:
    """``--maintenance TEXT`` is an action due by the permits' maintenance rule (EPA CGP
    2022 Part 2.1.4.b), told apart from a corrective action in the log book."""
    path = write_site(tmp_path, "    permits: [{profile: epa-cgp-2022, frequency: "
                                "biweekly_storm}]\n")
    with open_store(load_config(path, env={})):
        pass
    at = (date.today() - timedelta(days=3)).isoformat()
    done = cli("inspect", "--config", str(path), "--site", SITE, "--inspector", "J. Rivera",
               "--at", at, "--maintenance", "clean the inlet filter", "--corrective-action",
               "replace the silt fence")
    assert done.returncode == 0, done.stderr
    (recorded,) = events_of(path, "inspection_recorded")
    assert [(a["text"], a.get("kind")) for a in recorded["corrective_actions"]] == [
        ("clean the inlet filter", "maintenance"), ("replace the silt fence", None)]
    # A duty the site cannot watch is said, never counted as met.
    shown = json.loads(cli("status", "--config", str(path), "--json").stdout)["sites"][SITE]
    assert shown["not_monitored"] == [
        "snowmelt trigger not monitored: no snow sensor (epa-cgp-2022 CGP 2022 Part 4.2)",
        "turbidity benchmark not monitored: no dewatering sensors (epa-cgp-2022 CGP 2022 "
        "Part 3.3.1, 5.2.2)"]
    text = cli("status", "--config", str(path)).stdout
    assert "  snowmelt trigger not monitored: no snow sensor (epa-cgp-2022" in text

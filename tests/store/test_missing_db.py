"""No data is not all clear.

Every command that reads the state refuses a missing or unreadable database
with one line naming its path (exit 2); ``status`` says how old the newest
input and the recorded state are, and warns when the daemon has stopped
recording; and it judges clocks in event time, as the engine does, so a clock
the engine closed is never listed as open. Real SQLite files and the real
command line, as a user meets them.
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timedelta
from datetime import time as dtime
from pathlib import Path
from typing import Any

import pytest

from monitor.config.file import load_config
from monitor.contract.inputs import Inspection, Reading
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE
from monitor.engine import at_now
from monitor.host.engine import EngineHost
from monitor.host.rows import journal_in
from monitor.store.opening import open_store

from ..support.commandkit import READERS, assert_refused, stormwatch
from ..support.daemonkit import SITE, write_config

# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("name", "args"), READERS, ids=[n for n, _ in READERS])
def test_missing_database_is_refused(tmp_path: Path, name: str, args: tuple[str, ...]) -> None:
    cfg = write_config(tmp_path, 1883)
    out = tmp_path / "report.html"
    proc = stormwatch(cfg, args, out=out)
    db = tmp_path / "state" / "stormwatch.db"
    assert_refused(proc, f"stormwatch {args[0]}: ", "no database", str(db))
    assert not out.exists(), "the report must not write a page saying there is no data"
    assert not db.exists(), "a reading command must not create the database"


def test_status_in_a_wrong_state_dir_names_it(tmp_path: Path) -> None:
    """The issue's case: ``STORMWATCH_STATE_DIR=/wrong/path stormwatch status``."""
    cfg = write_config(tmp_path, 1883)
    wrong = tmp_path / "wrong" / "path"
    proc = stormwatch(cfg, ("status",), env={"STORMWATCH_STATE_DIR": str(wrong)})
    assert_refused(proc, "no database", str(wrong / "stormwatch.db"))
    assert not wrong.exists()


@pytest.mark.parametrize(("name", "args"), READERS, ids=[n for n, _ in READERS])
def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path, name: str,
                                                  args: tuple[str, ...]) -> None:
    cfg = write_config(tmp_path, 1883)
    db = tmp_path / "state" / "stormwatch.db"
    db.parent.mkdir()
    db.write_text("these are my notes, not a database\n")
    out = tmp_path / "report.html"
    proc = stormwatch(cfg, args, out=out)
    assert_refused(proc, str(db), "not a database")
    assert not out.exists()
    assert db.read_text() == "these are my notes, not a database\n"


@pytest.mark.parametrize("kind", ["empty file", "directory"])
def test_other_unusable_paths_are_refused(tmp_path: Path, kind: str) -> None:
    cfg = write_config(tmp_path, 1883)
    db = tmp_path / "state" / "stormwatch.db"
    db.parent.mkdir()
    if kind == "directory":
        db.mkdir()
    else:
        db.write_bytes(b"")
    for _, args in READERS:
        proc = stormwatch(cfg, args, out=tmp_path / "r.html")
        assert_refused(proc, str(db))
    assert not (tmp_path / "r.html").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any directory")
def test_a_state_dir_without_permission_is_refused(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, 1883)
    config = load_config(cfg, env={})
    open_store(config).close()
    state = tmp_path / "state"
    state.chmod(0)
    try:
        for _, args in READERS:
            assert_refused(stormwatch(cfg, args, out=tmp_path / "r.html"),
                           str(state / "stormwatch.db"))
    finally:
        state.chmod(0o755)


# --------------------------------------------------------------------------- freshness


def _state(tmp_path: Path, *, received_ago_s: float, written_ago_s: float) -> Path:
    """A database whose newest input arrived ``received_ago_s`` ago and whose site
    status the daemon last recorded ``written_ago_s`` ago (its clock set back)."""
    cfg = write_config(tmp_path, 1883)
    config = load_config(cfg, env={})
    now_ms = round(time.time() * 1000)
    received = now_ms - round(received_ago_s * 1000)
    readings = [Reading(site=SITE, sensor="trap1-depth", kind="sediment",
                        ts_ms=received - (5 - i) * MS_PER_MINUTE, depth_in=20.0)
                for i in range(5)]
    with open_store(config) as store:
        host = EngineHost.restore(config, store,
                                  clock=lambda: (now_ms - written_ago_s * 1000) / 1000)
        store.journal.commit([journal_in(r, topic=None, received_ms=received)
                              for r in readings])
        host.catch_up()
        host.tick()
    return cfg


def _status_json(cfg: Path) -> dict[str, Any]:
    proc = stormwatch(cfg, ("status", "--json"))
    assert proc.returncode == 0, proc.stderr
    status: dict[str, Any] = json.loads(proc.stdout)
    return status


def test_status_warns_when_the_recorded_state_is_old(tmp_path: Path) -> None:
    cfg = _state(tmp_path, received_ago_s=12 * 60, written_ago_s=10 * 60)
    status = _status_json(cfg)
    assert 12 * 60 <= status["journal"]["age_s"] < 12 * 60 + 60
    assert status["journal"]["newest_received_at"].endswith("Z")
    daemon = status["daemon"]
    assert 10 * 60 <= daemon["age_s"] < 10 * 60 + 60
    assert daemon["stale"] is True and daemon["stale_after_s"] == 90
    assert daemon["state_written_at"] == status["sites"][SITE]["recorded_at"]
    # The contract's keys are all still there.
    assert {"generated_at", "sites", "ingest", "export", "notify"} <= status.keys()

    proc = stormwatch(cfg, ("status",))
    assert proc.returncode == 0, proc.stderr
    header = proc.stdout.splitlines()[:3]
    assert header[1] == "newest input 12 min ago; state recorded 10 min ago", header
    assert header[2].startswith("WARNING: the state was last recorded 10 min ago"), header
    assert "is `stormwatch run` running?" in header[2]


def test_status_shows_fresh_state_without_a_warning(tmp_path: Path) -> None:
    cfg = _state(tmp_path, received_ago_s=12, written_ago_s=3)
    status = _status_json(cfg)
    assert 12 <= status["journal"]["age_s"] < 60
    assert 3 <= status["daemon"]["age_s"] < 60 and status["daemon"]["stale"] is False
    proc = stormwatch(cfg, ("status",))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1].startswith("newest input ")
    assert "; state recorded " in proc.stdout.splitlines()[1]
    assert "WARNING" not in proc.stdout


def test_status_of_a_database_without_recorded_state_warns(tmp_path: Path) -> None:
    """A database the daemon created but never recorded a status in: nothing is known,
    and the header says so before the per-site UNKNOWN lines."""
    cfg = write_config(tmp_path, 1883)
    open_store(load_config(cfg, env={})).close()
    status = _status_json(cfg)
    assert status["journal"] == {"newest_received_at": None, "age_s": None,
                                 "archive": {"files": 0, "rows": 0, "bytes": 0,
                                             "last_at": None}}
    assert status["daemon"]["state_written_at"] is None and status["daemon"]["stale"] is True
    proc = stormwatch(cfg, ("status",))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1] == "no input journaled yet; state never recorded"
    assert lines[2].startswith("WARNING: no site status has been recorded")
    assert "no open inspection clocks" not in proc.stdout


def test_the_stale_threshold_covers_the_daemons_slowest_tick() -> None:
    """``status`` does not import the daemon (MQTT) for one constant: keep them in step."""
    from monitor.daemon.loop import TICK_AT_LEAST_EVERY_S, TICK_EVERY_S
    from monitor.views.status import STATE_STALE_AFTER_S

    assert max(TICK_AT_LEAST_EVERY_S, TICK_EVERY_S) < STATE_STALE_AFTER_S


# --------------------------------------------------------------------------- event time


def test_status_judges_clocks_in_the_engines_event_time(tmp_path: Path) -> None:
    """A run ahead of the wall clock (a demo's simulated clock): a storm two hours in
    the future, inspected five hours later, recorded by a daemon whose clock reads
    twelve hours ahead. At the wall clock the storm clock was not closed yet; the
    engine has closed it, so status must not list it as open."""
    cfg = write_config(tmp_path, 1883)
    config = load_config(cfg, env={})
    wall_ms = round(time.time() * 1000)
    start = (wall_ms // MS_PER_MINUTE + 120) * MS_PER_MINUTE
    items: list[Reading | Inspection] = []
    total = 0
    for m in range(240):  # 0.60 in in minutes 10..69: a qualifying storm
        total += 1 if 10 <= m < 70 else 0
        items.append(Reading(site=SITE, sensor="rg1", kind="rain", ts_ms=start + m * MS_PER_MINUTE,
                             tips_total=total))
    inspected = start + 5 * MS_PER_HOUR
    items.append(Inspection(site=SITE, inspector="J. Rivera", ts_ms=inspected, kind="storm"))
    engine_now = start + 10 * MS_PER_HOUR
    with open_store(config) as store:
        host = EngineHost.restore(config, store, clock=lambda: engine_now / 1000)
        store.journal.commit([journal_in(it, topic=None, received_ms=it.ts_ms) for it in items])
        host.catch_up()
        host.tick()
        recorded = store.state.site_statuses()[SITE].data
    closed = {c["clock_id"] for c in recorded["clocks"] if c["closed_at"] is not None}
    storm = {c["clock_id"] for c in recorded["clocks"] if c["clock"] == "storm"}
    assert storm and storm <= closed
    # Read at the wall clock, the storm clock has not even begun (it starts two hours
    # ahead): a clock is listed only once it exists, so not there either.
    assert not storm & {c["clock_id"] for c in at_now(recorded, wall_ms)["open_clocks"]}

    status = _status_json(cfg)
    site = status["sites"][SITE]
    listed = {c["clock_id"] for c in site["open_clocks"]}
    assert not listed & closed, f"closed clocks listed as open: {listed & closed}"
    assert not any(c["clock"] == "storm" for c in site["open_clocks"])
    # Only the routine clock the inspection started is open, its hours counted from
    # the engine's time: due at the end of the local day 7 days after the inspection's,
    # 5 h after the inspection as the engine sees it.
    (routine,) = site["open_clocks"]
    zone = config.sites[0].zone
    day = datetime.fromtimestamp(inspected / 1000, zone).date() + timedelta(days=8)
    due = round(datetime.combine(day, dtime(0), tzinfo=zone).timestamp() * 1000) - 1
    assert routine["clock"] == "routine"
    assert routine["hours_left"] == round((due - engine_now) / MS_PER_HOUR, 2)
    assert site["event_time"] == recorded["event_time"]

    proc = stormwatch(cfg, ("status",))
    assert proc.returncode == 0, proc.stderr
    assert "clock storm" not in proc.stdout
    assert "ahead of this machine's clock: clocks and sensors are judged at it" in proc.stdout
    # Its age cannot be judged: written by a clock ahead of this one.
    assert status["daemon"]["age_s"] < 0 and status["daemon"]["stale"] is True
    assert "WARNING: the state was recorded at " in proc.stdout

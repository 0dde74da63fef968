"""The journal's inspections against the log book.

The attack: with write access to the SQLite file, ``UPDATE`` an inspection's
corrective action in the journal and delete the snapshots. The log book keeps the
original and its chain verifies, but after a restart the engine is rebuilt from the
journal, and ``status`` and the site page showed the forged text. Now ``logbook
verify`` (with or without an anchor) exits 1 naming the journal row, and the daemon
refuses to start on it (exit 1, the row in its log). The real command line, the real
daemon, real SQLite.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest

from monitor.config.file import load_config
from monitor.contract.times import iso
from monitor.store.opening import open_store

from ..support.daemonkit import SITE, DaemonProcess, cli, write_config
from ..support.receivers import closed_port


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A configuration whose log book holds one inspection with a corrective action,
    recorded by ``stormwatch inspect`` with no daemon running."""
    cfg = write_config(tmp_path, closed_port())
    with open_store(load_config(cfg, env={})):
        pass  # the database, as a daemon that ran once leaves it
    at = iso(round((time.time() - 3600) * 1000))
    proc = cli("inspect", "--config", str(cfg), "--site", SITE, "--inspector", "J. Rivera",
               "--at", at, "--corrective-action", "restake the silt fence")
    assert proc.returncode == 0, proc.stderr
    proc = cli("logbook", "verify", "--config", str(cfg))
    assert proc.returncode == 0, proc.stderr
    return cfg


def tamper(cfg: Path, *statements: str) -> None:
    with closing(sqlite3.connect(cfg.parent / "state" / "stormwatch.db")) as conn, conn:
        for sql in statements:
            conn.execute(sql)


def inspection_seq(cfg: Path) -> int:
    with closing(sqlite3.connect(cfg.parent / "state" / "stormwatch.db")) as conn:
        (seq,) = conn.execute("SELECT seq FROM journal WHERE kind = 'inspection'").fetchone()
    return int(seq)


def test_an_edited_inspection_in_the_journal_fails_verify_and_stops_the_daemon(
        recorded: Path) -> None:
    seq = inspection_seq(recorded)
    anchor = cli("logbook", "anchor", "--config", str(recorded))
    assert anchor.returncode == 0, anchor.stderr
    head = anchor.stdout.split("row ")[1].split(",")[0] + ":" + \
        anchor.stdout.split("sha256 ")[1].split(",")[0]
    tamper(recorded,
           "UPDATE journal SET body = json_set(body, '$.corrective_actions[0].text',"
           " 'nothing to do') WHERE kind = 'inspection'",
           "DELETE FROM snapshots")
    for extra in ((), ("--anchor", head)):
        proc = cli("logbook", "verify", "--config", str(recorded), *extra)
        assert proc.returncode == 1, proc.stdout
        assert f"journal row {seq} ({SITE}, inspection at" in proc.stderr
        assert "(corrective_actions): edited outside stormwatch" in proc.stderr
        assert "Traceback" not in proc.stderr

    daemon = DaemonProcess(recorded).start(wait_connected=False)
    assert daemon.proc is not None
    assert daemon.proc.wait(60) == 1
    log = daemon.log_text()
    assert f"journal row {seq}" in log and "refusing to start" in log
    assert "Traceback" not in log


def test_a_removed_inspection_fails_verify(recorded: Path) -> None:
    tamper(recorded, "DELETE FROM journal WHERE kind = 'inspection'", "DELETE FROM snapshots")
    proc = cli("logbook", "verify", "--config", str(recorded))
    assert proc.returncode == 1, proc.stdout
    assert "has no journal row: removed or altered outside stormwatch" in proc.stderr


def test_another_inspector_written_into_the_row_fails_verify(recorded: Path) -> None:
    tamper(recorded, "UPDATE journal SET body = json_set(body, '$.inspector', 'M. Chen')"
                     " WHERE kind = 'inspection'")
    proc = cli("logbook", "verify", "--config", str(recorded))
    assert proc.returncode == 1, proc.stdout
    assert "by J. Rivera) has no journal row" in proc.stderr


def test_an_honest_journal_verifies_and_the_daemon_starts(recorded: Path) -> None:
    proc = cli("logbook", "verify", "--config", str(recorded))
    assert proc.returncode == 0, proc.stderr
    daemon = DaemonProcess(recorded).start(wait_connected=False)
    try:
        time.sleep(3)
        assert daemon.running, daemon.log_text()
    finally:
        assert daemon.stop() == 0

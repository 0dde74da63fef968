"""Disk full: the daemon's state directory on a small tmpfs.

When a journal commit fails with "database or disk is full", the daemon must
not acknowledge (the broker keeps the messages), log one clear ERROR, show it
in ``status``, retry with backoff, resume when space returns, and lose
nothing: no traceback, no crash loop. Here the real daemon process writes to a
real 16 MiB tmpfs, which a filler file fills up; the broker is a real
Mosquitto.

The test mounts the tmpfs itself (tests run as root in CI); it is skipped,
saying why, only where mounting is impossible (not root, or no CAP_SYS_ADMIN
in a container).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ..conftest import MakeMosquitto
from ..support.daemonkit import (
    DaemonProcess,
    Publisher,
    journal_count,
    store_of,
    wait_until,
    write_config,
)
from ..support.diskfull import Readings, fill, status

pytestmark = pytest.mark.integration












def journaled(cfg: Path) -> list[int]:
    with store_of(cfg) as store:
        return [r.body["ts_ms"] for r in store.journal.after(0, limit=100_000)
                if r.kind == "reading"]


def test_disk_full_holds_acknowledgements_and_resumes_losing_nothing(
        tmp_path: Path, small_state: Path, make_mosquitto: MakeMosquitto) -> None:
    broker = make_mosquitto()
    cfg = write_config(tmp_path, broker.port)
    daemon = DaemonProcess(cfg)
    readings = Readings(int(time.time()) - 6 * 3600)
    try:
        daemon.start()
        pub = Publisher(broker.port)
        readings.send(pub, 5)
        wait_until(lambda: journal_count(cfg) == 5, 20, "the first readings")

        # 1. Full while the daemon runs: it holds the messages, says so once, and
        #    takes them in when there is space again.
        filler = fill(small_state)
        full = readings.until_full(pub, cfg)
        assert full["ingest"]["store_error"] and "full" in full["ingest"]["store_error"]
        offset = len(daemon.log_text())
        readings.send(pub, 20)  # more while it waits: the broker keeps them
        # A retry fails meanwhile (the daemon logs each failed retry at debug level).
        wait_until(lambda: "the store still refuses writes" in daemon.log_text()[offset:],
                   30, "a failed retry")
        assert daemon.running
        held = len(readings.sent) - journal_count(cfg)
        assert held >= 20
        filler.unlink()
        wait_until(lambda: journal_count(cfg) == len(readings.sent), 60,
                   "the held readings journaled once the disk has space")
        wait_until(lambda: status(cfg)["ingest"]["disk_full_since"] is None, 20,
                   "status to clear the disk-full state")
        log = daemon.log_text()
        assert log.count("the disk is full") == 1, log
        assert "the store takes writes again" in log
        assert "Traceback" not in log

        # 2. Full, then the daemon is killed: what it held was never acknowledged,
        #    so the broker sends it again to the next start.
        filler = fill(small_state)
        readings.until_full(pub, cfg)
        readings.send(pub, 10)
        daemon.kill()
        filler.unlink()
        daemon.start()
        wait_until(lambda: journal_count(cfg) == len(readings.sent), 60,
                   "every reading journaled after the restart")

        # 3. Started on a full disk (after a clean stop SQLite has no WAL file left and
        #    cannot make one): it waits for the store instead of crash-looping.
        assert daemon.stop() == 0
        filler = fill(small_state)
        daemon.start(wait_connected=False)
        wait_until(lambda: "cannot open the store" in daemon.log_text(), 30, "the ERROR")
        readings.send(pub, 10)  # queued by the broker for the daemon's session
        # Not a guess: lets the real backoff run (first retry 1 s after the ERROR); the
        # daemon reports no attempt at opening the store but the first, so no wait can.
        time.sleep(2.0)
        assert daemon.running
        filler.unlink()
        wait_until(lambda: journal_count(cfg) == len(readings.sent), 60,
                   "every reading journaled once the store opens")
        pub.close()
        assert daemon.stop() == 0
        assert sorted(journaled(cfg)) == sorted(readings.sent)  # each exactly once
        log = daemon.log_text()
        assert log.count("cannot open the store") == 1 and "the disk is full" in log
        assert "Traceback" not in log
    finally:
        daemon.close()

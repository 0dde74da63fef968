"""Node to daemon, end to end: a real ``stormwatch-node`` with
the ``csv`` driver publishes 5 000 readings through a real Mosquitto to the real daemon.

Halfway through, the broker stops; while it is down the node is SIGKILLed and
started again on the same buffer; then the broker comes back on the same port
with its persistence, so the daemon's session (and what was queued in it)
survives. Afterwards the daemon's journal holds every row of the card exactly
once, with its own time and values, and the daemon's events are those of
``replay`` of the same file. A node's ``buffered`` and ``dropped`` reach
``stormwatch status --json``.

The readings are one a minute per sensor ending a minute ago, so they are
within the daemon's lateness bound (7 days by the wall clock) and never in the
future; the csv driver stamps readings with the card's times, so the node's
clock-sanity rule (``sensors/clock.py``) does not hold them back.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from monitor.config.file import load_config
from monitor.store import Store
from monitor.views.replay import replay

from ..conftest import MakeMosquitto
from ..support.daemonkit import Daemons, cli, journal_count, wait_until, write_config
from ..support.nodekit import PREFIX, SITE, buffer_counts, write_node_config
from ..support.services import publish

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

#: The sensors of ``daemonkit.write_config``'s site (a gauge, a turbidity pair, a trap).
KINDS = {"rg1": "rain", "tb-up": "turbidity", "tb-down": "turbidity", "trap1-depth": "sediment"}
FIELD = {"rain": "tips_total", "turbidity": "ntu", "sediment": "depth_in"}
#: One reading a minute per sensor: 1 250 minutes × 4 sensors = 5 000 readings.
MINUTES = 1250
TOTAL = MINUTES * len(KINDS)
#: The card is read 6 000 times faster than real time (about 400 readings a second),
#: so the outage and the kill fall while the node is still reading it.
SPEED = 6000
#: Messages journaled (readings, and a few statuses) before the broker is stopped.
BEFORE_OUTAGE = 1500
#: Readings the node commits while offline, before the kill and again after its restart.
OFFLINE_STEP = 400

# --------------------------------------------------------------------------- the card

Row = tuple[str, int, float]  # (sensor, ts_ms, value of its field)


def _card(path: Path, end_s: int) -> list[Row]:
    """A replay CSV of every sensor, minute by minute up to ``end_s``; its rows.

    A storm of 1.00 in (one tip every two minutes for 200 minutes) qualifies at
    0.50 in and ends; tb-down runs 40 NTU above tb-up for four hours around it
    (a turbidity contrast); the trap fills from 10 in past 40 % and 50 % of its
    volume. The storm clock's first reminder (due − 6 h) falls half an hour before
    the card's end and the next (due − 1 h) four and a half hours after it, so the
    daemon, which ticks on the wall clock, and ``replay``, which ticks at the last
    reading, must agree.
    """
    start_s = end_s - 60 * (MINUTES - 1)
    lines = ["ts,site,sensor,tips_total,ntu,depth_in"]
    rows: list[Row] = []
    tips = 500  # a logger's counter, not zero: the node publishes it as it finds it
    for m in range(MINUTES):
        t = start_s + 60 * m
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
        if 40 <= m < 240 and m % 2 == 0:
            tips += 1
        up = round(10 + (m % 7) * 0.25, 2)
        down = round(up + (40 + m % 5 if 60 <= m < 300 else (m % 3) * 0.5), 2)
        depth = round(10 + m * 0.024, 2)
        lines += [f"{stamp},{SITE},rg1,{tips},,", f"{stamp},{SITE},tb-up,,{up},",
                  f"{stamp},{SITE},tb-down,,{down},", f"{stamp},{SITE},trap1-depth,,,{depth}"]
        rows += [("rg1", t * 1000, tips), ("tb-up", t * 1000, up), ("tb-down", t * 1000, down),
                 ("trap1-depth", t * 1000, depth)]
    path.write_text("\n".join(lines) + "\n")
    return rows


# --------------------------------------------------------------------------- the node


def _start_node(config_path: Path, log_path: Path) -> subprocess.Popen[bytes]:
    log = open(log_path, "ab")  # noqa: SIM115 - handed to the child
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "sensors.cli", "--config", str(config_path),
             "--log-level", "debug"], stdout=log, stderr=log, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        log.close()


def _committed_at_least(db: Path, n: int) -> Callable[[], bool]:
    return lambda: buffer_counts(db)[1] >= n


# --------------------------------------------------------------------------- the daemon


def _journal(config_path: Path) -> list[dict[str, Any]]:
    """The bodies of the readings in the daemon's journal (status messages left out)."""
    with Store(config_path.parent / "state" / "stormwatch.db", readonly=True) as store:
        rows = store.journal.after(0, limit=10 * TOTAL)
    return [r.body for r in rows if r.kind == "reading" and r.body.get("kind") != "status"]


def _plain(event: dict[str, Any]) -> dict[str, Any]:
    # As tests/daemon/test_season.py: ``revision`` counts the daemon's revisions of an
    # event, ``entered_at`` is when an inspection reached it.
    return {k: v for k, v in event.items() if k not in ("revision", "entered_at")}


def _order(event: dict[str, Any]) -> tuple[str, str, str]:
    return (event["at"], event["type"], event["id"])


def _daemon_events(config_path: Path) -> list[dict[str, Any]]:
    with Store(config_path.parent / "state" / "stormwatch.db", readonly=True) as store:
        return sorted((_plain(e.to_json()) for e in store.events.current()), key=_order)


def _status(config_path: Path) -> dict[str, Any]:
    out = cli("status", "--config", str(config_path), "--json")
    assert out.returncode == 0, out.stderr
    status: dict[str, Any] = json.loads(out.stdout)
    return status


def _sensors_status(config_path: Path) -> dict[str, dict[str, Any]]:
    sensors: dict[str, dict[str, Any]] = _status(config_path)["sites"][SITE]["sensors"]
    return sensors


# --------------------------------------------------------------------------- the tests


def test_a_node_through_an_outage_and_a_sigkill_delivers_every_reading_once(
        tmp_path: Path, make_mosquitto: MakeMosquitto) -> None:
    broker = make_mosquitto()  # persistence on (tests/support/services.py): sessions survive a stop
    cfg = write_config(tmp_path, broker.port)
    card = tmp_path / "card.csv"
    rows = _card(card, int(time.time()) // 60 * 60 - 60)
    assert len(rows) == TOTAL
    csv = {"driver": "csv", "file": str(card), "speed": SPEED}
    node_yaml, node_config = write_node_config(
        tmp_path, [{"id": s, "kind": k, **csv} for s, k in KINDS.items()], port=broker.port,
        status_every_s=1, broker={"reconnect_max_s": 1},
        buffer={"max_mb": 16, "max_rate_per_s": 1000, "max_inflight": 100})
    db = node_config.buffer.path
    node_log = tmp_path / "node.log"
    children: list[subprocess.Popen[bytes]] = []
    with Daemons() as daemons:
        daemon = daemons.start(cfg)
        try:
            children.append(_start_node(node_yaml, node_log))
            wait_until(lambda: journal_count(cfg) >= BEFORE_OUTAGE, 60,
                       f"{BEFORE_OUTAGE} readings journaled before the outage")

            broker.stop()
            at_stop = buffer_counts(db)[1]
            wait_until(_committed_at_least(db, at_stop + OFFLINE_STEP), 30,
                       "the node to commit readings while the broker is down")
            children[0].send_signal(signal.SIGKILL)
            children[0].wait(10)
            waiting, at_kill = buffer_counts(db)
            assert waiting > 0, "killed with nothing waiting in the buffer: proves nothing"
            assert at_kill < TOTAL, (
                f"killed after the whole card was committed ({at_kill} readings): the kill "
                "must interrupt the reading of the card")

            children.append(_start_node(node_yaml, node_log))
            wait_until(_committed_at_least(db, at_kill + OFFLINE_STEP), 30,
                       "the restarted node to go on reading the card while the broker is down")
            assert children[1].poll() is None, node_log.read_text()[-3000:]
            broker.start()  # the same port, the same persistence database

            wait_until(lambda: len(_journal(cfg)) >= TOTAL, 60,
                       f"all {TOTAL} readings journaled", interval_s=0.5)
            wait_until(lambda: buffer_counts(db) == (0, TOTAL), 30,
                       "every reading committed by the node and acknowledged by the broker")

            # Every row of the card exactly once, with its own time and value.
            journal = _journal(cfg)
            counts = Counter(body["sensor"] for body in journal)
            assert counts == Counter({s: MINUTES for s in KINDS}), (
                f"readings per sensor in the journal: {dict(counts)}, the card has "
                f"{MINUTES} of each")
            got = Counter((b["sensor"], b["ts_ms"], b[FIELD[KINDS[b["sensor"]]]])
                          for b in journal)
            want = Counter(rows)
            assert got == want, (
                f"journal vs card: missing {sorted(want - got)[:5]}, "
                f"extra {sorted(got - want)[:5]}")
            for sensor in KINDS:
                seqs = sorted(b["seq"] for b in journal if b["sensor"] == sensor)
                assert seqs == list(range(seqs[0], seqs[0] + MINUTES)), (
                    f"{sensor}: seqs are not one run without gaps or repeats")
            with Store(cfg.parent / "state" / "stormwatch.db", readonly=True) as store:
                rejects = store.journal.reject_counts()
            assert rejects == {}, f"the daemon rejected messages: {rejects}"

            # The daemon's events are those of replay of the same card.
            expected = sorted((_plain(e.to_json()) for e in replay(load_config(cfg), card)
                               .events()), key=_order)
            kinds = {e["type"] for e in expected}
            assert {"storm_qualified", "storm_ended", "turbidity_contrast", "trap_fill",
                    "trap_cleanout_required", "inspection_due_soon"} <= kinds, kinds
            try:
                wait_until(lambda: _daemon_events(cfg) == expected, 30,
                           "the daemon's events to equal replay's", interval_s=0.5)
            except AssertionError:
                got_events = _daemon_events(cfg)
                only_daemon = [e for e in got_events if e not in expected]
                only_replay = [e for e in expected if e not in got_events]
                raise AssertionError(
                    f"daemon and replay differ: only in the daemon {only_daemon}; only in "
                    f"replay {only_replay}") from None

            # The node's status: nothing buffered, nothing dropped, every reading counted.
            wait_until(lambda: all(
                (v["buffered"], v["dropped"], v["readings"]) == (0, 0, MINUTES)
                for v in _sensors_status(cfg).values()), 30,
                "status --json to show buffered 0, dropped 0 and every reading per sensor",
                interval_s=1.0)

            children[1].send_signal(signal.SIGTERM)
            assert children[1].wait(15) == 0, node_log.read_text()[-3000:]
            assert daemon.stop() == 0
        finally:
            for child in children:
                if child.poll() is None:
                    child.kill()
                    child.wait(10)
        log = daemon.log_text()
    assert "Traceback" not in log, log[-3000:]
    assert "Traceback" not in node_log.read_text(), node_log.read_text()[-3000:]


def test_a_node_status_shows_buffered_and_dropped_in_status_json(
        tmp_path: Path, make_mosquitto: MakeMosquitto) -> None:
    broker = make_mosquitto()
    cfg = write_config(tmp_path, broker.port)
    now_s = int(time.time())

    def status(sensor: str, at_s: int, **fields: int) -> None:
        body = {"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at_s)), **fields}
        topic = f"{PREFIX}/{SITE}/{sensor}/status"
        assert publish("127.0.0.1", broker.port, topic, json.dumps(body).encode()), (
            f"the broker refused {topic}")

    with Daemons() as daemons:
        daemon = daemons.start(cfg)
        status("rg1", now_s - 20, buffered=17, dropped=3, uptime_s=100)
        status("rg1", now_s - 5, buffered=2, dropped=5, uptime_s=115)
        status("rg1", now_s - 10, buffered=99, dropped=0, uptime_s=110)  # late: older
        status("tb-up", now_s - 5, buffered=0, dropped=0, uptime_s=115)
        wait_until(lambda: journal_count(cfg) == 4, 30, "the status messages journaled")
        want = {"rg1": (2, 5), "tb-up": (0, 0), "tb-down": (None, None),
                "trap1-depth": (None, None)}

        def shown() -> dict[str, tuple[Any, Any]]:
            return {s: (v["buffered"], v["dropped"]) for s, v in _sensors_status(cfg).items()}

        try:
            wait_until(lambda: shown() == want, 30,
                       "status --json to show the latest status of each sensor",
                       interval_s=1.0)
        except AssertionError:
            raise AssertionError(f"status --json shows (buffered, dropped) {shown()}, "
                                 f"expected {want}") from None
        assert daemon.stop() == 0

"""Delivery through brokers that lose what they acknowledged: every reading journaled once.

A PUBACK only says the broker holds a message. Each scenario runs the real
``stormwatch-node`` (the ``csv`` driver, two sensors, ``TOTAL`` readings)
and the real daemon (``stormwatch run``) through real Mosquitto brokers, breaks
the MQTT hop mid-burst in one of the ways that lost acknowledged readings
before the node waited for the daemon's ``journaled`` confirmation, and
asserts counts: the readings the node numbered (published, ``seq`` by
``seq``) are exactly the readings in the daemon's journal, each once, and the
node's buffer empties only after that.

(a) the broker, persistence off, SIGKILLed mid-burst and restarted;
(b) the broker's persistence location unwritable (under a regular file:
    Mosquitto runs, logs "Error saving in-memory database" at every save and
    loses its queues at a restart), restarted while the daemon was down;
(c) two brokers bridged, the node on one and the daemon on the other; the
    node's broker SIGKILLed mid-burst while it still forwards its backlog;
(d) the daemon SIGKILLed with readings journaled and not yet confirmed;
(e) a daemon with confirmations off: the node falls back to deleting on PUBACK
    (``confirm: puback`` in its status and in the daemon's ``status --json``).

The counts go into the suite's summary (``conftest.py``); ``resent`` in each
test's output is how many readings the node published again.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from monitor.store import Store
from tests.support.daemonkit import ROOT, DaemonProcess, Daemons, cli, wait_until, write_config
from tests.support.nodekit import SITE, buffer_counts, write_node_config
from tests.support.scenarios import ScenarioCounts
from tests.support.services import Mosquitto

from ..conftest import MakeMosquitto

pytestmark = pytest.mark.integration

#: Two sensors, one reading a minute each from the card.
SENSORS = {"rg1": ("rain", "tips_total"), "tb-up": ("turbidity", "ntu")}
MINUTES = 500
TOTAL = MINUTES * len(SENSORS)
#: The card is read 6 000 times faster than real time: 200 readings a second.
SPEED = 6000
#: Readings journaled before the failure: mid-burst.
BEFORE_FAILURE = TOTAL // 4


def _card(path: Path) -> None:
    end_s = int(time.time()) // 60 * 60 - 60
    lines = ["ts,site,sensor,tips_total,ntu"]
    for m in range(MINUTES):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end_s - 60 * (MINUTES - 1 - m)))
        lines += [f"{stamp},{SITE},rg1,{m // 3},", f"{stamp},{SITE},tb-up,,{10 + m % 7}.5"]
    path.write_text("\n".join(lines) + "\n")


def _node_config(tmp_path: Path, port: int, **top: Any) -> Path:
    card = tmp_path / "card.csv"
    _card(card)
    path, _ = write_node_config(
        tmp_path, [{"id": s, "kind": k, "driver": "csv", "file": str(card), "speed": SPEED}
                   for s, (k, _) in SENSORS.items()],
        port=port, status_every_s=0.5, broker={"reconnect_max_s": 1},
        buffer={"max_mb": 16, "max_rate_per_s": 200, "max_inflight": 50},
        **{"confirm_after_s": 2, "confirm_fallback_minutes": 10, **top})
    return path


@contextmanager
def _node(config_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    log = open(config_path.parent / "node.log", "ab")  # noqa: SIM115 - handed to the child
    child = subprocess.Popen(
        [sys.executable, "-m", "sensors.cli", "--config", str(config_path), "--log-level",
         "debug"], stdout=log, stderr=log, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    log.close()
    try:
        yield child
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(15)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait(10)


def _journaled(cfg: Path) -> Counter[tuple[str, int]]:
    """Each reading in the daemon's journal by (sensor, seq), with how often it is there."""
    db = cfg.parent / "state" / "stormwatch.db"
    if not db.exists():
        return Counter()
    with Store(db, readonly=True) as store:
        rows = store.journal.after(0, limit=10 * TOTAL)
    return Counter((r.body["sensor"], r.body["seq"]) for r in rows
                   if r.kind == "reading" and r.body.get("kind") != "status")


def _resent(tmp_path: Path) -> int:
    text = (tmp_path / "node.log").read_text(errors="replace")
    return sum(int(n) for n in re.findall(r"(\d+) reading\(s\) not confirmed", text))


def _settled(tmp_path: Path, cfg: Path, counts: ScenarioCounts, timeout_s: float = 90,
             resent_at_least: int = 100) -> None:
    """Wait until every reading of the card is journaled and the node's buffer is empty;
    then assert published = journaled, each once, and (``resent_at_least``) that the
    node had to send readings again: the broker lost some it acknowledged."""
    db = tmp_path / "buffer.db"
    wait_until(lambda: len(_journaled(cfg)) >= TOTAL, timeout_s, f"all {TOTAL} journaled",
               interval_s=0.5)
    wait_until(lambda: buffer_counts(db) == (0, TOTAL), 60,
               "the node to delete every reading (confirmed)", interval_s=0.5)
    journaled = _journaled(cfg)
    counts.published, counts.journaled = buffer_counts(db)[1], sum(journaled.values())
    print(f"published={counts.published} journaled={counts.journaled} "
          f"resent={_resent(tmp_path)}")
    assert counts.published == TOTAL
    if resent_at_least:
        assert _resent(tmp_path) >= resent_at_least, "nothing was sent again: nothing lost?"
    assert max(journaled.values()) == 1, [k for k, n in journaled.items() if n > 1][:5]
    for sensor in SENSORS:
        seqs = sorted(q for s, q in journaled if s == sensor)
        assert seqs == list(range(seqs[0], seqs[0] + MINUTES)), sensor  # none missing


def _published(db: Path) -> int:
    """Rows the broker acknowledged that the node still holds (not yet confirmed)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return int(conn.execute("SELECT count(*) FROM readings WHERE published = 1")
                   .fetchone()[0])
    finally:
        conn.close()


def _acknowledged_more(tmp_path: Path, n: int) -> None:
    """Wait until the broker acknowledged ``n`` readings more than now that nobody
    confirmed (they are only in the broker, and in the node's buffer)."""
    db = tmp_path / "buffer.db"
    before = _published(db)
    wait_until(lambda: _published(db) >= before + n, 30, f"{n} more readings acknowledged",
               interval_s=0.05)


def _mid_burst(cfg: Path) -> None:
    wait_until(lambda: len(_journaled(cfg)) >= BEFORE_FAILURE, 60, "readings journaled",
               interval_s=0.05)
    assert len(_journaled(cfg)) < TOTAL * 3 // 4, "the burst was nearly over: proves nothing"


@contextmanager
def _running(cfg: Path, node_yaml: Path) -> Iterator[tuple[Daemons, DaemonProcess]]:
    """The daemon, then the node: a daemon that never connected has no session yet for
    the broker to queue readings in."""
    with Daemons() as daemons:
        daemon = daemons.start(cfg)
        with _node(node_yaml):
            yield daemons, daemon


def test_a_broker_without_persistence_killed_mid_burst(
        tmp_path: Path, make_mosquitto: MakeMosquitto, counts: ScenarioCounts) -> None:
    broker = make_mosquitto(persistence=False)
    cfg = write_config(tmp_path, broker.port)
    with _running(cfg, _node_config(tmp_path, broker.port)) as (daemons, daemon):
        _mid_burst(cfg)
        daemon.kill()  # a crash: the broker queues the node's readings for it ...
        _acknowledged_more(tmp_path, 100)
        broker.kill()  # ... acknowledged to the node, and lost with the power
        broker.start()
        daemons.start(cfg)
        _settled(tmp_path, cfg, counts)


class UnwritableMosquitto(Mosquitto):
    """A broker whose ``persistence_location`` lies under a regular file: it runs, and
    every save fails with "Not a directory" (root ignores file modes, so a mode
    would not stop it)."""

    def _prepare(self) -> list[str]:
        args = super()._prepare()
        blocker = self.workdir / "blocker"
        blocker.touch()
        self.conf_path.write_text(self.config_text().replace(
            f"persistence_location {self.persistence_dir}",
            f"persistence_location {blocker / 'data'}"), encoding="utf-8")
        return args


def test_b_a_broker_that_cannot_write_its_persistence_restarted(
        tmp_path: Path, counts: ScenarioCounts) -> None:
    broker = UnwritableMosquitto(tmp_path / "broker").start()
    try:
        cfg = write_config(tmp_path, broker.port)
        with _running(cfg, _node_config(tmp_path, broker.port)) as (daemons, daemon):
            _mid_burst(cfg)
            daemon.stop()  # the broker queues the node's readings in the daemon's session
            _acknowledged_more(tmp_path, 100)
            broker.restart()  # ... and loses them: it could not save them
            assert "Error saving in-memory database" in broker.log_text()
            daemons.start(cfg)
            _settled(tmp_path, cfg, counts)
    finally:
        broker.close()


def test_c_bridged_brokers_the_nodes_killed_mid_burst(
        tmp_path: Path, make_mosquitto: MakeMosquitto, counts: ScenarioCounts) -> None:
    central = make_mosquitto()
    # The site's broker forwards readings and statuses up and confirmations down; what
    # it acknowledged to the node and has not yet forwarded dies with it.
    site = make_mosquitto(persistence=False, extra_config=[
        "connection central",
        f"address 127.0.0.1:{central.port}",
        "cleansession false",
        "bridge_protocol_version mqttv311",
        "restart_timeout 1",
        "topic stormwatch/v1/+/+/reading out 1",
        "topic stormwatch/v1/+/+/status out 1",
        "topic stormwatch/v1/+/+/journaled in 1",
    ])
    cfg = write_config(tmp_path, central.port)
    with _running(cfg, _node_config(tmp_path, site.port)):
        _mid_burst(cfg)
        central.stop()  # the uplink is down: the site's broker queues for the bridge ...
        _acknowledged_more(tmp_path, 100)
        site.kill()     # ... what it acknowledged to the node, and loses it
        central.start()
        site.start()
        _settled(tmp_path, cfg, counts)


def _retained_mark(port: int, sensor: str) -> int | None:
    """The ``seq`` of the retained confirmation of ``sensor`` on the broker, if any."""
    got: list[int] = []
    client = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    client.on_message = lambda c, u, msg: got.append(json.loads(msg.payload)["seq"])
    client.connect("127.0.0.1", port)
    client.subscribe(f"stormwatch/v1/{SITE}/{sensor}/journaled", qos=1)
    deadline = time.monotonic() + 2
    while not got and time.monotonic() < deadline:
        client.loop(0.1)
    client.disconnect()
    return got[0] if got else None


def test_d_the_daemon_killed_between_commit_and_confirmation(
        tmp_path: Path, make_mosquitto: MakeMosquitto, counts: ScenarioCounts) -> None:
    broker = make_mosquitto()
    cfg = write_config(tmp_path, broker.port)
    with _running(cfg, _node_config(tmp_path, broker.port)) as (daemons, daemon):
        _mid_burst(cfg)
        daemon.kill()
        top = max(q for s, q in _journaled(cfg) if s == "rg1")
        mark = _retained_mark(broker.port, "rg1")
        assert mark is None or mark < top, "killed with everything confirmed: proves nothing"
        print(f"at the kill: rg1 journaled up to {top}, confirmed up to {mark}")
        daemons.start(cfg)
        _settled(tmp_path, cfg, counts, resent_at_least=0)  # what it proves: each once


def test_e_confirmations_off_the_node_falls_back_to_puback(
        tmp_path: Path, make_mosquitto: MakeMosquitto, counts: ScenarioCounts) -> None:
    broker = make_mosquitto()
    cfg = write_config(tmp_path, broker.port)
    cfg.write_text(cfg.read_text().replace(
        f"port: {broker.port},", f"port: {broker.port}, confirm: false,", 1))
    node_yaml = _node_config(tmp_path, broker.port, confirm_after_s=1000,
                             confirm_fallback_minutes=0.05)

    def shown() -> dict[str, Any]:
        out = cli("status", "--config", str(cfg), "--json")
        assert out.returncode == 0, out.stderr
        sensors: dict[str, Any] = json.loads(out.stdout)["sites"][SITE]["sensors"]
        return {s: sensors[s]["confirm"] for s in SENSORS}

    with _running(cfg, node_yaml):
        _settled(tmp_path, cfg, counts, resent_at_least=0)
        # The node says its mode in its next status (every 0.5 s) and the daemon records
        # what it heard at its next tick (5 s): wait for both, not for a lucky stop.
        wait_until(lambda: shown() == dict.fromkeys(SENSORS, "puback"), 30,
                   "status --json to show confirm: puback", interval_s=1)
    log = (tmp_path / "node.log").read_text(errors="replace")
    assert sum("no confirmation from the daemon" in line
               for line in log.splitlines()) == len(SENSORS)  # once per sensor
    assert _resent(tmp_path) == 0
    assert shown() == dict.fromkeys(SENSORS, "puback")  # and kept at the stop

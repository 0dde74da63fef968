"""The node runtime against a real Mosquitto: outages, the buffer bound, SIGKILL.

No hardware here: the node reads ``csv`` sensors (the replay format), which is
how a site replays a logger's card and how these tests drive it. A subscriber
with a persistent session records what reaches the broker, and every message
is checked with the daemon's own parser.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from monitor.config import Config
from sensors.config import NodeConfig
from sensors.configfile import read_password
from sensors.link import MqttLink
from sensors.node import Node

from ..conftest import MakeMosquitto
from ..support.nodekit import (
    SITE,
    Subscriber,
    accepted,
    buffer_counts,
    daemon_config,
    running,
    unacknowledged,
    wait_until,
    write_node_config,
)
from ..support.services import make_password_file

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _card(path: Path, rows: int, start_s: int, sensors: tuple[str, ...] = ("rg2",)) -> None:
    """A replay file: per minute, rg2's counter and (if asked) tb-up's turbidity."""
    lines = ["ts,site,sensor,tips_total,ntu"]
    for i in range(rows):
        ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start_s + 60 * i))
        for sensor in sensors:
            if sensor == "rg2":
                lines.append(f"{ts},{SITE},rg2,{1000 + i},")
            else:
                lines.append(f"{ts},{SITE},{sensor},,{10 + i % 7}.5")
    path.write_text("\n".join(lines) + "\n")


def _committed_at_least(db: Path, value: int) -> Callable[[], bool]:
    """Whether ``value`` readings were ever committed to the buffer."""
    return lambda: buffer_counts(db)[1] >= value


def _unacknowledged_at_least(db: Path, value: int) -> bool:
    return unacknowledged(db) >= value


def _by_seq(daemon: Config, messages: list[tuple[str, bytes]]) -> dict[tuple[str, int], bytes]:
    """Each reading by (sensor, seq), checked with the daemon's parser; a seq seen twice
    must have the same bytes both times (a redelivery, never a new reading)."""
    out: dict[tuple[str, int], bytes] = {}
    for topic, payload in messages:
        reading = accepted(daemon, topic, payload)
        assert reading.seq is not None
        key = (reading.sensor, reading.seq)
        assert out.setdefault(key, payload) == payload, f"{key} published with two bodies"
    return out


def _node(config: NodeConfig) -> Node:
    link = MqttLink(config, None, config.buffer.max_inflight, extra_queue=8, reconnect_max_s=1)
    return Node(config, link=link)


def test_backlog_after_a_broker_outage_arrives_in_order_with_original_times(
        tmp_path: Path, make_mosquitto: MakeMosquitto) -> None:
    broker = make_mosquitto()
    sub = Subscriber(broker.port).start()
    daemon = daemon_config(tmp_path)
    start_s = int(time.time()) - 3600
    _card(tmp_path / "card.csv", 40, start_s, ("rg2", "tb-up"))
    csv = {"kind": "rain", "driver": "csv", "file": str(tmp_path / "card.csv"), "speed": 1200}
    _, config = write_node_config(
        tmp_path, [{"id": "rg2", **csv}, {"id": "tb-up", **csv, "kind": "turbidity"}],
        port=broker.port, status_every_s=0.2,
        buffer={"max_inflight": 5, "max_rate_per_s": 40})
    db = config.buffer.path
    try:
        with running(_node(config)):
            sub.wait_for(lambda s: len(s.readings()) >= 10, what="the first readings")
            broker.stop()
            committed = buffer_counts(db)[1]
            wait_until(lambda: buffer_counts(db)[1] >= committed + 16,
                       what="readings while offline")
            assert buffer_counts(db)[0] >= 10               # they wait in the buffer
            broker.start()
            sub.wait_for(lambda s: len(_by_seq(daemon, s.readings())) == 80, what="all 80")
            wait_until(lambda: unacknowledged(db) == 0, what="every PUBACK")
            # No daemon confirmed them: acknowledged by the broker, all still held.
            assert buffer_counts(db)[0] == 80
    finally:
        sub.stop()
    readings = _by_seq(daemon, sub.readings())
    for sensor in ("rg2", "tb-up"):
        seqs = sorted(seq for s, seq in readings if s == sensor)
        assert seqs == list(range(seqs[0], seqs[0] + 40))
        times = [json.loads(readings[(sensor, q)])["ts"] for q in seqs]
        assert times == [time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start_s + 60 * i))
                         for i in range(40)]          # the card's own times, in seq order
        first_arrival: list[int] = []
        for topic, payload in sub.readings():
            seq = json.loads(payload)["seq"]
            if topic.split("/")[3] == sensor and seq not in first_arrival:
                first_arrival.append(seq)
        assert first_arrival == seqs                  # in order, across the outage
    statuses = sub.statuses()
    for topic, body in statuses:
        accepted(daemon, topic, json.dumps(body).encode())
    assert max(body["buffered"] for _, body in statuses) >= 2  # the backlog showed in status


def test_past_the_bound_the_oldest_are_dropped_and_the_newest_all_arrive(
        tmp_path: Path, make_mosquitto: MakeMosquitto) -> None:
    broker = make_mosquitto()
    sub = Subscriber(broker.port).start()
    broker.stop()                                     # the node starts with the link down
    daemon = daemon_config(tmp_path)
    _card(tmp_path / "card.csv", 150, int(time.time()) - 3 * 3600)
    _, config = write_node_config(
        tmp_path, [{"id": "rg2", "kind": "rain", "driver": "csv",
                    "file": str(tmp_path / "card.csv"), "speed": "max"}],
        port=broker.port, status_every_s=0.2,
        buffer={"max_mb": 6 / 1024, "max_inflight": 100, "max_rate_per_s": 500})
    db = config.buffer.path
    try:
        with running(_node(config)):
            wait_until(lambda: buffer_counts(db)[1] == 150, what="the card to be committed")
            kept = buffer_counts(db)[0]
            assert 20 < kept < 60
            broker.start()
            sub.wait_for(lambda s: any(b["dropped"] for _, b in s.statuses())
                         and len(_by_seq(daemon, s.readings())) >= kept, what="the backlog")
            wait_until(lambda: unacknowledged(db) == 0, what="every PUBACK")
    finally:
        sub.stop()
    seqs = sorted(seq for _, seq in _by_seq(daemon, sub.readings()))
    assert len(seqs) == kept
    dropped = {b["dropped"] for _, b in sub.statuses()}
    assert dropped == {150 - kept}                    # the count, in every status
    counters = sorted(json.loads(p)["tips_total"] for _, p in sub.readings())
    assert counters[-1] == 1149 and counters[0] == 1150 - kept  # the newest, all of them
    assert seqs == list(range(seqs[0], seqs[0] + kept))


def _start_child(config_path: Path, log_path: Path) -> subprocess.Popen[bytes]:
    log = open(log_path, "ab")  # noqa: SIM115 - handed to the child
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "sensors.cli", "--config", str(config_path),
             "--log-level", "debug"], stdout=log, stderr=log, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        log.close()


ROWS = 400


def test_sigkill_at_any_moment_loses_nothing_and_never_changes_a_seq(
        tmp_path: Path, make_mosquitto: MakeMosquitto) -> None:
    broker = make_mosquitto()
    sub = Subscriber(broker.port).start()
    daemon = daemon_config(tmp_path)
    start_s = int(time.time()) - 60 * ROWS - 600
    _card(tmp_path / "card.csv", ROWS, start_s)
    # Rows are committed faster (200/s) than published (60/s), so a kill finds both
    # readings committed and not yet acknowledged, and rows not yet read.
    path, config = write_node_config(
        tmp_path, [{"id": "rg2", "kind": "rain", "driver": "csv",
                    "file": str(tmp_path / "card.csv"), "speed": 12000}],
        port=broker.port, buffer={"max_inflight": 10, "max_rate_per_s": 60})
    log_path = tmp_path / "node.log"
    rng = random.Random(12)
    children: list[subprocess.Popen[bytes]] = []
    unacked_at_kill: list[int] = []
    try:
        for kill in range(4):                         # killed while committing and publishing
            child = _start_child(path, log_path)
            children.append(child)
            before = buffer_counts(config.buffer.path)[1]
            wait_until(_committed_at_least(config.buffer.path, before + 1),
                       what="the child to commit")
            if kill:  # the first time right after the first commit, then with a backlog
                waiting = rng.randint(1, 15)
                wait_until(partial(_unacknowledged_at_least, config.buffer.path, waiting),
                           what="a backlog")
            time.sleep(rng.uniform(0, 0.03))  # a random kill moment, not a wait for anything
            child.send_signal(signal.SIGKILL)
            child.wait(10)
            unacked_at_kill.append(unacknowledged(config.buffer.path))
        # Killed with readings committed and not yet acknowledged, before the card's end.
        assert any(unacked_at_kill), unacked_at_kill
        assert buffer_counts(config.buffer.path)[1] < ROWS, "killed too late to prove anything"
        child = _start_child(path, log_path)
        children.append(child)
        sub.wait_for(lambda s: len({json.loads(p)["seq"] for _, p in s.readings()}) >= ROWS,
                     timeout_s=30, what="every row")
        wait_until(lambda: unacknowledged(config.buffer.path) == 0, what="every PUBACK")
        child.send_signal(signal.SIGTERM)
        assert child.wait(10) == 0, log_path.read_text()
    finally:
        for c in children:
            if c.poll() is None:
                c.kill()
                c.wait(10)
        sub.stop()
    readings = _by_seq(daemon, sub.readings())       # never one seq with two bodies
    seqs = sorted(seq for _, seq in readings)
    assert seqs == list(range(seqs[0], seqs[0] + ROWS))  # nothing lost, no seq skipped
    rows: dict[str, list[Any]] = defaultdict(list)
    for seq in seqs:
        body = json.loads(readings[("rg2", seq)])
        rows["ts"].append(body["ts"])
        rows["tips_total"].append(body["tips_total"])
    # Row i of the card got seq first + i, whichever run published it.
    assert rows["ts"] == [time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start_s + 60 * i))
                          for i in range(ROWS)]
    assert rows["tips_total"] == list(range(1000, 1000 + ROWS))
    assert len(sub.readings()) >= ROWS               # (redeliveries are allowed, identical)


def test_the_password_file_is_used_and_the_password_never_logged(
        tmp_path: Path, make_mosquitto: MakeMosquitto, caplog: pytest.LogCaptureFixture) -> None:
    password = "s3cret-Pa55"
    broker = make_mosquitto(allow_anonymous=False, password_file=make_password_file(
        tmp_path / "passwd", {"branch-meadows.node-1": password}))
    (tmp_path / "card.csv").write_text("ts,tips_total\n")
    sensors = [{"id": "rg2", "kind": "rain", "driver": "csv", "file": str(tmp_path / "card.csv")}]

    def log_in(name: str, written: str) -> bool:
        """Whether the node logs in with ``written`` in its password file."""
        (tmp_path / f"{name}.pw").write_text(written)
        _, config = write_node_config(
            tmp_path, sensors, port=broker.port, name=f"{name}.yaml",
            broker={"username": "branch-meadows.node-1",
                    "password_file": str(tmp_path / f"{name}.pw")},
            buffer={"path": str(tmp_path / f"{name}.db")})
        link = MqttLink(config, read_password(config), 5, reconnect_max_s=1)
        with caplog.at_level(logging.DEBUG), running(Node(config, link=link)):
            wait_until(lambda: link.connected or "refused the connection" in caplog.text,
                       what="an answer to the login")
            return link.connected

    assert log_in("good", password + "\n")
    assert not log_in("bad", "wrong\n")
    assert "refused the connection" in caplog.text
    assert password not in caplog.text and "wrong" not in caplog.text

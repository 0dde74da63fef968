"""Stopping like a service: SIGTERM under traffic, Ctrl-C, the MQTT child's stop race.

A daemon that cannot stop while readings arrive becomes a SIGKILL under
systemd at every ``systemctl restart``; a Ctrl-C that prints a traceback breaks
the promise of no traceback for anything a user does. Each test here uses the
real daemon (or node) process and a real Mosquitto, and counts readings:
everything the broker acknowledged to the publisher is in the journal after a
restart, each once.

The race test drives the MQTT child's code (``mqttproc.ChildSide``) in this
process, with a real broker, over a pipe whose writes are slowed down, so a
stop always comes while a write is in progress: that is when closing the pipe
under the writer was a traceback in thread ``mqtt-forward``.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from monitor.config import BrokerConfig
from monitor.sources.mqttproc import ChildSide
from monitor.store import Store
from tests.conftest import MakeMosquitto
from tests.support.daemonkit import ROOT, DaemonProcess, reading_topic, wait_until, write_config
from tests.support.nodekit import Subscriber, buffer_counts, unacknowledged, write_node_config

pytestmark = pytest.mark.integration

#: What a service manager expects of a stop: well under 10 s at any traffic.
STOP_WITHIN_S = 10.0
RATE_PER_S = 20.0


class PacedPublisher(threading.Thread):
    """Publishes rg1 readings (a counter and a seq) at ``rate_per_s`` until stopped, and
    records the seq of every reading the broker acknowledged (PUBACK)."""

    def __init__(self, port: int, rate_per_s: float = RATE_PER_S) -> None:
        super().__init__(name="paced-publisher", daemon=True)
        self.rate_per_s = rate_per_s
        self.acked: set[int] = set()
        self.sent = 0
        self._mids: dict[int, int] = {}
        self._lock = threading.Lock()
        self.halt = threading.Event()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
        self.client.on_publish = self._on_publish
        self.client.connect("127.0.0.1", port, keepalive=30)
        self.client.loop_start()

    def _on_publish(self, client: Any, userdata: Any, mid: int, reason: Any,
                    properties: Any) -> None:
        with self._lock:
            seq = self._mids.pop(mid, None)
            if seq is not None and not reason.is_failure:
                self.acked.add(seq)

    def run(self) -> None:
        first_s = int(time.time())
        next_at = time.monotonic()
        seq = 0
        while not self.halt.is_set():
            seq += 1
            # One simulated second apart, starting now: never ahead of the daemon's clock.
            body = json.dumps({"ts": first_s + seq // 100, "tips_total": seq, "seq": seq})
            with self._lock:
                info = self.client.publish(reading_topic("rg1"), body.encode(), qos=1)
                self._mids[info.mid] = seq
            self.sent = seq
            next_at += 1.0 / self.rate_per_s
            self.halt.wait(max(0.0, next_at - time.monotonic()))

    def finish(self) -> set[int]:
        """Stop publishing; wait for the PUBACKs in flight; the acknowledged seqs."""
        self.halt.set()
        self.join(10)
        wait_until(lambda: not self._mids, 10, "the PUBACKs in flight")
        self.client.disconnect()
        self.client.loop_stop()
        return set(self.acked)


def journaled_seqs(config_path: Path) -> list[int]:
    """The seq of every rg1 reading in the journal, as often as it is there."""
    db = config_path.parent / "state" / "stormwatch.db"
    with Store(db, readonly=True) as store:
        rows = store.db.conn.execute(
            "SELECT body FROM journal WHERE kind = 'reading' AND sensor = 'rg1'").fetchall()
    return sorted(json.loads(body)["seq"] for (body,) in rows)


@pytest.fixture
def traffic(make_mosquitto: MakeMosquitto, tmp_path: Path) -> Iterator[tuple[Any, Path]]:
    broker = make_mosquitto()
    yield broker, write_config(tmp_path, broker.port, client_id="stormwatch-stop")


def _timed_stop(daemon: DaemonProcess, signum: int, group: bool) -> tuple[int, float]:
    assert daemon.proc is not None
    started = time.monotonic()
    if group:
        os.killpg(daemon.proc.pid, signum)
    else:
        daemon.proc.send_signal(signum)
    rc = daemon.proc.wait(60)
    daemon.proc = None
    return rc, time.monotonic() - started


@pytest.mark.parametrize("signum, group", [(signal.SIGTERM, False), (signal.SIGINT, True)],
                         ids=["sigterm", "ctrl-c to the process group"])
def test_the_daemon_stops_under_traffic_and_every_acknowledged_reading_is_journaled(
        traffic: tuple[Any, Path], signum: int, group: bool) -> None:
    broker, config_path = traffic
    daemon = DaemonProcess(config_path).start(new_session=group)
    publisher = PacedPublisher(broker.port)
    try:
        publisher.start()
        wait_until(lambda: len(journaled_seqs(config_path)) >= 40, 30, "readings journaled")
        rc, took_s = _timed_stop(daemon, signum, group)
        # The publisher goes on while the daemon is down: the broker queues for its session.
        time.sleep(1.0)
        acked = publisher.finish()
        log = daemon.log_text()
        assert rc == 0, log
        assert took_s < STOP_WITHIN_S, f"stop took {took_s:.1f} s\n{log}"
        assert "Traceback" not in log and "the MQTT process ended" not in log, log
        assert "stopping: taking no new messages" in log and "journaled and acknowledged" in log
        daemon.start()
        wait_until(lambda: set(journaled_seqs(config_path)) >= acked, 30,
                   "every acknowledged reading in the journal")
        assert daemon.stop() == 0
    finally:
        publisher.halt.set()
        daemon.close()
    seqs = journaled_seqs(config_path)
    assert len(acked) >= 60 and set(seqs) == acked, (len(acked), len(seqs))
    assert len(seqs) == len(set(seqs)), "a reading journaled twice"
    assert "Traceback" not in daemon.log_text()


class SlowWrites(Connection):
    """A pipe end whose every write waits first: a stop then finds a write in progress.
    (Not a mock: the real pipe, only slower.)"""

    def _send(self, buf: bytes, write: Any = os.write) -> None:
        time.sleep(0.2)
        super()._send(buf, write)  # type: ignore[misc]


class ChildUnderTraffic:
    """``ChildSide`` on a thread of this process, its pipe's child end slowed down, a
    reader of the parent end, and a publisher feeding the broker meanwhile."""

    def __init__(self, port: int) -> None:
        parent, child = multiprocessing.Pipe()
        self.parent = parent
        slow = SlowWrites(os.dup(child.fileno()))
        child.close()
        config = BrokerConfig(host="127.0.0.1", port=port, client_id="child-race")
        self.side = ChildSide(config, ["branch-meadows"], mqtt.MQTTv5, 0, False, slow)
        self.runner = threading.Thread(target=self.side.run, name="child-main")
        self.received: list[Any] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.pub = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
        self.pub.connect("127.0.0.1", port)
        self.halt = threading.Event()
        self.feeder = threading.Thread(target=self._feed, daemon=True)

    def _read(self) -> None:
        while True:
            try:
                self.received.append(self.parent.recv())
            except (EOFError, OSError):
                return

    def _feed(self) -> None:
        i = 0
        while not self.halt.wait(0.002):
            i += 1
            self.pub.publish(reading_topic("rg1"), json.dumps({"ts": i, "tips_total": i}), qos=1)

    def __enter__(self) -> ChildUnderTraffic:
        self.runner.start()
        self.reader.start()
        self.pub.loop_start()
        wait_until(lambda: any(r[0] == "up" for r in self.received), 10, "the child to connect")
        self.feeder.start()
        wait_until(lambda: sum(r[0] == "msgs" for r in self.received) >= 3, 10, "messages")
        return self

    def stop(self) -> None:
        self.parent.send(("stop",))
        self.runner.join(10)
        assert not self.runner.is_alive(), "the child did not stop"
        self.reader.join(5)

    def __exit__(self, *exc: object) -> None:
        self.halt.set()
        self.feeder.join(5)
        self.pub.loop_stop()
        self.pub.disconnect()
        if self.runner.is_alive():
            self.parent.send(("stop",))
            self.runner.join(10)


@pytest.fixture
def thread_errors(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    errors: list[str] = []
    monkeypatch.setattr(threading, "excepthook",
                        lambda args: errors.append(f"{args.thread}: {args.exc_value!r}"))
    return errors


def test_the_mqtt_child_stops_cleanly_while_it_is_writing_to_the_pipe(
        make_mosquitto: MakeMosquitto, thread_errors: list[str]) -> None:
    """A stop while messages flow, with no pause first (a parent in trouble): the
    forwarder is in the middle of a write when the stop comes."""
    with ChildUnderTraffic(make_mosquitto().port) as child:
        child.stop()
    assert thread_errors == []


def test_after_the_pause_marker_nothing_more_is_handed_over(
        make_mosquitto: MakeMosquitto, thread_errors: list[str]) -> None:
    with ChildUnderTraffic(make_mosquitto().port) as child:
        child.parent.send(("pause",))
        wait_until(lambda: ("paused",) in child.received, 10, "the pause marker")
        time.sleep(0.5)  # traffic goes on meanwhile; none of it may come across
        after = child.received[child.received.index(("paused",)):]
        child.stop()
    assert all(r[0] != "msgs" for r in after), "messages after the marker"
    assert thread_errors == []


# --------------------------------------------------------------------------- the node


def _card(path: Path, rows: int, start_s: int) -> None:
    lines = ["ts,tips_total"]
    lines += [f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(start_s + 60 * i))},{1000 + i}"
              for i in range(rows)]
    path.write_text("\n".join(lines) + "\n")


def _start_node(config_path: Path, log_path: Path, new_session: bool
                ) -> subprocess.Popen[bytes]:
    log = open(log_path, "ab")  # noqa: SIM115 - handed to the child
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "sensors.cli", "--config", str(config_path),
             "--log-level", "debug"], stdout=log, stderr=log, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=new_session)
    finally:
        log.close()


NODE_ROWS = 600


@pytest.mark.parametrize("signum, group", [(signal.SIGTERM, False), (signal.SIGINT, True)],
                         ids=["sigterm", "ctrl-c to the process group"])
def test_the_node_stops_under_traffic_keeps_its_buffer_and_loses_nothing(
        tmp_path: Path, make_mosquitto: MakeMosquitto, signum: int, group: bool) -> None:
    broker = make_mosquitto()
    sub = Subscriber(broker.port).start()
    card = tmp_path / "card.csv"
    _card(card, NODE_ROWS, int(time.time()) - 60 * NODE_ROWS - 600)
    # 20 rows a second read from the card, published at 20 a second.
    path, config = write_node_config(
        tmp_path, [{"id": "rg2", "kind": "rain", "driver": "csv", "file": str(card),
                    "speed": 1200}],
        port=broker.port, buffer={"max_rate_per_s": RATE_PER_S})
    log_path = tmp_path / "node.log"
    node = _start_node(path, log_path, group)
    try:
        wait_until(lambda: len(sub.readings()) >= 40, 30, "readings published")
        started = time.monotonic()
        if group:
            os.killpg(node.pid, signum)
        else:
            node.send_signal(signum)
        rc = node.wait(60)
        took_s = time.monotonic() - started
        log = log_path.read_text()
        assert rc == 0, log
        assert took_s < STOP_WITHIN_S, f"stop took {took_s:.1f} s\n{log}"
        assert "Traceback" not in log, log
        waiting, ever = buffer_counts(config.buffer.path)
        assert ever < NODE_ROWS, "the card was done before the stop: nothing proven"
        assert waiting + len({json.loads(p)["seq"] for _, p in sub.readings()}) >= ever
        node = _start_node(path, log_path, group)
        sub.wait_for(lambda s: len({json.loads(p)["seq"] for _, p in s.readings()})
                     >= NODE_ROWS, 120, "every row of the card")
        wait_until(lambda: unacknowledged(config.buffer.path) == 0, 30, "every PUBACK")
        node.send_signal(signal.SIGTERM)
        assert node.wait(STOP_WITHIN_S) == 0
    finally:
        if node.poll() is None:
            node.kill()
            node.wait(10)
        sub.stop()
    seqs = sorted({json.loads(p)["seq"] for _, p in sub.readings()})
    assert seqs == list(range(seqs[0], seqs[0] + NODE_ROWS))  # each row, none skipped
    counters = sorted({json.loads(p)["tips_total"] for _, p in sub.readings()})
    assert counters == list(range(1000, 1000 + NODE_ROWS))
    assert "Traceback" not in log_path.read_text()

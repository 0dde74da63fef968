"""Helpers of the sensor-node tests (``tests/test_node_*.py``): no hardware here.

* ``daemon_config`` is a daemon configuration (loaded by the daemon's own
  loader) whose site knows the sensors the node tests use, and ``accepted``
  checks a payload with the daemon's own parser, ``monitor.sources.parse``.
* ``write_node_config`` writes a node YAML file and loads it with the node's
  loader.
* ``FakeLink`` stands in for the MQTT connection where a broker adds nothing
  (it checks, at each publish, that the row is already committed); the test
  acknowledges (``ack``) and confirms (``confirm``, as the daemon's
  ``journaled`` message would) by hand.
* ``Subscriber`` records what reaches a real broker with a persistent session,
  so messages published while it reconnects (a broker restart) are kept.
* ``Clock`` is a wall clock and a monotonic clock the test moves by hand.
"""

from __future__ import annotations

import json
import queue
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from monitor.config import Config
from monitor.config.file import load_config as load_daemon_config
from monitor.contract.inputs import Reading
from monitor.contract.rejects import Rejection
from monitor.sources.parse import parse_message
from sensors.config import NodeConfig
from sensors.configfile import load_config
from sensors.link import Ack, Confirmation
from sensors.node import Node

SITE = "branch-meadows"
PREFIX = "stormwatch/v1"

DAEMON_CONFIG = """\
broker: {{host: 127.0.0.1, port: 1883, client_id: stormwatch-node-tests}}
state_dir: {state}
sites:
  - id: branch-meadows
    timezone: America/New_York
    condition: B
    sensors:
      - {{id: rg1, kind: rain, in_per_tip: 0.01}}
      - {{id: rg2, kind: rain, in_per_tip: 0.01}}
      - {{id: tb-up, kind: turbidity}}
      - {{id: tb-down, kind: turbidity}}
      - {{id: sonde, kind: turbidity}}
      - {{id: trap1-depth, kind: sediment}}
"""


def daemon_config(tmp_path: Path) -> Config:
    """The daemon's view of the site the node tests publish for."""
    path = tmp_path / "stormwatch.yaml"
    path.write_text(DAEMON_CONFIG.format(state=tmp_path / "daemon-state"))
    return load_daemon_config(path)


def accepted(config: Config, topic: str, payload: bytes, ref_ms: int | None = None) -> Reading:
    """The daemon's reading of one message; fails the test when the daemon rejects it."""
    ref = ref_ms if ref_ms is not None else round(time.time() * 1000)
    item = parse_message(config, topic, payload, ref_ms=ref)
    assert not isinstance(item, Rejection), (topic, payload, item)
    assert isinstance(item, Reading), item
    return item


def write_node_config(tmp_path: Path, sensors: Sequence[dict[str, Any]], *, port: int = 1883,
                      name: str = "node.yaml", **top: Any) -> tuple[Path, NodeConfig]:
    """A node configuration file for ``sensors`` (buffer in ``tmp_path``), and its model.

    ``top`` overrides top-level sections, e.g. ``buffer={...}``.
    """
    data: dict[str, Any] = {
        "broker": {"host": "127.0.0.1", "port": port, "client_id": f"node-{uuid.uuid4().hex[:8]}"},
        "site": SITE,
        "buffer": {"path": str(tmp_path / "buffer.db"), "max_mb": 1},
        "sensors": list(sensors),
    }
    for key, value in top.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) and key in data else value
    path = tmp_path / name
    path.write_text(json.dumps(data))  # JSON is YAML
    return path, load_config(path)


@dataclass
class Clock:
    """Wall (Unix s) and monotonic time that move only when told."""

    wall_s: float
    mono_s: float = 1000.0

    def wall(self) -> float:
        return self.wall_s

    def monotonic(self) -> float:
        return self.mono_s

    def advance(self, seconds: float) -> None:
        self.wall_s += seconds
        self.mono_s += seconds


def committed_payloads(db: Path) -> set[bytes]:
    """Payloads in the buffer as another process would see them (committed only)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {bytes(row[0]) for row in conn.execute("SELECT payload FROM readings")}
    finally:
        conn.close()


@dataclass
class FakeLink:
    """An MQTT link that records publishes and acknowledges when told.

    At each publish of a reading it asserts that a separate connection to the
    buffer sees the payload: the row was committed before it was published.
    """

    db: Path
    up: bool = True
    acks: queue.Queue[Ack] = field(default_factory=queue.Queue)
    confirmations: queue.Queue[Confirmation] = field(default_factory=queue.Queue)
    sent: list[tuple[int, str, bytes]] = field(default_factory=list)
    _mid: int = 0

    @property
    def connected(self) -> bool:
        return self.up

    def start(self) -> None:
        pass

    def publish(self, topic: str, payload: bytes) -> int | None:
        if topic.endswith("/reading"):
            assert payload in committed_payloads(self.db), "published before commit"
        self._mid += 1
        self.sent.append((self._mid, topic, payload))
        return self._mid

    def ack(self, mids: Sequence[int] | None = None, refused: bool = False) -> None:
        for mid, _, _ in self.sent:
            if mids is None or mid in mids:
                self.acks.put((mid, refused, "Not authorized" if refused else "Success"))

    def confirm(self, sensor: str, seq: int, retained: bool = False) -> None:
        """The daemon's ``journaled`` confirmation of ``sensor`` up to ``seq``."""
        self.confirmations.put((sensor, seq, retained))

    def confirm_sent(self) -> None:
        """Confirm every reading published so far, as a daemon that journaled them would."""
        top: dict[str, int] = {}
        for topic, payload in self.readings():
            sensor = topic.split("/")[-2]
            top[sensor] = max(top.get(sensor, -1), json.loads(payload)["seq"])
        for sensor, seq in top.items():
            self.confirm(sensor, seq)

    def readings(self) -> list[tuple[str, bytes]]:
        return [(t, p) for _, t, p in self.sent if t.endswith("/reading")]

    def statuses(self) -> list[tuple[str, dict[str, Any]]]:
        return [(t, json.loads(p)) for _, t, p in self.sent if t.endswith("/status")]

    def close(self) -> None:
        pass


class Subscriber:
    """Records every message under ``{PREFIX}/#`` with a persistent MQTT v5 session (QoS 1)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.messages: list[tuple[str, bytes]] = []
        self._cond = threading.Condition()
        self._subscribed = threading.Event()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2,
                                  client_id=f"sub-{uuid.uuid4().hex[:8]}", protocol=mqtt.MQTTv5)
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = lambda *a: self._subscribed.set()
        self.client.on_message = self._on_message
        self.client.reconnect_delay_set(1, 1)

    def _on_connect(self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any,
                    properties: Any) -> None:
        client.subscribe(f"{PREFIX}/#", qos=1)

    def _on_message(self, client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        with self._cond:
            self.messages.append((msg.topic, bytes(msg.payload)))
            self._cond.notify_all()

    def start(self) -> Subscriber:
        props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        props.SessionExpiryInterval = 600
        self.client.connect("127.0.0.1", self.port, keepalive=10, clean_start=False,
                            properties=props)
        self.client.loop_start()
        assert self._subscribed.wait(10), "no SUBACK"
        return self

    def stop(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()

    def readings(self) -> list[tuple[str, bytes]]:
        with self._cond:
            return [(t, p) for t, p in self.messages if t.endswith("/reading")]

    def statuses(self) -> list[tuple[str, dict[str, Any]]]:
        with self._cond:
            return [(t, json.loads(p)) for t, p in self.messages if t.endswith("/status")]

    def wait_for(self, predicate: Callable[[Subscriber], bool], timeout_s: float = 20,
                 what: str = "messages") -> None:
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while not predicate(self):
                left = deadline - time.monotonic()
                assert left > 0, f"timed out waiting for {what}: {len(self.messages)} received"
                self._cond.wait(min(left, 0.2))


@contextmanager
def running(node: Node) -> Iterator[Node]:
    """``node.run`` in a thread for the ``with`` block; the node is closed after."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            node.run(stop)
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield node
    finally:
        stop.set()
        thread.join(10)
        node.close()
    assert not errors, errors


def wait_until(condition: Callable[[], Any], timeout_s: float = 20, what: str = "it") -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def buffer_counts(db: Path) -> tuple[int, int]:
    """(rows held, readings committed ever) as another process sees the buffer; a row
    is held until the daemon's confirmation covers it (``unacknowledged``: until its
    PUBACK)."""
    if not db.exists():
        return 0, 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        waiting = conn.execute("SELECT count(*) FROM readings").fetchone()[0]
        ever = conn.execute("SELECT ifnull(sum(readings), 0) FROM sensors").fetchone()[0]
        return int(waiting), int(ever)
    except sqlite3.OperationalError:  # the child has not created the tables yet
        return 0, 0
    finally:
        conn.close()


def unacknowledged(db: Path) -> int:
    """Rows without their PUBACK yet (published 0), as another process sees the buffer."""
    if not db.exists():
        return 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return int(conn.execute("SELECT count(*) FROM readings WHERE published = 0")
                   .fetchone()[0])
    except sqlite3.OperationalError:  # the child has not created the tables yet
        return 0
    finally:
        conn.close()

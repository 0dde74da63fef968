"""A sensor node on fake hardware.

The node with a fake link, its fake buses (gpiozero's mock pins, an ADS1115, a TTL and
an RS-485 port), its clock, and the daemon's configuration to check what it publishes;
this module needs gpiozero.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from gpiozero.pins.mock import MockFactory

from monitor.config import Config
from sensors.config import MaxbotixSensor, ModbusSensor, NodeConfig
from sensors.drivers import Hardware
from sensors.node import Node

from .nodebuses import FakeAds1115Bus, FakeModbusPort, FakeTtl, float_words
from .nodekit import Clock, FakeLink, accepted, daemon_config, write_node_config

NOW_S = 1_796_000_000.0  # 2026-11-30T00:53:20Z, after the build date


def buffered_rows(db: Path) -> list[tuple[str, int, bytes]]:
    """The node's buffer (sensor, seq, payload), oldest first."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [(s, q, bytes(p)) for s, q, p in
                conn.execute("SELECT sensor, seq, payload FROM readings ORDER BY id")]
    finally:
        conn.close()


class Site:
    """A node with a fake link, its buses, its clock, and the daemon's config to check with."""

    def __init__(self, tmp_path: Path, sensors: list[dict[str, Any]], *,
                 factory: MockFactory | None = None, wall_s: float = NOW_S, **top: Any) -> None:
        self.tmp_path = tmp_path
        self.daemon: Config = daemon_config(tmp_path)
        _, self.config = write_node_config(tmp_path, sensors, status_every_s=60, **top)
        self.db = Path(self.config.buffer.path)
        self.clock = Clock(wall_s=wall_s)
        self.factory = factory or MockFactory()
        self.adc = FakeAds1115Bus()
        self.ttl = FakeTtl([b"R1016", b"R1020", b"R1012"])
        self.rs485 = FakeModbusPort(slave=1, words=dict(enumerate(float_words(4.25))))
        self.link = FakeLink(self.db)
        self.node = self.open()

    def _serial(self, sensor: Any) -> Any:
        if isinstance(sensor, MaxbotixSensor):
            return self.ttl
        assert isinstance(sensor, ModbusSensor)
        self.rs485.open()  # as serial.Serial() opens the device again after a restart
        return self.rs485

    def open(self, config: NodeConfig | None = None) -> Node:
        hardware = Hardware(pin_factory=self.factory, i2c=lambda: self.adc,
                            serial=self._serial, monotonic=self.clock.monotonic)
        node = Node(config or self.config, hardware=hardware, link=self.link,
                    wall=self.clock.wall, monotonic=self.clock.monotonic)
        node.start()
        return node

    def restart(self) -> None:
        self.node.close(drain_s=0)
        self.link = FakeLink(self.db)
        self.node = self.open()

    def run(self, seconds: float, step_s: float = 1.0) -> None:
        """Step the node through ``seconds`` of its clock."""
        self.node.step()
        for _ in range(round(seconds / step_s)):
            self.clock.advance(step_s)
            self.node.step()

    def check(self, topic: str, payload: bytes) -> Any:
        return accepted(self.daemon, topic, payload, ref_ms=round(self.clock.wall_s * 1000))


GAUGE = {"id": "rg1", "kind": "rain", "driver": "gpio", "pin": 17, "every_s": 60}

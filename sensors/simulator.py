"""A simulated construction site: the readings its nodes would publish.

Pure and deterministic: ``Scenario.messages(minute)`` gives the MQTT topic and
payload of every sensor for one minute of simulated time, so the demo, tests
and benchmarks can drive the real daemon through the real broker with a
storm whose numbers are known in advance.

The default scenario is a storm of 0.80 in over two hours starting 30 minutes
in: it crosses 0.50 in (§ 134-9A(2)) about 75 minutes later, sends muddy water
past the downstream turbidity probe for an hour (§ 134-8C), and washes enough
sediment into the trap to pass 40 % and then 50 % of its design volume
(§ 134-9A(1)).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

TOPIC_PREFIX = "stormwatch/v1"


@dataclass(frozen=True)
class Scenario:
    """Sensor behaviour over simulated minutes from ``start_s`` (Unix seconds)."""

    site: str
    start_s: int
    rain_sensor: str = "rg1"
    upstream: str = "tb-up"
    downstream: str = "tb-down"
    sediment: str = "trap1-depth"
    in_per_tip: float = 0.01
    storm_start_min: int = 30
    storm_minutes: int = 120
    storm_total_in: float = 0.80
    trap_depth_before_in: float = 14.0
    trap_depth_after_in: float = 36.0
    prefix: str = TOPIC_PREFIX

    def tips_total(self, minute: int) -> int:
        """The gauge's cumulative counter at ``minute``: an even spread over the storm."""
        tips = round(self.storm_total_in / self.in_per_tip)
        into = min(max(minute - self.storm_start_min, 0), self.storm_minutes)
        return tips * into // self.storm_minutes

    def ntu(self, minute: int) -> tuple[float, float]:
        """Upstream (background) and downstream turbidity."""
        up = 8.0 + 2.0 * math.sin(minute / 37.0)
        runoff = self.storm_start_min + 15 <= minute < self.storm_start_min + 75
        down = up + (42.0 if runoff else 1.5)
        return round(up, 2), round(down, 2)

    def depth_in(self, minute: int) -> float:
        """Sediment rises through the storm, then settles."""
        into = min(max(minute - self.storm_start_min, 0), self.storm_minutes)
        frac = into / self.storm_minutes
        return round(self.trap_depth_before_in
                     + (self.trap_depth_after_in - self.trap_depth_before_in) * frac, 2)

    def messages(self, minute: int) -> list[tuple[str, bytes]]:
        """What the site's nodes publish at ``minute`` (QoS 1, JSON, DESIGN § 3)."""
        ts = self.start_s + minute * 60
        up, down = self.ntu(minute)
        out: list[tuple[str, dict[str, Any]]] = [
            (self._topic(self.rain_sensor), {"ts": ts, "tips_total": self.tips_total(minute),
                                             "battery_v": 3.92}),
            (self._topic(self.upstream), {"ts": ts, "ntu": up, "temp_c": 9.5}),
            (self._topic(self.downstream), {"ts": ts + 20, "ntu": down, "temp_c": 9.7}),
        ]
        if minute % 5 == 0:
            out.append((self._topic(self.sediment), {"ts": ts, "depth_in": self.depth_in(minute)}))
        return [(topic, json.dumps(body).encode()) for topic, body in out]

    def _topic(self, sensor: str) -> str:
        return f"{self.prefix}/{self.site}/{sensor}/reading"

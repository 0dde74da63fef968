"""What goes into the engine: accepted readings, status messages and inspections.

These are already validated by the shell (``monitor.models``); the engine
trusts their types and ranges and looks only at event time (``ts_ms``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SensorKind = Literal["rain", "turbidity", "sediment"]


@dataclass(frozen=True, slots=True)
class Reading:
    """One sensor message. ``kind`` is the sensor's configured kind, or ``status``.

    Rain: ``tips_total`` (cumulative counter) or ``precip_in`` with ``seq``.
    Turbidity: ``ntu``. Sediment: ``depth_in`` or ``distance_in``.
    """

    site: str
    sensor: str
    kind: Literal["rain", "turbidity", "sediment", "status"]
    ts_ms: int
    tips_total: int | None = None
    precip_in: float | None = None
    seq: int | None = None
    ntu: float | None = None
    temp_c: float | None = None
    depth_in: float | None = None
    distance_in: float | None = None
    battery_v: float | None = None
    rssi_dbm: float | None = None
    uptime_s: float | None = None
    buffered: int | None = None

    def to_json(self) -> dict[str, object]:
        # Written out: the journal encodes every accepted reading with this.
        out: dict[str, object] = {"site": self.site, "sensor": self.sensor, "kind": self.kind,
                                  "ts_ms": self.ts_ms}
        for name in _OPTIONAL:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Reading:
        return cls(**data)  # type: ignore[arg-type]


_OPTIONAL = ("tips_total", "precip_in", "seq", "ntu", "temp_c", "depth_in", "distance_in",
             "battery_v", "rssi_dbm", "uptime_s", "buffered")


@dataclass(frozen=True, slots=True)
class Inspection:
    """An inspection by the qualified professional (§ 134-9A(2)), at ``ts_ms``."""

    site: str
    inspector: str
    ts_ms: int
    kind: Literal["storm", "routine", "other"] = "routine"
    notes: str | None = None
    findings: str | None = None

    def to_json(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in self.__slots__ if getattr(self, k) is not None}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Inspection:
        return cls(**data)  # type: ignore[arg-type]

"""Nodes whose clocks are off, by sensor, for ``status`` to name.

A node stamps its readings with its own clock (sensors/README.md, "MQTT contract"). One whose clock
is
hours ahead has every reading refused as ``future_timestamp``; one hours behind
has them accepted as late, or refused as ``too_old`` past the lateness bound.
Either way the engine does not get the readings where they belong, and the
reject counters by reason do not say which node it is. The daemon notes here,
per sensor, the offset of the newest such reading and when it arrived, and
when a reading on time came after it; ``status`` names the sensor and its node
while the newest word from it is off.

A node sending a buffered backlog looks like a clock behind while the backlog
drains: its readings on time afterwards clear it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from ..contract.inputs import Reading
from ..contract.rejects import Rejection, RejectReason
from ..contract.times import MS_PER_HOUR
from ..store.sourcenotes import CLOCKS_META

#: An accepted reading that arrives this long after its own timestamp is late
#: enough to name: a node's clock behind by hours, or its backlog.
BEHIND_MS = MS_PER_HOUR
#: The rejects that mean a clock off (the timestamp is fine otherwise).
CLOCK_REASONS = frozenset({RejectReason.future_timestamp, RejectReason.too_old})


@dataclass
class SensorClock:
    """The newest reading of one sensor whose timestamp was off."""

    #: Its timestamp minus its arrival: positive, the node's clock ahead.
    offset_ms: int
    #: ``future_timestamp`` or ``too_old`` (refused), ``late`` (accepted).
    reason: str
    #: How many such readings since the daemon started.
    count: int
    #: When it arrived (the daemon's clock).
    at_ms: int
    #: When a reading on time arrived after it (the first); None: none since.
    ok_ms: int | None = None


class NodeClocks:
    """What the daemon noted of its sensors' clocks."""

    def __init__(self, topic_prefix: str) -> None:
        self.prefix = topic_prefix.rstrip("/") + "/" if topic_prefix.strip("/") else ""
        self.sensors: dict[tuple[str, str], SensorClock] = {}
        #: Changed since last written.
        self.dirty = False

    def rejected(self, topic: str, rejection: Rejection, received_ms: int) -> None:
        """A rejected message; noted when its timestamp was outside the time window."""
        if rejection.reason not in CLOCK_REASONS or rejection.ts_ms is None:
            return
        parts = topic[len(self.prefix):].split("/")
        if len(parts) != 3:  # an inspection: entered by a person, not stamped by a node
            return
        self._note((parts[0], parts[1]), rejection.ts_ms - received_ms,
                   rejection.reason.value, received_ms)

    def accepted(self, reading: Reading, received_ms: int) -> None:
        """An accepted reading: noted when it arrived hours after its timestamp, and
        clearing a note otherwise."""
        lag_ms = received_ms - reading.ts_ms
        key = (reading.site, reading.sensor)
        if lag_ms >= BEHIND_MS:
            self._note(key, -lag_ms, "late", received_ms)
            return
        known = self.sensors.get(key)
        if known is not None and known.ok_ms is None:
            known.ok_ms = received_ms
            self.dirty = True

    def meta(self) -> dict[str, int | str]:
        """The notes as the ``meta`` value to write when they changed (the caller
        clears ``dirty`` once written), else nothing."""
        if not self.dirty:
            return {}
        return {CLOCKS_META: json.dumps({f"{site}/{sensor}": asdict(v)
                                      for (site, sensor), v in sorted(self.sensors.items())},
                                     separators=(",", ":"))}

    def _note(self, key: tuple[str, str], offset_ms: int, reason: str, received_ms: int) -> None:
        known = self.sensors.get(key)
        count = 1 if known is None else known.count + 1
        self.sensors[key] = SensorClock(offset_ms, reason, count, received_ms)
        self.dirty = True

"""Sensor health: silence, recovery and battery, in event time.

A node that goes quiet cannot tell us it is quiet, so silence is concluded
from time passing: a sensor is stale once more than ``stale_after_minutes``
have passed since its last message (a tipping-bucket gauge publishes its
counter every minute even when dry, so a silent gauge is detectable — a dry
day and a dead gauge look different). When a message arrives after such a
gap the sensor has recovered. Both facts are dated in event time:
``sensor_stale`` at ``last_seen + stale_after`` and ``sensor_recovered`` at the
returning message, so a node that buffered its readings while offline and
sends them late produces the same history as one that never went away.

How a sensor is heard from depends on how it talks. Most publish every
interval, and any message of theirs (reading or ``status``) is a sign of
life. A rain gauge with ``reporting: on_tip`` publishes only when its bucket
tips, so its silence is dry weather, not death: its sign of life is any
message of it or a ``status`` of its node (the sensors naming the same
``node``) within ``heartbeat_minutes``. Without ``heartbeat_minutes`` a dead
on_tip gauge cannot be told from a dry one: its health is *not judged* (no
``sensor_stale`` ever, ``unknown`` in ``status``), never ``ok``.

Backfill. A node that was offline sends its backlog in order with the
readings' own timestamps, and its ``status`` stamped now. Health is judged in
the readings' event time: a status that says the node still holds readings of
the sensor (``buffered`` > 0) is a sign of life but no evidence about the time
before it, whose readings are on their way; a gap that ends at such a status is
judged at the next message that is (a reading, or a status with nothing
buffered), and dated at the status (when the node was heard again). So the
readings of a backlog, arriving one by one before the status in event time,
change no health fact at all, instead of revising one silence per reading.

A sensor that never reports is stale too (missing data is never good news):
``never_heard`` concludes ``sensor_stale`` with ``last_seen: null`` once
``stale_after_minutes`` have passed since the start of monitoring (the later
of the site's ``active_since`` and the first message of any of its sensors),
and ``sensor_recovered`` at its first message when that came later. These are
facts of the site, not of the sensor's own timeline, which has no messages to
conclude them from.

``battery_low`` is raised when a reported ``battery_v`` falls below
``battery_low_v`` and re-arms 0.1 V above it, so a voltage that hovers at the
limit does not alert every minute.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...config import SensorConfig, SiteConfig
from ...contract.events import BatteryLow, Fact, SensorRecovered, SensorStale, make_id
from ...contract.inputs import Reading
from ...contract.times import iso, minutes_ms

BATTERY_REARM_V = 0.1


@dataclass(slots=True)
class HealthState:
    last_seen: int | None = None
    battery_v: float | None = None
    battery_low: bool = False
    #: From the node's latest ``status``: readings it holds unacknowledged, and
    #: readings it dropped past its buffer bound (ever).
    buffered: int | None = None
    dropped: int | None = None
    #: The newest message after which nothing of the sensor is pending (a reading, or
    #: a status with nothing buffered): silences are judged between these.
    last_sure: int | None = None
    #: The first status of a backlog (``buffered`` > 0) after ``last_sure``.
    pending_from: int | None = None


def is_stale(last_seen_ms: int | None, stale_after_ms: int, now_ms: int) -> bool:
    """A sensor is stale when nothing came for longer than ``stale_after_ms``; one that
    never sent anything is stale too (missing data is never good news)."""
    return last_seen_ms is None or now_ms - last_seen_ms > stale_after_ms


class HealthFold:
    """Staleness and battery of one sensor, over all its messages (readings and status),
    and for an on_tip gauge the ``status`` of its node's other sensors."""

    def __init__(self, site: str, sensor: SensorConfig) -> None:
        self.site = site
        self.sensor = sensor.id
        self.stale_ms = minutes_ms(sensor.silent_after_minutes)
        self.battery_low_v = sensor.battery_low_v
        #: False for an on_tip gauge without heartbeats: its silence says nothing.
        self.judged = sensor.health_judged

    def initial(self) -> HealthState:
        return HealthState()

    def key(self, item: Reading) -> tuple[Any, ...]:
        # Health looks at when a message came and what battery it reported, so
        # that is its identity: two messages of one instant with the same battery
        # are one input here (whatever else they carry). Absent battery is -1
        # (volts are never negative), so the key stays plain JSON.
        # Whether a status holds a backlog decides what it proves, so it is part of
        # the identity; a status of another sensor of the node is a heartbeat only.
        if item.sensor != self.sensor:
            return (item.ts_ms, 1, 1, -1.0, int(_pending(item)))
        return (item.ts_ms, 0, int(item.kind == "status"),
                -1.0 if item.battery_v is None else item.battery_v, int(_pending(item)))

    def step(self, state: HealthState, item: Reading, out: list[Fact]) -> None:
        ts = item.ts_ms
        if _pending(item):
            if state.pending_from is None:
                state.pending_from = ts
        else:
            sure = state.last_sure
            back = state.pending_from if state.pending_from is not None else ts
            if self.judged and sure is not None and back - sure > self.stale_ms:
                out.append(self._stale(sure))
                out.append(Fact(self.site, back,
                                make_id("sensor_recovered", self.site, self.sensor, back),
                                SensorRecovered(sensor=self.sensor, last_seen=iso(back),
                                                stale_since=iso(sure + self.stale_ms))))
            state.last_sure, state.pending_from = ts, None
        state.last_seen = ts
        if item.sensor != self.sensor:
            return
        if item.kind == "status":
            state.buffered = item.buffered if item.buffered is not None else state.buffered
            state.dropped = item.dropped if item.dropped is not None else state.dropped
        if item.battery_v is not None:
            state.battery_v = item.battery_v
            self._battery(state, ts, item.battery_v, out)

    def advance(self, state: HealthState, now_ms: int, out: list[Fact]) -> None:
        if self.judged and state.last_seen is not None and \
                now_ms - state.last_seen > self.stale_ms:
            out.append(self._stale(state.last_seen))

    def copy(self, state: HealthState) -> HealthState:
        return HealthState(state.last_seen, state.battery_v, state.battery_low, state.buffered,
                           state.dropped, state.last_sure, state.pending_from)

    def dump(self, state: HealthState) -> Any:
        return [state.last_seen, state.battery_v, state.battery_low, state.buffered,
                state.dropped, state.last_sure, state.pending_from]

    def load(self, data: Any) -> HealthState:
        return HealthState(*data)

    def is_stale(self, state: HealthState, now_ms: int) -> bool | None:
        """Stale at ``now_ms``; None when that cannot be told (not ``judged``)."""
        return is_stale(state.last_seen, self.stale_ms, now_ms) if self.judged else None

    def _stale(self, last_seen: int) -> Fact:
        return Fact(self.site, last_seen + self.stale_ms,
                    make_id("sensor_stale", self.site, self.sensor, last_seen),
                    SensorStale(sensor=self.sensor, last_seen=iso(last_seen),
                                stale_after_minutes=self.stale_ms / 60_000))

    def _battery(self, state: HealthState, ts: int, volts: float, out: list[Fact]) -> None:
        limit = self.battery_low_v
        if limit is None:
            return
        if not state.battery_low and volts < limit:
            state.battery_low = True
            out.append(Fact(self.site, ts, make_id("battery_low", self.site, self.sensor, ts),
                            BatteryLow(sensor=self.sensor, battery_v=round(volts, 3),
                                       battery_low_v=limit)))
        elif state.battery_low and volts >= limit + BATTERY_REARM_V:
            state.battery_low = False


def _pending(item: Reading) -> bool:
    """A status of a node that still holds readings of the sensor (a backlog)."""
    return item.kind == "status" and (item.buffered or 0) > 0


def never_heard(site: SiteConfig, first_ms: Mapping[str, int], start_ms: int | None,
                now_ms: int | None, skip: frozenset[str] = frozenset()) -> dict[str, Fact]:
    """The silence of sensors from the start of monitoring (``start_ms``) to their first
    message (``first_ms``), by fact id, as of ``now_ms``; sensors in ``skip`` are settled."""
    out: dict[str, Fact] = {}
    if start_ms is None or now_ms is None:
        return out
    for sensor in site.sensors:
        if sensor.id in skip or not sensor.health_judged:
            continue
        stale_ms = minutes_ms(sensor.silent_after_minutes)
        first = first_ms.get(sensor.id)
        heard_by = first if first is not None else now_ms
        if heard_by - start_ms <= stale_ms:
            continue
        since = start_ms + stale_ms
        stale = Fact(site.id, since, make_id("sensor_stale", site.id, sensor.id, "never"),
                     SensorStale(sensor=sensor.id, last_seen=None,
                                 stale_after_minutes=sensor.silent_after_minutes))
        out[stale.id] = stale
        if first is not None:
            # Its own id: the sensor's timeline may conclude a recovery at the same
            # instant (ids must never collide across sources, or one retracts the other).
            back = Fact(site.id, first,
                        make_id("sensor_recovered", site.id, sensor.id, "never", first),
                        SensorRecovered(sensor=sensor.id, last_seen=iso(first),
                                        stale_since=iso(since)))
            out[back.id] = back
    return out

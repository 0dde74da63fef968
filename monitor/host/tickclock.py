"""The time the daemon's ticks give the engine: the wall clock, but not its steps.

A tick lets event time pass without readings (a storm's dry gap, a silent
sensor, an inspection clock running out), so its *now* decides when notices
fire. The wall clock can step by hours: a Raspberry Pi has no real-time clock,
boots at the time it last saved, and NTP steps it once the network is up; an
operator may set it by hand. Taken as it is, a step forward fires every
``sensor_stale`` and every ``inspection_overdue`` due within the step, and a
step back leaves the engine's clock standing still, hiding them, until the wall
clock catches up.

So ticks measure the time that passes on the monotonic clock, which never
steps, from an anchor on the wall clock:

* while the wall clock agrees with that projection (within ``AGREE_MS``: NTP
  slews the two apart slowly), ticks follow the wall clock;
* when it steps away, ticks keep to the projection, and the step is logged once
  and reported (``step_ms``, ``status --json``: ``daemon.wall_clock_step_s``);
* the new wall time is taken once event time confirms it: the newest reading
  accepted lies within ``CONFIRM_MS`` of it. Readings are stamped by the nodes'
  own clocks, and the daemon refuses those more than 5 minutes ahead of its own
  (sensors/README.md, "MQTT contract"), so readings near a wall time that moved forward mean the
  nodes agree with it (the cold start NTP corrected); a wall clock stepped
  back finds the nodes' readings refused as ``future_timestamp`` or far ahead,
  and a wall clock stepped forward wrongly finds them hours behind.

The engine's own clock is already safe against a step back within one run
(``Engine.tick`` keeps the newest tick); across a restart, ``start`` anchors
at the restored engine's last tick when the wall clock is behind it.

The demo and the benchmarks inject a simulated clock; given as both the wall
and the monotonic clock, it can never step.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ..contract.times import MS_PER_MINUTE, iso

log = logging.getLogger("stormwatch.daemon")

#: The wall clock and the projection differ by less than this: the same time.
AGREE_MS = MS_PER_MINUTE
#: The newest reading within this of the wall clock confirms a step. Wide enough
#: for a node that sends every few minutes; far narrower than an NTP step after
#: a cold start (hours) or a clock set to the wrong time zone.
CONFIRM_MS = 15 * MS_PER_MINUTE


def _hours(ms: int) -> str:
    return f"{ms / 3_600_000:+.1f} h" if abs(ms) >= 360_000 else f"{ms / 1000:+.0f} s"


class TickClock:
    """The daemon's tick time: wall-clock time that does not step."""

    def __init__(self, wall: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.wall = wall
        self.monotonic = monotonic
        self._anchor_ms: int | None = None
        self._anchor_mono = 0.0
        #: The wall clock minus the tick time while they disagree; None while they agree.
        self.step_ms: int | None = None

    def start(self, floor_ms: int | None) -> None:
        """Anchor at the wall clock, or at ``floor_ms`` (the restored engine's last tick)
        when the wall clock is behind it: the engine has seen that time already."""
        wall_ms = round(self.wall() * 1000)
        anchor = wall_ms
        if floor_ms is not None and wall_ms < floor_ms - AGREE_MS:
            anchor = floor_ms
            self.step_ms = wall_ms - floor_ms
            log.warning("the wall clock is %s behind the engine's last tick (%s): ticks go on"
                        " from that tick until readings confirm the wall clock",
                        _hours(floor_ms - wall_ms), iso(floor_ms))
        self._anchor(anchor)

    def now_ms(self, newest_reading_ms: int | None) -> int:
        """The time of a tick now; ``newest_reading_ms`` is the engine's event-time
        watermark (the newest input applied)."""
        if self._anchor_ms is None:
            self.start(None)
        assert self._anchor_ms is not None
        projected = self._anchor_ms + round((self.monotonic() - self._anchor_mono) * 1000)
        wall_ms = round(self.wall() * 1000)
        step = wall_ms - projected
        if abs(step) <= AGREE_MS:
            if self.step_ms is not None:
                log.info("the wall clock agrees with the tick clock again")
            self.step_ms = None
            self._anchor(wall_ms)
            return wall_ms
        if newest_reading_ms is not None and abs(wall_ms - newest_reading_ms) <= CONFIRM_MS:
            log.warning("the wall clock stepped by %s; the newest reading (%s) confirms it:"
                        " ticks follow it from now on", _hours(step), iso(newest_reading_ms))
            self.step_ms = None
            self._anchor(wall_ms)
            return wall_ms
        if self.step_ms is None or abs(step - self.step_ms) > AGREE_MS:
            log.warning("the wall clock stepped by %s (to %s): ticks keep to the monotonic"
                        " clock (%s) until readings confirm the new time, so no notice fires"
                        " or is held back by the step", _hours(step), iso(wall_ms),
                        iso(projected))
        self.step_ms = step
        return projected

    def _anchor(self, at_ms: int) -> None:
        self._anchor_ms = at_ms
        self._anchor_mono = self.monotonic()

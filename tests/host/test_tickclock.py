"""The daemon's tick time: the wall clock, but not its steps (``monitor/tickclock.py``),
and the sensors whose own clocks are off (``monitor/nodeclocks.py``).

Both clocks are injected here; ``tests/reliability/test_clock_jumps.py`` steps the
real daemon's wall clock with libfaketime.
"""

from __future__ import annotations

import json

from monitor.contract.inputs import Reading
from monitor.contract.rejects import Rejection, RejectReason
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE
from monitor.host.tickclock import TickClock
from monitor.sources.nodeclocks import NodeClocks
from monitor.store.sourcenotes import CLOCKS_META, clock_of

from ..support.util import SITE, ts

T0 = ts("2026-06-01T12:00:00Z")


class Clocks:
    """A wall clock the test steps and a monotonic clock that only runs."""

    def __init__(self, wall_ms: int) -> None:
        self.wall_ms = wall_ms
        self.mono_s = 1000.0

    def run(self, seconds: float) -> None:
        self.wall_ms += round(seconds * 1000)
        self.mono_s += seconds

    def tick_clock(self) -> TickClock:
        return TickClock(lambda: self.wall_ms / 1000, lambda: self.mono_s)


def test_ticks_follow_the_wall_clock_while_it_runs_with_the_monotonic_clock() -> None:
    c = Clocks(T0)
    clock = c.tick_clock()
    clock.start(None)
    for _ in range(3):
        c.run(5)
        assert clock.now_ms(None) == c.wall_ms
    c.wall_ms += 30_000  # NTP slewing, well within a minute: still the wall clock
    assert clock.now_ms(None) == c.wall_ms and clock.step_ms is None


def test_a_step_forward_is_not_followed_until_readings_confirm_it() -> None:
    c = Clocks(T0)
    clock = c.tick_clock()
    clock.start(None)
    c.run(5)
    c.wall_ms += 6 * MS_PER_HOUR  # set wrong by hand, or a bad NTP server
    c.run(5)
    assert clock.now_ms(T0) == T0 + 10_000  # the monotonic clock's time
    assert clock.step_ms == 6 * MS_PER_HOUR
    c.run(5)
    # Readings keep arriving stamped with the nodes' (true) time: still not confirmed.
    assert clock.now_ms(T0 + 14_000) == T0 + 15_000
    # A reading stamped near the new wall time: the nodes agree with it (the cold start
    # NTP corrected); ticks follow it from now on.
    assert clock.now_ms(c.wall_ms - 5 * MS_PER_MINUTE) == c.wall_ms
    assert clock.step_ms is None
    c.run(5)
    assert clock.now_ms(None) == c.wall_ms


def test_a_step_back_neither_stops_the_ticks_nor_rewinds_them() -> None:
    c = Clocks(T0)
    clock = c.tick_clock()
    clock.start(None)
    c.wall_ms -= 6 * MS_PER_HOUR
    for i in range(1, 4):
        c.run(60)
        assert clock.now_ms(T0) == T0 + i * 60_000
    assert clock.step_ms == -6 * MS_PER_HOUR


def test_a_restart_behind_the_engines_last_tick_goes_on_from_that_tick() -> None:
    c = Clocks(T0 - 3 * MS_PER_HOUR)  # a Pi booted at the time it last saved
    clock = c.tick_clock()
    clock.start(T0)
    assert clock.step_ms == -3 * MS_PER_HOUR
    c.run(10)
    assert clock.now_ms(None) == T0 + 10_000
    clock = c.tick_clock()
    clock.start(c.wall_ms + 30_000)  # within a minute: the wall clock is taken
    assert clock.step_ms is None and clock.now_ms(None) == c.wall_ms


def test_an_injected_clock_never_steps() -> None:
    """The demo's simulated time runs thousands of times faster than real time."""
    sim = [T0 / 1000]
    clock = TickClock(lambda: sim[0], lambda: sim[0])
    clock.start(None)
    for _ in range(5):
        sim[0] += 3600.0
        assert clock.now_ms(None) == round(sim[0] * 1000)
    assert clock.step_ms is None


# --------------------------------------------------------------------------- node clocks


def _status_notes(clocks: NodeClocks) -> dict[str, object]:
    meta = clocks.meta()
    return json.loads(str(meta[CLOCKS_META])) if meta else {}


def test_a_node_ahead_is_named_until_a_reading_on_time_comes() -> None:
    clocks = NodeClocks("stormwatch/v1")
    topic = f"stormwatch/v1/{SITE}/rg1/reading"
    ahead = Rejection(RejectReason.future_timestamp, "ts: 10800 s after the reference time",
                      T0 + 3 * MS_PER_HOUR)
    clocks.rejected(topic, ahead, T0)
    clocks.rejected(topic, ahead, T0 + 60_000)
    notes = _status_notes(clocks)
    note = clock_of(notes, SITE, "rg1")
    assert note is not None
    assert note["reason"] == "future_timestamp" and note["count"] == 2 and note["ahead"]
    assert 10_740 <= note["offset_s"] <= 10_800
    assert clock_of(notes, SITE, "tb-up") is None

    clocks.dirty = False
    clocks.accepted(Reading(SITE, "rg1", "rain", T0 + 120_000, tips_total=1), T0 + 121_000)
    assert clocks.dirty
    assert clock_of(_status_notes(clocks), SITE, "rg1") is None


def test_readings_hours_behind_are_named_and_other_rejects_are_not() -> None:
    clocks = NodeClocks("stormwatch/v1")
    clocks.accepted(Reading(SITE, "tb-up", "turbidity", T0 - 3 * MS_PER_HOUR, ntu=8.0), T0)
    clocks.accepted(Reading(SITE, "tb-down", "turbidity", T0 - 60_000, ntu=8.0), T0)
    clocks.rejected(f"stormwatch/v1/{SITE}/tb-down/reading",
                    Rejection(RejectReason.not_finite, "ntu: NaN"), T0)
    clocks.rejected(f"stormwatch/v1/{SITE}/inspection",
                    Rejection(RejectReason.future, "ts: 1 h ahead", T0 + MS_PER_HOUR), T0)
    notes = _status_notes(clocks)
    assert list(notes) == [f"{SITE}/tb-up"]
    note = clock_of(notes, SITE, "tb-up")
    assert note is not None and note["reason"] == "late" and note["offset_s"] == -10_800

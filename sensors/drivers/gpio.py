"""Tipping-bucket rain gauge on a GPIO pin (gpiozero ``Button``, pull-up, switch to ground).

Each tip closes the bucket's reed switch for a moment. Two things make one tip
look like several: the contact bounces (edges microseconds to milliseconds
apart; ``bounce_time_s`` lets the GPIO library drop them), and a bucket can
rock back onto the magnet and close the switch again within about a second (a
double tip). Any press closer than ``min_tip_interval_s`` to the last *counted*
tip is therefore the same tip; it is counted as ``discarded`` in status so a
chattering switch shows up.

What is lost: tips during a restart of the runtime. A GPIO edge is seen only
by a process that has the pin open; nobody counts while the runtime (or the
Pi) restarts, so those tips are gone. ``tips_total`` itself never goes back
(it is the node's persistent counter), it just misses them. A gauge with a
hardware counter (a Modbus logger) does not have this gap.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from gpiozero import Button
from gpiozero.pins import Factory

from ..config import GpioSensor
from .base import Driver, Sample


class TippingBucket(Driver):
    """Counts tips between reads; ``read()`` gives ``Sample(tips=n)``."""

    def __init__(self, config: GpioSensor, pin_factory: Factory | None = None,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.min_tip_interval_s = config.min_tip_interval_s
        self._monotonic = monotonic
        self._lock = threading.Lock()  # gpiozero calls back from its own thread
        self._tips = 0
        self._ignored = 0
        self._last_tip_s: float | None = None
        self._button = Button(config.pin, pull_up=config.pull_up,
                              bounce_time=config.bounce_time_s, pin_factory=pin_factory)
        self._button.when_pressed = self._pressed

    def _pressed(self) -> None:
        now_s = self._monotonic()
        with self._lock:
            last = self._last_tip_s
            if last is not None and now_s - last < self.min_tip_interval_s:
                self._ignored += 1
                return
            self._last_tip_s = now_s
            self._tips += 1

    def read(self) -> Sequence[Sample]:
        with self._lock:
            tips, self._tips = self._tips, 0
            ignored, self._ignored = self._ignored, 0
        return [Sample(tips=tips, discarded=ignored)]

    def close(self) -> None:
        self._button.close()

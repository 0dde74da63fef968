"""Sediment surface by ultrasonic range finder over serial (MaxBotix ``R####\\r`` frames).

Wiring: the sensor's serial output (pin 5, TTL on the HRXL/XL "TTL" models,
RS-232 levels otherwise) to the Pi's RX (GPIO15, ``/dev/ttyAMA0`` or
``/dev/serial0``) or a USB adapter (``/dev/ttyUSB0``), 9600 8N1. Mount it
square above the trap; ``distance_in`` is face to sediment surface, and the
daemon turns it into depth with the trap's geometry.

A free-running sensor streams about 6-10 frames a second. A reading takes
``pings`` frames and publishes their median, after discarding, and counting
as ``discarded``, every frame that is garbled or outside
``[min_range_in, max_range_in]``: a reflection off the mounting bracket is too
short, "no echo" is reported as the sensor's maximum. When every frame is
discarded nothing is published. The first fragment after the input buffer is
flushed is usually a partial frame and is skipped without counting.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Final

import serial

from ..config import MaxbotixSensor
from .base import Driver, Sample, SerialPort

FRAME: Final = re.compile(rb"R(\d{3,4})")
#: Inches per unit of the frame's digits.
INCHES_PER_UNIT: Final = {"mm": 1 / 25.4, "cm": 1 / 2.54, "in": 1.0}


def open_serial(config: MaxbotixSensor) -> SerialPort:
    # A short timeout: read() returns what arrived, and the driver keeps its own deadline.
    port: SerialPort = serial.Serial(config.port, config.baudrate, timeout=0.1)
    return port


class MaxbotixRange(Driver):
    def __init__(self, config: MaxbotixSensor,
                 open_port: Callable[[MaxbotixSensor], SerialPort] = open_serial,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._open_port = open_port
        self._monotonic = monotonic
        self._port: SerialPort | None = None

    def _frames(self, port: SerialPort) -> tuple[list[bytes], bool]:
        """Up to ``pings`` complete frames, and whether the deadline passed first."""
        port.reset_input_buffer()
        deadline = self._monotonic() + self.config.timeout_s
        frames: list[bytes] = []
        pending = b""
        first = True
        while len(frames) < self.config.pings:
            if self._monotonic() > deadline:
                return frames, True
            pending += port.read(64)
            *complete, pending = pending.split(b"\r")
            for frame in complete:
                if first and not frame.startswith(b"R"):
                    first = False
                    continue  # the tail of a frame cut by the flush
                first = False
                frames.append(frame.strip())
        return frames[:self.config.pings], False

    def read(self) -> Sequence[Sample]:
        if self._port is None:
            self._port = self._open_port(self.config)
        try:
            frames, timed_out = self._frames(self._port)
        except (OSError, serial.SerialException):
            self.close()  # reopened at the next read (a USB adapter replugged)
            raise
        if timed_out and not frames:
            raise TimeoutError(f"no frames from {self.config.port} in {self.config.timeout_s:g} s")
        ranges: list[float] = []
        discarded = 0
        per_unit = INCHES_PER_UNIT[self.config.frame_unit]
        for frame in frames:
            match = FRAME.fullmatch(frame)
            inches = int(match.group(1)) * per_unit if match else None
            if inches is None or not (self.config.min_range_in <= inches
                                      <= self.config.max_range_in):
                discarded += 1
                continue
            ranges.append(inches)
        if not ranges:
            return [Sample(discarded=discarded)]
        return [Sample(fields={"distance_in": statistics.median(ranges)}, discarded=discarded)]

    def close(self) -> None:
        if self._port is not None:
            port, self._port = self._port, None
            port.close()

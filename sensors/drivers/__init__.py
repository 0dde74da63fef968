"""Sensor drivers: one module per kind of hardware, one small interface (``base.Driver``).

``make_driver`` picks the module by the sensor's ``driver`` and imports it
only then: the hardware libraries (gpiozero, the Adafruit ADS1x15 library,
pyserial, minimalmodbus) come with the node's own install (``pip install
./sensors``) but not with the project's ``pip install .`` (only its ``node``
extra), whose demo and simulator run the ``sim`` and ``csv`` drivers; and
Blinka probes the board when imported. So a node imports only what its own
sensors need. Tests pass fakes through ``Hardware``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..config import (
    Ads1115Sensor,
    CsvSensor,
    GpioSensor,
    MaxbotixSensor,
    ModbusSensor,
    SensorBase,
    SimSensor,
)
from .base import Driver, Sample, SerialPort
from .csvfile import CsvReplay

__all__ = ["BOARD", "Driver", "Hardware", "Sample", "SerialPort", "make_driver"]


@dataclass(frozen=True)
class Hardware:
    """Where drivers get their buses; None means the real one of the board.

    ``pin_factory``: a gpiozero pin factory (``MockFactory`` in tests).
    ``i2c``: returns an I2C bus object for the ADS1115 library.
    ``serial``: opens a serial port for a sensor's configuration.
    ``monotonic``: the clock tip intervals and csv pacing are measured on.
    """

    pin_factory: Any = None
    i2c: Callable[[], Any] | None = None
    serial: Callable[[Any], Any] | None = None
    monotonic: Callable[[], float] | None = None


#: The board's own buses.
BOARD = Hardware()


def make_driver(sensor: SensorBase, hardware: Hardware = BOARD, site: str | None = None
                ) -> Driver:
    """The driver of one configured sensor, its hardware opened (``site``: the node's,
    for a replay file that names sites)."""
    monotonic = hardware.monotonic or time.monotonic
    # Each driver module is imported in its branch, not at the top, so that a
    # node needs only the libraries of its own sensors (module docstring).
    if isinstance(sensor, GpioSensor):
        from .gpio import TippingBucket

        return TippingBucket(sensor, hardware.pin_factory, monotonic)
    if isinstance(sensor, Ads1115Sensor):
        from .ads1115 import Ads1115Turbidity, default_i2c

        return Ads1115Turbidity(sensor, (hardware.i2c or default_i2c)())
    if isinstance(sensor, MaxbotixSensor):
        from .maxbotix import MaxbotixRange
        from .maxbotix import open_serial as open_ttl

        return MaxbotixRange(sensor, hardware.serial or open_ttl, monotonic)
    if isinstance(sensor, ModbusSensor):
        from .modbus import ModbusSonde
        from .modbus import open_serial as open_rs485

        return ModbusSonde(sensor, hardware.serial or open_rs485)
    if isinstance(sensor, CsvSensor):
        return CsvReplay(sensor, sensor.id, monotonic, site)
    if isinstance(sensor, SimSensor):
        from .sim import SimulatedSensor

        # Its clock is simulated Unix time: ``stormwatch simulate`` passes its clock
        # as ``monotonic`` (and as the node's wall clock); a node file, the wall clock.
        return SimulatedSensor(sensor, hardware.monotonic or time.time)
    raise TypeError(f"no driver for {type(sensor).__name__}")  # pragma: no cover

"""A commercial sonde or logger on Modbus RTU (``minimalmodbus``), register map from config.

Wiring: an RS-485 adapter (USB, ``/dev/ttyUSB0``, or a HAT on the Pi's UART)
to the sonde's A/B pair; slave address, baud rate and parity as set on the
sonde. Each field of the register map (``register`` for the kind's main value,
``registers`` for more, e.g. ``temp_c``) is read with its own type and scale:
16-bit registers, or 32-bit values in two registers, high word first (the
order most sondes use; minimalmodbus's ``BYTEORDER_BIG``).

A rain logger's tip counter (``tips_total``) is a hardware counter: the node
takes differences between reads and keeps its own ``tips_total``, so tips
during a restart of the runtime are counted and a 16-bit register that wraps
never shows the daemon a decrease (``sensors/counter.py``).

A value that is not finite or negative (a sonde reports -9999 or NaN while
warming up or with a fouled optic) is discarded and counted, not published.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Final

import minimalmodbus
import serial

from ..config import ModbusSensor, Register
from .base import Driver, Sample

#: Bits of a counter register by type, when ``counter_bits`` does not say.
TYPE_BITS: Final = {"uint16": 16, "int16": 16, "uint32": 32, "int32": 32}


def open_serial(config: ModbusSensor) -> Any:
    return serial.Serial(config.port, config.baudrate, parity=config.parity, bytesize=8,
                         stopbits=1, timeout=config.timeout_s)


class ModbusSonde(Driver):
    def __init__(self, config: ModbusSensor,
                 open_port: Callable[[ModbusSensor], Any] = open_serial) -> None:
        self.config = config
        self.registers = config.register_map()
        # minimalmodbus takes an open serial object as its port (2.0): our timeout
        # and parity, and a fake port in the tests.
        self._instrument = minimalmodbus.Instrument(open_port(config), config.slave)

    def _value(self, reg: Register) -> float:
        inst = self._instrument
        if reg.type in ("uint16", "int16"):
            raw: float = inst.read_register(reg.address, 0, reg.functioncode,
                                            signed=reg.type == "int16")
        elif reg.type in ("uint32", "int32"):
            raw = inst.read_long(reg.address, reg.functioncode, signed=reg.type == "int32",
                                 byteorder=minimalmodbus.BYTEORDER_BIG)
        else:
            raw = inst.read_float(reg.address, reg.functioncode, 2,
                                  byteorder=minimalmodbus.BYTEORDER_BIG)
        return raw * reg.scale

    def read(self) -> Sequence[Sample]:
        fields: dict[str, float] = {}
        counter: int | None = None
        bits: int | None = None
        discarded = 0
        for name, reg in self.registers.items():
            value = self._value(reg)
            if not math.isfinite(value) or value < 0 and name != "temp_c":
                discarded += 1
            elif name == "tips_total":
                counter = round(value)
                bits = self.config.counter_bits or TYPE_BITS.get(reg.type)
            else:
                fields[name] = value
        if counter is None and not fields:
            return [Sample(discarded=discarded)]
        return [Sample(fields=fields, counter=counter, counter_bits=bits, discarded=discarded)]

    def close(self) -> None:
        self._instrument.serial.close()

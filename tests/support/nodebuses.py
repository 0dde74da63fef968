"""Fake buses for the node's drivers, at the byte level: no hardware in these tests.

``FakeAds1115Bus`` answers the ADS1115's I2C register protocol (datasheet
§ 9.5-9.6); ``FakeTtl`` streams MaxBotix frames as a serial port;
``FakeModbusPort`` is a Modbus RTU slave behind a serial port (CRC-16 checked
both ways). The real driver libraries (Adafruit ADS1x15, minimalmodbus) talk
to them exactly as to the hardware.
"""

from __future__ import annotations

import struct
from typing import Any

#: Full scale in volts of the ADS1115's PGA setting (config bits 11:9), datasheet table 3.
PGA_FS_V = {0: 6.144, 1: 4.096, 2: 2.048, 3: 1.024, 4: 0.512, 5: 0.256, 6: 0.256, 7: 0.256}


class FakeAds1115Bus:
    """An I2C bus with one ADS1115: the test sets the voltage at each input (AIN0-3).

    Writes of 1 byte set the pointer register, of 3 bytes a 16-bit register;
    reads return the register the pointer names, big-endian (datasheet § 9.5).
    A single-shot conversion is done at once, so the config register reads
    with OS (bit 15) set. Conversions use the MUX and PGA bits written, so a
    driver that selects the wrong input or gain reads the wrong value.
    """

    def __init__(self, address: int = 0x48) -> None:
        self.address = address
        self.volts = [0.0, 0.0, 0.0, 0.0]
        self.config = 0x8583  # the power-on default
        self.pointer = 0
        self.locked = False
        self.writes: list[bytes] = []

    def try_lock(self) -> bool:
        if self.locked:
            return False
        self.locked = True
        return True

    def unlock(self) -> None:
        self.locked = False

    def _check(self, address: int) -> None:
        if address != self.address:
            raise OSError(6, "No such device or address")

    def writeto(self, address: int, buffer: Any, *, start: int = 0, end: int | None = None,
                stop: bool = True) -> None:
        self._check(address)
        data = bytes(buffer[start:end])
        self.writes.append(data)
        if not data:
            return  # the library's probe
        self.pointer = data[0] & 0x03
        if len(data) == 3 and self.pointer == 1:
            self.config = (data[1] << 8 | data[2]) & 0x7FFF

    def _register(self) -> int:
        if self.pointer == 1:
            return self.config | 0x8000  # conversion done
        if self.pointer == 0:
            mux = (self.config >> 12) & 0x7
            assert mux >= 4, "single-ended inputs are MUX 100-111"
            full_scale = PGA_FS_V[(self.config >> 9) & 0x7]
            code = round(self.volts[mux - 4] / full_scale * 32768)
            return max(-32768, min(32767, code)) & 0xFFFF
        return 0

    def readfrom_into(self, address: int, buffer: Any, *, start: int = 0,
                      end: int | None = None, stop: bool = True) -> None:
        self._check(address)
        value = self._register()
        data = bytes([value >> 8, value & 0xFF])
        stop_at = len(buffer) if end is None else end
        for i in range(start, stop_at):
            buffer[i] = data[i - start]

    def writeto_then_readfrom(self, address: int, out_buffer: Any, in_buffer: Any, *,
                              out_start: int = 0, out_end: int | None = None,
                              in_start: int = 0, in_end: int | None = None) -> None:
        self.writeto(address, out_buffer, start=out_start, end=out_end)
        self.readfrom_into(address, in_buffer, start=in_start, end=in_end)


class FakeTtl:
    """A free-running range finder's serial output: ``frames`` over and over.

    A flush (``reset_input_buffer``) lands mid-frame, as it does on a real
    line, so the first bytes read are the tail of a frame.
    """

    def __init__(self, frames: list[bytes], chunk: int = 5) -> None:
        self.stream = b"".join(f + b"\r" for f in frames)
        self.chunk = chunk
        self.pos = 0
        self.closed = False

    def reset_input_buffer(self) -> None:
        self.pos = 0
        self.data = b"450\r" + self.stream  # the tail of a frame cut by the flush

    def read(self, size: int = 1) -> bytes:
        out = self.data[self.pos:self.pos + min(size, self.chunk)]
        self.pos += len(out)
        return out

    def close(self) -> None:
        self.closed = True


def crc16_modbus(data: bytes) -> bytes:
    """CRC-16/MODBUS (poly 0xA001 reflected, init 0xFFFF), low byte first."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return struct.pack("<H", crc)


class FakeModbusPort:
    """A serial port with a Modbus RTU slave behind it: answers function 3 and 4 reads.

    ``words`` maps register addresses to 16-bit values (holding and input
    registers alike). Requests with a bad CRC or for another slave get no answer.
    """

    def __init__(self, slave: int, words: dict[int, int]) -> None:
        self.slave = slave
        self.words = words
        self.is_open = True
        self.port = "/dev/fake-rs485"
        self.baudrate = 9600
        self.timeout = 0.05
        self.out = b""
        self.requests: list[bytes] = []

    def open(self) -> None:
        self.is_open = True

    def close(self) -> None:
        self.is_open = False

    def reset_input_buffer(self) -> None:
        self.out = b""

    def reset_output_buffer(self) -> None:
        pass

    def flush(self) -> None:
        pass

    def write(self, data: bytes) -> int:
        self.requests.append(bytes(data))
        body, crc = data[:-2], data[-2:]
        if crc16_modbus(body) != crc or body[0] != self.slave:
            return len(data)
        function, address, count = body[1], *struct.unpack(">HH", body[2:6])
        assert function in (3, 4)
        payload = b"".join(struct.pack(">H", self.words[address + i]) for i in range(count))
        answer = bytes([self.slave, function, len(payload)]) + payload
        self.out = answer + crc16_modbus(answer)
        return len(data)

    def read(self, size: int = 1) -> bytes:
        out, self.out = self.out[:size], self.out[size:]
        return out


def float_words(value: float) -> tuple[int, int]:
    high, low = struct.unpack(">HH", struct.pack(">f", value))
    return high, low

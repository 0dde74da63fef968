"""The node's drivers, their real code against fake buses at the byte level (no hardware here).

* GPIO: gpiozero's own ``MockFactory`` pins, driven low and high as a reed
  switch would (bouncing contacts, a double tip, a tip during a restart).
* ADS1115: a fake I2C bus answering the ADC's register protocol byte for
  byte (pointer register, 16-bit config with MUX/PGA, conversion register),
  under the real Adafruit library.
* MaxBotix: a fake serial port streaming ``R####\\r`` frames.
* Modbus: a fake serial port that answers Modbus RTU requests (CRC-16 checked
  both ways) under the real minimalmodbus.

Every value a driver gives is then published by a node and checked with the
daemon's own parser in ``test_node_runtime.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory

from sensors.config import Ads1115Sensor, CsvSensor, GpioSensor, MaxbotixSensor, ModbusSensor
from sensors.counter import tips_between
from sensors.drivers.ads1115 import Ads1115Turbidity, ntu_from_volts
from sensors.drivers.csvfile import CsvFormatError, CsvReplay
from sensors.drivers.gpio import TippingBucket
from sensors.drivers.maxbotix import MaxbotixRange
from sensors.drivers.modbus import ModbusSonde

from ..support.nodebuses import FakeAds1115Bus, FakeModbusPort, FakeTtl, float_words
from ..support.nodekit import Clock

# --------------------------------------------------------------------------- gpio


def _tip(pin: Any, bounces: int = 3) -> None:
    """One closure of the reed switch: the contact bounces ``bounces`` times at once."""
    for _ in range(bounces):
        pin.drive_low()
        pin.drive_high()


def test_gpio_bounced_tips_count_once_each_and_double_tips_once() -> None:
    factory = MockFactory()
    clock = Clock(wall_s=0)
    config = GpioSensor(id="rg1", kind="rain", driver="gpio", pin=17)
    gauge = TippingBucket(config, pin_factory=factory, monotonic=clock.monotonic)
    pin = factory.pin(17)
    try:
        assert pin.pull == "up" and pin.state == 1  # pulled up; the switch pulls it low
        _tip(pin)                 # one tip, its contact bouncing three times
        clock.advance(0.4)
        _tip(pin)                 # the bucket rocking back: a double tip, same tip
        clock.advance(0.7)        # 1.1 s after the counted tip: a new one
        _tip(pin, bounces=1)
        clock.advance(5)
        _tip(pin, bounces=2)
        [sample] = gauge.read()
        assert sample.tips == 3
        assert sample.discarded == 2 + 3 + 1  # bounce edges and the double tip, for status
        [sample] = gauge.read()
        assert (sample.tips, sample.discarded) == (0, 0)  # a read takes the tips
    finally:
        gauge.close()


def test_gpio_tip_during_restart_is_lost_as_documented() -> None:
    factory = MockFactory()
    clock = Clock(wall_s=0)
    config = GpioSensor(id="rg1", kind="rain", driver="gpio", pin=17, min_tip_interval_s=1.0)
    gauge = TippingBucket(config, pin_factory=factory, monotonic=clock.monotonic)
    pin = factory.pin(17)
    _tip(pin)
    assert gauge.read()[0].tips == 1
    gauge.close()                                # the runtime stops ...
    clock.advance(10)
    _tip(pin)                                    # ... a tip falls: nobody has the pin open
    gauge = TippingBucket(config, pin_factory=factory, monotonic=clock.monotonic)
    try:
        assert gauge.read()[0].tips == 0          # lost (node.py keeps tips_total, see there)
        clock.advance(10)
        _tip(pin)
        assert gauge.read()[0].tips == 1
    finally:
        gauge.close()


# --------------------------------------------------------------------------- ads1115


def _ads(bus: FakeAds1115Bus, **options: Any) -> Ads1115Turbidity:
    config = Ads1115Sensor.model_validate({
        "id": "tb-down", "kind": "turbidity", "driver": "ads1115", "address": bus.address,
        "calibration": [[0.5, 0.0], [2.0, 100.0], [3.0, 1000.0]], **options})
    return Ads1115Turbidity(config, bus)


def test_ads1115_reads_the_configured_channel_and_calibrates_piecewise() -> None:
    bus = FakeAds1115Bus(address=0x49)
    bus.volts = [0.1, 4.0, 1.25, 0.2]
    ads = _ads(bus, channel=2)
    [sample] = ads.read()
    # 1.25 V is halfway from 0.5 V (0 NTU) to 2.0 V (100 NTU); the 16-bit code
    # quantises by 4.096 V / 32768 = 0.125 mV, i.e. < 0.01 NTU here.
    assert sample.fields["ntu"] == pytest.approx(50.0, abs=0.01)
    bus.volts[2] = 2.5          # second segment: 100 + 900 × (0.5 / 1.0)
    assert ads.read()[0].fields["ntu"] == pytest.approx(550.0, abs=0.1)
    # The library wrote single-shot conversions on AIN2 (MUX 110) at gain 1 (PGA 001).
    config_writes = [w for w in bus.writes if len(w) == 3 and w[0] == 1]
    assert config_writes and all((w[1] >> 4) & 0x7 == 0b110 for w in config_writes[1:])
    assert all((w[1] >> 1) & 0x7 == 0b001 for w in config_writes)


def test_ads1115_outside_the_curve_is_out_of_range_not_a_value() -> None:
    bus = FakeAds1115Bus()
    ads = _ads(bus, gain="2/3")
    bus.volts[0] = 0.2           # below the first point: a dry or unplugged probe
    assert ads.read() == [type(ads.read()[0])(out_of_range=1)]
    bus.volts[0] = 4.5           # beyond the last point: not extrapolated
    [sample] = ads.read()
    assert sample.out_of_range == 1 and not sample.publishes
    bus.volts[0] = 3.0           # the last point itself is on the curve
    assert ads.read()[0].fields["ntu"] == pytest.approx(1000.0, abs=1.0)


def test_ads1115_absent_at_its_address_fails_at_start() -> None:
    with pytest.raises(ValueError, match="No I2C device"):
        _ads(FakeAds1115Bus(address=0x48), address=0x4A)


def test_calibration_interpolation_by_hand() -> None:
    curve = [(0.0, 0.0), (1.0, 10.0), (2.0, 110.0)]
    assert ntu_from_volts(0.25, curve) == pytest.approx(2.5)
    assert ntu_from_volts(1.5, curve) == pytest.approx(60.0)
    assert ntu_from_volts(2.0, curve) == pytest.approx(110.0)
    assert ntu_from_volts(-0.01, curve) is None
    assert ntu_from_volts(2.01, curve) is None


# --------------------------------------------------------------------------- maxbotix


def _maxbotix(frames: list[bytes], **options: Any) -> tuple[MaxbotixRange, FakeTtl]:
    port = FakeTtl(frames)
    config = MaxbotixSensor.model_validate({
        "id": "trap1-depth", "kind": "sediment", "driver": "maxbotix", "port": "/dev/ttyAMA0",
        "pings": 5, "min_range_in": 12, "max_range_in": 200, "timeout_s": 1.0, **options})
    clock = Clock(wall_s=0)

    def tick() -> float:
        clock.advance(0.01)  # each look at the clock is 10 ms of streaming
        return clock.monotonic()

    return MaxbotixRange(config, lambda _: port, tick), port


def test_maxbotix_median_of_pings_in_inches() -> None:
    # mm frames: 1016 mm = 40 in, 1041 = 40.98 in, 990 = 38.98 in.
    driver, port = _maxbotix([b"R1016", b"R1041", b"R0990", b"R1016", b"R1029"])
    [sample] = driver.read()
    assert sample.fields["distance_in"] == pytest.approx(1016 / 25.4)
    assert sample.discarded == 0
    driver.close()
    assert port.closed


def test_maxbotix_discards_and_counts_out_of_range_and_garbled_frames() -> None:
    # 0254 mm = 10 in: the bracket (under min 12 in); 9999 mm: no echo (over 200 in);
    # "R1x00" garbled. The median is of the two good frames (40 and 42 in).
    driver, _ = _maxbotix([b"R0254", b"R1016", b"R9999", b"R1x00", b"R1067"], pings=5)
    [sample] = driver.read()
    assert sample.discarded == 3
    assert sample.fields["distance_in"] == pytest.approx((1016 + 1067) / 2 / 25.4)


def test_maxbotix_all_frames_bad_publishes_nothing() -> None:
    driver, _ = _maxbotix([b"R0100"] * 5)
    [sample] = driver.read()
    assert not sample.publishes and sample.discarded == 5


def test_maxbotix_inch_frames_and_a_silent_sensor() -> None:
    driver, _ = _maxbotix([b"R040", b"R041", b"R039"], pings=3, frame_unit="in")
    assert driver.read()[0].fields["distance_in"] == 40
    silent, _ = _maxbotix([], pings=3)
    with pytest.raises(TimeoutError):
        silent.read()


# --------------------------------------------------------------------------- modbus


def test_modbus_register_map_float32_and_scaled_int16() -> None:
    port = FakeModbusPort(slave=7, words={0: float_words(12.5)[0], 1: float_words(12.5)[1],
                                          4: 0xFF9C})  # int16 -100 × 0.1 = -10.0 °C
    config = ModbusSensor.model_validate({
        "id": "sonde", "kind": "turbidity", "driver": "modbus", "port": "/dev/ttyUSB0",
        "slave": 7, "register": 0, "type": "float32",
        "registers": {"temp_c": {"address": 4, "type": "int16", "functioncode": 4,
                                 "scale": 0.1}}})
    sonde = ModbusSonde(config, lambda _: port)
    [sample] = sonde.read()
    assert sample.fields == {"temp_c": pytest.approx(-10.0), "ntu": pytest.approx(12.5)}
    # The requests on the wire: slave 7, function 4 at 4 (1 register), function 3 at 0 (2).
    assert [r[:6] for r in port.requests] == [bytes([7, 4, 0, 4, 0, 1]),
                                              bytes([7, 3, 0, 0, 0, 2])]


def test_modbus_negative_or_nan_reading_is_discarded() -> None:
    nan_high, nan_low = float_words(float("nan"))
    port = FakeModbusPort(slave=1, words={0: nan_high, 1: nan_low})
    config = ModbusSensor.model_validate({
        "id": "sonde", "kind": "turbidity", "driver": "modbus", "port": "/dev/ttyUSB0",
        "register": 0})
    [sample] = ModbusSonde(config, lambda _: port).read()
    assert not sample.publishes and sample.discarded == 1


def test_modbus_rain_counter_register_reports_raw_counter_and_width() -> None:
    port = FakeModbusPort(slave=1, words={10: 65530})
    config = ModbusSensor.model_validate({
        "id": "rg1", "kind": "rain", "driver": "modbus", "port": "/dev/ttyUSB0",
        "register": 10, "type": "uint16"})
    sonde = ModbusSonde(config, lambda _: port)
    [sample] = sonde.read()
    assert (sample.counter, sample.counter_bits) == (65530, 16)
    port.words[10] = 4
    assert sonde.read()[0].counter == 4


def test_counter_wrap_and_reset_follow_the_daemons_rule() -> None:
    assert tips_between(None, 500) == 0                  # the first reading is a baseline
    assert tips_between(100, 103) == 3
    assert tips_between(65530, 4, 16) == 10              # wrapped at 2^16
    assert tips_between(65530, 4) == 10                  # the width found by the rule
    assert tips_between(2**32 - 2, 1) == 3               # 32 bits
    assert tips_between(500, 3, 16) == 3                 # not near the top: a reset, from 0


# --------------------------------------------------------------------------- csv


def _csv(tmp_path: Path, text: str, speed: str | float = "max", sensor: str = "rg2",
         kind: str = "rain", clock: Clock | None = None) -> CsvReplay:
    path = tmp_path / "card.csv"
    if not path.exists():
        path.write_text(text)
    config = CsvSensor.model_validate({"id": sensor, "kind": kind, "driver": "csv",
                                       "file": str(path), "speed": speed})
    return CsvReplay(config, sensor, (clock or Clock(wall_s=0)).monotonic)


CARD = ("ts,tips_total\n"
        "2026-11-29T10:00:00Z,100\n"
        "2026-11-29T10:01:00Z,101\n"
        "\n"
        "2026-11-29T05:02:00-05:00,not-a-number\n"
        "1795946580,105\n")   # 10:03:00Z as Unix seconds


def test_csv_rows_at_their_own_timestamps_and_bad_rows_counted(tmp_path: Path) -> None:
    driver = _csv(tmp_path, CARD)
    samples = driver.read()
    ten = 1_795_946_400_000  # 2026-11-29T10:00:00Z in Unix ms
    assert [(s.ts_ms, s.counter, s.discarded) for s in samples] == [
        (ten, 100, 0), (ten + 60_000, 101, 0), (ten + 120_000, None, 1), (ten + 180_000, 105, 0)]
    assert driver.read() == []


def test_csv_resumes_after_the_last_committed_row(tmp_path: Path) -> None:
    first = _csv(tmp_path, CARD)
    samples = first.read()
    first.close()
    # The node committed up to the second row only (the state of that sample).
    again = _csv(tmp_path, CARD)
    again.restore(samples[1].state)
    assert [s.counter for s in again.read()] == [None, 105]
    # A file replaced meanwhile is replayed from its first row.
    (tmp_path / "card.csv").write_text("ts,tips_total\n2026-11-29T11:00:00Z,7\n")
    other = _csv(tmp_path, "")
    other.restore(samples[3].state)
    assert [s.counter for s in other.read()] == [7]


def test_csv_replay_format_with_sensor_column_and_realtime_pacing(tmp_path: Path) -> None:
    text = ("ts,site,sensor,tips_total,ntu\n"
            "2026-11-29T10:00:00Z,branch-meadows,tb-up,,12.5\n"
            "2026-11-29T10:00:00Z,branch-meadows,rg1,7,\n"
            "2026-11-29T10:00:30Z,branch-meadows,tb-up,,13.0\n"
            "2026-11-29T10:02:00Z,branch-meadows,tb-up,,-1\n"
            "2026-11-29T10:05:00Z,branch-meadows,tb-up,,20\n")
    clock = Clock(wall_s=0)
    driver = _csv(tmp_path, text, speed=10.0, sensor="tb-up", kind="turbidity", clock=clock)
    assert [s.fields for s in driver.read()] == [{"ntu": 12.5}]   # the first row at once
    assert driver.wait_s() == pytest.approx(3.0)                 # 30 s of data at ×10
    assert driver.read() == []
    clock.advance(3.0)
    assert [s.fields for s in driver.read()] == [{"ntu": 13.0}]
    clock.advance(9.0)                                           # 10:02 is due: bad value
    assert [s.discarded for s in driver.read()] == [1]
    assert driver.wait_s() == pytest.approx(18.0)                # 10:05 at ×10


def test_csv_of_several_sites_keeps_the_nodes_own(tmp_path: Path) -> None:
    """A replay file may hold sites that use one sensor id each: a node takes its site's."""
    path = tmp_path / "card.csv"
    path.write_text("ts,site,sensor,tips_total\n"
                    "2026-11-29T10:00:00Z,mill-road-lot,rg1,900\n"
                    "2026-11-29T10:00:00Z,branch-meadows,rg1,7\n"
                    "2026-11-29T10:01:00Z,mill-road-lot,rg1,901\n")
    config = CsvSensor.model_validate({"id": "rg1", "kind": "rain", "driver": "csv",
                                       "file": str(path), "speed": "max"})
    driver = CsvReplay(config, "rg1", Clock(wall_s=0).monotonic, "branch-meadows")
    assert [s.counter for s in driver.read()] == [7]


def test_csv_without_ts_or_fields_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CsvFormatError, match="no ts column"):
        _csv(tmp_path, "time,tips_total\n")
    (tmp_path / "card.csv").unlink()
    with pytest.raises(CsvFormatError, match="none of the columns"):
        _csv(tmp_path, "ts,ntu\n", kind="rain")

"""Turbidity probe with a voltage output, read through an ADS1115 ADC on I2C.

Wiring: the probe's signal to the ADC input ``channel`` (A0-A3), the ADC at
``address`` (0x48 with ADDR to GND; 0x49 VDD, 0x4A SDA, 0x4B SCL) on the Pi's
I2C bus 1 (SDA GPIO2, SCL GPIO3). The ADC's full scale must cover the probe's
output: ``gain`` 1 is ±4.096 V, 2/3 is ±6.144 V (never above VDD + 0.3 V).

Calibration is piecewise linear through two or more ``[volts, NTU]`` points
(from formazin standards, or the probe's data sheet). A voltage outside the
curve is not extrapolated: the probe is dry, fouled, unplugged or in water
beyond what was calibrated, and a made-up NTU could start or end a turbidity
episode at the daemon. Such a reading is counted as ``out_of_range`` in status
and not published.

The Adafruit library is imported when a sensor uses this driver, not before:
the project's ``pip install .`` has it only with the ``node`` extra (the
node's own ``pip install ./sensors`` always), and Blinka probes the board
when imported.
It is given an I2C bus object; on a Pi that is Blinka's ``busio.I2C``, in the
tests a fake bus that answers at the byte level.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..config import Ads1115Sensor
from .base import Driver, Sample


def ntu_from_volts(volts: float, curve: Sequence[tuple[float, float]]) -> float | None:
    """NTU for ``volts`` by linear interpolation on ``curve`` (volts increasing);
    None outside the curve."""
    if not curve[0][0] <= volts <= curve[-1][0]:
        return None
    for (v0, n0), (v1, n1) in zip(curve, curve[1:], strict=False):
        if volts <= v1:
            return n0 + (n1 - n0) * (volts - v0) / (v1 - v0)
    return curve[-1][1]  # pragma: no cover - the range test above returns first


def default_i2c() -> Any:
    """The Pi's I2C bus 1 through Blinka (only works on the board itself)."""
    import board  # Blinka: detects the board at import, so only here
    import busio

    return busio.I2C(board.SCL, board.SDA)


class Ads1115Turbidity(Driver):
    def __init__(self, config: Ads1115Sensor, i2c: Any) -> None:
        from adafruit_ads1x15.ads1115 import ADS1115  # lazily: see the docstring
        from adafruit_ads1x15.analog_in import AnalogIn

        gain = 2 / 3 if config.gain == "2/3" else config.gain
        self.curve = list(config.calibration)
        self.samples = config.samples
        self._ads = ADS1115(i2c, gain=gain, address=config.address)
        self._input = AnalogIn(self._ads, config.channel)

    def volts(self) -> float:
        """The probe's output in volts, the mean of ``samples`` conversions."""
        return sum(float(self._input.voltage) for _ in range(self.samples)) / self.samples

    def read(self) -> Sequence[Sample]:
        ntu = ntu_from_volts(self.volts(), self.curve)
        if ntu is None:
            return [Sample(out_of_range=1)]
        return [Sample(fields={"ntu": ntu})]

"""Simulated sensors for ``stormwatch simulate``: a design storm as a site's nodes see it.

Theory of operation
-------------------
Everything here is a pure function of simulated time, so a simulation is the
same whatever the machine's load, and a test can compute by hand what it will
publish:

1. **Rain** follows the SCS (NRCS) 24-hour dimensionless cumulative distribution
   of type II or III (``fraction_24h``), stretched to the storm's duration and
   scaled to its depth (``DesignStorm``). The bucket tips each time a whole
   tip's worth has fallen, so the count at time t is
   ``floor(N · F(t))`` with ``N = round(depth_in / in_per_tip)`` tips in all
   (``DesignStorm.tips_at``). The gauge reports the tips since its last
   reading; the node turns them into its own ``tips_total``, which it publishes
   every interval, rain or not (the dry heartbeat of sensors/README.md, "MQTT contract").
2. **Turbidity** is a background that drifts slowly (shared by both probes of
   a pair when they have the same ``background_ntu``) plus ``ntu_per_in_per_h``
   times the mean rain intensity of the last 30 minutes (the time runoff takes
   to reach the probe and mix), plus seeded noise. An upstream probe gets a
   small factor (the stream's own response), a downstream one below the site's
   discharge a large one, so the contrast grows with intensity. A reading never
   exceeds the probe's full scale ``max_ntu``: a probe pegs.
3. **Sediment** grows with runoff: ``sediment_in_per_runoff_in`` times the rain
   so far above the initial abstraction ``initial_abstraction_in`` (the rain
   that wets the ground before any runs off; TR-55 takes Ia = 0.2 S), plus the
   ultrasonic sensor's jitter. With ``sensor_height_in`` the sensor reports the
   distance from its face to the sediment, ``sensor_height_in − depth``.
4. **Readings** fall on a grid, ``start_s + k · every_s`` up to ``end_s``; each
   carries its grid time, so a node that wakes late (a busy machine, a high
   ``--speed``) catches up with the readings it owes, never skips one.

The clock is simulated Unix seconds; ``stormwatch simulate`` hands the same
clock to the node as its wall and monotonic clock (``Hardware.monotonic``), so
the node's clock-sanity rule (``sensors/clock.py``) judges simulated time.
"""

from __future__ import annotations

import bisect
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal, Protocol

from ..config import SimSensor, SimStorm
from .base import Driver, Sample

StormType = Literal["II", "III"]

# The SCS (now NRCS) 24-hour rainfall distributions as (hour, fraction of the
# 24-hour depth fallen by then). Source: USDA Soil Conservation Service,
# "Urban Hydrology for Small Watersheds", Technical Release 55 (TR-55), 2nd ed.,
# June 1986, Appendix B, Figure B-1, whose curves are the TR-20 rainfall tables;
# the ordinates here are those tables as reprinted with TR-55 in design manuals:
# every half hour, and every quarter hour from 9 h to type II's peak. The two
# ordinates that decide when type II reaches half its depth, 0.357 at 11.75 h
# and 0.663 at 12.0 h, are the same in every printing; reprints differ by up to
# 0.006 at some hours far from the peak (type III's tail most). Linear between.
TYPE_II_24H: Final = (
    (0.0, 0.000), (0.5, 0.005), (1.0, 0.011), (1.5, 0.016), (2.0, 0.022), (2.5, 0.028),
    (3.0, 0.035), (3.5, 0.041), (4.0, 0.048), (4.5, 0.056), (5.0, 0.063), (5.5, 0.071),
    (6.0, 0.080), (6.5, 0.089), (7.0, 0.098), (7.5, 0.109), (8.0, 0.120), (8.5, 0.133),
    (9.0, 0.147), (9.25, 0.155), (9.5, 0.163), (9.75, 0.172), (10.0, 0.181), (10.25, 0.193),
    (10.5, 0.204), (10.75, 0.219), (11.0, 0.235), (11.25, 0.254), (11.5, 0.283),
    (11.75, 0.357), (12.0, 0.663), (12.5, 0.735), (13.0, 0.772), (13.5, 0.799), (14.0, 0.820),
    (14.5, 0.838), (15.0, 0.854), (15.5, 0.868), (16.0, 0.880), (16.5, 0.891), (17.0, 0.902),
    (17.5, 0.912), (18.0, 0.921), (18.5, 0.930), (19.0, 0.938), (19.5, 0.945), (20.0, 0.952),
    (20.5, 0.959), (21.0, 0.965), (21.5, 0.971), (22.0, 0.977), (22.5, 0.983), (23.0, 0.989),
    (23.5, 0.995), (24.0, 1.000),
)
TYPE_III_24H: Final = (
    (0.0, 0.000), (0.5, 0.005), (1.0, 0.010), (1.5, 0.015), (2.0, 0.020), (2.5, 0.025),
    (3.0, 0.031), (3.5, 0.037), (4.0, 0.043), (4.5, 0.050), (5.0, 0.057), (5.5, 0.065),
    (6.0, 0.072), (6.5, 0.081), (7.0, 0.089), (7.5, 0.102), (8.0, 0.115), (8.5, 0.130),
    (9.0, 0.148), (9.5, 0.167), (10.0, 0.189), (10.5, 0.216), (11.0, 0.250), (11.5, 0.298),
    (11.75, 0.339), (12.0, 0.500), (12.5, 0.702), (13.0, 0.751), (13.5, 0.785), (14.0, 0.811),
    (14.5, 0.830), (15.0, 0.848), (15.5, 0.867), (16.0, 0.886), (16.5, 0.895), (17.0, 0.904),
    (17.5, 0.913), (18.0, 0.922), (18.5, 0.930), (19.0, 0.938), (19.5, 0.946), (20.0, 0.953),
    (20.5, 0.959), (21.0, 0.965), (21.5, 0.971), (22.0, 0.977), (22.5, 0.983), (23.0, 0.989),
    (23.5, 0.995), (24.0, 1.000),
)
DISTRIBUTIONS: Final = {"II": TYPE_II_24H, "III": TYPE_III_24H}
_HOURS: Final = {name: [h for h, _ in table] for name, table in DISTRIBUTIONS.items()}

#: Seconds of rain whose mean intensity drives turbidity (travel and mixing time).
INTENSITY_WINDOW_S: Final = 1800.0
#: The background drifts by this fraction over this period (a stream is never flat).
BACKGROUND_SWING: Final = 0.1
BACKGROUND_PERIOD_S: Final = 6 * 3600.0
#: Water temperature: a mean and a daily swing, °C.
WATER_TEMP_C: Final = 12.0
WATER_TEMP_SWING_C: Final = 1.5
#: Readings committed per read when catching up (one transaction each).
BATCH_READINGS: Final = 200
#: Seconds between wake-ups once the last reading is taken (nothing more will come).
DONE_WAIT_S: Final = 3600.0
#: Tolerance of the tip count's floor: 0.5 × 100 computed as 49.999999... is 50 tips.
_TIP_EPSILON: Final = 1e-9


def fraction_24h(hours: float, storm_type: StormType = "II") -> float:
    """Fraction of the 24-hour depth fallen ``hours`` into an SCS storm (0 before, 1 after)."""
    table = DISTRIBUTIONS[storm_type]
    if hours <= 0.0:
        return 0.0
    if hours >= 24.0:
        return 1.0
    i = bisect.bisect_right(_HOURS[storm_type], hours)
    (h0, f0), (h1, f1) = table[i - 1], table[i]
    return f0 + (f1 - f0) * (hours - h0) / (h1 - h0)


@dataclass(frozen=True, slots=True)
class DesignStorm:
    """A storm of ``depth_in`` over ``hours`` from ``start_s`` (Unix s), SCS ``storm_type``."""

    depth_in: float
    hours: float
    storm_type: StormType
    start_s: float

    @classmethod
    def of(cls, config: SimStorm) -> DesignStorm:
        return cls(config.depth_in, config.hours, config.type, config.start_s)

    def fraction_at(self, t_s: float) -> float:
        """Fraction of the depth fallen by ``t_s``: the 24-hour curve stretched to ``hours``."""
        return fraction_24h(24.0 * (t_s - self.start_s) / (self.hours * 3600.0), self.storm_type)

    def depth_in_at(self, t_s: float) -> float:
        return self.depth_in * self.fraction_at(t_s)

    def intensity_in_per_h(self, t_s: float, window_s: float = INTENSITY_WINDOW_S) -> float:
        """Mean intensity over the ``window_s`` before ``t_s``."""
        fallen_in = self.depth_in_at(t_s) - self.depth_in_at(t_s - window_s)
        return fallen_in * 3600.0 / window_s

    def total_tips(self, in_per_tip: float) -> int:
        """Tips of the whole storm: its depth in whole tips of ``in_per_tip``."""
        return round(self.depth_in / in_per_tip)

    def tips_at(self, t_s: float, in_per_tip: float) -> int:
        """Tips by ``t_s``: one each time a whole tip's worth has fallen."""
        return math.floor(self.total_tips(in_per_tip) * self.fraction_at(t_s) + _TIP_EPSILON)


def readings_between(start_s: float, end_s: float, every_s: float) -> int:
    """Readings on the grid ``start_s + k · every_s`` up to ``end_s`` inclusive."""
    n = max(math.floor((end_s - start_s) / every_s), -1) + 1
    # The same comparisons as the driver makes, so the two never disagree by a float.
    while n > 0 and start_s + (n - 1) * every_s > end_s:
        n -= 1
    while start_s + n * every_s <= end_s:
        n += 1
    return n


def _noise(seed: int, ts_ms: int, sd: float) -> float:
    """Gaussian noise of one reading: the same for the same seed and time, run after run."""
    return random.Random(f"{seed}:{ts_ms}").gauss(0.0, sd) if sd > 0 else 0.0


def background_ntu(base_ntu: float, t_s: float) -> float:
    """The stream's turbidity without the storm: ``base_ntu`` drifting slowly."""
    return base_ntu * (1.0 + BACKGROUND_SWING * math.sin(2 * math.pi * t_s / BACKGROUND_PERIOD_S))


def water_temp_c(t_s: float) -> float:
    return WATER_TEMP_C + WATER_TEMP_SWING_C * math.sin(2 * math.pi * t_s / 86400.0)


class SimulatedSensor(Driver):
    """One simulated sensor of any kind (see the module docstring)."""

    def __init__(self, config: SimSensor, clock: Callable[[], float]) -> None:
        self.config = config
        self._clock = clock
        self.storm = DesignStorm.of(config.storm) if config.storm is not None else None
        self._count = readings_between(config.start_s, config.end_s, config.every_s)
        self._next_k = 0
        self._last_tips = 0
        self._value: Callable[[float, int], Sample] = {
            "rain": self._rain, "turbidity": self._turbidity, "sediment": self._sediment,
        }[config.kind]

    @property
    def finished(self) -> bool:
        """Whether every reading up to ``end_s`` has been taken."""
        return self._next_k >= self._count

    def _grid_s(self, k: int) -> float:
        return self.config.start_s + k * self.config.every_s

    def read(self) -> Sequence[Sample]:
        now_s = self._clock()
        out: list[Sample] = []
        while (len(out) < BATCH_READINGS and self._next_k < self._count
               and (t_s := self._grid_s(self._next_k)) <= now_s):
            out.append(self._value(t_s, round(t_s * 1000)))
            self._next_k += 1
        return out

    def wait_s(self) -> float:
        if self.finished:
            return DONE_WAIT_S
        return max(self._grid_s(self._next_k) - self._clock(), 0.0)

    # ------------------------------------------------------------------ the kinds

    def _rain(self, t_s: float, ts_ms: int) -> Sample:
        tips = self.storm.tips_at(t_s, self.config.in_per_tip) if self.storm else 0
        # The first reading is the gauge's baseline: the node publishes its count as is.
        new = tips - self._last_tips if self._next_k else 0
        self._last_tips = tips
        return Sample(tips=new, ts_ms=ts_ms)

    def _turbidity(self, t_s: float, ts_ms: int) -> Sample:
        cfg = self.config
        intensity = self.storm.intensity_in_per_h(t_s) if self.storm else 0.0
        ntu = (background_ntu(cfg.background_ntu, t_s) + cfg.ntu_per_in_per_h * intensity
               + _noise(cfg.seed, ts_ms, cfg.noise_ntu))
        return Sample(fields={"ntu": min(max(ntu, 0.0), cfg.max_ntu),
                              "temp_c": water_temp_c(t_s)}, ts_ms=ts_ms)

    def _sediment(self, t_s: float, ts_ms: int) -> Sample:
        cfg = self.config
        rain_in = self.storm.depth_in_at(t_s) if self.storm else 0.0
        runoff_in = max(rain_in - cfg.initial_abstraction_in, 0.0)
        depth_in = (cfg.sediment_start_in + cfg.sediment_in_per_runoff_in * runoff_in
                    + _noise(cfg.seed, ts_ms, cfg.noise_in))
        top_in = cfg.sensor_height_in if cfg.sensor_height_in is not None else math.inf
        depth_in = min(max(depth_in, 0.0), top_in)
        if cfg.sensor_height_in is None:
            return Sample(fields={"depth_in": depth_in}, ts_ms=ts_ms)
        return Sample(fields={"distance_in": cfg.sensor_height_in - depth_in}, ts_ms=ts_ms)


# --------------------------------------------------------------------------- the clock


class SimulatedClock(Protocol):
    """Simulated Unix seconds, and how many of them pass per real second now."""

    def __call__(self) -> float: ...

    def rate(self) -> float: ...


class SimClock:
    """Simulated Unix seconds: ``speed`` × real time from ``start_s`` to ``end_s``, then
    real pace (so statuses and a draining backlog never get ahead of the real clock)."""

    def __init__(self, start_s: float, end_s: float, speed: float,
                 real: Callable[[], float] = time.monotonic) -> None:
        self.start_s, self.end_s, self.speed = start_s, end_s, speed
        self._real = real
        self._real0_s = real()
        self._end_real_s = (end_s - start_s) / speed

    def __call__(self) -> float:
        elapsed_s = self._real() - self._real0_s
        if elapsed_s <= self._end_real_s:
            return self.start_s + elapsed_s * self.speed
        return self.end_s + (elapsed_s - self._end_real_s)

    def rate(self) -> float:
        """Simulated seconds per real second, now."""
        return self.speed if self._real() - self._real0_s <= self._end_real_s else 1.0

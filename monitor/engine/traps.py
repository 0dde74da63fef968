"""Sediment traps and ponds: how much of the design capacity sediment has taken.

§ 134-9A(1) of the chapter: "Sediment shall be removed from sediment traps or
sediment ponds whenever their design capacity has been reduced by 50%." The
capacity is a *volume*, so the rule is stated on volume, not on depth: a trap
with sloping sides holds most of its water near the top, and half the design
depth of sediment fills much less than half of it.

Geometry follows the basin shapes of the New York State Standards and
Specifications for Erosion and Sediment Control (the "Blue Book", cited by the
chapter as the Erosion Control Manual): an excavated trap with a flat bottom
and side slopes of ``z`` horizontal to 1 vertical, a vertical-walled box or
riser, or, for ponds, the designer's stage-storage table. Dimensions are feet
and volumes cubic feet; sensor depths are inches.

The rule over readings (``TrapFold``): each reading gives a sediment depth,
the median of the last ``median_of`` readings smooths a single bad echo away,
and the smoothed fill fraction drives three facts:

``trap_fill``              the fill reached ``warn_fraction`` [0.4]
``trap_cleanout_required`` the fill reached ``cleanout_fraction`` [0.5], and
                           again every ``cleanout_repeat_hours`` [24] while it
                           holds (``repeat`` 1, 2, ...)
``trap_cleaned``           the fill dropped by at least 0.2 from its maximum of
                           the trailing 24 hours (a maintenance record)

Warm-up: there is no fill, and no fact, until ``median_of`` readings exist. A
median of fewer readings is no smoothing at all: a first reading that is an
echo (60 in of "sediment" in a 48 in trap) would otherwise be a clean-out
demand, and the true readings after it two invented clean-outs. With
``median_of`` >= 3 a single reading, beyond the design depth or not, is never
the median, so it is never a fill fact.

A threshold fires once, then re-arms only after the fill has fallen
``REARM_FRACTION`` below it, so a reading that hovers at the line does not
alert on every wobble. An unanswered clean-out demand is a standing violation
of § 134-9A(1), so it is repeated, like an overdue inspection; a repeat is
concluded at a reading (at least ``cleanout_repeat_hours`` after the previous
demand, the fill still at the clean-out level), never from time alone: a
silent sensor says nothing about the trap (``sensor_stale`` reports it).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from ..config import SensorConfig, TrapConfig
from .events import Fact, TrapCleaned, TrapCleanoutRequired, TrapFill, make_id
from .inputs import Reading
from .times import MS_PER_DAY, MS_PER_HOUR

MICRO_PER_IN = 1_000_000
IN_PER_FT = 12.0

#: How far below a threshold the fill must fall before that threshold fires again.
REARM_FRACTION = 0.05
#: A drop of the smoothed fill this large within ``CLEANED_WINDOW_MS`` is a clean-out.
CLEANED_DROP = 0.2
CLEANED_WINDOW_MS = MS_PER_DAY

# Fill fractions are ratios of float volumes; comparing them after rounding to
# 1e-9 keeps a trap filled to exactly half its volume from reading 0.4999999999.
_DIGITS = 9

TrapLevel = Literal["ok", "warn", "cleanout"]
T = TypeVar("T")


# --------------------------------------------------------------------------- geometry


def volume_cf(trap: TrapConfig, depth_ft: float) -> float:
    """Storage volume in cubic feet below ``depth_ft`` above the trap bottom.

    ``rectangular``   V = L·W·h (vertical walls, bottom length L, width W).
    ``trapezoidal``   V = L·W·h + (L + W)·z·h² + 4/3·z²·h³: the prismoidal volume
                      of a flat-bottomed excavation with side slopes z:1 (H:V),
                      the sediment-trap shape of the Blue Book; the section at
                      height y is (L + 2zy)·(W + 2zy), integrated from 0 to h.
    ``cylindrical``   V = π·(d/2)²·h (a riser or round tank of diameter d).
    ``stage_storage`` linear interpolation in the designer's [depth_ft, volume_cf]
                      table; below its first row from (0, 0), above its last
                      row along the slope of the last segment.

    Depths at or below the bottom hold nothing.
    """
    if depth_ft <= 0:
        return 0.0
    h = depth_ft
    if trap.shape == "rectangular":
        return _req(trap.bottom_length_ft) * _req(trap.bottom_width_ft) * h
    if trap.shape == "trapezoidal":
        length, width = _req(trap.bottom_length_ft), _req(trap.bottom_width_ft)
        z = _req(trap.side_slope)
        return length * width * h + (length + width) * z * h * h + 4.0 / 3.0 * z * z * h**3
    if trap.shape == "cylindrical":
        radius = _req(trap.diameter_ft) / 2.0
        return math.pi * radius * radius * h
    return _stage_volume_cf(_req(trap.stage_storage), h)


def design_volume_cf(trap: TrapConfig) -> float:
    """The design capacity of § 134-9A(1): the volume at ``design_depth_ft``."""
    return volume_cf(trap, trap.design_depth_ft)


def fill_fraction(trap: TrapConfig, depth_in: float) -> float:
    """Fraction of the design capacity taken by ``depth_in`` inches of sediment.

    V(depth) / V(design depth), the quantity § 134-9A(1) limits to 0.5. It may
    exceed 1 when sediment rises above the design depth.
    """
    return volume_cf(trap, depth_in / IN_PER_FT) / design_volume_cf(trap)


def depth_for_fraction_in(trap: TrapConfig, fraction: float, *, tol_in: float = 1e-6) -> float:
    """The sediment depth in inches at which ``fill_fraction`` first reaches ``fraction``.

    Found by bisection (every volume function here is non-decreasing in depth),
    so it also answers for stage-storage tables. For documentation and tests:
    "this trap needs clean-out at 31.8 in of sediment, not at 24 in".
    """
    if fraction <= 0:
        return 0.0
    target = fraction * design_volume_cf(trap)
    lo, hi = 0.0, trap.design_depth_ft * IN_PER_FT
    for _ in range(64):
        if volume_cf(trap, hi / IN_PER_FT) >= target:
            break
        lo, hi = hi, hi * 2.0
    else:
        # A stage-storage table whose last segment is flat never gets there.
        raise ValueError(f"trap {trap.id} never reaches a fill of {fraction}")
    while hi - lo > tol_in:
        mid = (lo + hi) / 2.0
        if volume_cf(trap, mid / IN_PER_FT) < target:
            lo = mid
        else:
            hi = mid
    return hi


def trap_state(fill_fraction: float, trap: TrapConfig) -> TrapLevel:
    """The level of a fill fraction for status displays: "ok", "warn" or "cleanout".

    A plain comparison with the thresholds, without the alerts' hysteresis.
    """
    fill = round(fill_fraction, _DIGITS)
    if fill >= trap.cleanout_fraction:
        return "cleanout"
    if fill >= trap.warn_fraction:
        return "warn"
    return "ok"


def _stage_volume_cf(table: list[tuple[float, float]], depth_ft: float) -> float:
    d1, v1 = table[0]
    if depth_ft <= d1:
        # Here 0 < depth_ft <= d1: the basin is empty at its bottom, (0, 0).
        return v1 * depth_ft / d1
    i = bisect_right([d for d, _ in table], depth_ft)
    # Past the last row, keep the last segment's slope (extrapolate).
    i = min(i, len(table) - 1)
    (d0, v0), (d1, v1) = table[i - 1], table[i]
    return v0 + (v1 - v0) * (depth_ft - d0) / (d1 - d0)


def _req(value: T | None) -> T:
    # The configuration validator guarantees the dimensions of each shape.
    if value is None:
        raise ValueError("trap geometry is incomplete for its shape")
    return value


# --------------------------------------------------------------------------- the rule


@dataclass(slots=True)
class TrapState:
    """One trap's smoothing window, alert arming and trailing-24 h maximum."""

    #: Depths of the last ``median_of`` readings, micro-inches, event order.
    recent: deque[int] = field(default_factory=deque)
    warn_armed: bool = True
    cleanout_armed: bool = True
    #: (ts_ms, fill) with fills strictly decreasing: the front is the 24 h maximum.
    peaks: deque[tuple[int, float]] = field(default_factory=deque)
    last_ts: int | None = None
    #: None until ``median_of`` readings exist (warm-up): there is no fill yet.
    last_fill: float | None = None
    last_depth_in: float | None = None
    #: The standing clean-out demand: when it was first made, when last said, and
    #: how many repeats; None and 0 while the clean-out alert is armed.
    demand_first_ts: int | None = None
    demand_last_ts: int | None = None
    demand_repeats: int = 0


class TrapFold:
    """The § 134-9A(1) fill rule over one trap's sediment-depth sensor."""

    def __init__(self, site: str, trap: TrapConfig, sensor: SensorConfig) -> None:
        self.site = site
        self.trap = trap
        self.sensor = sensor
        self.median_of = trap.median_of
        self.design_cf = design_volume_cf(trap)
        self.warn = trap.warn_fraction
        self.cleanout = trap.cleanout_fraction
        self.warn_rearm = round(trap.warn_fraction - REARM_FRACTION, _DIGITS)
        self.cleanout_rearm = round(trap.cleanout_fraction - REARM_FRACTION, _DIGITS)
        self.repeat_ms = round(trap.cleanout_repeat_hours * MS_PER_HOUR)
        height = sensor.sensor_height_in
        self.height_micro = None if height is None else round(height * MICRO_PER_IN)

    # ---------------------------------------------------------------- Fold protocol

    def initial(self) -> TrapState:
        return TrapState()

    def key(self, item: Reading) -> tuple[Any, ...]:
        depth = self._depth_micro(item)
        # Readings without a usable depth share one key per instant: they are
        # ignored by ``step`` anyway, and ``None`` would not sort against ints.
        return (item.ts_ms, 0, depth) if depth is not None else (item.ts_ms, 1, 0)

    def step(self, state: TrapState, item: Reading, out: list[Fact]) -> None:
        depth = self._depth_micro(item)
        if depth is None:
            return
        ts = item.ts_ms
        recent = state.recent
        recent.append(depth)
        if len(recent) > self.median_of:
            recent.popleft()
        depth_in = _median(recent) / MICRO_PER_IN
        state.last_ts, state.last_depth_in = ts, depth_in
        if len(recent) < self.median_of:
            # Warm-up (module docstring): the window only grows, so this holds for the
            # first ``median_of`` - 1 readings only, and nothing is armed or tracked yet.
            return
        fill = round(volume_cf(self.trap, depth_in / IN_PER_FT) / self.design_cf, _DIGITS)
        state.last_fill = fill

        if fill <= self.warn_rearm:
            state.warn_armed = True
        if fill <= self.cleanout_rearm:
            state.cleanout_armed = True
            state.demand_first_ts = state.demand_last_ts = None
            state.demand_repeats = 0
        if state.warn_armed and fill >= self.warn:
            state.warn_armed = False
            out.append(self._level_fact(TrapFill, ts, fill, depth_in, self.warn))
        if state.cleanout_armed and fill >= self.cleanout:
            state.cleanout_armed = False
            state.demand_first_ts = state.demand_last_ts = ts
            out.append(self._level_fact(TrapCleanoutRequired, ts, fill, depth_in,
                                        self.cleanout))
        elif fill >= self.cleanout and state.demand_first_ts is not None \
                and state.demand_last_ts is not None \
                and ts - state.demand_last_ts >= self.repeat_ms:
            state.demand_repeats += 1
            state.demand_last_ts = ts
            out.append(self._level_fact(TrapCleanoutRequired, ts, fill, depth_in,
                                        self.cleanout, state.demand_first_ts,
                                        state.demand_repeats))
        self._track_cleaning(state, ts, fill, out)

    def advance(self, state: TrapState, now_ms: int, out: list[Fact]) -> None:
        """Nothing happens to a trap while no reading arrives."""

    def copy(self, state: TrapState) -> TrapState:
        return TrapState(deque(state.recent), state.warn_armed, state.cleanout_armed,
                         deque(state.peaks), state.last_ts, state.last_fill,
                         state.last_depth_in, state.demand_first_ts, state.demand_last_ts,
                         state.demand_repeats)

    def dump(self, state: TrapState) -> Any:
        return {
            "recent": list(state.recent),
            "warn_armed": state.warn_armed,
            "cleanout_armed": state.cleanout_armed,
            "peaks": [list(p) for p in state.peaks],
            "last_ts": state.last_ts,
            "last_fill": state.last_fill,
            "last_depth_in": state.last_depth_in,
            "demand_first_ts": state.demand_first_ts,
            "demand_last_ts": state.demand_last_ts,
            "demand_repeats": state.demand_repeats,
        }

    def load(self, data: Any) -> TrapState:
        # A state dumped before repeats existed has no demand: none is repeated until
        # the trap re-arms and demands clean-out afresh.
        return TrapState(deque(data["recent"]), data["warn_armed"], data["cleanout_armed"],
                         deque((ts, fill) for ts, fill in data["peaks"]), data["last_ts"],
                         data["last_fill"], data["last_depth_in"],
                         data.get("demand_first_ts"), data.get("demand_last_ts"),
                         data.get("demand_repeats", 0))

    # ---------------------------------------------------------------- status

    def summary(self, state: TrapState) -> dict[str, Any]:
        """The trap's entry of ``status --json``: fill, smoothed depth and level."""
        if state.last_fill is None or state.last_depth_in is None:
            return {"fill_fraction": None, "depth_in": None, "state": "unknown"}
        return {"fill_fraction": round(state.last_fill, 4),
                "depth_in": round(state.last_depth_in, 3),
                "state": trap_state(state.last_fill, self.trap)}

    # ---------------------------------------------------------------- internals

    def _depth_micro(self, item: Reading) -> int | None:
        """Sediment depth in micro-inches, or None when the reading cannot give one."""
        if item.depth_in is not None:
            return max(0, round(item.depth_in * MICRO_PER_IN))
        if item.distance_in is not None and self.height_micro is not None:
            # A surface measured below the trap bottom is noise, not negative sediment.
            return max(0, self.height_micro - round(item.distance_in * MICRO_PER_IN))
        return None

    def _track_cleaning(self, state: TrapState, ts: int, fill: float, out: list[Fact]) -> None:
        peaks = state.peaks
        horizon = ts - CLEANED_WINDOW_MS
        while peaks and peaks[0][0] <= horizon:
            peaks.popleft()
        # A monotonic queue: a value at or below a newer one can never be the maximum again.
        while peaks and peaks[-1][1] <= fill:
            peaks.pop()
        peaks.append((ts, fill))
        before = peaks[0][1]
        if round(before - fill, _DIGITS) >= CLEANED_DROP:
            out.append(Fact(self.site, ts, make_id("trap_cleaned", self.site, self.trap.id, ts),
                            TrapCleaned(trap=self.trap.id, fill_before=round(before, 4),
                                        fill_after=round(fill, 4), sensor=self.sensor.id)))
            peaks.clear()
            peaks.append((ts, fill))

    def _level_fact(self, kind: type[TrapFill | TrapCleanoutRequired], ts: int, fill: float,
                    depth_in: float, threshold: float, first_ts: int | None = None,
                    repeat: int = 0) -> Fact:
        """The fact of a threshold reached at ``ts``, or the ``repeat``-th repeat of the
        clean-out demand first made at ``first_ts``."""
        # A first demand keeps the id it always had. A repeat is named by the demand it
        # repeats and its number, not its own time: a late reading that moves it to
        # another reading revises it rather than retracting it and making a new one.
        fid = (make_id(kind.TYPE, self.site, self.trap.id, ts) if repeat == 0 else
               make_id(kind.TYPE, self.site, self.trap.id, first_ts, repeat))
        fill, depth_in = round(fill, 4), round(depth_in, 3)
        if kind is TrapFill:
            return Fact(self.site, ts, fid, TrapFill(
                trap=self.trap.id, fill_fraction=fill, depth_in=depth_in, sensor=self.sensor.id,
                threshold=threshold))
        return Fact(self.site, ts, fid, TrapCleanoutRequired(
            trap=self.trap.id, fill_fraction=fill, depth_in=depth_in, sensor=self.sensor.id,
            threshold=threshold, repeat=repeat))


def _median(values: deque[int]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    if n % 2:
        return float(ordered[mid])
    return (ordered[mid - 1] + ordered[mid]) / 2.0

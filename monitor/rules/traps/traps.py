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

Theory of operation (``TrapFold``)
----------------------------------
Each reading is first judged by the sensor checks of ``sediment.py``: a reading
that cannot be true (past the trap bottom, far above the design depth, a step
the sediment cannot make) is a ``sensor_fault``, kept in the journal and left
out of everything below. The valid depths go through the median of the last
``median_of`` readings, which smooths noise and single bad echoes away, and the
smoothed fill fraction drives three facts:

``trap_fill``              the fill reached ``warn_fraction`` [0.4]
``trap_cleanout_required`` the fill reached ``cleanout_fraction`` [0.5], and
                           again every ``cleanout_repeat_hours`` [24] while it
                           holds (``repeat`` 1, 2, ...)
``trap_cleaned``           the fill dropped by at least 0.2 from its maximum of
                           the trailing 24 hours (a maintenance record, kept by
                           ``falls.py``)

1. *Warm-up.* There is no fill, and no fact, until ``median_of`` valid readings
   exist. A median of fewer readings is no smoothing at all: a first reading
   that is an echo would otherwise be a clean-out demand, and the true
   readings after it two invented clean-outs.
2. *Arming.* A threshold fires once. It re-arms at a ``trap_cleaned``, or once
   the fill has stayed ``REARM_FRACTION`` (0.05) below it for ``rearm_hours``
   [6] (every valid fill in between that far below): noise about the line is
   one alert and its repeats, never a new "repeat 0" every hour.
3. *Repeats.* An unanswered clean-out demand is a standing violation of
   § 134-9A(1), so it is repeated, like an overdue inspection. A repeat is
   concluded at a reading of the sensor (at least ``cleanout_repeat_hours``
   after the previous one, the last valid fill still at the clean-out level),
   never from time alone: a silent sensor says nothing about the trap
   (``sensor_stale`` reports it). A *faulty* reading does conclude a repeat,
   on the last valid fill (and says so, ``fault``): a broken sensor must not
   silence a demand the chapter still makes.
4. *Falls* (``falls.py``). A fall opens at the reading where the fill first
   lies 0.2 below the trailing 24-hour maximum: one ``trap_cleaned`` there,
   which re-arms both thresholds. Until the fall has *settled* (the fill has
   not fallen by more than 0.02 over the last ``settle_minutes`` [60] and over
   at least ``median_of`` readings) the trap is being cleaned out, and no
   threshold is judged; then the record is revised with the settled fill, and
   the thresholds are judged from it.

The state is a function of the sorted readings before it only (``timeline.py``).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from ...config import SensorConfig, TrapConfig
from ...contract.events import (
    Fact,
    SensorFault,
    TrapCleanoutRequired,
    TrapFill,
    make_id,
)
from ...contract.inputs import Reading
from ...contract.times import MS_PER_HOUR, MS_PER_MINUTE, iso
from ..readout import FaultSummary, TrapSummary
from .falls import FILL_DIGITS as _DIGITS
from .falls import FallRule, FallState
from .sediment import IN_PER_FT, MICRO_PER_IN, CheckState, Fault, SedimentCheck

#: How far below a threshold the fill must stay (``rearm_hours``) before it fires again.
REARM_FRACTION = 0.05

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
    """One trap's sensor checks, smoothing window, alert arming, falls and demand."""

    #: Depths of the last ``median_of`` valid readings, micro-inches, event order.
    recent: deque[int] = field(default_factory=deque)
    warn_armed: bool = True
    cleanout_armed: bool = True
    #: The last valid reading (it moved the median).
    last_ts: int | None = None
    #: None until ``median_of`` valid readings exist (warm-up): there is no fill yet.
    last_fill: float | None = None
    last_depth_in: float | None = None
    #: The standing clean-out demand: when it was first made, when last said, and
    #: how many repeats; None and 0 while the clean-out alert is armed.
    demand_first_ts: int | None = None
    demand_last_ts: int | None = None
    demand_repeats: int = 0
    #: Since when each disarmed threshold has had the fill 0.05 below it (rule 2).
    warn_below_ts: int | None = None
    cleanout_below_ts: int | None = None
    #: The falls of the fill (rule 4, ``falls.py``).
    falls: FallState = field(default_factory=FallState)
    check: CheckState = field(default_factory=CheckState)
    #: The last reading with a depth, valid or not (what the plot samples).
    seen_ts: int | None = None


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
        self.rearm_ms = round(trap.rearm_hours * MS_PER_HOUR)
        self.checks = SedimentCheck(trap, sensor)
        self.falls = FallRule(site, trap.id, sensor.id,
                              round(trap.settle_minutes * MS_PER_MINUTE), trap.median_of)

    # ---------------------------------------------------------------- Fold protocol

    def initial(self) -> TrapState:
        return TrapState()

    def key(self, item: Reading) -> tuple[Any, ...]:
        depth = self.checks.depth_micro(item)
        # Readings without a usable depth share one key per instant: they are
        # ignored by ``step`` anyway, and ``None`` would not sort against ints.
        return (item.ts_ms, 0, depth) if depth is not None else (item.ts_ms, 1, 0)

    def step(self, state: TrapState, item: Reading, out: list[Fact]) -> None:
        depth = self.checks.depth_micro(item)
        if depth is None:
            return
        ts = item.ts_ms
        state.seen_ts = ts
        outcome = self.checks.take(state.check, item, depth)
        if outcome.fault is not None:
            out.append(self._fault_fact(outcome.fault))
        if not outcome.valid:
            # A faulty or held reading: the trap keeps its last valid fill (rule 3).
            self._repeat(state, ts, out)
            return
        recent = state.recent
        for d in outcome.valid:
            recent.append(d)
            if len(recent) > self.median_of:
                recent.popleft()
        depth_in = _median(recent) / MICRO_PER_IN
        state.last_ts, state.last_depth_in = ts, depth_in
        if len(recent) < self.median_of:
            # Warm-up (rule 1): the window only grows, so nothing is armed or tracked yet.
            return
        fill = round(volume_cf(self.trap, depth_in / IN_PER_FT) / self.design_cf, _DIGITS)
        state.last_fill = fill
        if self.falls.track(state.falls, ts, fill, out):
            # A clean-out: both thresholds re-arm (rule 2).
            state.warn_armed, state.warn_below_ts = True, None
            self._rearm_cleanout(state)
        if state.falls.unsettled:
            return  # being cleaned out: judged again once the fall has settled (rule 4)
        self._levels(state, ts, fill, depth_in, out)

    def advance(self, state: TrapState, now_ms: int, out: list[Fact]) -> None:
        """Nothing happens to a trap while no reading arrives."""

    def copy(self, state: TrapState) -> TrapState:
        return TrapState(deque(state.recent), state.warn_armed, state.cleanout_armed,
                         state.last_ts, state.last_fill,
                         state.last_depth_in, state.demand_first_ts, state.demand_last_ts,
                         state.demand_repeats, state.warn_below_ts, state.cleanout_below_ts,
                         state.falls.copy(), state.check.copy(), state.seen_ts)

    def dump(self, state: TrapState) -> Any:
        return {
            "recent": list(state.recent),
            "warn_armed": state.warn_armed,
            "cleanout_armed": state.cleanout_armed,
            **state.falls.dump(),
            "last_ts": state.last_ts,
            "last_fill": state.last_fill,
            "last_depth_in": state.last_depth_in,
            "demand_first_ts": state.demand_first_ts,
            "demand_last_ts": state.demand_last_ts,
            "demand_repeats": state.demand_repeats,
            "warn_below_ts": state.warn_below_ts,
            "cleanout_below_ts": state.cleanout_below_ts,
            "check": state.check.dump(),
            "seen_ts": state.seen_ts,
        }

    def load(self, data: Any) -> TrapState:
        # A state dumped before repeats, re-arm timers, falls or sensor checks existed
        # has none of them: they start afresh.
        return TrapState(deque(data["recent"]), data["warn_armed"], data["cleanout_armed"],
                         data["last_ts"], data["last_fill"], data["last_depth_in"],
                         data.get("demand_first_ts"), data.get("demand_last_ts"),
                         data.get("demand_repeats", 0), data.get("warn_below_ts"),
                         data.get("cleanout_below_ts"), FallState.load(data),
                         CheckState.load(data.get("check")), data.get("seen_ts"))

    # ---------------------------------------------------------------- status

    def summary(self, state: TrapState) -> TrapSummary:
        """The trap's entry of ``status --json``: fill, smoothed depth and state.

        ``state`` is ``fault`` while the sensor's readings are faulty (a fault is
        never shown as a plain ``ok``; the fill is then the last valid one and
        ``level`` its own level), else the level: ``unknown`` during warm-up,
        ``ok``, ``warn`` or ``cleanout``. ``sensor_fault`` is the open episode's
        reason and start, or None.
        """
        fill, depth = state.last_fill, state.last_depth_in
        if fill is None or depth is None:
            fill = depth = None
        level = "unknown" if fill is None else trap_state(fill, self.trap)
        fault = state.check.fault
        return TrapSummary(None if fill is None else round(fill, 4),
                           None if depth is None else round(depth, 3),
                           level if fault is None else "fault", level,
                           None if fault is None else FaultSummary(fault[0], fault[1]))

    # ---------------------------------------------------------------- internals

    def _levels(self, state: TrapState, ts: int, fill: float, depth_in: float,
                out: list[Fact]) -> None:
        """Re-arming (rule 2), the two thresholds, and the demand's repeats (rule 3)."""
        state.warn_below_ts = _below_since(state.warn_below_ts, ts, fill, self.warn_rearm)
        state.cleanout_below_ts = _below_since(state.cleanout_below_ts, ts, fill,
                                               self.cleanout_rearm)
        if not state.warn_armed and state.warn_below_ts is not None \
                and ts - state.warn_below_ts >= self.rearm_ms:
            state.warn_armed = True
        if not state.cleanout_armed and state.cleanout_below_ts is not None \
                and ts - state.cleanout_below_ts >= self.rearm_ms:
            self._rearm_cleanout(state)
        if state.warn_armed and fill >= self.warn:
            state.warn_armed, state.warn_below_ts = False, None
            out.append(self._level_fact(TrapFill, ts, fill, depth_in, self.warn))
        if state.cleanout_armed and fill >= self.cleanout:
            state.cleanout_armed, state.cleanout_below_ts = False, None
            state.demand_first_ts = state.demand_last_ts = ts
            out.append(self._level_fact(TrapCleanoutRequired, ts, fill, depth_in,
                                        self.cleanout))
        else:
            self._repeat(state, ts, out)

    def _repeat(self, state: TrapState, ts: int, out: list[Fact]) -> None:
        """The standing demand's next repeat, if one is due at this reading (rule 3)."""
        fill, depth_in = state.last_fill, state.last_depth_in
        if state.demand_first_ts is None or state.demand_last_ts is None or fill is None \
                or depth_in is None or fill < self.cleanout \
                or ts - state.demand_last_ts < self.repeat_ms:
            return
        state.demand_repeats += 1
        state.demand_last_ts = ts
        fault = state.check.fault
        out.append(self._level_fact(TrapCleanoutRequired, ts, fill, depth_in, self.cleanout,
                                    state.demand_first_ts, state.demand_repeats,
                                    None if fault is None else fault[0]))

    def _rearm_cleanout(self, state: TrapState) -> None:
        state.cleanout_armed = True
        state.cleanout_below_ts = state.demand_first_ts = state.demand_last_ts = None
        state.demand_repeats = 0

    def _fault_fact(self, fault: Fault) -> Fact:
        since = fault.since_ms
        return Fact(self.site, since,
                    make_id("sensor_fault", self.site, self.sensor.id, self.trap.id, since),
                    SensorFault(sensor=self.sensor.id, reason=fault.reason,
                                value=_inches(fault.depth_micro), since=iso(since),
                                trap=self.trap.id,
                                distance_in=(None if fault.distance_micro is None
                                             else _inches(fault.distance_micro)),
                                last_valid_in=(None if fault.last_valid_micro is None
                                               else _inches(fault.last_valid_micro))))

    def _level_fact(self, kind: type[TrapFill | TrapCleanoutRequired], ts: int, fill: float,
                    depth_in: float, threshold: float, first_ts: int | None = None,
                    repeat: int = 0, fault: str | None = None) -> Fact:
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
            threshold=threshold, repeat=repeat, fault=fault))


def _below_since(since: int | None, ts: int, fill: float, level: float) -> int | None:
    """Since when the fill has been at or below ``level`` (None: it is above now)."""
    if fill > level:
        return None
    return ts if since is None else since


def _inches(micro: int) -> float:
    return round(micro / MICRO_PER_IN, 3)


def _median(values: deque[int]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    if n % 2:
        return float(ordered[mid])
    return (ordered[mid - 1] + ordered[mid]) / 2.0

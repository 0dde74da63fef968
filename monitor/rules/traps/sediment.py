"""What a sediment reading says: a depth, or a sensor fault (monitor/README.md, "Sediment traps").

A range finder over a trap sees the water, a leaf, the excavator's bucket or
nothing at all; a depth logger drifts. § 134-9A(1) ("Sediment shall be removed
... whenever their design capacity has been reduced by 50%") is judged on the
sediment, so a reading that cannot be true must neither fill the trap nor
empty it: a range finder reading past the trap bottom used to become depth 0,
a clean-out record, and the end of a standing clean-out demand.

Theory of operation
-------------------
*One depth for both forms.* ``depth_in`` is the depth; ``distance_in`` gives
``sensor_height_in − distance_in``. Both become one signed depth in
micro-inches (``depth_micro``) *before* anything is judged, so the same depth
gets the same verdict in either form. A negative depth is kept, not clamped:
it is the ``beyond_bottom`` fault. That is why ingest (``models.py``) accepts
a negative ``depth_in`` instead of rejecting it: it cannot reject the same
depth sent as a distance (it does not know the sensor's height), a rejected
reading would leave the journal, and a sensor that keeps talking nonsense
would look like a silent one instead of a faulty one.

*Verdicts on one reading.* ``beyond_bottom``: the depth is below 0 (the
surface measured below the trap bottom). ``above_max_fill``: the depth is
above ``max_fill_fraction`` [1.5] of the design depth (a trap is not filled
half again above its design depth; the sensor sees a bird or the lid).

*Verdict on a sequence* (``impossible_step``). Sediment settles slowly and is
removed all at once, so a step larger than ``max_step_in`` [12 in] from the
last valid reading is held, not taken: the *hold* collects the readings of the
new level (each within ``max_step_in`` of the one before). When it holds
``median_of`` readings the step is sustained: a real clean-out (or a real
slump); the held readings become valid together. When a reading comes back
within ``max_step_in`` of the last valid depth first, the held readings were a
fault: one ``impossible_step`` from the first of them. A reading that fits
neither ends the hold as a fault too and starts a new hold. A first reading
ever has nothing to step from and is valid. Readings with a verdict of their
own (beyond the bottom, above the maximum) are faults already and neither
extend nor end a hold.

*Episodes.* A fault episode opens at the first faulty reading and closes at
the next valid one; it is reported once (``Fault``), whatever its readings
and reasons, with the reason, depth and time of its first reading.
``impossible_step`` is known only when the hold ends, so its report comes
then, dated at the first held reading. While an episode is open (or a step
is held) nothing reaches the fill rule: the trap keeps its last valid fill.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ...config import SensorConfig, TrapConfig
from ...contract.inputs import Reading

MICRO_PER_IN = 1_000_000
IN_PER_FT = 12.0

FaultReason = Literal["beyond_bottom", "above_max_fill", "impossible_step"]

#: A reading waiting in the hold: (ts_ms, depth micro-in, distance micro-in or None).
Held = tuple[int, int, int | None]


@dataclass(frozen=True, slots=True)
class Fault:
    """A fault episode to report: its reason and its first reading."""

    reason: FaultReason
    since_ms: int
    depth_micro: int
    distance_micro: int | None
    last_valid_micro: int | None


@dataclass(slots=True)
class CheckState:
    """The sediment checks of one sensor: the last valid depth, the hold, the episode."""

    #: The last valid depth (micro-in): what a step is measured from.
    ref: int | None = None
    hold: list[Held] = field(default_factory=list)
    #: The open fault episode: (reason, since_ms); None while the readings are valid.
    fault: tuple[FaultReason, int] | None = None

    def copy(self) -> CheckState:
        return CheckState(self.ref, list(self.hold), self.fault)

    def dump(self) -> dict[str, Any]:
        return {"ref": self.ref, "hold": [list(h) for h in self.hold],
                "fault": None if self.fault is None else list(self.fault)}

    @classmethod
    def load(cls, data: Any) -> CheckState:
        if data is None:  # a state dumped before the checks existed
            return cls()
        fault = data["fault"]
        return cls(data["ref"], [(ts, d, dist) for ts, d, dist in data["hold"]],
                   None if fault is None else (fault[0], fault[1]))


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one reading did: the depths that became valid (in event order; several when
    a held step was sustained) and a fault episode to report, if any."""

    valid: tuple[int, ...] = ()
    fault: Fault | None = None


class SedimentCheck:
    """The sensor-fault rules of monitor/README.md, "The rules" for one trap's sediment sensor."""

    def __init__(self, trap: TrapConfig, sensor: SensorConfig) -> None:
        height = sensor.sensor_height_in
        self.height_micro = None if height is None else round(height * MICRO_PER_IN)
        self.max_micro = round(trap.max_fill_fraction * trap.design_depth_ft * IN_PER_FT
                               * MICRO_PER_IN)
        self.step_micro = round(sensor.max_step_in_value * MICRO_PER_IN)
        self.sustain = trap.median_of

    def depth_micro(self, item: Reading) -> int | None:
        """The signed sediment depth of a reading in micro-inches (negative: below the
        trap bottom), or None when the reading cannot give one (a ``distance_in``
        without a configured ``sensor_height_in``)."""
        if item.depth_in is not None:
            return round(item.depth_in * MICRO_PER_IN)
        if item.distance_in is not None and self.height_micro is not None:
            return self.height_micro - round(item.distance_in * MICRO_PER_IN)
        return None

    def verdict(self, depth: int) -> FaultReason | None:
        """The fault one reading is on its own, or None."""
        if depth < 0:
            return "beyond_bottom"
        if depth > self.max_micro:
            return "above_max_fill"
        return None

    def take(self, state: CheckState, item: Reading, depth: int) -> Outcome:
        """Judge one reading (in event order) with the depth ``depth_micro`` gave it."""
        ts = item.ts_ms
        distance = (None if item.depth_in is not None or item.distance_in is None
                    else round(item.distance_in * MICRO_PER_IN))
        reason = self.verdict(depth)
        if reason is not None:
            if state.fault is not None:
                return Outcome()
            state.fault = (reason, ts)
            return Outcome(fault=Fault(reason, ts, depth, distance, state.ref))
        ref, hold = state.ref, state.hold
        if ref is None or (not hold and abs(depth - ref) <= self.step_micro):
            return self._valid(state, (depth,))
        if hold and abs(depth - ref) <= self.step_micro:
            # Back at the valid level before the step was sustained: the hold was a fault.
            fault = self._step_fault(state)
            outcome = self._valid(state, (depth,))
            return Outcome(outcome.valid, fault)
        fault = None
        if hold and abs(depth - hold[-1][1]) > self.step_micro:
            # Neither the valid level nor the held one: a fault, and a new hold.
            fault = self._step_fault(state)
        state.hold.append((ts, depth, distance))
        if len(state.hold) >= self.sustain:
            outcome = self._valid(state, tuple(d for _, d, _ in state.hold))
            return Outcome(outcome.valid, fault)
        return Outcome(fault=fault)

    def _valid(self, state: CheckState, depths: tuple[int, ...]) -> Outcome:
        state.ref, state.hold, state.fault = depths[-1], [], None
        return Outcome(depths)

    def _step_fault(self, state: CheckState) -> Fault | None:
        """End the hold as a fault; the episode's report unless one is open already."""
        first_ts, first_depth, first_distance = state.hold[0]
        state.hold = []
        if state.fault is not None:
            return None
        state.fault = ("impossible_step", first_ts)
        return Fault("impossible_step", first_ts, first_depth, first_distance, state.ref)

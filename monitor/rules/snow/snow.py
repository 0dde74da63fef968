"""The snow rule: one ``snow_event`` when a snow gauge's snowfall reaches 3.25 in
within 24 hours (EPA CGP 2022 Part 4.2).

A snow event is a run of snowfall with no gap of ``GAP_HOURS`` or more
without snow; it qualifies at the first reading at which the snow of the
``WINDOW_HOURS`` before it (that reading included) reaches ``THRESHOLD_IN``,
and gives one fact then, whatever falls after in the same event. Readings
carry ``snow_in``, the new snow since the previous reading, like a rain
gauge's ``precip_in``. The memory is the snowfall of the last
``WINDOW_HOURS`` only.

The thresholds are fixed for now; they will be a permit's, configured per
site, when the permits' duties are configured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...contract.events import Fact, make_id
from ...contract.inputs import Reading
from ...contract.snow_events import SnowEvent
from ...contract.times import hours_ms, iso

#: "3.25 inches or more of snow within a 24-hour period" (EPA CGP 2022 Part 4.2).
THRESHOLD_IN = 3.25
WINDOW_HOURS = 24.0
#: A day without snow ends a snow event (the next snow starts another).
GAP_HOURS = 24.0
#: Snow depths are summed in micro-inches, so that 3.25 in is 3.25 in exactly.
MICRO_PER_IN = 1_000_000


@dataclass
class SnowState:
    """The snowfall of the last ``WINDOW_HOURS`` (time, micro-inches), when the
    current event began and whether it has qualified."""

    falls: list[tuple[int, int]] = field(default_factory=list)
    started_ms: int | None = None
    last_snow_ms: int | None = None
    qualified: bool = False


@dataclass(frozen=True)
class SnowFold:
    """The fold of one snow gauge (``timeline.Fold``)."""

    site: str
    sensor: str

    def initial(self) -> SnowState:
        return SnowState()

    def key(self, item: Reading) -> tuple[Any, ...]:
        return (item.ts_ms,)

    def step(self, state: SnowState, item: Reading, out: list[Fact]) -> None:
        micro = round((item.snow_in or 0.0) * MICRO_PER_IN)
        if micro <= 0:
            return
        ts = item.ts_ms
        if state.last_snow_ms is None or ts - state.last_snow_ms >= hours_ms(GAP_HOURS):
            state.started_ms, state.qualified = ts, False
        state.last_snow_ms = ts
        state.falls = [(t, m) for t, m in state.falls if t > ts - hours_ms(WINDOW_HOURS)]
        state.falls.append((ts, micro))
        total = sum(m for _, m in state.falls)
        if not state.qualified and total >= round(THRESHOLD_IN * MICRO_PER_IN):
            state.qualified = True
            assert state.started_ms is not None
            out.append(Fact(self.site, ts, make_id(SnowEvent.TYPE, self.site, self.sensor,
                                                   state.started_ms),
                            SnowEvent(sensor=self.sensor, started_at=iso(state.started_ms),
                                      qualified_at=iso(ts), total_in=total / MICRO_PER_IN,
                                      threshold_in=THRESHOLD_IN, window_hours=WINDOW_HOURS)))

    def advance(self, state: SnowState, now_ms: int, out: list[Fact]) -> None:
        """Nothing comes of time alone: an event qualifies at a reading."""

    def copy(self, state: SnowState) -> SnowState:
        return SnowState(list(state.falls), state.started_ms, state.last_snow_ms,
                         state.qualified)

    def dump(self, state: SnowState) -> Any:
        return {"falls": [list(f) for f in state.falls], "started_ms": state.started_ms,
                "last_snow_ms": state.last_snow_ms, "qualified": state.qualified}

    def load(self, data: Any) -> SnowState:
        return SnowState([(int(t), int(m)) for t, m in data["falls"]], data["started_ms"],
                         data["last_snow_ms"], bool(data["qualified"]))

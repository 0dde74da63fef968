"""Falls of a trap's fill: a clean-out as it starts, goes on and settles.

§ 134-9A(1) asks that sediment be removed once half the design capacity is
taken; the removal itself shows as a *fall* of the smoothed fill, and
stormwatch keeps it as a maintenance record (``trap_cleaned``). A clean-out is
no instant: an excavator takes a trap down in passes over hours, pausing
between them, and a laser range finder reads the surface in centimetre steps,
so the median of ``median_of`` readings repeats a value for several readings
while the level is still going down. A fill that stood still for one reading
was read as the end of the clean-out, the thresholds were judged there, and
the qualified professional was told to clean out a trap that was being
cleaned. So a fall ends only when it has *settled*.

Theory of operation (``FallRule.track``, once per smoothed fill, in event order)
-------------------------------------------------------------------------------
1. *Opening.* Outside a fall the trailing 24-hour maximum of the fill is kept
   (``peaks``, a monotonic queue). A fall opens at the reading where the fill
   first lies ``CLEANED_DROP`` (0.2) below it: one ``trap_cleaned`` there, with
   that maximum as ``fill_before`` and the fill as ``fill_after``. ``track``
   says so, and the caller re-arms both thresholds.
2. *Settling.* ``fills`` holds the smoothed fills of the last
   ``settle_minutes`` [60], reaching back to one at or before the window's start
   and holding at least ``median_of`` of them. The fall has settled when the
   window is that full and the fill now is no more than ``SETTLED_WITHIN``
   (0.02) below the highest fill in it: the fill has not fallen by more than
   0.02 over the last ``settle_minutes`` and over at least ``median_of``
   readings. Until then the fall is *unsettled*: the trap is being emptied, and
   no threshold is judged (``traps.py``). When it settles, the record is revised
   (same id) with the settled fill, and the thresholds are judged from it.
3. *Falling on.* After a settle, a fill ``RESUME_FRACTION`` (0.05) below the
   one the record says is the clean-out resumed (the crew came back after a
   pause longer than ``settle_minutes``): unsettled again, and settled and
   revised again as in 2. Smaller dips are noise.
4. *Closing.* The fall closes 24 hours after it opened, or when the fill rises
   ``RESUME_FRACTION`` above its lowest (the trap refills); one closing
   unsettled is revised with its lowest fill. Only then can another fall,
   measured from the fills after it, be a new record.

Every step depends on the sorted fills before it only, so arrival order and
duplicates change nothing (``timeline.py``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ...contract.events import Fact, TrapCleaned, make_id
from ...contract.times import MS_PER_DAY

#: A drop of the smoothed fill this large within ``CLEANED_WINDOW_MS`` is a clean-out.
CLEANED_DROP = 0.2
CLEANED_WINDOW_MS = MS_PER_DAY
#: A fall has settled when the fill has not fallen by more than this over the window.
SETTLED_WITHIN = 0.02
#: After a settle the fill falls on (a revision) only by this much more, and the fall
#: is over when the fill rises this much above its lowest.
RESUME_FRACTION = 0.05

#: Fill fractions are ratios of float volumes; comparing them after rounding to
#: 1e-9 keeps a trap filled to exactly half its volume from reading 0.4999999999.
FILL_DIGITS = 9


class Fall(NamedTuple):
    """The open fall: its record's reading, ``fill_before``, the ``fill_after`` said,
    the lowest fill so far, and whether it is still unsettled."""

    at: int
    before: float
    said: float
    low: float
    unsettled: bool


@dataclass(slots=True)
class FallState:
    """One trap's falls: the 24 h maxima, the settle window and the open fall."""

    #: (ts_ms, fill) with fills strictly decreasing: the front is the 24 h maximum.
    peaks: deque[tuple[int, float]] = field(default_factory=deque)
    #: (ts_ms, fill) of the settle window (rule 2), oldest first.
    fills: deque[tuple[int, float]] = field(default_factory=deque)
    fall: Fall | None = None

    @property
    def unsettled(self) -> bool:
        """A clean-out is going on: no threshold is judged."""
        return self.fall is not None and self.fall.unsettled

    def copy(self) -> FallState:
        return FallState(deque(self.peaks), deque(self.fills), self.fall)

    def dump(self) -> dict[str, Any]:
        return {"peaks": [list(p) for p in self.peaks],
                "fills": [list(p) for p in self.fills],
                "fall": None if self.fall is None else list(self.fall)}

    @classmethod
    def load(cls, data: Any) -> FallState:
        # A state dumped before the settle window existed has none: it fills afresh.
        fall = data.get("fall")
        return cls(deque((ts, fill) for ts, fill in data["peaks"]),
                   deque((ts, fill) for ts, fill in data.get("fills", [])),
                   None if fall is None else Fall(*fall))


class FallRule:
    """Rules 1 to 4 for one trap; ``settle_ms`` and ``median_of`` size the window."""

    def __init__(self, site: str, trap: str, sensor: str, settle_ms: int,
                 median_of: int) -> None:
        self.site, self.trap, self.sensor = site, trap, sensor
        self.settle_ms = settle_ms
        self.median_of = median_of

    def track(self, state: FallState, ts: int, fill: float, out: list[Fact]) -> bool:
        """Follow the fall with the fill of a reading at ``ts``; True when a fall opened
        here (the thresholds re-arm)."""
        self._window(state, ts, fill)
        fall = state.fall
        if fall is None:
            return self._open(state, ts, fill, out)
        if ts - fall.at >= CLEANED_WINDOW_MS or _at_least(fill - fall.low, RESUME_FRACTION):
            if fall.unsettled and fall.low < fall.said:
                out.append(self.cleaned(fall.at, fall.before, fall.low))
            state.fall = None
            state.peaks.clear()
            state.peaks.append((ts, fill))
            return False
        low = min(fall.low, fill)
        if fall.unsettled and self._settled(state, fill):
            if fill != fall.said:
                out.append(self.cleaned(fall.at, fall.before, fill))
            state.fall = Fall(fall.at, fall.before, fill, fill, False)
        else:
            resumed = fall.unsettled or _at_least(fall.said - fill, RESUME_FRACTION)
            state.fall = Fall(fall.at, fall.before, fall.said, low, resumed)
        return False

    def cleaned(self, at: int, before: float, after: float) -> Fact:
        """The fall's record, named by the reading that opened it (its revisions too)."""
        return Fact(self.site, at, make_id("trap_cleaned", self.site, self.trap, at),
                    TrapCleaned(trap=self.trap, fill_before=round(before, 4),
                                fill_after=round(after, 4), sensor=self.sensor))

    def _window(self, state: FallState, ts: int, fill: float) -> None:
        """Rule 2's window: the fills since ``ts - settle_ms``, one at or before that, and
        at least ``median_of`` of them."""
        fills = state.fills
        fills.append((ts, fill))
        start = ts - self.settle_ms
        while len(fills) > self.median_of and fills[1][0] <= start:
            fills.popleft()

    def _settled(self, state: FallState, fill: float) -> bool:
        fills = state.fills
        if len(fills) < self.median_of or fills[0][0] > fills[-1][0] - self.settle_ms:
            return False  # not yet watched for long enough
        return not _at_least(max(f for _, f in fills) - fill, SETTLED_WITHIN, strict=True)

    def _open(self, state: FallState, ts: int, fill: float, out: list[Fact]) -> bool:
        peaks = state.peaks
        horizon = ts - CLEANED_WINDOW_MS
        while peaks and peaks[0][0] <= horizon:
            peaks.popleft()
        # A monotonic queue: a value at or below a newer one can never be the maximum again.
        while peaks and peaks[-1][1] <= fill:
            peaks.pop()
        peaks.append((ts, fill))
        before = peaks[0][1]
        if not _at_least(before - fill, CLEANED_DROP):
            return False
        out.append(self.cleaned(ts, before, fill))
        state.fall = Fall(ts, before, fill, fill, True)
        return True


def _at_least(difference: float, amount: float, *, strict: bool = False) -> bool:
    """``difference >= amount`` (``>`` when ``strict``) on fills rounded to 1e-9."""
    rounded = round(difference, FILL_DIGITS)
    return rounded > amount if strict else rounded >= amount

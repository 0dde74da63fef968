"""The routine inspection chain of § 134-9A(2), within the site's active period.

    "... conduct site inspections ... every seven days ..."  — § 134-9A(2)

The chain. The first routine clock starts when the site's active period does
(local midnight of ``active_since``, else as its readings show: ``active.py``)
and is due at the end of the local day ``routine_inspection_days`` calendar days
later (``routine_due: end_of_day``; ``elapsed``: exactly that many 24 hours;
``period.due_ms``). The first qualifying inspection at or after its start
closes it and starts the next, due at the end of the local day that many days
after the day of that inspection; each later clock is closed by a *later*
inspection (two at one instant are one inspection, not the next one).

The active period (``period.ActivePeriod``). Routine clocks run only while
the site is active. A clock still open when a pause (or the end) begins is cut
there (``ends_at``): it gives no notice from then on and no later inspection
closes it; the next clock starts when the pause ends.

A clock exists only once its start is reached: the chain stops at *now*, so a
pause planned for next year, or an ``active_since`` next month, shows no clock
of then before then (monitor/README.md, "The rules": "a clock is listed only once it exists").

Clock ids are ``routine-<start>``, and unique: a second clock starting at the
same instant (an inspection at the very start of the chain) gets ``#2``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from ...config import SiteConfig
from ...contract.inputs import Inspection
from ...contract.times import iso, parse_iso
from ..active import ActivePeriod, due_ms, local_day, local_midnight_ms


@dataclass(frozen=True, slots=True)
class Anchor:
    """Where the routine chain starts once its first clocks have settled: at the
    inspection that closed the last settled one (``strict``: so that inspection, and
    any other at the same instant, does not close the next), or where a cut one
    ended (the next clock starts with the next active span)."""

    start_ms: int
    strict: bool = True

    def to_json(self) -> list[object]:
        return [self.start_ms, self.strict]

    @classmethod
    def from_json(cls, data: object) -> Anchor:
        if isinstance(data, list):
            return cls(int(data[0]), bool(data[1]))
        return cls(int(str(data)))  # a snapshot from before cut clocks existed


@dataclass(slots=True)
class RoutineClock:
    """One clock of the chain: its id, start, due and how it ended."""

    clock_id: str
    start: int
    due: int
    ends_at: int | None = None
    closed_by: Inspection | None = None


def routine_chain(site: SiteConfig, inspections: Sequence[Inspection], period: ActivePeriod,
                  anchor: Anchor | None, closes: Callable[[Inspection], bool],
                  now_ms: int | None, *, min_gap_days: int = 0,
                  shutdowns: Sequence[tuple[int, int | None]] = (),
                  shutdown_days: int | None = None) -> list[RoutineClock]:
    """The chain of routine clocks that exist at ``now_ms`` (module docstring; none
    without a *now*, nor before the period has a start). ``inspections`` are in time
    order; ``closes`` says whether one may close a clock (kind and roster).
    ``min_gap_days``: an inspection closes a clock that the previous inspection
    started only with that many full local days between them (twice a week "at
    least 2 full calendar days apart": Monday's, then Thursday's at the earliest).
    ``shutdowns`` (start, end) with ``shutdown_days``: a permit's cadence during a
    temporary shutdown; a clock open when one begins or ends is cut there, and the next
    starts at the other cadence (``with_shutdowns``)."""
    begin = anchor.start_ms if anchor is not None else period.start_ms
    if begin is None:
        return []
    strict = anchor.strict if anchor is not None else False
    spans = with_shutdowns(period.spans(begin), shutdowns if shutdown_days else ())
    qualified = [i for i in inspections if closes(i)]
    out: list[RoutineClock] = []
    used: set[str] = set()
    for span_start, span_end, shut in spans:
        days = float(shutdown_days) if shut and shutdown_days else None
        start = max(begin, span_start)
        if start > begin:
            strict = False  # a new span: the clock starts afresh at its first instant
        while True:
            if now_ms is None or start > now_ms:
                return out  # not begun yet: it does not exist (nor do the later ones)
            base = f"routine-{iso(start)}"
            cid, n = base, 1
            while cid in used:
                n += 1
                cid = f"{base}#{n}"
            used.add(cid)
            clock = RoutineClock(cid, start, due_ms(site, start, days), span_end)
            out.append(clock)
            earliest = _gap_end(site, start, min_gap_days) if strict else start
            nxt = next((i for i in qualified
                        if (i.ts_ms > start or (i.ts_ms == start and not strict))
                        and i.ts_ms >= earliest
                        and (span_end is None or i.ts_ms < span_end)), None)
            if nxt is None:
                break
            clock.closed_by, clock.ends_at = nxt, None
            start, strict = nxt.ts_ms, True
    return out


def with_shutdowns(spans: Sequence[tuple[int, int | None]],
                   shutdowns: Sequence[tuple[int, int | None]]
                   ) -> list[tuple[int, int | None, bool]]:
    """The active ``spans`` cut at the starts and ends of ``shutdowns``, each piece marked
    whether it lies in a shutdown."""
    cuts = sorted({t for s, e in shutdowns for t in (s, e) if t is not None})
    out: list[tuple[int, int | None, bool]] = []
    for start, end in spans:
        points = [start, *(c for c in cuts if start < c and (end is None or c < end)), end]
        for a, b in zip(points, points[1:], strict=False):
            assert a is not None
            shut = any(s <= a and (e is None or a < e) for s, e in shutdowns)
            out.append((a, b, shut))
    return out


def _gap_end(site: SiteConfig, start_ms: int, min_gap_days: int) -> int:
    """The first instant ``min_gap_days`` full local days after the day of ``start_ms``."""
    if min_gap_days <= 0:
        return start_ms
    zone = site.zone
    return local_midnight_ms(site, local_day(zone, start_ms) + timedelta(days=min_gap_days + 1))


def routine_start_ms(clock_id: str) -> int | None:
    """The start of the routine clock ``clock_id`` (``routine-<start>`` or
    ``routine-<start>#n``, as ``routine_chain`` names them); None for any other id."""
    if not clock_id.startswith("routine-"):
        return None
    try:
        return parse_iso(clock_id.removeprefix("routine-").split("#", 1)[0])
    except ValueError:
        return None

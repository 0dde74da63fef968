"""The 7-day routine inspection chain of § 134-9A(2), within the site's active period.

    "... conduct site inspections ... every seven days ..."  — § 134-9A(2)

The chain. The first routine clock starts when monitoring starts (local
midnight of ``active_since``, else the site's first message) and is due
``routine_inspection_days`` calendar days later in the site's time zone (a
clock started at 09:00 is due at 09:00 local a week later, across a change of
daylight saving time). The first qualifying inspection at or after its start
closes it and starts the next; each later clock is closed by a *later*
inspection (two at one instant are one inspection, not the next one).

The active period. Routine clocks run only while the site is active: from
that start until final stabilization (``active_until``, at local midnight of
that day, or a recorded ``site close``, whichever is first), less the
``pauses`` the officer agreed (``from`` through ``to``, whole local days). A
clock still open when a pause (or the end) begins is cut there (``ends_at``):
it gives no notice from then on and no later inspection closes it; the next
clock starts when the pause ends. Storms are recorded whatever the period.

A clock exists only once its start is reached: the chain stops at *now*, so a
pause planned for next year, or an ``active_since`` next month, shows no clock
of then before then (DESIGN § 4: "a clock is listed only once it exists").

Clock ids are ``routine-<start>``, and unique: a second clock starting at the
same instant (an inspection at the very start of the chain) gets ``#2``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from ..config import SiteConfig
from ..contract.inputs import Inspection
from ..contract.times import MS_PER_DAY, iso, parse_iso

#: § 134-12D counts a continuing violation by the week.
WEEK_MS = 7 * MS_PER_DAY

#: An active span of the site, ``[start_ms, end_ms)``; ``end_ms`` None runs on.
Span = tuple[int, int | None]


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


def local_midnight_ms(site: SiteConfig, day: date) -> int:
    return round(datetime.combine(day, time(0, 0), tzinfo=site.zone).timestamp() * 1000)


def site_start_ms(site: SiteConfig, first_seen_ms: int | None) -> int | None:
    """When the routine cadence starts: ``active_since`` at local midnight, else the
    site's first message."""
    if site.active_since is not None:
        return local_midnight_ms(site, site.active_since)
    return first_seen_ms


def routine_due_ms(site: SiteConfig, start_ms: int) -> int:
    """``routine_inspection_days`` after ``start_ms`` in calendar days of the site's time
    zone (a fraction of a day is added as elapsed time)."""
    days = site.routine_inspection_days
    whole = int(days)
    local = datetime.fromtimestamp(start_ms / 1000, tz=site.zone)
    shifted = (local.replace(tzinfo=None) + timedelta(days=whole)).replace(tzinfo=site.zone)
    return round(shifted.timestamp() * 1000) + round((days - whole) * MS_PER_DAY)


def active_spans(site: SiteConfig, start_ms: int, closed_ms: int | None = None) -> list[Span]:
    """The site's active spans from ``start_ms`` on (module docstring)."""
    ends = [closed_ms] if closed_ms is not None else []
    if site.active_until is not None:
        ends.append(local_midnight_ms(site, site.active_until))
    end = min(ends) if ends else None
    cuts = sorted((local_midnight_ms(site, p.from_),
                   local_midnight_ms(site, p.to + timedelta(days=1))) for p in site.pauses)
    spans: list[Span] = []
    at: int | None = start_ms
    for cut_from, cut_to in cuts:
        if at is None or (end is not None and cut_from >= end):
            break
        if cut_to <= at:
            continue
        if cut_from > at:
            spans.append((at, cut_from))
        at = max(at, cut_to)
    if at is not None and (end is None or at < end):
        spans.append((at, end))
    return spans


@dataclass(slots=True)
class RoutineClock:
    """One clock of the chain: its id, start, due and how it ended."""

    clock_id: str
    start: int
    due: int
    ends_at: int | None = None
    closed_by: Inspection | None = None


def routine_chain(site: SiteConfig, inspections: Sequence[Inspection], first_seen_ms: int | None,
                  anchor: Anchor | None, closed_ms: int | None,
                  closes: Callable[[Inspection], bool], now_ms: int | None) -> list[RoutineClock]:
    """The chain of routine clocks that exist at ``now_ms`` (module docstring; none
    without a *now*). ``inspections`` are in time order; ``closes`` says whether
    one may close a clock (kind and roster)."""
    begin = anchor.start_ms if anchor is not None else site_start_ms(site, first_seen_ms)
    if begin is None:
        return []
    strict = anchor.strict if anchor is not None else False
    spans = active_spans(site, begin, closed_ms)
    qualified = [i for i in inspections if closes(i)]
    out: list[RoutineClock] = []
    used: set[str] = set()
    for span_start, span_end in spans:
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
            clock = RoutineClock(cid, start, routine_due_ms(site, start), span_end)
            out.append(clock)
            nxt = next((i for i in qualified
                        if (i.ts_ms > start or (i.ts_ms == start and not strict))
                        and (span_end is None or i.ts_ms < span_end)), None)
            if nxt is None:
                break
            clock.closed_by, clock.ends_at = nxt, None
            start, strict = nxt.ts_ms, True
    return out


def routine_start_ms(clock_id: str) -> int | None:
    """The start of the routine clock ``clock_id`` (``routine-<start>`` or
    ``routine-<start>#n``, as ``routine_chain`` names them); None for any other id."""
    if not clock_id.startswith("routine-"):
        return None
    try:
        return parse_iso(clock_id.removeprefix("routine-").split("#", 1)[0])
    except ValueError:
        return None


def missed_weeks(due_ms: int, now_ms: int, ended_ms: int | None = None) -> int:
    """The weeks a clock due at ``due_ms`` has missed by ``now_ms`` (§ 134-12D): one from
    ``due``, one more each 7 days on, until it ended (closed or cut) at ``ended_ms``.
    The same count as the clock's ``inspection_missed`` facts."""
    until = now_ms + 1 if ended_ms is None else min(now_ms + 1, ended_ms)
    return 0 if until <= due_ms else -(-(until - due_ms) // WEEK_MS)

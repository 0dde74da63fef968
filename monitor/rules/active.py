"""The site's active period: when its inspection duties run, and its calendar days.

    "... conduct site inspections ... every seven days and within 24 hours of any
    storm event producing 0.5 inch of precipitation or more."  — § 134-9A(2)

Theory of operation
-------------------
A site owes inspections only while it is active: from its start until final
stabilization, less the pauses the officer agreed. The whole life bounds
*every* clock (``clocks.py``, ``routine.py``): a storm that qualifies outside
it is recorded and alerted as informational and opens no clock, with the
reason in ``outside``; a clock still open when the period ends or a pause
begins is cut there (``ends_at``: no notice from then on, and no later
inspection closes it).

``ActivePeriod`` is that period for one computation:

start     local midnight of ``active_since``; without it, as the site's
          readings show (``FirstRun`` below); None while no start is known.
end       final stabilization: local midnight of ``active_until``, or a recorded
          ``site close``, whichever is first; None while the site runs on.
pauses    ``from`` through ``to``, whole local days.

``outside`` names why an instant lies outside: ``before_active_since``,
``before_start`` (before the start a site without ``active_since`` has from
its readings), ``after_final_stabilization`` or ``paused``.

The start without ``active_since`` (``FirstRun``). The site's first reading,
with one exception: a reading after which the site said nothing for longer
than a whole routine period (``routine_inspection_days``) is not where the
site's active life began. It is a stray row (a logger's clock two years off, a
typo in a year) or the last row of an earlier deployment, and a routine chain
started there would count every week of the silence as missed (one stray row
two years early was 104 missed weeks and 4 346 overdue notices). So the start
is the earliest reading that another reading follows within that period, and
there is none until two such readings exist: no routine clock, and every storm
is informational (even one only the reference stations saw at a site never
heard from: nothing shows the site is active). A site whose readings are all
that far apart (an ``on_tip`` gauge alone, in a drought) starts with its first
shower; the cure for any doubt is ``active_since``.

The rule is a function of the set of readings, and more readings can only move
the start earlier: a clock only ever appears (a storm comes inside the
period), never vanishes, so nothing settled (``settle.py``) is ever undone and
arrival order does not matter. A reading older than the engine's horizon by
more than the period can no longer get a partner, so it is dropped from memory
(``prune``); until then a storm that qualified at or after it is not final as
informational (``undecided``).

Calendar days (``routine_due: end_of_day``, the default). "Every seven days"
counts days of the site's calendar: a clock started on a Monday at 10:00 is
due at the end of the next Monday, 23:59:59.999 local, whatever daylight
saving time did in between (``due_ms``), and its missed weeks (§ 134-12D)
begin at the due and then at the same end of a local day each week on
(``week_from_ms``).
``routine_due: elapsed`` keeps exactly ``routine_inspection_days`` × 24 hours,
and weeks of 7 × 24 hours, for a permit that says so.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from ..config import SiteConfig
from ..contract.times import MS_PER_DAY

#: § 134-12D counts a continuing violation by the week.
WEEK_MS = 7 * MS_PER_DAY

#: An active span of the site, ``[start_ms, end_ms)``; ``end_ms`` None runs on.
Span = tuple[int, int | None]


# --------------------------------------------------------------------------- calendar


def local_midnight_ms(site: SiteConfig, day: date) -> int:
    """The first instant of ``day`` at the site (a midnight that a change of daylight
    saving time skips is the instant of the change)."""
    return _midnight_ms(site.zone, day)


def active_start_ms(site: SiteConfig) -> int | None:
    """The first instant of the site's active period: local midnight of
    ``active_since``; None for a site without one (its readings show it: ``FirstRun``)."""
    return local_midnight_ms(site, site.active_since) if site.active_since else None


def _midnight_ms(zone: ZoneInfo, day: date) -> int:
    return round(datetime.combine(day, time(0, 0), tzinfo=zone).timestamp() * 1000)


def local_day(zone: ZoneInfo, ts_ms: int) -> date:
    return datetime.fromtimestamp(ts_ms / 1000, tz=zone).date()


def end_of_local_day_ms(zone: ZoneInfo, day: date) -> int:
    """The last millisecond of ``day`` in ``zone``: one before the next day begins."""
    return _midnight_ms(zone, day + timedelta(days=1)) - 1


def calendar_zone(site: SiteConfig) -> ZoneInfo | None:
    """The zone whose calendar the routine clock counts in; None for ``elapsed``."""
    return site.zone if site.routine_due == "end_of_day" else None


def cadence_words(site: SiteConfig) -> str:
    """The routine clock's cadence as a reader is told it ("every 7 calendar days")."""
    days = site.routine_inspection_days
    if calendar_zone(site) is None:
        return f"every {days * 24:g} hours"
    return f"every {days:g} calendar days"


def due_ms(site: SiteConfig, start_ms: int, days: float | None = None) -> int:
    """When a routine clock started at ``start_ms`` is due (module docstring), at the
    site's cadence or at ``days`` (a shutdown's)."""
    days = site.routine_inspection_days if days is None else days
    zone = calendar_zone(site)
    if zone is None:
        return start_ms + round(days * MS_PER_DAY)
    return end_of_local_day_ms(zone, local_day(zone, start_ms) + timedelta(days=int(days)))


def week_from_ms(due: int, week: int, zone: ZoneInfo | None) -> int:
    """When missed week ``week`` (1 from ``due``) of a routine clock begins: at ``due``,
    then each 7 calendar days later (at the same end of a local day), or each
    7 × 24 hours without a calendar."""
    if zone is None:
        return due + (week - 1) * WEEK_MS
    return end_of_local_day_ms(zone, local_day(zone, due) + timedelta(days=7 * (week - 1)))


def missed_weeks(due: int, now_ms: int, ended_ms: int | None = None,
                 zone: ZoneInfo | None = None) -> int:
    """The weeks a clock due at ``due`` has missed by ``now_ms`` (§ 134-12D): one from
    ``due``, one more each week on (``week_from_ms``), until it ended (closed or cut)
    at ``ended_ms``. The same count as the clock's ``inspection_missed`` facts."""
    until = now_ms + 1 if ended_ms is None else min(now_ms + 1, ended_ms)
    if until <= due:
        return 0
    # Exact weeks first; a change of daylight saving time moves a boundary an hour.
    weeks = max(1, -(-(until - due) // WEEK_MS))
    while weeks > 1 and week_from_ms(due, weeks, zone) >= until:
        weeks -= 1
    while week_from_ms(due, weeks + 1, zone) < until:
        weeks += 1
    return weeks


# --------------------------------------------------------------------------- the period


@dataclass(frozen=True, slots=True)
class ActivePeriod:
    """The site's active period for one computation (module docstring)."""

    site: SiteConfig
    start_ms: int | None
    end_ms: int | None
    #: Whether the start came from the readings (no ``active_since``).
    inferred: bool

    @classmethod
    def of(cls, site: SiteConfig, monitored_from_ms: int | None,
           closed_ms: int | None) -> ActivePeriod:
        """The period of ``site``: ``monitored_from_ms`` is ``FirstRun.start_ms`` (read
        only without ``active_since``), ``closed_ms`` a recorded ``site close``."""
        ends = [closed_ms] if closed_ms is not None else []
        if site.active_until is not None:
            ends.append(local_midnight_ms(site, site.active_until))
        if site.active_since is not None:
            start: int | None = local_midnight_ms(site, site.active_since)
        else:
            start = monitored_from_ms
        return cls(site, start, min(ends) if ends else None, site.active_since is None)

    def spans(self, from_ms: int) -> list[Span]:
        """The active spans from ``from_ms`` on."""
        cuts = sorted((local_midnight_ms(self.site, p.from_),
                       local_midnight_ms(self.site, p.to + timedelta(days=1)))
                      for p in self.site.pauses)
        end = self.end_ms
        spans: list[Span] = []
        at = from_ms
        for cut_from, cut_to in cuts:
            if end is not None and cut_from >= end:
                break
            if cut_to <= at:
                continue
            if cut_from > at:
                spans.append((at, cut_from))
            at = max(at, cut_to)
        if end is None or at < end:
            spans.append((at, end))
        return spans

    def outside(self, ts_ms: int) -> str | None:
        """Why ``ts_ms`` lies outside the active period, or None when it lies inside."""
        if self.start_ms is None or ts_ms < self.start_ms:
            return "before_start" if self.inferred else "before_active_since"
        if self.end_ms is not None and ts_ms >= self.end_ms:
            return "after_final_stabilization"
        return None if self._span_of(ts_ms) is not None else "paused"

    def span_end(self, ts_ms: int) -> int | None:
        """The end of the active span ``ts_ms`` lies in (where a clock opened then is
        cut); None when it runs on."""
        span = self._span_of(ts_ms)
        return span[1] if span is not None else None

    def _span_of(self, ts_ms: int) -> Span | None:
        if self.start_ms is None:
            return None
        return next((s for s in self.spans(self.start_ms)
                     if s[0] <= ts_ms and (s[1] is None or ts_ms < s[1])), None)


# --------------------------------------------------------------------------- first run


class FirstRun:
    """Where the active period of a site without ``active_since`` begins, as its
    readings show (module docstring).

    ``times`` holds the distinct times of the site's messages up to the start's
    partner (the next message, within ``gap_ms`` of it); those before the start
    are each followed by a longer silence.
    """

    def __init__(self, gap_ms: int, times: list[int] | None = None) -> None:
        self.gap_ms = gap_ms
        self.times: list[int] = sorted(set(times or ()))
        self._start: int | None = None
        self._settle()

    @classmethod
    def for_site(cls, site: SiteConfig, times: list[int] | None = None) -> FirstRun:
        return cls(round(site.routine_inspection_days * MS_PER_DAY), times)

    @property
    def start_ms(self) -> int | None:
        """The earliest message that another follows within ``gap_ms``; None yet."""
        return self.times[self._start] if self._start is not None else None

    def add(self, ts_ms: int) -> bool:
        """Take a message's time; whether the start changed."""
        if self._start is not None and ts_ms > self.times[self._start + 1]:
            return False
        at = bisect.bisect_left(self.times, ts_ms)
        if at < len(self.times) and self.times[at] == ts_ms:
            return False
        before = self.start_ms
        self.times.insert(at, ts_ms)
        self._settle()
        return self.start_ms != before

    def prune(self, horizon_ms: int) -> None:
        """Forget the messages before the start that no message at or after the
        horizon can follow within ``gap_ms`` any more."""
        keep = [t for i, t in enumerate(self.times)
                if (self._start is not None and i >= self._start) or t + self.gap_ms >= horizon_ms]
        if len(keep) != len(self.times):
            self.times = keep
            self._settle()

    def undecided(self, horizon_ms: int) -> tuple[int, int] | None:
        """The instants ``[lo, hi)`` before the start whose place in or out of the
        period a message at or after ``horizon_ms`` may still change (a storm that
        qualified there is not final); None when there are none."""
        lo = horizon_ms - self.gap_ms
        hi = self.start_ms if self.start_ms is not None else 2**62
        return (lo, hi) if lo < hi else None

    def _settle(self) -> None:
        """Find the start; keep the times up to its partner only."""
        self._start = next((i for i in range(len(self.times) - 1)
                            if self.times[i + 1] - self.times[i] <= self.gap_ms), None)
        if self._start is not None:
            del self.times[self._start + 2:]

    def to_json(self) -> list[int]:
        return list(self.times)

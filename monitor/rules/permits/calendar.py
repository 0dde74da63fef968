"""Business days and business hours of a site: weekdays less the public holidays of
its ``business_days`` (the ``holidays`` package), in its own time zone.

Two deadlines are counted here. North Carolina's "when a storm event ... occurs
outside of normal business hours, the self-inspection shall be performed upon
the commencement of the next business day" (NCG01 Part III): a storm clock
that starts outside business hours is due at the close of the next business
day (a Thursday-evening storm before a Friday holiday is due Monday). And
EPA's routine maintenance "by the close of the next business day" (CGP 2022
Part 2.1.4.b): ``n`` business days after the day of discovery, at their close.
The holiday tables are data: no clock and no I/O.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from functools import cache
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from ...config.permits import BusinessDays

if TYPE_CHECKING:
    import holidays

#: Far enough to find a business day after any run of holidays and weekends.
_SEARCH_DAYS = 60


@cache
def _holidays(country: str, subdiv: str | None) -> holidays.HolidayBase:
    # Imported here: only a business-day deadline needs the tables, and every command
    # that loads the rules would otherwise pay for the package at start-up.
    import holidays

    return holidays.country_holidays(country, subdiv=subdiv)


class BusinessCalendar:
    """The business days and hours of one site (module docstring)."""

    def __init__(self, days: BusinessDays, zone: ZoneInfo) -> None:
        self.zone = zone
        self.table = _holidays(days.country, days.subdiv)
        start, end = days.minutes
        self.opens, self.closes = (time(start // 60, start % 60),
                                   time(end // 60, end % 60) if end < 24 * 60 else time.max)

    def is_business_day(self, day: date) -> bool:
        return day.weekday() < 5 and day not in self.table

    def holiday_name(self, day: date) -> str | None:
        name = self.table.get(day)
        return str(name) if name is not None else None

    def _at(self, day: date, moment: time) -> int:
        return round(datetime.combine(day, moment, self.zone).timestamp() * 1000)

    def in_hours(self, ms: int) -> bool:
        """Whether ``ms`` falls within business hours of a business day."""
        local = datetime.fromtimestamp(ms / 1000, self.zone)
        return (self.is_business_day(local.date())
                and self.opens <= local.time() < self.closes)

    def next_business_close(self, ms: int) -> int:
        """The close of the first business day whose hours have not ended by ``ms``
        (the day that begins next, for an instant outside business hours)."""
        day = datetime.fromtimestamp(ms / 1000, self.zone).date()
        for _ in range(_SEARCH_DAYS):
            if self.is_business_day(day) and self._at(day, self.closes) > ms:
                return self._at(day, self.closes)
            day += timedelta(days=1)
        raise ValueError(f"no business day within {_SEARCH_DAYS} days of {day}")

    def close_after_business_days(self, ms: int, n: int) -> int:
        """The close of the ``n``-th business day after the local day of ``ms`` (the
        same day's close for ``n = 0``, or the next business day's if it is none)."""
        if n == 0:
            return self.next_business_close(ms)
        day = datetime.fromtimestamp(ms / 1000, self.zone).date()
        counted = 0
        for _ in range(_SEARCH_DAYS * n):
            day += timedelta(days=1)
            if self.is_business_day(day):
                counted += 1
                if counted == n:
                    return self._at(day, self.closes)
        raise ValueError(f"no {n} business days within reach of {day}")

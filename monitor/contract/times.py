"""Event time as integer milliseconds since the Unix epoch (UTC).

Integers keep sorting, equality and duplicate detection exact; every boundary
in the rules ("at least 6 hours", "within 24 hours") is then exact too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timezone

#: The wall clock the shell is given (seconds since the epoch, like ``time.time``),
#: injected so tests and the demo can run time faster. The engine never calls one.
WallClock = Callable[[], float]

MS_PER_MINUTE = 60_000
MS_PER_HOUR = 3_600_000
MS_PER_DAY = 86_400_000


def hours_ms(hours: float) -> int:
    """Milliseconds in ``hours`` (rounded to the millisecond)."""
    return round(hours * MS_PER_HOUR)


def minutes_ms(minutes: float) -> int:
    return round(minutes * MS_PER_MINUTE)


def iso(ts_ms: int) -> str:
    """ISO 8601 UTC with ``Z``; milliseconds only when they are not zero."""
    dt = datetime.fromtimestamp(ts_ms / 1000, tz=timezone.utc)
    # The year by hand: the C library's %Y writes year 1 as "1", which is no ISO 8601.
    text = f"{dt.year:04d}" + dt.strftime("-%m-%dT%H:%M:%S")
    if ts_ms % 1000:
        return text + f".{ts_ms % 1000:03d}Z"
    return text + "Z"


def iso_datetime(text: str) -> datetime:
    """ISO 8601 text as a ``datetime``, naive when the text has no offset (``Z`` is
    UTC); ``ValueError`` for text that is no ISO 8601 time."""
    return datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))


def parse_iso(text: str) -> int:
    """Parse ISO 8601 with an explicit offset into ms; naive times are an error.

    Any instant of years 1 to 9999 at its own offset parses, even one whose UTC
    date is year 0 (``0001-01-01T00:00:00+05:00``): what shows it to people is
    ``localtime.local_datetime``, which says when it cannot."""
    dt = iso_datetime(text)
    if dt.tzinfo is None:
        raise ValueError("timestamp has no UTC offset")
    return round(dt.timestamp() * 1000)


def compact(ts_ms: int) -> str:
    """A short sortable form for readable ids: ``20261130T140000Z``."""
    return datetime.fromtimestamp(ts_ms // 1000, tz=timezone.utc).strftime("%Y%m%dT%H%M%SZ")


#: An ISO 8601 duration as NWS writes them: ``PT6H``, ``PT1H``, ``P1D``, ``P1DT6H``.
_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?)?$")


def parse_interval(text: str) -> tuple[int, int]:
    """An ISO 8601 interval ``start/duration`` (``2026-05-01T06:00:00+00:00/PT6H``, the
    ``validTime`` of the NWS gridpoint API) as (start, end) in ms."""
    start_text, _, duration = text.strip().partition("/")
    match = _DURATION.match(duration)
    if match is None or not any(match.groups()):
        raise ValueError(f"not an ISO 8601 interval start/duration: {text!r}")
    days, hours, minutes = (int(g or 0) for g in match.groups())
    start = parse_iso(start_text)
    return start, start + days * MS_PER_DAY + hours * MS_PER_HOUR + minutes * MS_PER_MINUTE

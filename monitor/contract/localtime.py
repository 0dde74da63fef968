"""Times as people at the site read them: ``2026-05-14 08:00 EDT``.

One convention for everything printed for people (``status``, ``report``,
``replay --format table``, the log book export, what ``inspect`` prints): the
site's local time to the minute, with the zone's abbreviation, so that a
reader never has to convert from UTC nor wonder which zone is meant. Machine
formats (``--format jsonl``, ``status --json``, the CSV's ``*_at`` columns)
keep ISO 8601 UTC (monitor/README.md, "Events").

Never an exception. What is formatted here comes, in the end, from rows of the
append-only log book, some written by older versions or taken from a camera's
EXIF: ``0001-01-01T00:00:00Z`` at a zone west of UTC, or
``9999-12-31T23:59:59Z`` east of it, lies outside what ``datetime`` can hold
in that zone, and a formatter that raised on it would make that period's
report impossible for good. ``local_datetime`` is the one conversion of an
instant to a site's zone for people; it answers None for an instant the zone
cannot show, and ``local_text`` then shows the stored text as it is.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from .times import parse_iso

FORMAT = "%Y-%m-%d %H:%M %Z"


def local_datetime(when_ms: float, zone: ZoneInfo) -> datetime | None:
    """The instant ``when_ms`` (ms since the epoch) in ``zone``, or None when it is no
    instant ``datetime`` can hold there (before year 1 or after 9999 in that zone, a
    NaN, not a number at all)."""
    try:
        return datetime.fromtimestamp(when_ms / 1000, tz=zone)
    except (OverflowError, OSError, ValueError, TypeError):
        return None


def local_text(when: int | str | None, zone: ZoneInfo, *, empty: str = "-") -> str:
    """``when`` (ms, or an ISO 8601 text with an offset) in ``zone``; ``empty`` for none.

    A text that is not a time, or a time the zone cannot show, is returned as it
    is: a log book row written by an older version must still export.
    """
    if when is None or when == "":
        return empty
    if isinstance(when, str):
        try:
            ms = parse_iso(when)
        except ValueError:
            return when
    else:
        ms = when
    local = local_datetime(ms, zone)
    return str(when) if local is None else local.strftime(FORMAT)


def wall_time_ms(wall: datetime, zone: ZoneInfo) -> int | str:
    """A local wall time without an offset (a logger's clock) read in ``zone``, as ms;
    or, when it names no one instant there, why: ``"ambiguous"`` in the hour the
    clocks go back (01:30 comes twice), ``"skipped"`` in the hour they skip (02:30
    never comes). Either is a guess nobody should make for a compliance record.

    ``fold`` picks the first or the second reading of a repeated hour; where the
    two give one offset, the time names one instant. Where they differ, the time
    is repeated if the first comes back as itself, else skipped."""
    first, second = wall.replace(tzinfo=zone, fold=0), wall.replace(tzinfo=zone, fold=1)
    try:
        if first.utcoffset() != second.utcoffset():
            back = datetime.fromtimestamp(first.timestamp(), zone).replace(tzinfo=None)
            return "ambiguous" if back == wall.replace(fold=0) else "skipped"
        return round(first.timestamp() * 1000)
    except (OverflowError, OSError, ValueError):
        return "skipped"  # before year 1 or after 9999 once moved to UTC: no instant

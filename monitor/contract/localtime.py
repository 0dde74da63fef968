"""Times as people at the site read them: ``2026-05-14 08:00 EDT``.

One convention for everything printed for people (``status``, ``report``,
``replay --format table``, the log book export, what ``inspect`` prints): the
site's local time to the minute, with the zone's abbreviation, so that a
reader never has to convert from UTC nor wonder which zone is meant. Machine
formats (``--format jsonl``, ``status --json``, the CSV's ``*_at`` columns)
keep ISO 8601 UTC (DESIGN § 5).
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from .times import parse_iso

FORMAT = "%Y-%m-%d %H:%M %Z"


def local_text(when: int | str | None, zone: ZoneInfo, *, empty: str = "-") -> str:
    """``when`` (ms, or an ISO 8601 text with an offset) in ``zone``; ``empty`` for none.

    A text that is not a time is returned as it is: a log book row written by
    an older version must still export.
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
    return datetime.fromtimestamp(ms / 1000, tz=zone).strftime(FORMAT)

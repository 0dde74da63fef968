"""Inspection clocks by what they are, and times as a sentence says them.

A clock's id (``storm-rg1-20261202T153600Z``, ``routine-2026-11-25T05:00:00Z#2``)
is a key for programs: it holds a UTC instant and, for a storm, the gauge. A
qualified professional knows a duty as the storm that caused it or the week it
covers, so every page, the log book export and the alerts name a clock here:
``storm of Dec 2`` (the local date the storm began) and ``week of Nov 25`` (the
local date the routine period began). The date is read back from the id the
engine made (``rules/clocks/clocks.py`` names storm clocks ``storm-<gauge>-<start>``,
``rules/clocks/routine.py`` routine ones ``routine-<start>[#n]``), in the site's zone,
so a storm that began at 22:00 EST on Dec 1 is the storm of Dec 1 even though
its id holds Dec 2 in UTC. An id of another shape is shown as it is: a name
that cannot be made is never guessed.

``spoken`` is the one short local time of a sentence: ``Wed Dec 2 11:30 EST``
(the day of the week a person plans by, 24-hour clock, the zone's own
abbreviation, so a deadline across a change of daylight saving reads right).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Final
from zoneinfo import ZoneInfo

from .localtime import local_datetime
from .permits import PERMIT_NAMES
from .times import parse_iso

#: The start inside a storm clock's id (``contract.times.compact``) or a routine one's.
_STORM_ID: Final = re.compile(r"^(?:storm|snowmelt|forecast)-.+-(\d{8}T\d{6}Z)$")
_ROUTINE_ID: Final = re.compile(r"^routine-(.+?)(?:#(\d+))?$")


def _local(value: int | str | None, zone: ZoneInfo) -> datetime | None:
    """``value`` (ms, or ISO 8601 with an offset) in ``zone``; None when it is none."""
    if value is None or value == "":
        return None
    try:
        ms = parse_iso(value) if isinstance(value, str) else value
    except ValueError:
        return None
    return local_datetime(ms, zone)


def spoken(value: int | str | None, zone: ZoneInfo, *, empty: str = "an unknown time") -> str:
    """``Wed Dec 2 11:30 EST``: an instant (ms or ISO 8601) as a sentence says it;
    ``empty`` for none, and a text that is no time as it is."""
    local = _local(value, zone)
    if local is None:
        return empty if value is None or value == "" else str(value)
    return f"{local:%a %b} {local.day} {local:%H:%M} {local.tzname()}"


def deadline(value: int | str | None, zone: ZoneInfo, *, empty: str = "no due date") -> str:
    """A corrective action's due time: ``spoken``, except that a due date (stored as the
    midnight that ends it) reads as that day, ``the end of Sun Dec 6``, not as the first
    minute of the next."""
    local = _local(value, zone)
    if local is None or (local.hour, local.minute, local.second) != (0, 0, 0):
        return spoken(value, zone, empty=empty)
    before = local_datetime(local.timestamp() * 1000 - 1, zone)
    return spoken(value, zone) if before is None else \
        f"the end of {before:%a %b} {before.day}"


def day(value: int | str | None, zone: ZoneInfo) -> str:
    """``Dec 2``: the local date of an instant (``?`` for none)."""
    local = _local(value, zone)
    return "?" if local is None else f"{local:%b} {local.day}"


def clock_start(clock_id: str) -> int | None:
    """The instant (ms) a clock's id names: a storm's start, a routine period's; None
    for an id of another shape."""
    clock_id = clock_id.rpartition("/")[2]  # a permit's clock: ``<permit>/storm-…``
    storm = _STORM_ID.match(clock_id)
    try:
        if storm is not None:
            t = storm.group(1)
            return parse_iso(f"{t[:4]}-{t[4:6]}-{t[6:8]}T{t[9:11]}:{t[11:13]}:{t[13:15]}Z")
        routine = _ROUTINE_ID.match(clock_id)
        if routine is not None:
            return parse_iso(routine.group(1))
    except ValueError:
        return None
    return None


def routine_span(days: float) -> str:
    """What one routine clock's span is called at a cadence of ``days``: the law's
    seven days are a ``week``; a site configured for 14 (or a 30-day shutdown) has
    ``14 days``, never a "week" that is not one."""
    return "week" if days == 7 else f"{days:g} days"


def clock_name(clock_id: str, zone: ZoneInfo, clock: str | None = None,
               days: float = 7.0) -> str:
    """``storm of Dec 2`` or ``week of Nov 25`` (the local date its id names; ``(2)``
    after a routine clock that restarted the same instant); the id itself when it
    names no date. ``clock`` (``storm``/``routine``) is the event's word for its kind,
    used when the id does not say it; ``days`` the clock's routine cadence
    (``SiteConfig.cadence_days``): ``14 days from Nov 25`` at 14. A clock of a permit
    other than the site's first (``<permit>/…``) says whose: ``storm of Dec 2 (EPA)``."""
    permit, slash, bare = clock_id.rpartition("/")
    if slash:
        return f"{clock_name(bare, zone, clock, days)} ({PERMIT_NAMES.get(permit) or permit})"
    start = clock_start(clock_id)
    if start is None:
        return f"{clock} clock {clock_id}" if clock else clock_id
    local = local_datetime(start, zone)
    if local is None:
        return clock_id
    again = _ROUTINE_ID.match(clock_id)
    n = f" ({again.group(2)})" if again is not None and again.group(2) else ""
    if clock_id.startswith("storm-"):
        return f"storm of {local:%b} {local.day}{n}"
    if clock_id.startswith("snowmelt-"):
        return f"snowmelt of {local:%b} {local.day}{n}"
    if clock_id.startswith("forecast-"):
        return f"storm forecast on {local:%b} {local.day}{n}"
    span = routine_span(days)
    return f"{span} {'of' if span == 'week' else 'from'} {local:%b} {local.day}{n}"


def inspection_of(clock_id: str, zone: ZoneInfo, clock: str | None = None,
                  days: float = 7.0) -> str:
    """``the inspection for the storm of Dec 2``, ``the routine inspection for the week of
    Nov 25``: what a clock asks for, in a sentence."""
    name = clock_name(clock_id, zone, clock, days)
    if name.startswith(("storm of", "snowmelt of", "storm forecast on")):
        return f"the inspection for the {name}"
    if name.startswith(f"{routine_span(days)} "):
        return f"the routine inspection for the {name}"
    return f"the inspection of {name}"


def due_words(due: int | str | None, now_ms: int, zone: ZoneInfo) -> str:
    """``due Thu Dec 3 11:30 EST`` or ``OVERDUE since Thu Dec 3 11:30 EST`` (past
    ``now_ms``); ``due when the storm ends`` without a deadline yet."""
    if due is None or due == "":
        return "due when the storm ends"
    try:
        due_ms = parse_iso(due) if isinstance(due, str) else due
    except ValueError:
        return f"due {due}"
    if due_ms < now_ms:
        return f"OVERDUE since {spoken(due_ms, zone)}"
    return f"due {spoken(due_ms, zone)}"

"""Clock sanity: no timestamped reading while the system clock is plainly wrong.

A Raspberry Pi has no real-time clock. After a power cut it boots at the last
time ``fake-hwclock`` saved, or at 1970, and runs from there until NTP sets it,
which needs the very network a muddy site often lacks. A reading stamped with
that time would reach the daemon as a reading from the past (``too_old``) or,
worse, land inside an earlier storm. The runtime was built after
``BUILD_DATE``, so a clock earlier than that is certainly wrong: periodic
readings are not taken until it is set (tips keep being counted by the gauge
driver and are published with the first reading after). Readings that carry
their own timestamps (the ``csv`` driver) do not depend on the clock.
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from typing import Final

#: The day this runtime was released; bump it with every release. Any system
#: clock earlier than this is wrong, never merely early.
BUILD_DATE: Final = date(2026, 11, 1)

#: ``BUILD_DATE`` at 00:00 UTC as Unix seconds.
BUILD_EPOCH_S: Final = datetime(BUILD_DATE.year, BUILD_DATE.month, BUILD_DATE.day,
                                tzinfo=timezone.utc).timestamp()


def clock_valid(wall_s: float) -> bool:
    """Whether the wall clock reading ``wall_s`` (Unix seconds) can be believed."""
    return wall_s >= BUILD_EPOCH_S


def iso_z(ts_ms: int) -> str:
    """ISO 8601 in UTC with ``Z``, milliseconds only when not zero (the daemon's own form)."""
    dt = datetime.fromtimestamp(ts_ms // 1000, tz=timezone.utc)
    text = dt.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{ts_ms % 1000:03d}Z" if ts_ms % 1000 else text + "Z"

"""The readings a late reading is re-folded with: where the engine finds them.

A timeline keeps only the last two hours of its readings in memory (see
``timeline.py``); a reading later than that is merged by re-reading the stream
from a checkpoint. The engine asks a ``Window`` for those readings. It is
injected, like a clock: the daemon's window is its SQLite journal (the readings
are there already, and it is the source of truth), while ``replay``, the demo
and the tests use ``MemoryWindow``, which keeps every reading within the
lateness bound in memory (a replay of a year of one gauge holds eight days of
it at a time).

Contract: ``readings(site, sensors, since_ms)`` returns every message of those
sensors (readings and status messages) with ``ts_ms >= since_ms`` that the
engine has been given so far, including the one it is applying now, in the
order it was given them.
"""

from __future__ import annotations

from bisect import bisect_left, insort_right
from collections.abc import Sequence
from typing import Any, Protocol

from ..contract.inputs import Reading


class Window(Protocol):
    def add(self, reading: Reading) -> None:
        """The engine is about to apply ``reading``."""
        ...

    def readings(self, site: str, sensors: Sequence[str], since_ms: int) -> list[Reading]: ...

    def compact(self, site: str, before_ms: int) -> None:
        """The engine refuses readings of ``site`` before ``before_ms`` from now on."""
        ...

    def dump(self) -> Any:
        """What ``Engine.dump`` keeps of the window (None when it lives elsewhere)."""
        ...


def _ts(item: tuple[int, int, Reading]) -> int:
    return item[0]


class MemoryWindow:
    """Every reading within the lateness bound, per sensor, in memory."""

    def __init__(self) -> None:
        self._by_sensor: dict[tuple[str, str], list[tuple[int, int, Reading]]] = {}
        self._known: set[Reading] = set()
        self._order = 0

    def add(self, reading: Reading) -> None:
        if reading in self._known:
            return
        self._known.add(reading)
        self._order += 1
        rows = self._by_sensor.setdefault((reading.site, reading.sensor), [])
        entry = (reading.ts_ms, self._order, reading)
        if not rows or rows[-1][0] <= reading.ts_ms:
            rows.append(entry)
        else:
            insort_right(rows, entry, key=_ts)

    def readings(self, site: str, sensors: Sequence[str], since_ms: int) -> list[Reading]:
        found: list[tuple[int, int, Reading]] = []
        for sensor in sensors:
            rows = self._by_sensor.get((site, sensor), [])
            found += rows[bisect_left(rows, since_ms, key=_ts):]
        found.sort(key=lambda entry: entry[1])
        return [reading for _, _, reading in found]

    def compact(self, site: str, before_ms: int) -> None:
        for (row_site, _), rows in self._by_sensor.items():
            if row_site != site:
                continue
            cut = bisect_left(rows, before_ms, key=_ts)
            for _, _, reading in rows[:cut]:
                self._known.discard(reading)
            del rows[:cut]

    def dump(self) -> Any:
        entries = sorted((e for rows in self._by_sensor.values() for e in rows),
                         key=lambda entry: entry[1])
        return [reading.to_json() for _, _, reading in entries]

    @classmethod
    def load(cls, data: Any) -> MemoryWindow:
        window = cls()
        for raw in data or []:
            window.add(Reading.from_json(raw))
        return window

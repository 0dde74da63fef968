"""The engine's window onto late readings (``engine/window.py``): the journal itself.

Bounded by the seq of the row being applied, so a restart that replays the
journal sees exactly what the first run saw.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..contract.inputs import Reading
from ..store import Store


class JournalWindow:
    """The engine's window onto late readings: the journal, up to the row being applied.

    ``upto_seq`` is set before each row is applied, so a re-fold sees the rows
    applied before it and itself, never rows applied after it: a replay of the
    journal after a restart makes the same events as the first run did.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self.upto_seq: int | None = None

    def add(self, reading: Reading) -> None:
        """Already in the journal."""

    def readings(self, site: str, sensors: Sequence[str], since_ms: int) -> list[Reading]:
        return [Reading.from_json(body) for body in self.store.journal.readings(
            site, sensors, since_ms, self.upto_seq)]

    def compact(self, site: str, before_ms: int) -> None:
        """The journal keeps everything."""

    def dump(self) -> Any:
        return None

"""The daemon's own archiving (``archive: {after_days}``), off the engine's thread.

Every ``period`` of the daemon's clock (a tenth of ``after_days``, at least a
day; the first run an hour after the start, so a restart's catch-up comes
first) the archiver computes the cut (``host/archiving.py``) and moves what
it allows (``store/retention.py``) with a store connection of its own. Its
transactions are short (a chunk of deletes, a step of the vacuum), so the
engine thread's commits wait a fraction of a second at most. Archiving a
tenth of ``after_days`` at a time keeps the journal between ``after_days``
and 1.1 times that (the database flat from the first run on) at the cost of
several files per site and month.

A failure is logged and the run is tried again an hour later: archiving only
shrinks the database; ingest and alerts never wait for it.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Final

from ..config import Config
from ..contract.times import MS_PER_DAY, MS_PER_HOUR, WallClock
from ..host.archiving import plan
from ..store import Store
from ..store.opening import open_store
from ..store.retention import Moved, move

log = logging.getLogger("stormwatch.archive")

#: The first run this long (daemon clock) after the start; a failed one again after it.
FIRST_AFTER_MS: Final = MS_PER_HOUR
#: How often the thread looks at the clock (seconds of real time).
POLL_S: Final = 30.0


class Archiver:
    """The archive worker: ``run(stop)`` in the daemon; ``due`` and ``step`` for a caller
    that drives it itself (``bench/season.py``)."""

    name = "archive"

    def __init__(self, config: Config, clock: WallClock = time.time) -> None:
        if config.archive is None:
            raise ValueError("the configuration has no archive section")
        self.config = config
        self.clock = clock
        self.period_ms = max(MS_PER_DAY, round(config.archive.after_days * MS_PER_DAY / 10))
        self.next_ms: int | None = None
        self.warned = False

    def due(self, now_ms: int) -> bool:
        if self.next_ms is None:
            self.next_ms = now_ms + FIRST_AFTER_MS
        return now_ms >= self.next_ms

    def step(self, store: Store, now_ms: int) -> Moved | None:
        """One run now; None when it failed (logged; tried again in an hour)."""
        try:
            cut = plan(self.config, store, now_ms=now_ms).cut
            moved = move(store, cut, now_ms=now_ms, progress=log.debug)
        except Exception as exc:
            log.error("archiving failed (%s); tried again in an hour", exc, exc_info=True)
            self.next_ms = now_ms + FIRST_AFTER_MS
            return None
        self.next_ms = now_ms + self.period_ms
        if moved.files or moved.finished:
            sites = {f.site for f in moved.files if f.site}
            log.info("archived %d journal row(s) of %d site(s) into %d file(s) (%.1f MB) in"
                     " %.1f s; database %.0f -> %.0f MB", moved.rows, len(sites),
                     len(moved.files), sum(f.bytes for f in moved.files) / 1e6, moved.seconds,
                     moved.db_bytes_before / 1e6, moved.db_bytes_after / 1e6)
        if moved.no_shrink and not self.warned:
            log.warning("archive: the database file does not shrink: %s", moved.no_shrink)
            self.warned = True
        return moved

    def run(self, stop: threading.Event) -> None:
        with open_store(self.config) as store:
            while not stop.wait(POLL_S):
                now_ms = round(self.clock() * 1000)
                if self.due(now_ms):
                    self.step(store, now_ms)

    def wake(self) -> None:
        """New rows were recorded: nothing to do now (the archive follows the clock)."""

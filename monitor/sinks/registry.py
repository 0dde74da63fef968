"""The daemon's sinks besides the engine: each a thread reading the store with a cursor.

A worker is a small class with ``name`` and ``run(stop)``; it opens its own
``Store`` (one SQLite connection per thread), loops until ``stop`` is set and
must never raise out of ``run`` for an outage of the service it talks to
(it logs, backs off and retries; the cursor in the store only moves on success).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Protocol

from ..config import Config
from ..contract.times import WallClock
from ..store.events import AlertRoutes
from .influx.influx import InfluxExporter
from .notify.build import build_router, build_worker


class Worker(Protocol):
    name: str

    def run(self, stop: threading.Event) -> None: ...

    def wake(self) -> None:
        """New work was recorded: stop waiting (called from the engine's thread)."""
        ...


def build_workers(config: Config, clock: WallClock = time.time,
                  config_path: str | Path | None = None) -> list[Worker]:
    """Every sink this configuration asks for (``config_path``: the file it was read
    from, for the commands alerts print)."""
    workers: list[Worker] = []
    notifier = build_worker(config, clock, config_path)
    if notifier is not None:
        workers.append(notifier)
    if config.influx is not None:
        workers.append(InfluxExporter(config, clock))
    return workers


def build_routes(config: Config) -> AlertRoutes | None:
    """Which alert tags an event goes to (outbox rows are written with the event)."""
    router = build_router(config)
    if router is not None:
        return router
    return None

"""The sinks' threads in the daemon: each worker runs until told to stop, and comes back
after a failure, so one sink in trouble never takes the daemon down."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable

from ..sinks.registry import Worker

log = logging.getLogger("stormwatch.daemon")


#: A worker failing on a store that refuses writes says so once in this long.
WORKER_STORE_LOG_EVERY_S = 300.0


def run_worker(worker: Worker, stop: threading.Event,
                writable: Callable[[], bool] = lambda: True) -> None:
    """Run a worker; restart it after a failure. One that failed on the store (disk
    full) waits until the engine thread finds the store writable again: restarted
    sooner, the alert worker would send its first due alert again each time."""
    quiet_until = 0.0
    while not stop.is_set():
        try:
            worker.run(stop)
            return
        except Exception as exc:  # a sink must not take the daemon down; restart it after a pause
            # The store refusing writes (disk full: the engine thread reports it) is a
            # line now and then, not a traceback every 5 s.
            store = isinstance(exc, sqlite3.OperationalError)
            if not store or time.monotonic() >= quiet_until:
                quiet_until = time.monotonic() + WORKER_STORE_LOG_EVERY_S if store else 0.0
                log.error("worker %s failed (%s); restarting it %s", worker.name, exc,
                          "once the store takes writes" if store else "in 5 s",
                          exc_info=not store)
            stop.wait(10.0 if store else 5.0)  # time for the engine thread to notice
            while store and not writable() and not stop.wait(1.0):
                pass

"""The daemon's own archiving (``archive: {after_days}``), in a process of its own.

Every ``period`` of the daemon's clock (a tenth of ``after_days``, at least a
day; the first run an hour after the start, so a restart's catch-up comes
first) the archiver computes the cut (``host/archiving.py``) and moves what
it allows (``store/retention.py``) with a store connection of its own, in a
child process started for the run: a run over a month of many sites decodes
and encodes millions of rows, and in a thread it would hold the engine's
interpreter lock for much of that and leave ~100 MB of freed memory behind in
the daemon (measured with ``bench/season.py``); a process gives both back
when it ends. Its transactions are short (a chunk of deletes, a step of the
vacuum), so the engine's commits wait a fraction of a second at most; at the
daemon's stop the child is ended at once, which every step of a run is made
to survive. Archiving a tenth of ``after_days`` at a time keeps the journal
between ``after_days`` and 1.1 times that (the database flat from the first
run on) at the cost of several files per site and month.

A failure is logged and the run is tried again an hour later: archiving only
shrinks the database; ingest and alerts never wait for it.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import threading
import time
from multiprocessing.connection import Connection
from typing import Final

from ..config import Config
from ..contract.times import MS_PER_DAY, MS_PER_HOUR, WallClock
from ..host.archiving import plan
from ..store.opening import open_store
from ..store.retention import Moved, move

log = logging.getLogger("stormwatch.archive")

#: The first run this long (daemon clock) after the start; a failed one again after it.
FIRST_AFTER_MS: Final = MS_PER_HOUR
#: How often the thread looks at the clock (seconds of real time).
POLL_S: Final = 30.0
#: How often a run's thread looks at the child and the stop (seconds).
CHILD_POLL_S: Final = 0.5
#: How long the end of a child is waited for.
CHILD_JOIN_S: Final = 10.0


def archive_once(config: Config, now_ms: int) -> Moved:
    """One archive run with a store of its own (what the child process does)."""
    with open_store(config) as store:
        return move(store, plan(config, store, now_ms=now_ms).cut, now_ms=now_ms)


def _child(config: Config, now_ms: int, out: Connection) -> None:
    # The parent ends this process at its stop; a Ctrl-C meant for the daemon must
    # not print a traceback from here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        out.send(("ok", archive_once(config, now_ms)))
    except Exception as exc:  # handed to the parent, which logs it once
        out.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        out.close()


def run_in_child(config: Config, now_ms: int, stop: threading.Event | None = None
                 ) -> Moved | None:
    """``archive_once`` in a fresh process (spawned: the daemon has threads, and a fork of
    a threaded process can inherit a held lock); None when ``stop`` ended it first.
    A failure in the child is raised here as ``RuntimeError`` with its message."""
    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(config, now_ms, send), name="stormwatch-archive",
                        daemon=True)
    child.start()
    send.close()
    try:
        while not receive.poll(CHILD_POLL_S):
            if stop is not None and stop.is_set():
                child.terminate()
                return None
            if not child.is_alive() and not receive.poll(0):
                raise RuntimeError(f"the archive process ended with code {child.exitcode}")
        status, value = receive.recv()
    finally:
        child.join(CHILD_JOIN_S)
        receive.close()
    if status != "ok":
        raise RuntimeError(value)
    assert isinstance(value, Moved)
    return value


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

    def step(self, now_ms: int, stop: threading.Event | None = None) -> Moved | None:
        """One run now, in a child process; None when it failed (logged; tried again in an
        hour) or ``stop`` was set meanwhile (the child is ended)."""
        try:
            moved = run_in_child(self.config, now_ms, stop)
        except Exception as exc:
            log.error("archiving failed (%s); tried again in an hour", exc)
            self.next_ms = now_ms + FIRST_AFTER_MS
            return None
        if moved is None:
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
        while not stop.wait(POLL_S):
            now_ms = round(self.clock() * 1000)
            if self.due(now_ms):
                self.step(now_ms, stop)

    def wake(self) -> None:
        """New rows were recorded: nothing to do now (the archive follows the clock)."""

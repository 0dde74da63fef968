"""The daemon's snapshot writer: engine snapshots on a thread of their own.

A snapshot is the engine's state (not its readings) and the checkpoints that
changed since the last one (``host.Snapshots``). Written on the engine
thread, a large one would stall acknowledgements for seconds; here it is
written with a store connection of its own, one image at a time, and a failure
(a full disk) is logged and reported back, to be tried again later.
"""

from __future__ import annotations

import logging
import queue
import threading
import time

from ..config import Config
from ..contract.times import WallClock
from ..host.snapshots import SnapshotImage, Snapshots
from ..store import Store, is_disk_full
from ..store.opening import open_store

log = logging.getLogger("stormwatch.daemon")


class SnapshotWriter:
    """Writes snapshot images on a thread of its own, with its own store connection,
    so a snapshot never stalls acknowledgements. One image at a time; a failure is
    logged loudly and reported to the engine thread, which tries again later."""

    def __init__(self, config: Config, snapshots: Snapshots,
                 clock: WallClock = time.time) -> None:
        self.config = config
        self.snapshots = snapshots
        self.clock = clock
        self._inbox: queue.Queue[SnapshotImage | None] = queue.Queue(maxsize=1)
        self._outcomes: queue.Queue[tuple[SnapshotImage, bool]] = queue.Queue()
        self.busy = False
        self._thread = threading.Thread(target=self._run, name="snapshots", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def submit(self, image: SnapshotImage) -> None:
        self.busy = True
        self._inbox.put(image)

    def outcomes(self) -> list[tuple[SnapshotImage, bool]]:
        """Images written (True) or failed (False) since the last call."""
        out = []
        while True:
            try:
                out.append(self._outcomes.get_nowait())
            except queue.Empty:
                return out

    def stop(self) -> None:
        self._inbox.put(None)
        self._thread.join(timeout=60)

    def _run(self) -> None:
        with open_store(self.config) as store:
            while True:
                image = self._inbox.get()
                if image is None:
                    return
                ok = _write_snapshot(self.snapshots, store, image, self.clock)
                self.busy = False
                self._outcomes.put((image, ok))


def _write_snapshot(snapshots: Snapshots, store: Store, image: SnapshotImage,
                    clock: WallClock) -> bool:
    started = time.monotonic()
    try:
        snapshots.write(store, image, created_ms=round(clock() * 1000))
    except Exception as exc:
        # A full disk is an ERROR line, not a traceback: nothing here is a bug.
        log.error("snapshot at journal %s FAILED (%s); ingest and alerts go on, it is tried"
                  " again later (until one succeeds, a restart replays the journal from"
                  " the last good snapshot)", image.applied_seq, exc,
                  exc_info=not is_disk_full(exc))
        return False
    log.debug("snapshot at journal %s written in %.3f s (%d checkpoint(s) new)",
              image.applied_seq, time.monotonic() - started, len(image.put))
    return True

"""What the running daemon says about itself that the database cannot hold: the health file.

``stormwatch status`` reads the daemon's state from the database, but two
things it must show cannot be written there when they matter most:

* **the store cannot be written** (the disk is full): the daemon holds its
  messages unacknowledged and retries, and ``status`` must say so, yet every
  SQLite write fails, and a read-only reader sees only what was committed;
* **the broker connection** (``connected`` / ``disconnected`` since when)
  changes on events of the network, and a write transaction per reconnect
  would fail just the same on a full disk.

So the daemon keeps them in ``state_dir/stormwatch.health``, a small JSON
object padded with blanks to ``SIZE`` bytes. The file is made full size once,
at start (when there is space), and from then on is only ever *overwritten in
place* (``pwrite`` at offset 0, never truncated or extended): rewriting blocks
a file already owns needs no free space on ext4, tmpfs and other file systems
that update in place (on copy-on-write ones such as btrfs it may still fail
when the disk is full; the daemon then logs it once and carries on). No fsync:
it is advice for an operator, not a record; the journal is the record.

A reader may meet a write half done; ``read_health`` tries again and, failing
that, returns ``{}`` (unknown), never an error. A daemon killed with SIGKILL
leaves its last words behind; ``status`` shows how old the daemon's state is
(``daemon.stale``), which tells the reader how far to trust them.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from ..contract.times import iso
from .db import is_disk_full

HEALTH_NAME: Final = "stormwatch.health"
#: The file's fixed size. The content is a few hundred bytes; free text in it
#: (an error message) is cut so that it always fits.
SIZE: Final = 2048
TEXT_MAX: Final = 300


def health_path(state_dir: str | Path) -> Path:
    return Path(state_dir) / HEALTH_NAME


class HealthFile:
    """The daemon's side: ``open`` once, then ``update`` values as they change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = {}
        self._fd: int | None = None

    def open(self, initial: dict[str, Any]) -> OSError | None:
        """Create (or take over) the file at full size with ``initial``; the error when
        it cannot be made (the caller logs it; without the file, ``status`` shows the
        values as unknown)."""
        self.data = dict(initial)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            return exc
        try:
            # Every byte written once now, so that later writes only overwrite.
            os.pwrite(fd, self._encode(), 0)
            os.ftruncate(fd, SIZE)
        except OSError as exc:
            os.close(fd)
            return exc
        self._fd = fd
        return None

    def update(self, **values: Any) -> bool:
        """Set values and rewrite the file in place; whether that worked."""
        self.data.update(values)
        if self._fd is None:
            return False
        try:
            os.pwrite(self._fd, self._encode(), 0)
        except OSError:
            return False
        return True

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def _encode(self) -> bytes:
        data = {**self.data, "written_ms": round(time.time() * 1000)}
        for key, value in data.items():
            if isinstance(value, str) and len(value) > TEXT_MAX:
                data[key] = value[:TEXT_MAX] + "…"
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=True).encode("ascii")
        if len(text) >= SIZE:
            # Cannot happen with the values the daemon writes; never write past SIZE.
            text = b"{}"
        return text.ljust(SIZE - 1) + b"\n"


def read_health(state_dir: str | Path, attempts: int = 3) -> dict[str, Any]:
    """What the daemon last wrote in ``state_dir``'s health file; ``{}`` when there is
    none or it cannot be read."""
    path = health_path(state_dir)
    for _ in range(attempts):
        try:
            data = json.loads(path.read_bytes().decode("ascii"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            time.sleep(0.01)  # a write in progress: read again
            continue
        return data if isinstance(data, dict) else {}
    return {}


class StoreTrouble:
    """The daemon's memory of the store refusing writes, and when to try again.

    One *episode* runs from the first failed write to the first write that
    works again; it is logged once as an ERROR when it starts and once when it
    ends (the caller does, with ``start``'s and ``end``'s answers). Retries back
    off from ``first_s`` doubling to ``max_s``, so a full disk costs a failed
    write every few seconds, not a busy loop. A failure within ``rejoin_s`` of
    an episode's end continues that episode (same ``since``, no new ERROR): a
    little space freed and used up again must not make the log flap.
    """

    def __init__(self, *, first_s: float = 1.0, max_s: float = 15.0,
                 rejoin_s: float = 300.0) -> None:
        self.first_s, self.max_s, self.rejoin_s = first_s, max_s, rejoin_s
        self.active = False
        self.since_ms: int | None = None
        self.disk_full = False
        self.error = ""
        self.retry_at = 0.0
        self.failures = 0
        self._delay = first_s
        self._ended_at: float | None = None

    def start(self, exc: BaseException, *, disk_full: bool, now: float, now_ms: int) -> bool:
        """A write failed at monotonic ``now``; whether this begins a new episode."""
        new = not self.active and (self._ended_at is None or now - self._ended_at > self.rejoin_s)
        if new or self.since_ms is None:
            self.since_ms = now_ms
        if not self.active:
            self._delay = self.first_s
        self.active = True
        self.disk_full = disk_full
        self.error = str(exc)
        self.failures += 1
        self.retry_at = now + self._delay
        self._delay = min(self._delay * 2, self.max_s)
        return new

    def end(self, now: float) -> None:
        """A write worked again."""
        self.active = False
        self.failures = 0
        self._ended_at = now

    def health(self) -> dict[str, Any]:
        """The health file's view: ``disk_full_since_ms`` and ``store_error``."""
        if not self.active:
            return {"disk_full_since_ms": None, "store_error": None}
        return {"disk_full_since_ms": self.since_ms if self.disk_full else None,
                "store_error": self.error}


class DaemonHealth:
    """The daemon's side of it all: the file, the store's trouble and the broker
    connection, each change logged once (to the daemon's ``log``)."""

    def __init__(self, state_dir: str | Path, log: logging.Logger,
                 clock: Callable[[], float] = time.time) -> None:
        self.state_dir = Path(state_dir)
        self.file = HealthFile(health_path(state_dir))
        self.trouble = StoreTrouble()
        self.log = log
        self.clock = clock

    def now_ms(self) -> int:
        return round(self.clock() * 1000)

    def open(self) -> None:
        error = self.file.open({"pid": os.getpid(), **self.trouble.health()})
        if error is not None:
            self.log.warning("cannot write %s (%s): `status` will not show the broker"
                             " connection or a full disk", self.file.path, error)

    def broker(self, up: bool) -> None:
        self.file.update(broker={"state": "connected" if up else "disconnected",
                                 "since_ms": self.now_ms()})

    def store_failed(self, exc: BaseException) -> None:
        """A write failed: note it, say it once per episode, publish it, back off."""
        full = is_disk_full(exc)
        if self.trouble.start(exc, disk_full=full, now=time.monotonic(), now_ms=self.now_ms()):
            what = "the disk is full" if full else "the store refuses writes"
            self.log.error("%s (%s): nothing is journaled or acknowledged until a write works"
                           " again; the broker keeps the messages, and they are journaled"
                           " once it does (tried again every %g s at most). Free space where"
                           " %s is", what, exc, self.trouble.max_s, self.state_dir.resolve())
        else:
            self.log.debug("the store still refuses writes (attempt %d): %s",
                           self.trouble.failures, exc)
        self.file.update(**self.trouble.health())

    def store_ok(self, held: int) -> None:
        """A write worked again after ``store_failed``: ``held`` messages went in."""
        since = self.trouble.since_ms
        self.trouble.end(time.monotonic())
        self.file.update(**self.trouble.health())
        self.log.info("the store takes writes again (it refused them since %s); %d held"
                      " message(s) journaled; resuming", iso(since) if since else "?", held)

    def close(self) -> None:
        self.broker(False)
        self.file.close()

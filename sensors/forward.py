"""From the buffer to the broker: a window of in-flight publishes at a bounded rate.

Rules, in the order ``pump`` and ``acknowledge`` apply them:

1. Only committed rows not yet published are published, in commit order
   (``Buffer.pending``).
2. At most ``window`` rows are in flight (published, no PUBACK yet), and at
   most ``rate_per_s`` are published per second (a token bucket holding one
   second's worth), so a long backlog drains steadily over a thin cellular
   link while new readings keep being committed and queue behind it.
3. A PUBACK marks a row published (``Buffer.acknowledged``); it stays until
   the daemon confirms it (``confirm.py``), except for the sensors in the
   PUBACK fallback (``release``), whose rows then go with every row of the
   sensor before them. Rows in flight when the link drops stay in flight:
   paho sends them again after the reconnect (``link.py``). ``rewind`` makes
   the next pump look at the buffer from its start again (rows made pending
   again by ``Buffer.unpublish``).
4. A PUBACK that refuses the message (MQTT v5 reason >= 0x80, e.g. 0x87 "Not
   authorized" from the ACL) marks nothing: the row stays pending and the
   refusal is logged. Rows after it keep going; refused rows are tried again, from the
   start of the buffer, after ``retry_refused_s``. A misconfigured ACL thus
   costs retries, never data.
5. Publishing only happens while the link is up; nothing piles up in paho.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable, Collection
from typing import Final

from .buffer import Buffer
from .link import Ack, Link

log = logging.getLogger(__name__)

#: Seconds before rows the broker refused are published again.
RETRY_REFUSED_S: Final = 300.0


class Forwarder:
    def __init__(self, buffer: Buffer, link: Link, window: int, rate_per_s: float,
                 monotonic: Callable[[], float] = time.monotonic,
                 retry_refused_s: float = RETRY_REFUSED_S) -> None:
        self.buffer = buffer
        self.link = link
        self.window = window
        self.rate_per_s = rate_per_s
        self.retry_refused_s = retry_refused_s
        self._monotonic = monotonic
        #: message id -> (buffer row id, sensor), for rows published and not yet acknowledged.
        self.inflight: dict[int, tuple[int, str]] = {}
        self._cursor = 0  # the newest row id handed to the link
        self._capacity = max(1.0, rate_per_s)
        self._tokens = self._capacity
        self._filled_at = monotonic()
        self._retry_at: float | None = None
        self.published = 0
        self.refused = 0

    def acknowledge(self, acks: list[Ack], release: Collection[str] = ()) -> set[str]:
        """Mark the rows of successful PUBACKs published, deleting those of ``release``
        that may go (one transaction); the sensors whose rows were marked."""
        done: list[int] = []
        sensors: set[str] = set()
        for mid, refused, reason in acks:
            flying = self.inflight.pop(mid, None)
            if flying is None:
                continue  # a status message, or a row published before a restart
            row, sensor = flying
            if refused:
                self.refused += 1
                if self._retry_at is None:
                    log.error("the broker refused a reading (%s); it stays in the buffer and "
                              "is tried again in %g s: check the broker's ACL for this node",
                              reason, self.retry_refused_s)
                    self._retry_at = self._monotonic() + self.retry_refused_s
                continue
            done.append(row)
            sensors.add(sensor)
        if done:
            self.buffer.acknowledged(done, release=sensors & set(release))
        return sensors

    def rewind(self) -> None:
        """Look at the buffer from its start at the next pump (rows in flight are skipped)."""
        self._cursor = 0

    def drain_acks(self, wait_s: float = 0.0, release: Collection[str] = ()) -> set[str]:
        """Take every PUBACK waiting (up to ``wait_s`` for the first) and apply them
        (``acknowledge``)."""
        acks: list[Ack] = []
        try:
            acks.append(self.link.acks.get(timeout=wait_s) if wait_s > 0
                        else self.link.acks.get_nowait())
            while True:
                acks.append(self.link.acks.get_nowait())
        except queue.Empty:
            pass
        return self.acknowledge(acks, release) if acks else set()

    def _refill(self, now_s: float) -> None:
        self._tokens = min(self._capacity,
                           self._tokens + (now_s - self._filled_at) * self.rate_per_s)
        self._filled_at = now_s

    def pump(self) -> float:
        """Publish what the window and the rate allow; seconds until more could go (inf: none
        waiting or the window is full, an ack will wake the caller)."""
        now_s = self._monotonic()
        if self._retry_at is not None and now_s >= self._retry_at:
            self._retry_at = None
            self.rewind()  # refused rows are still there
        if not self.link.connected:
            return float("inf")
        self._refill(now_s)
        room = min(self.window - len(self.inflight), int(self._tokens))
        if room <= 0:
            if len(self.inflight) >= self.window:
                return float("inf")
            return (1 - self._tokens) / self.rate_per_s
        flying = {row for row, _ in self.inflight.values()}
        limit = room + len(flying)
        rows = self.buffer.pending(self._cursor, limit)
        for row in rows:
            if room <= 0:
                break
            if row.id not in flying:
                mid = self.link.publish(row.topic, row.payload)
                if mid is None:
                    break  # paho's queue is full: the bookkeeping is off; wait for acks
                self.inflight[mid] = (row.id, row.sensor)
                self.published += 1
                self._tokens -= 1
                room -= 1
            self._cursor = row.id
        if len(self.inflight) >= self.window or len(rows) < limit:
            return float("inf")  # an ack or a new commit wakes the caller
        return max((1 - self._tokens) / self.rate_per_s, 0.0)

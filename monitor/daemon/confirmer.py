"""The daemon's side of end-to-end confirmation: noting commits, publishing ``journaled``.

The rule (what N is) is ``sources/confirm.py``; this module is the shell
around it, and keeps to sensors/README.md, "MQTT contract":

* **Never before the commit.** ``committed`` is called by ``Daemon.ingest_batch``
  only after the journal commit of the batch returned; a batch whose commit
  failed (disk full) is noted when its retry succeeds.
* **At most once a second per sensor.** ``publish_due``, called at every turn
  of the loop, publishes the marks of sensors that had input since their last
  publication, each no sooner than ``MIN_INTERVAL_S`` after the one before; a
  mark that moved meanwhile is published at the end of that second, with its
  newest value. A sensor whose mark did not move is published again when it
  has input (a reading, or a status of its node): the node sees that the
  daemon is there and that it is missing something.
* **QoS 1, retained**, through the MQTT connection (``Ingest.publish``; in the
  child process on the parent's command), and only while connected: after
  each (re)connection every known mark is published again, so a broker that
  lost its retained messages (no persistence) gets them back.
* **Restarts.** The book is written to ``meta`` with each tick and at the stop
  (``ConfirmBook.meta``); at the start it is read back and each sensor's mark is carried
  up through the journal (``Journal.seq_run``) over what was committed after
  that write, then published once connected: a confirmation lost in a crash
  between commit and publication goes out after the restart.
* ``broker.confirm: false`` turns it all off: the daemon then publishes
  nothing, as one without the feature, and nodes fall back to deleting on
  PUBACK (``sensors/README.md``); their mode is still noted from their
  statuses, so ``status --json`` shows ``confirm: puback``.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from ..config import Config
from ..contract.inputs import Inspection, Reading
from ..contract.rejects import Rejection
from ..contract.times import WallClock, iso
from ..sources.confirm import (
    ConfirmBook,
    Key,
    journaled_payload,
    journaled_topic,
    rejected_seq,
    status_fields,
)
from ..sources.mqtt import Received
from ..store import Store
from ..store.sourcenotes import CONFIRM_META

#: The contract's "at most once a second per sensor".
MIN_INTERVAL_S = 1.0

Parsed = Reading | Inspection | Rejection


class Publisher(Protocol):
    """What publishes the confirmations (``Ingest``, ``IngestProcess``)."""

    connected: threading.Event

    def publish(self, messages: Sequence[tuple[str, bytes]]) -> None: ...


class Confirmer:
    """The book of marks and their publication; see the module docstring."""

    def __init__(self, config: Config, clock: WallClock = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.enabled = config.broker.confirm
        self.prefix = config.broker.topic_prefix.rstrip("/")
        self.cut = len(self.prefix) + 1 if self.prefix else 0
        self.known = {(site.id, s.id) for site in config.sites for s in site.sensors}
        self.clock = clock
        self.monotonic = monotonic
        self.book = ConfirmBook()
        #: Marks waiting for their second to pass, and when each sensor was last published.
        self.waiting: dict[Key, int] = {}
        self.sent_at: dict[Key, float] = {}
        self._next_at = math.inf
        #: Journal walks still to do (a sensor's ``oldest_seq`` went down).
        self._walks: set[Key] = set()
        self.published = 0

    # ------------------------------------------------------------------ input

    def restore(self, store: Store) -> None:
        """The book as the last run left it, carried up through the journal."""
        if not self.enabled:
            return
        book = ConfirmBook.from_meta(store.state.meta_get(CONFIRM_META))
        book.marks = {k: m for k, m in book.marks.items() if k in self.known}
        self.book = book
        for key in book.marks:
            self._walk(store, key)
        self.book.due.update(self.book.marks)

    def committed(self, store: Store, batch: Sequence[Received],
                  parsed: Sequence[Parsed]) -> None:
        """A batch whose journal commit returned: its readings with ``seq`` (journaled
        now, before, or refused for good) and its nodes' statuses. Disabled, only the
        nodes' modes are noted (``status --json`` shows a node that fell back to PUBACK
        whatever this daemon does), never a mark."""
        seqs: dict[Key, list[int]] = {}
        for m, item in zip(batch, parsed, strict=True):
            if isinstance(item, Reading):
                key = (item.site, item.sensor)
                if item.kind == "status":
                    oldest, mode = status_fields(m.payload)
                    if self.book.status(key, item.ts_ms, oldest if self.enabled else None,
                                        mode) and self.enabled:
                        self._walks.add(key)
                elif not self.enabled:
                    continue
                elif item.seq is not None:
                    seqs.setdefault(key, []).append(item.seq)
            elif self.enabled and isinstance(item, Rejection) and m.topic.endswith("/reading"):
                seq = rejected_seq(item.reason, m.payload)
                parts = m.topic[self.cut:].split("/")
                if seq is not None and len(parts) == 3 and (parts[0], parts[1]) in self.known:
                    seqs.setdefault((parts[0], parts[1]), []).append(seq)
        for key, found in seqs.items():
            self.book.committed(key, found)
        while self._walks:
            self._walk(store, self._walks.pop())

    def _walk(self, store: Store, key: Key) -> None:
        """Carry the mark up over what the journal holds above it."""
        mark = self.book.marks.get(key)
        seq = None if mark is None else mark.seq
        if seq is None:
            return
        first = seq + 1
        upto = store.journal.seq_run(key[0], key[1], first)
        if upto >= first:
            self.book.journaled(key, first, upto)

    # ------------------------------------------------------------------ output

    def reconnected(self) -> None:
        """A new connection to the broker: every mark is published again."""
        self.book.due.update(self.book.marks)

    def publish_due(self, ingest: Publisher) -> int:
        """Publish what is due and allowed now (module docstring); how many went."""
        if not self.enabled:
            return 0
        now = self.monotonic()
        for key, seq in self.book.take_due().items():
            self.waiting[key] = seq
            self._next_at = min(self._next_at, self.sent_at.get(key, -math.inf)
                                + MIN_INTERVAL_S)
        if now < self._next_at or not ingest.connected.is_set():
            return 0
        at = iso(round(self.clock() * 1000))
        out: list[tuple[str, bytes]] = []
        later = math.inf
        for key, seq in list(self.waiting.items()):
            ready = self.sent_at.get(key, -math.inf) + MIN_INTERVAL_S
            if ready > now:
                later = min(later, ready)
                continue
            out.append((journaled_topic(self.prefix, *key), journaled_payload(seq, at)))
            self.sent_at[key] = now
            del self.waiting[key]
        self._next_at = later
        if out:
            ingest.publish(out)
            self.published += len(out)
        return len(out)

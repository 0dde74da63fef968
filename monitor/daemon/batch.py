"""One batch of MQTT messages, from the queue to the engine: the daemon's hot path.

In this order, and only in this order (monitor/README.md, "Architecture"; sensors/README.md, "MQTT
contract"):

1. parse each message (``sources/parse.py``), an inspection's photos as their
   stored files say (``host/evidence.py``); rejects are noted for the reject
   log and for the node-clock notes, accepted inputs become journal rows;
2. commit the rows and the dead letters in ONE transaction; when it fails
   (``sqlite3.OperationalError``: the disk is full) nothing below happens and
   the caller keeps the batch for a retry;
3. acknowledge the batch to the broker: only now may it forget the messages;
4. note the commit for the end-to-end confirmations (``confirmer.py``), which
   the loop publishes at its next turn: never before the commit;
5. apply the committed readings to the engine from memory.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

from ..config import Config, photo_pixels_of, photos_dir_of
from ..contract.inputs import Inspection, Reading
from ..contract.rejects import Rejection, RejectReason
from ..contract.times import WallClock
from ..host.engine import EngineHost
from ..host.evidence import with_stored_photos
from ..host.rows import journal_in
from ..sources.mqtt import Received
from ..sources.nodeclocks import NodeClocks
from ..sources.parse import parse_message
from ..store import DeadLetterIn, JournalIn, Store
from .confirmer import Confirmer
from .rejectlog import RejectLog


class Acker(Protocol):
    """What acknowledges a batch to the broker (``Ingest``)."""

    def ack(self, messages: list[Received]) -> int: ...


class BatchPath:
    """Steps 1 to 5 of the module docstring, with what they note on the way."""

    def __init__(self, config: Config, clock: WallClock, rejects: RejectLog,
                 node_clocks: NodeClocks, confirmer: Confirmer) -> None:
        self.config = config
        self.clock = clock
        self.rejects = rejects
        self.node_clocks = node_clocks
        self.confirmer = confirmer
        #: An MQTT inspection's photos are read from here (``host/evidence.py``).
        self.photos_dir = photos_dir_of(config)
        self._zones = {site.id: site.zone for site in config.sites}
        self._max_pixels = photo_pixels_of(config)

    def ingest(self, store: Store, ingest: Acker, host: EngineHost,
               batch: Sequence[Received]) -> None:
        """The module docstring's steps; ``sqlite3.OperationalError`` from the commit is
        raised on, with nothing acknowledged, noted or applied."""
        journal: list[JournalIn] = []
        items: list[tuple[Reading | Inspection, int]] = []
        sources: list[Received] = []
        dead: list[DeadLetterIn] = []
        parsed: list[Reading | Inspection | Rejection] = []
        now = self.clock()
        ref_ms = round(now * 1000)
        # The reject log's minute is measured on the monotonic clock: a wall clock
        # stepped back must not silence it.
        tick = time.monotonic()
        for m in batch:
            item = parse_message(self.config, m.topic, m.payload, ref_ms=ref_ms,
                                 received_ms=m.received_ms, retained=m.retain)
            if isinstance(item, Inspection) and item.photos:
                item = with_stored_photos(self.photos_dir, item, self._zones[item.site],
                                          now_ms=m.received_ms, max_pixels=self._max_pixels)
            parsed.append(item)
            if isinstance(item, Rejection):
                dead.append(DeadLetterIn(m.topic, m.payload, item.reason.value, item.detail,
                                         m.received_ms))
                self.rejects.note(m.topic, item.reason.value, item.detail, tick)
                self.node_clocks.rejected(m.topic, item, m.received_ms)
            else:
                if isinstance(item, Reading):
                    self.node_clocks.accepted(item, m.received_ms)
                journal.append(journal_in(item, topic=m.topic, received_ms=m.received_ms))
                items.append((item, m.received_ms))
                sources.append(m)

        def conflict(index: int, detail: str) -> DeadLetterIn:
            # A seq reused with another body: the raw message is the dead letter.
            m, reason = sources[index], RejectReason.seq_conflict.value
            self.rejects.note(m.topic, reason, detail, tick)
            return DeadLetterIn(m.topic, m.payload, reason, detail, m.received_ms)

        seqs = store.journal.commit(journal, dead, conflict=conflict)
        # Only now, with the batch on disk, may the broker forget it, and the node
        # be told so.
        ingest.ack(list(batch))
        self.confirmer.committed(store, batch, parsed)
        # The engine takes the batch from memory; redeliveries and seq conflicts (no
        # seq) are not input.
        host.apply_committed([(seq, item, received) for seq, (item, received)
                              in zip(seqs, items, strict=True) if seq is not None])

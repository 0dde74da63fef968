"""The durable store: one SQLite file (``state_dir/stormwatch.db``) behind the daemon.

monitor/README.md, "Architecture" makes the journal the spool: an MQTT message is acknowledged only
after the transaction holding its reading has committed; everything else is
derived from the journal with cursors. One ``Store`` is one connection, used
from one thread, shared by four parts, each a class over one family of tables:

``store.journal``  ``journal``, ``dead_letters``, ``counters``  (``journal.py``,
                   ``deadletters.py``)
``store.events``   ``events``, ``logbook``                      (``events.py``)
``store.outbox``   ``outbox``, ``outbox_receipts``              (``outbox.py``)
``store.state``    ``snapshots``, ``checkpoints``, ``site_status``, ``meta``  (``state.py``)

and ``db.py`` has the connection and its one transaction helper, ``schema.py``
the migrations. Beside the database, ``health.py`` keeps the one thing the
daemon must be able to say when the database refuses writes (a full disk, the
broker connection): a fixed-size file, rewritten in place.
``users.py`` keeps the field app's people and their tokens in a file of their
own (``users.sqlite``), so the web app's sessions never take the daemon's lock.

Invariants:

* One transaction per call that writes. ``events.record`` writes the events,
  their outbox rows, their log book rows, the sites' status and the new
  ``applied_seq`` together, so after a crash either all of them exist or the
  engine replays the same journal rows and produces them again, and ``ON
  CONFLICT DO NOTHING`` on (id, revision) makes that second attempt a no-op.
* Durability. WAL with ``synchronous=FULL`` fsyncs the log on every commit, so
  a committed (hence acknowledged) row survives power loss, not only a crash
  of the process. Callers batch (many rows per commit) to pay that fsync once
  per batch instead of once per message.
* Concurrency. WAL lets readers (the CLI opens ``readonly=True``) read while
  the daemon writes; writers take the write lock up front (``BEGIN
  IMMEDIATE``), so a second writer waits ``busy_timeout`` instead of failing
  half-way through a transaction.

Portability: no ``STRICT`` tables and no ``RETURNING`` (SQLite 3.35+/3.37+), so
the older SQLite of a Raspberry Pi OS release still opens the file (UPSERT's
``ON CONFLICT`` needs 3.24, 2018).
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

from .db import DB_NAME, Db, StoreError, canonical, is_disk_full
from .deadletters import DeadLetter, DeadLetterIn
from .events import GENESIS_HASH, EventLog, LogbookRow, StoredEvent
from .journal import INGEST_KINDS, SEQ_CONFLICT, Journal, JournalIn, JournalRow
from .outbox import DueAlert, Outbox, OutboxRow, OutboxSummary, SentAlert
from .state import EngineSnapshot, SiteStatus, State

__all__ = ["DB_NAME", "GENESIS_HASH", "INGEST_KINDS", "SEQ_CONFLICT", "DeadLetter",
           "DeadLetterIn", "DueAlert", "EngineSnapshot", "EventLog", "Journal", "JournalIn",
           "JournalRow", "LogbookRow", "Outbox", "OutboxRow", "OutboxSummary", "SentAlert",
           "SiteStatus", "State", "Store", "StoreError", "StoredEvent", "canonical",
           "is_disk_full"]


class Store:
    """The SQLite store: one connection and the four parts that share it.

    ``readonly=True`` opens the file read-only (the CLI beside a running
    daemon); it never creates or migrates, and every writing method raises
    ``StoreError``.
    """

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.db = Db(path, readonly=readonly)
        self.path = self.db.path
        self.readonly = readonly
        self.journal = Journal(self.db)
        self.events = EventLog(self.db)
        self.outbox = Outbox(self.db)
        self.state = State(self.db)

    @classmethod
    def in_dir(cls, state_dir: str | Path, *, readonly: bool = False) -> Store:
        """The store of a daemon whose ``state_dir`` is given."""
        return cls(Path(state_dir) / DB_NAME, readonly=readonly)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

"""The ``dead_letters`` table: every rejected message, kept bounded (sensors/README.md, "MQTT
contract").

A reject is never dropped silently: it is counted by reason (``counters``,
``rejected.<reason>``, totals that survive everything below) and kept here with
its raw bytes, so an operator can see what a node actually sent. Kept, but
bounded, because a misbehaving or malicious node must not be able to fill the
disk with it (100 000 hostile messages of up to 1 MB grew a database
to 492 MB):

* only the first ``KEEP_BYTES`` (4 KiB, the contract's payload limit) of a
  payload and of a topic are kept; ``size`` remembers the payload's original
  length, so an oversize body still shows how big it was;
* the table holds at most ``dead_letters.max_mb`` (the journal's
  ``max_dead_bytes``): past it the oldest rows go first, down to
  ``PRUNE_TO`` of the cap so pruning happens in chunks rather than at every
  commit, and ``counters.dead_letters_pruned`` counts them
  (``status --json``: ``ingest.dead_letters_pruned``).

The size of a row is reckoned as its payload, topic and detail plus
``ROW_BYTES`` for the rest (id, reason, time, SQLite's record header); the
running total is ``counters.dead_letter_bytes``, kept in the same transaction
as the rows, so the cap never needs the table summed. It is an estimate of the
table's share of the file, not of the file's size: SQLite reuses the pages
that pruning frees, so the file stops growing rather than shrinking.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from .db import bump

#: Bytes of a payload (and of a topic) kept in a dead letter.
KEEP_BYTES: Final = 4096
#: Per-row bytes besides payload, topic and detail (as in the migration that set
#: up the running total; schema.py).
ROW_BYTES: Final = 64
#: Pruning brings the table down to this fraction of its cap.
PRUNE_TO: Final = 0.9
#: Counter names (not ``rejected.*``: those are the ingest rejects by reason).
BYTES_COUNTER: Final = "dead_letter_bytes"
PRUNED_COUNTER: Final = "dead_letters_pruned"


@dataclass(frozen=True, slots=True)
class DeadLetterIn:
    """One rejected message, as received (``payload`` whole: it is cut on insert)."""

    topic: str | None
    payload: bytes
    reason: str
    detail: str
    received_ms: int


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A dead letter as stored. ``cut_from``: the payload's original length when only
    its first ``KEEP_BYTES`` were kept; None when ``payload`` is the whole of it."""

    id: int
    topic: str | None
    payload: bytes
    reason: str
    detail: str
    received_ms: int
    cut_from: int | None = None

    @property
    def size(self) -> int:
        """The original payload's length in bytes."""
        return self.cut_from if self.cut_from is not None else len(self.payload)


def insert(conn: sqlite3.Connection, dead: Sequence[DeadLetterIn]) -> None:
    """Insert dead letters, cut to ``KEEP_BYTES``, and add to the running byte total
    (inside the caller's transaction)."""
    rows = []
    held = 0
    for d in dead:
        payload = bytes(d.payload[:KEEP_BYTES])
        topic = d.topic[:KEEP_BYTES] if d.topic is not None else None
        rows.append((topic, payload, d.reason, d.detail, d.received_ms, len(d.payload)))
        held += len(payload) + len(d.detail) + len(topic or "") + ROW_BYTES
    conn.executemany("INSERT INTO dead_letters (topic, payload, reason, detail, received_ms,"
                     " size) VALUES (?, ?, ?, ?, ?, ?)", rows)
    bump(conn, {BYTES_COUNTER: held})


def prune(conn: sqlite3.Connection, max_bytes: int) -> int:
    """Delete the oldest dead letters while the table holds more than ``max_bytes``
    (down to ``PRUNE_TO`` of it); count them; return how many (inside the caller's
    transaction)."""
    row = conn.execute("SELECT value FROM counters WHERE name = ?", (BYTES_COUNTER,)).fetchone()
    held = int(row[0]) if row else 0
    if held <= max_bytes:
        return 0
    excess = held - int(max_bytes * PRUNE_TO)
    freed = pruned = last = 0
    exhausted = False
    while freed < excess and not exhausted:
        # length() of a blob is read from the record header, not its pages.
        chunk = conn.execute(
            "SELECT id, length(payload) + length(detail) + ifnull(length(topic), 0)"
            " FROM dead_letters WHERE id > ? ORDER BY id LIMIT 500", (last,)).fetchall()
        exhausted = len(chunk) < 500
        for id_, size in chunk:
            last = int(id_)
            freed += int(size) + ROW_BYTES
            pruned += 1
            if freed >= excess:
                break
    conn.execute("DELETE FROM dead_letters WHERE id <= ?", (last,))
    # Every row gone: whatever the running total said (rows deleted by hand), it is 0 now.
    remaining = 0 if exhausted and freed < excess else held - freed
    bump(conn, {BYTES_COUNTER: remaining - held, PRUNED_COUNTER: pruned})
    return pruned


def newest(conn: sqlite3.Connection, limit: int) -> list[DeadLetter]:
    """The newest dead letters first."""
    return [DeadLetter(id_, topic, bytes(payload), reason, detail, received,
                       size if size is not None and size > len(payload) else None)
            for id_, topic, payload, reason, detail, received, size in conn.execute(
                "SELECT id, topic, payload, reason, detail, received_ms, size FROM dead_letters"
                " ORDER BY id DESC LIMIT ?", (limit,))]

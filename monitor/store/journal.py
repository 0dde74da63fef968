"""The journal: every accepted input in arrival order, the dead letters, the counters.

DESIGN § 2 makes the journal the spool: an MQTT message is acknowledged only
after the transaction holding its reading has committed (``commit``), and
everything else is derived from it with cursors. ``dead_letters`` keeps every
rejected message with its raw bytes and reason (§ 3), and ``counters`` the
running totals ``status --json`` shows (accepted, duplicates,
``rejected.<reason>``), which survive restarts.

Idempotence by content: a journal row is identified by its time and the hash
of the canonical JSON of its body (which names the site and sensor), so an
MQTT QoS 1 redelivery of a message already journaled changes nothing but the
``duplicates`` counter. Rows without a site or sensor (ticks, inspections)
store ``''`` there.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from .db import Db, bump, canonical

#: Journal kinds counted as ingest (``accepted``/``duplicates``); ticks are the
#: daemon's own clock, not input, and would inflate ``ingest.accepted``.
INGEST_KINDS: Final = ("reading", "inspection")
#: Bytes of SHA-256 kept as a journal row's identity: 128 bits make a collision
#: (which would drop a reading as a "duplicate") negligible for any realistic
#: journal, at half the index size of the full digest.
IDENT_BYTES: Final = 16

JournalKind = Literal["reading", "inspection", "tick"]


@dataclass(frozen=True, slots=True)
class JournalIn:
    """One accepted input, as ``Journal.commit`` takes it.

    ``body`` is ``Reading.to_json()``, ``Inspection.to_json()`` or ``{"now_ms": ...}``.
    """

    kind: JournalKind
    site: str | None
    sensor: str | None
    ts_ms: int
    body: dict[str, Any]
    topic: str | None = None
    received_ms: int | None = None


@dataclass(frozen=True, slots=True)
class JournalRow:
    """One journal row as replay reads it back."""

    seq: int
    kind: str
    body: dict[str, Any]
    received_ms: int | None


@dataclass(frozen=True, slots=True)
class DeadLetterIn:
    """One rejected message, kept with its raw bytes (DESIGN § 3)."""

    topic: str | None
    payload: bytes
    reason: str
    detail: str
    received_ms: int


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A dead letter as stored."""

    id: int
    topic: str | None
    payload: bytes
    reason: str
    detail: str
    received_ms: int


class Journal:
    """The ``journal``, ``dead_letters`` and ``counters`` tables."""

    def __init__(self, db: Db) -> None:
        self.db = db

    def commit(self, journal: Sequence[JournalIn],
               dead: Sequence[DeadLetterIn] = ()) -> list[int | None]:
        """Journal accepted inputs and dead-letter rejects in ONE transaction.

        Returns, per journal row, its new ``seq``, or ``None`` when the same
        (site, sensor, body) is already journaled (an MQTT redelivery) or
        appears earlier in this batch. When this returns, the rows are on disk.
        """
        if not journal and not dead:
            return []
        rows: list[tuple[Any, ...]] = []
        for item in journal:
            # ts_ms is in the identity index (see the schema); it must be the
            # body's own time, or a redelivery could look like a new reading.
            body_ts = item.body.get("ts_ms", item.body.get("now_ms", item.ts_ms))
            if body_ts != item.ts_ms:
                raise ValueError(f"journal row ts_ms {item.ts_ms} differs from its body's"
                                 f" {body_ts}")
            text = canonical(item.body)
            ident = hashlib.sha256(text.encode("utf-8")).digest()[:IDENT_BYTES]
            rows.append((item.kind, item.site or "", item.sensor or "", item.ts_ms, ident, text,
                         item.topic, item.received_ms))
        seqs: list[int | None] = []
        with self.db.write() as conn:
            if rows:
                seqs = self._insert(conn, rows)
            counts: Counter[str] = Counter()
            for item, seq in zip(journal, seqs, strict=True):
                if item.kind in INGEST_KINDS:
                    counts["accepted" if seq is not None else "duplicates"] += 1
            for letter in dead:
                counts[f"rejected.{letter.reason}"] += 1
            if dead:
                conn.executemany(
                    "INSERT INTO dead_letters (topic, payload, reason, detail, received_ms)"
                    " VALUES (?, ?, ?, ?, ?)",
                    [(d.topic, bytes(d.payload), d.reason, d.detail, d.received_ms)
                     for d in dead])
            bump(conn, counts)
        return seqs

    @staticmethod
    def _insert(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]
                        ) -> list[int | None]:
        """Insert rows numbered from the journal's next seq; a row that is already
        there (the identity index) is skipped and gets None."""
        # We hold the write lock, so the numbers are ours. sqlite_sequence, not
        # max(seq): AUTOINCREMENT never hands out a number twice, even one whose
        # row is gone, and numbering the rows ourselves keeps that promise.
        found = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'journal'").fetchone()
        top = conn.execute("SELECT ifnull(max(seq), 0) FROM journal").fetchone()[0]
        first = max(top, found[0] if found else 0) + 1
        before = conn.total_changes
        # ON CONFLICT DO NOTHING, not INSERT OR IGNORE: OR IGNORE would also
        # silently skip a row failing a CHECK or NOT NULL constraint and report
        # it as a duplicate; DO NOTHING skips only uniqueness conflicts.
        conn.executemany(
            "INSERT INTO journal (seq, kind, site, sensor, ts_ms, ident, body, topic, received_ms)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [(first + i, *row) for i, row in enumerate(rows)])
        if conn.total_changes - before == len(rows):
            return list(range(first, first + len(rows)))
        # Some were duplicates (redeliveries): which numbers were taken? A range
        # scan of the primary key, only in this rare case.
        taken = {seq for (seq,) in conn.execute(
            "SELECT seq FROM journal WHERE seq >= ? AND seq < ?", (first, first + len(rows)))}
        return [first + i if first + i in taken else None for i in range(len(rows))]

    def after(self, seq: int, limit: int = 10000) -> list[JournalRow]:
        """Journal rows with ``seq`` greater than the given one, ascending (the replay path)."""
        return [JournalRow(s, kind, json.loads(body), received)
                for s, kind, body, received in self.db.conn.execute(
                    "SELECT seq, kind, body, received_ms FROM journal WHERE seq > ?"
                    " ORDER BY seq LIMIT ?", (seq, limit))]

    def count(self, kinds: Sequence[str] = INGEST_KINDS) -> int:
        """Journal rows of these kinds. The default (readings and inspections) is the
        ``accepted`` counter, kept with every commit: counting a large journal
        takes seconds."""
        if tuple(kinds) == INGEST_KINDS:
            return self.counter("accepted")
        if not kinds:
            return 0
        marks = ", ".join("?" * len(kinds))
        return int(self.db.conn.execute(
            f"SELECT count(*) FROM journal WHERE kind IN ({marks})", tuple(kinds)).fetchone()[0])

    def readings(self, site: str, sensors: Sequence[str], since_ms: int,
                 upto_seq: int | None = None) -> list[dict[str, Any]]:
        """The bodies of the sensors' messages (readings and status) at or after
        ``since_ms``, up to journal ``upto_seq``, in journal order. The identity
        index gives the time range; every row in it is looked at, so this is
        for the rare late reading, not for reading a sensor's history."""
        marks = ", ".join("?" * len(sensors))
        # INDEXED BY: without statistics the planner would scan the whole table.
        sql = (f"SELECT body FROM journal INDEXED BY journal_key WHERE ts_ms >= ? AND site = ?"
               f" AND sensor IN ({marks}) AND kind = 'reading'")
        params: list[Any] = [since_ms, site, *sensors]
        if upto_seq is not None:
            sql += " AND seq <= ?"
            params.append(upto_seq)
        return [json.loads(body) for (body,) in self.db.conn.execute(sql + " ORDER BY seq",
                                                                     params)]

    def max_seq(self) -> int:
        """The newest journal ``seq``; 0 when the journal is empty."""
        return int(self.db.conn.execute("SELECT ifnull(max(seq), 0) FROM journal").fetchone()[0])

    def backlog(self, after_seq: int) -> tuple[int, int | None]:
        """(journal rows after ``after_seq``, arrival ms of the first of them or None).

        What an exporter at ``after_seq`` is behind by. The first row's
        ``received_ms`` (its ``ts_ms`` when it has none) dates the backlog.
        Reads one snapshot, so the count and the date agree.
        """
        with self.db.read() as conn:
            (count,) = conn.execute("SELECT count(*) FROM journal WHERE seq > ?",
                                    (after_seq,)).fetchone()
            first = conn.execute(
                "SELECT ifnull(received_ms, ts_ms) FROM journal WHERE seq > ? ORDER BY seq"
                " LIMIT 1", (after_seq,)).fetchone()
        return int(count), (None if first is None else int(first[0]))

    def reject_counts(self) -> dict[str, int]:
        """Dead letters by reason (what the table holds; ``counters`` keeps the totals)."""
        return {reason: n for reason, n in self.db.conn.execute(
            "SELECT reason, count(*) FROM dead_letters GROUP BY reason ORDER BY reason")}

    def dead_letters(self, limit: int = 100) -> list[DeadLetter]:
        """The newest dead letters first, each with its raw ``payload`` bytes."""
        return [DeadLetter(id_, topic, bytes(payload), reason, detail, received)
                for id_, topic, payload, reason, detail, received in self.db.conn.execute(
                    "SELECT id, topic, payload, reason, detail, received_ms FROM dead_letters"
                    " ORDER BY id DESC LIMIT ?", (limit,))]

    def counter(self, name: str) -> int:
        row = self.db.conn.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()
        return 0 if row is None else int(row[0])

    def counters(self) -> dict[str, int]:
        return {name: int(value) for name, value in self.db.conn.execute(
            "SELECT name, value FROM counters ORDER BY name")}

"""The journal: every accepted input in arrival order, the dead letters, the counters.

monitor/README.md, "Architecture" makes the journal the spool: an MQTT message is acknowledged only
after the transaction holding its reading has committed (``commit``), and
everything else is derived from it with cursors. ``dead_letters`` keeps every
rejected message with its raw bytes and reason (sensors/README.md, "MQTT contract"), and
``counters`` the
running totals ``status --json`` shows (accepted, duplicates,
``rejected.<reason>``), which survive restarts.

Idempotence by content: a journal row is identified by its time and the hash
of the canonical JSON of its body (which names the site and sensor), so an
MQTT QoS 1 redelivery of a message already journaled changes nothing but the
``duplicates`` counter. Rows without a site or sensor (ticks, inspections)
store ``''`` there.

Identity by ``seq``: for one sensor, ``seq`` identifies a reading (sensors/README.md, "MQTT
contract").
A reading that carries one is also looked up by (``seq``, site, sensor) in the
same transaction, one query per batch (the ``journal_msg_seq`` index), and
judged by the one ingest rule that ``replay`` applies too
(``admission.SeqBook``): the same body again is the duplicate above, another
body under a ``seq`` already journaled (or earlier in the batch) is a dead
letter ``seq_conflict``, never a second reading. Status messages are not
readings: their ``seq``, if any, is not looked at. The identities themselves
(``admission.identity``, ``admission.msg_seq``) are the rule's too.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import pyarrow.parquet as pq

from ..contract.admission import SeqBook, identity, msg_seq
from ..contract.rejects import RejectReason
from . import deadletters
from .archive import ArchiveError, ArchiveFile, ArchiveIndex, FileReader
from .db import Db, bump, canonical
from .deadletters import DeadLetter, DeadLetterIn
from .journalrows import ArchivedReadings, RowsAsOne, merge_by_seq
from .journalrows import JournalRow as JournalRow  # the row type, here since before the archive

#: Journal kinds counted as ingest (``accepted``/``duplicates``); ticks are the
#: daemon's own clock, not input, and would inflate ``ingest.accepted``.
INGEST_KINDS: Final = ("reading", "inspection")

#: The dead-letter reason of a reading whose ``seq`` was journaled with another body
#: (the contract's code: the store names it, the rules do not see it).
SEQ_CONFLICT: Final = RejectReason.seq_conflict.value
#: Rows per lookup query: three variables each, within the 999 of older SQLite.
SEQ_LOOKUP_ROWS: Final = 300

JournalKind = Literal["reading", "inspection", "tick"]
#: Makes the dead letter of a journal row refused as a ``seq_conflict``, from its
#: index in the batch and the detail line (the daemon passes the raw message).
ConflictLetter = Callable[[int, str], DeadLetterIn]


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


class Journal:
    """The ``journal``, ``dead_letters`` and ``counters`` tables.

    ``max_dead_bytes``: the cap of the dead-letter table (``dead_letters.max_mb``;
    the daemon sets it); None keeps every dead letter.
    """

    def __init__(self, db: Db) -> None:
        self.db = db
        self.max_dead_bytes: int | None = None
        #: The archive (``archive.py``): rows moved out of the table, read as part of it.
        self.archive = ArchiveIndex(db)
        #: Archive files whose SHA-256 this connection has checked, the merge an
        #: ``after`` left off (continued by the next ``after`` from where it stopped),
        #: and the archived readings of recent re-folds.
        self._checked: set[str] = set()
        self._merge: RowsAsOne | None = None
        self._archived: ArchivedReadings | None = None

    def commit(self, journal: Sequence[JournalIn], dead: Sequence[DeadLetterIn] = (), *,
               conflict: ConflictLetter | None = None) -> list[int | None]:
        """Journal accepted inputs and dead-letter rejects in ONE transaction.

        Returns, per journal row, its new ``seq``, or ``None`` when it was not
        journaled: the same (site, sensor, body) is already journaled (an MQTT
        redelivery) or appears earlier in this batch, or its ``seq`` was
        journaled with another body (a ``seq_conflict``: dead-lettered here, in
        this transaction, as ``conflict(index, detail)`` makes it, or from the
        row itself without ``conflict``). When this returns, the rows are on disk.
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
            # An inspection's ``entered_ms`` is when it reached the daemon: an MQTT
            # redelivery of the same inspection arrives later, and is still the same.
            rows.append((item.kind, item.site or "", item.sensor or "", item.ts_ms,
                         identity(item.body, text), text, item.topic, item.received_ms,
                         msg_seq(item.kind, item.body)))
        seqs: list[int | None] = []
        with self.db.write() as conn:
            letters = list(dead)
            refused: dict[int, str] = {}
            if rows:
                refused = _seq_conflicts(conn, rows)
                for index, detail in refused.items():
                    letters.append(conflict(index, detail) if conflict is not None
                                   else _own_letter(journal[index], detail))
                seqs = self._insert(conn, [r for i, r in enumerate(rows) if i not in refused])
                if refused:
                    taken = iter(seqs)
                    seqs = [None if i in refused else next(taken) for i in range(len(rows))]
            counts: Counter[str] = Counter()
            for index, (item, seq) in enumerate(zip(journal, seqs, strict=True)):
                if item.kind in INGEST_KINDS and index not in refused:
                    counts["accepted" if seq is not None else "duplicates"] += 1
            for letter in letters:
                counts[f"rejected.{letter.reason}"] += 1
            if letters:
                deadletters.insert(conn, letters)
                if self.max_dead_bytes is not None:
                    deadletters.prune(conn, self.max_dead_bytes)
            bump(conn, counts)
        return seqs

    @staticmethod
    def _insert(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]
                        ) -> list[int | None]:
        """Insert rows numbered from the journal's next seq; a row that is already
        there (the identity index) is skipped and gets None."""
        if not rows:
            return []
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
            "INSERT INTO journal (seq, kind, site, sensor, ts_ms, ident, body, topic, received_ms,"
            " msg_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [(first + i, *row) for i, row in enumerate(rows)])
        if conn.total_changes - before == len(rows):
            return list(range(first, first + len(rows)))
        # Some were duplicates (redeliveries): which numbers were taken? A range
        # scan of the primary key, only in this rare case.
        taken = {seq for (seq,) in conn.execute(
            "SELECT seq FROM journal WHERE seq >= ? AND seq < ?", (first, first + len(rows)))}
        return [first + i if first + i in taken else None for i in range(len(rows))]

    def after(self, seq: int, limit: int = 10000, site: str | None = None
              ) -> list[JournalRow]:
        """Journal rows with ``seq`` greater than the given one, ascending (the replay path),
        archived ones included (``journalrows.RowsAsOne``): the archive and the table
        are one journal to every reader. ``site``: that site's rows only from the table
        (the others' bodies not parsed); while archived rows are merged in, every
        site's, so a caller still filters."""
        merge = self._merge
        if merge is None or merge.returned != seq:
            merge = None
            if seq < self.archive.top_seq():
                merge = self._merge = RowsAsOne(self.archive, self.db.conn, seq, self._checked)
        if merge is not None:
            rows = merge.take(limit)
            if merge.archive_done:
                self._merge = None  # the rest is the table's alone: the plain query
            return rows  # every site's, while the archive is merged in
        self._merge = None
        where, params = ("seq > ?", [seq]) if site is None else ("seq > ? AND site = ?",
                                                                 [seq, site])
        return [JournalRow(s, kind, json.loads(body), received)
                for s, kind, body, received in self.db.conn.execute(
                    f"SELECT seq, kind, body, received_ms FROM journal WHERE {where}"
                    " ORDER BY seq LIMIT ?", (*params, limit))]

    def inspection_rows(self, *, archived: bool, checked: set[str] | None = None
                        ) -> tuple[list[JournalRow], list[str]]:
        """Every inspection row (site closures included), in seq order: the table's, and
        with ``archived`` the archive's too; and the archive files that could not be
        read (altered or missing: ``logbook verify`` says which). The identity index
        leads with the kind, so the table's part reads only these rows. The table is
        read before the archive's list of files: a file is recorded before its rows
        leave the table, so a row moved meanwhile is met twice (and taken once), never
        missed. ``checked``: the archive files whose SHA-256 the caller has checked
        already (this journal's own set by default)."""
        rows = [JournalRow(s, kind, json.loads(body), received)
                for s, kind, body, received in self.db.conn.execute(
                    "SELECT seq, kind, body, received_ms FROM journal WHERE kind = 'inspection'"
                    " ORDER BY seq")]
        unread: list[str] = []
        if archived:
            seen = {r.seq for r in rows}
            for f in self.archive.files():
                try:
                    found = archived_inspections(self.archive.root, f,
                                                 self._checked if checked is None else checked)
                except (ArchiveError, OSError, ValueError) as exc:
                    unread.append(f"{f.name}: {exc}")
                    continue
                rows += [r for r in found if r.seq not in seen]
            rows.sort(key=lambda r: r.seq)
        return rows, unread

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
        sql = (f"SELECT seq, body FROM journal INDEXED BY journal_key WHERE ts_ms >= ?"
               f" AND site = ? AND sensor IN ({marks}) AND kind = 'reading'")
        params: list[Any] = [since_ms, site, *sensors]
        if upto_seq is not None:
            sql += " AND seq <= ?"
            params.append(upto_seq)
        conn = self.db.conn
        if not self.archive.covering(site, since_ms, upto_seq):
            return [json.loads(body) for _, body in conn.execute(sql + " ORDER BY seq", params)]
        # Archived rows too (a restore from scratch re-folding a late reading): the
        # files and the table from one snapshot, a seq in both taken once.
        if self._archived is None:
            self._archived = ArchivedReadings(self.archive, self._checked)
        with self.db.read() as snap:
            archived = self._archived.readings(site, sensors, since_ms, upto_seq, snap)
            table = [(int(s), json.loads(body)) for s, body in snap.execute(
                sql + " ORDER BY seq", params)]
        return merge_by_seq(archived, table)

    def seq_run(self, site: str, sensor: str, first: int, limit: int = 1_000_000) -> int:
        """The highest n such that the sensor's readings ``first`` to n (their ``seq``)
        are all journaled, ``first - 1`` when ``first`` is not; at most ``limit``
        past ``first``. One point lookup in ``journal_msg_seq`` per reading: the
        index leads with the seq, so a range scan would walk every sensor's
        readings of that range (for a restart's confirmations, not per batch)."""
        sql = ("SELECT 1 FROM journal WHERE msg_seq = ? AND site = ? AND sensor = ?"
               " AND msg_seq IS NOT NULL")
        conn, n = self.db.conn, first
        while n - first < limit and conn.execute(sql, (n, site, sensor)).fetchone():
            n += 1
        return n - 1

    def max_seq(self) -> int:
        """The newest journal ``seq``, archived rows included; 0 when the journal is empty.

        The archive holds only rows older than the table's newest, except when every
        row went (a site quiet for longer than ``archive.after_days``): then the
        archive's top is still the journal's newest row."""
        top = int(self.db.conn.execute("SELECT ifnull(max(seq), 0) FROM journal").fetchone()[0])
        return max(top, self.archive.top_seq())

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
        """The newest dead letters first, each with its raw ``payload`` bytes (the first
        ``deadletters.KEEP_BYTES`` of them)."""
        return deadletters.newest(self.db.conn, limit)

    def prune_dead_letters(self, max_bytes: int) -> int:
        """Bring the dead-letter table under ``max_bytes`` now, oldest first; how many
        rows went (``commit`` does this by itself with ``max_dead_bytes`` set)."""
        with self.db.write() as conn:
            return deadletters.prune(conn, max_bytes)

    def counter(self, name: str) -> int:
        row = self.db.conn.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()
        return 0 if row is None else int(row[0])

    def counters(self) -> dict[str, int]:
        return {name: int(value) for name, value in self.db.conn.execute(
            "SELECT name, value FROM counters ORDER BY name")}


def archived_inspections(root: Path, f: ArchiveFile, checked: set[str]) -> list[JournalRow]:
    """The inspection rows of one archive file (``Journal.inspection_rows``), its hash
    checked first (``ArchiveError``); the filter goes into Parquet, which skips every
    row group whose ``kind`` statistics hold no inspection (most: readings)."""
    FileReader(root, f, checked)
    table = pq.read_table(root / f.name, columns=["seq", "kind", "body", "received_ms"],
                          filters=[("kind", "==", "inspection")])
    c = {name: table.column(name).to_pylist() for name in table.column_names}
    return [JournalRow(int(seq), kind, json.loads(body), received)
            for seq, kind, body, received in zip(c["seq"], c["kind"], c["body"],
                                                 c["received_ms"], strict=True)]


# --------------------------------------------------------------------------- seq identity


def seq_lookup_sql(keys: int) -> str:
    """The journal rows with any of ``keys`` (seq, site, sensor) triples: (seq, site,
    sensor, ident, journal seq). CROSS JOIN: the batch's keys drive, each a point
    lookup in ``journal_msg_seq``, whatever the planner guesses without statistics."""
    values = ", ".join("(?, ?, ?)" for _ in range(keys))
    return (f"WITH batch (s, site, sensor) AS (VALUES {values})"
            " SELECT j.msg_seq, j.site, j.sensor, j.ident, j.seq FROM batch CROSS JOIN"
            " journal AS j ON j.msg_seq = batch.s AND j.site = batch.site"
            " AND j.sensor = batch.sensor WHERE j.msg_seq IS NOT NULL")


def _seq_conflicts(conn: sqlite3.Connection, rows: Sequence[tuple[Any, ...]]
                   ) -> dict[int, str]:
    """The rows (by index) whose (seq, site, sensor) is journaled, or earlier in this
    batch, with another body: index -> detail line. One query per
    ``SEQ_LOOKUP_ROWS`` rows that carry a seq, none for a batch without; the
    verdicts are ``admission.SeqBook``'s."""
    keyed = [(i, (row[8], row[1], row[2]), row[4]) for i, row in enumerate(rows)
             if row[8] is not None]
    if not keyed:
        return {}
    book = SeqBook(earlier="earlier in this batch")
    unique = list(dict.fromkeys(key for _, key, _ in keyed))
    for start in range(0, len(unique), SEQ_LOOKUP_ROWS):
        chunk = unique[start:start + SEQ_LOOKUP_ROWS]
        for seq, site, sensor, ident, at in conn.execute(seq_lookup_sql(len(chunk)),
                                                          [v for key in chunk for v in key]):
            book.know((int(seq), str(site), str(sensor)), bytes(ident), f"journal row {at}")
    refused: dict[int, str] = {}
    for index, key, ident in keyed:
        detail = book.judge(key, ident)
        if detail is not None:
            refused[index] = detail
    return refused


def _own_letter(item: JournalIn, detail: str) -> DeadLetterIn:
    """A refused row's dead letter when the caller has no raw message: its body."""
    return DeadLetterIn(item.topic, canonical(item.body).encode("utf-8"), SEQ_CONFLICT, detail,
                        item.received_ms if item.received_ms is not None else item.ts_ms)

"""The record: every revision of every event, and the site log book.

``events`` keeps every revision of every domain event, unique on (id,
revision); ``logbook`` is the site log book of § 134-9A(2), an append-only
hash chain. ``record`` writes, in ONE transaction, the events, their outbox
rows (``outbox.add_alerts``), their log book rows, the sites' status as it
stands after them (``state.put_status``) and the engine's journal cursor
(``applied_seq``): after a crash either all of them exist or the engine
replays the same journal rows and produces them again, and ``ON CONFLICT DO
NOTHING`` on (id, revision) makes that second attempt a no-op.

The log book chain: row *n* stores the canonical JSON of its content (seq,
recorded_ms, site, type, event id, revision, event body), ``prev_hash`` = the
hash of row *n-1* (64 zeros for row 1) and ``hash`` = SHA-256(prev_hash +
canonical). The head (last seq and hash) is also kept in ``meta`` and new rows
are numbered from it, so deleting rows at the end leaves a visible gap too.
Triggers refuse UPDATE and DELETE. None of this stops someone who can rewrite
the whole file and recompute every hash; it makes every partial edit visible
to ``logbook_verify``. Anchoring the head hash outside the machine (printed in
each report) is what closes that last gap.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..contract.events import Event
from ..contract.times import iso
from .db import Db, canonical, get_meta, load_event, put_meta
from .outbox import add_alerts
from .state import put_status

#: The ``prev_hash`` of the first log book row.
GENESIS_HASH: Final = "0" * 64
#: Log book row types that record something other than an event of the vocabulary: an archive
#: file of journal rows and its SHA-256 (``archive.py``).
ARCHIVED: Final = "journal_archived"
RECORD_TYPES: Final = frozenset({ARCHIVED})
LOGBOOK_TRIGGERS: Final = frozenset({"logbook_no_update", "logbook_no_delete"})


@dataclass(frozen=True, slots=True)
class LogbookRow:
    """One row of the log book; ``body`` is the event as recorded."""

    seq: int
    recorded_at: str
    site: str
    type: str
    event_id: str
    revision: int
    body: dict[str, Any]
    prev_hash: str
    hash: str


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event revision with its place in the ``events`` table (readers with a cursor)."""

    seq: int
    event: Event


#: The alert route tags of an event (``notify.routing.Router``): its outbox rows.
AlertRoutes = Callable[[Event], list[str]]


class EventLog:
    """The ``events`` and ``logbook`` tables."""

    def __init__(self, db: Db) -> None:
        self.db = db

    def record(self, events: Sequence[Event], applied_seq: int, *, recorded_ms: int,
               routes: AlertRoutes | None = None,
               statuses: Mapping[str, str] | None = None,
               defer: Collection[str] = frozenset()) -> int:
        """Store events with their outbox and log book rows and the engine cursor,
        and the sites' status as it stands after them (``statuses``, JSON text by site).

        ONE transaction. An event whose (id, revision) is already stored is
        skipped entirely (no second outbox or log book row), so re-recording
        after a crash between the engine and this commit is harmless. Events of
        the sites in ``defer`` are stored without log book and outbox rows,
        which ``settle_deferred`` writes later for the revision that settled.
        Returns the number of newly stored events.
        """
        inserted = 0
        with self.db.write() as conn:
            if statuses:
                put_status(conn, statuses, applied_seq, recorded_ms)
            chain = _Chain.head(conn)
            for event in events:
                data = event.to_json()  # the one serialisation of the event
                revision, site, kind, eid = event.revision, event.site, event.type, event.id
                body = canonical(data)
                cur = conn.execute(
                    "INSERT INTO events (id, revision, type, site, at, at_ms, retracted, body,"
                    " recorded_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (eid, revision, kind, site, data["at"], event.at_ms, int(event.retracted),
                     body, recorded_ms))
                if cur.rowcount == 0 or cur.lastrowid is None:
                    continue
                inserted += 1
                if site in defer:
                    conn.execute("INSERT INTO deferred (event_seq, site) VALUES (?, ?)",
                                 (cur.lastrowid, site))
                    continue
                if routes is not None:
                    add_alerts(conn, cur.lastrowid, f"{eid}:{revision}", routes(event),
                               recorded_ms)
                chain.append(conn, recorded_ms, event, data, body)
            chain.save(conn)
            put_meta(conn, "applied_seq", applied_seq)
        return inserted

    def settle_deferred(self, *, recorded_ms: int, routes: AlertRoutes | None = None,
                        keep: Collection[str] = frozenset()) -> int:
        """Write the log book and outbox rows of the deferred events of every site but
        those in ``keep`` (still applying a backlog), for the latest revision of each
        event only; return how many were logged.

        A revision that is a retraction is logged only when an earlier revision of
        the event was (the reader of the log book knew of it); a fact no revision
        of which reached a person is routed as news, like a revision 0.
        """
        logged = 0
        with self.db.write() as conn:
            rows = conn.execute(
                "SELECT d.event_seq, d.site, e.id FROM deferred AS d"
                " JOIN events AS e ON e.seq = d.event_seq ORDER BY d.event_seq").fetchall()
            rows = [r for r in rows if r[1] not in keep]
            if not rows:
                return 0
            chain = _Chain.head(conn)
            for eid in dict.fromkeys(r[2] for r in rows):
                seq, body = conn.execute(
                    "SELECT seq, body FROM events WHERE id = ? ORDER BY revision DESC LIMIT 1",
                    (eid,)).fetchone()
                latest = load_event(body)
                announced = conn.execute("SELECT 1 FROM logbook WHERE event_id = ? LIMIT 1",
                                         (eid,)).fetchone() is not None
                if latest.retracted and not announced:
                    continue
                if routes is not None:
                    as_news = latest if announced else Event(latest.fact, 0, latest.retracted)
                    add_alerts(conn, seq, f"{eid}:{latest.revision}", routes(as_news),
                               recorded_ms)
                chain.append(conn, recorded_ms, latest, latest.to_json(), body)
                logged += 1
            conn.executemany("DELETE FROM deferred WHERE event_seq = ?",
                             [(r[0],) for r in rows])
            chain.save(conn)
        return logged

    def deferred_count(self) -> int:
        """Events waiting for their log book rows (a backlog is being applied)."""
        return int(self.db.conn.execute("SELECT count(*) FROM deferred").fetchone()[0])

    def applied_seq(self) -> int:
        """The journal ``seq`` the recorded events reflect; 0 when unset."""
        return int(get_meta(self.db.conn, "applied_seq", 0))

    def all(self, site: str | None = None,
            types: Sequence[str] | None = None) -> list[Event]:
        """Every stored revision of every event, in the order they were stored."""
        sql = "SELECT body FROM events WHERE 1"
        params: list[Any] = []
        if site is not None:
            sql += " AND site = ?"
            params.append(site)
        if types is not None:
            sql += f" AND type IN ({', '.join('?' * len(types))})"
            params.extend(types)
        return [load_event(body) for (body,) in self.db.conn.execute(sql + " ORDER BY seq", params)]

    def latest(self, event_id: str) -> Event | None:
        """The latest stored revision of one event id (retracted or not), or None."""
        row = self.db.conn.execute("SELECT body FROM events WHERE id = ?"
                                 " ORDER BY revision DESC LIMIT 1", (event_id,)).fetchone()
        return None if row is None else load_event(row[0])

    def current(self, site: str | None = None,
                types: Sequence[str] | None = None) -> list[Event]:
        """The authoritative set (monitor/README.md, "Architecture"): the latest revision of each
        id, without the retracted ones, ordered by (event time, id); of one site, and of
        some ``types`` only (the others' bodies are not parsed), when given.

        Two plans. Every site: rank the whole table once (its revisions grouped by
        id, from the UNIQUE (id, revision) index). One site (a page of one site, at
        every request): the site's rows only, each asked whether it is its id's
        latest revision through that index; ranking the whole table for one site
        cost the form page most of its time at 100 sites (bench/web.py)."""
        params: list[Any] = []
        if site is None:
            sql = ("SELECT e.body FROM events AS e"
                   " JOIN (SELECT id, max(revision) AS revision FROM events GROUP BY id)"
                   " AS latest ON latest.id = e.id AND latest.revision = e.revision"
                   " WHERE e.retracted = 0")
        else:
            sql = ("SELECT e.body FROM events AS e WHERE e.site = ? AND e.retracted = 0"
                   " AND e.revision = (SELECT max(r.revision) FROM events AS r"
                   " WHERE r.id = e.id)")
            params.append(site)
        if types is not None:
            sql += f" AND e.type IN ({', '.join('?' * len(types))})"
            params.extend(types)
        return [load_event(body) for (body,) in self.db.conn.execute(
            sql + " ORDER BY e.at_ms, e.id", params)]

    def after(self, seq: int, limit: int = 1000) -> list[StoredEvent]:
        """Stored event revisions with ``seq`` above the given one, ascending, as (seq, event).

        The events table in the order it was written: a reader with a cursor
        (the InfluxDB exporter) sees every revision once, later revisions after
        earlier ones.
        """
        return [StoredEvent(int(s), load_event(body)) for s, body in self.db.conn.execute(
            "SELECT seq, body FROM events WHERE seq > ? ORDER BY seq LIMIT ?", (seq, limit))]

    def max_seq(self) -> int:
        """The newest events ``seq``; 0 when no event is stored."""
        return int(self.db.conn.execute("SELECT ifnull(max(seq), 0) FROM events").fetchone()[0])

    def count_after(self, seq: int) -> int:
        return int(self.db.conn.execute("SELECT count(*) FROM events WHERE seq > ?",
                                      (seq,)).fetchone()[0])

    def revisions(self, event_id: str) -> list[Event]:
        """Every stored revision of one event id, oldest first (served by UNIQUE (id, revision))."""
        return [load_event(body) for (body,) in self.db.conn.execute(
            "SELECT body FROM events WHERE id = ? ORDER BY revision", (event_id,))]

    def logbook(self, site: str | None = None,
                types: Sequence[str] | None = None, after_seq: int = 0) -> list[LogbookRow]:
        """Log book rows in order (§ 134-9A(2)); ``body`` is the event as recorded.
        ``types``: only rows of these types (the others' bodies are not parsed);
        ``after_seq``: only rows after that one (the primary key: read from there)."""
        sql = ("SELECT seq, recorded_ms, site, type, event_id, revision, body, prev_hash, hash"
               " FROM logbook WHERE seq > ?")
        params: list[Any] = [after_seq]
        if site is not None:
            sql += " AND site = ?"
            params.append(site)
        if types is not None:
            sql += f" AND type IN ({', '.join('?' * len(types))})"
            params.extend(types)
        return [LogbookRow(seq, iso(recorded), row_site, type_, event_id, revision,
                           json.loads(body), prev, row_hash)
                for seq, recorded, row_site, type_, event_id, revision, body, prev, row_hash
                in self.db.conn.execute(sql + " ORDER BY seq", params)]

    def logbook_newest(self) -> list[LogbookRow]:
        """The newest log book row as the table has it ([] when empty), not as ``meta``
        records the head: what a reader of the rows shows as the head."""
        top = int(self.db.conn.execute("SELECT ifnull(max(seq), 0) FROM logbook").fetchone()[0])
        return self.logbook(after_seq=max(0, top - 1))

    def logbook_head(self) -> tuple[int, str]:
        """(seq, hash) of the newest row as the store recorded it; (0, zeros) when empty.

        Worth printing in reports: a copy of the head held elsewhere is what
        makes even a full rewrite of the chain detectable.
        """
        with self.db.read() as conn:
            return (int(get_meta(conn, "logbook_head_seq", 0)),
                    str(get_meta(conn, "logbook_head_hash", GENESIS_HASH)))

    def logbook_verify(self) -> list[str]:
        """Check the log book chain; one readable line per problem, [] when intact.

        Every row is rebuilt from its columns (not trusted from its stored
        canonical text) and rehashed. Reported: edited rows (naming the fields
        that differ from what was sealed), altered hashes, broken or reordered
        links, deleted rows (gaps in seq, or rows missing before the recorded
        head), rows appended behind the store's back, and missing triggers.
        """
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT seq, recorded_ms, site, type, event_id, revision, body, canonical,"
                " prev_hash, hash FROM logbook ORDER BY seq").fetchall()
            head_seq = int(get_meta(conn, "logbook_head_seq", 0))
            head_hash = str(get_meta(conn, "logbook_head_hash", GENESIS_HASH))
            triggers = {name for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'logbook'")}
        problems: list[str] = []
        missing = sorted(LOGBOOK_TRIGGERS - triggers)
        if missing:
            problems.append(f"logbook: append-only trigger(s) {', '.join(missing)} missing"
                            " (dropped?)")
        return problems + _chain_problems(rows, head_seq, head_hash)


#: A log book row as ``logbook_verify`` reads it: seq, recorded_ms, site, type,
#: event_id, revision, body, canonical, prev_hash, hash.
_Row = tuple[Any, ...]


def _chain_problems(rows: list[_Row], head_seq: int, head_hash: str) -> list[str]:
    """Each row's link and content checked against what it should be, then the end of
    the chain against the head the store recorded."""
    expected, rebuilt = _rebuild(rows)
    seq_of_hash: dict[str, int] = {}
    for row, want in zip(rows, expected, strict=True):
        seq_of_hash.setdefault(row[9], row[0])
        if want is not None:
            seq_of_hash.setdefault(want, row[0])
    problems: list[str] = []
    prev_seq = 0
    prev_hashes: tuple[str | None, ...] = (GENESIS_HASH,)
    for i, row in enumerate(rows):
        seq, stored_hash = row[0], row[9]
        # Links: a gap is reported as such; the link across it cannot be checked.
        if seq > prev_seq + 1:
            problems.append(f"{_rows_label(prev_seq + 1, seq - 1)}: missing (deleted)")
        elif row[8] not in prev_hashes:
            problems.append(_broken_link(row, prev_seq, seq_of_hash))
        # Content: rebuilt from the columns, compared with what was sealed. A hash
        # that the next link (or the head) still names is the one the content deserves.
        successor = rows[i + 1][8] if i + 1 < len(rows) else (
            head_hash if head_seq == seq else None)
        edited = _content_problem(row, rebuilt[i], expected[i], successor)
        if edited:
            problems.append(edited)
        prev_seq = seq
        prev_hashes = (stored_hash, expected[i])
    last_seq = rows[-1][0] if rows else 0
    if head_seq > last_seq:
        problems.append(f"{_rows_label(last_seq + 1, head_seq)}: missing at the end"
                        " (deleted)")
    elif head_seq < last_seq:
        problems.append(f"{_rows_label(head_seq + 1, last_seq)}: not written by stormwatch"
                        f" (its recorded head is row {head_seq})")
    elif rows and head_hash not in prev_hashes:
        problems.append(f"logbook row {last_seq}: hash differs from the recorded head")
    return problems


def _rebuild(rows: list[_Row]) -> tuple[list[str | None], list[dict[str, Any] | None]]:
    """What each row's hash should be, and its content, from its own columns (None where
    the body is not valid JSON)."""
    expected: list[str | None] = []
    rebuilt: list[dict[str, Any] | None] = []
    for seq, recorded, site, type_, event_id, revision, body, _, prev, _ in rows:
        try:
            content = _logbook_content(seq, recorded, site, type_, event_id, revision,
                                       json.loads(body))
            expected.append(_chain_hash(prev, canonical(content)))
            rebuilt.append(content)
        except (TypeError, ValueError):
            expected.append(None)
            rebuilt.append(None)
    return expected, rebuilt


def _broken_link(row: _Row, prev_seq: int, seq_of_hash: dict[str, int]) -> str:
    """Why a row's ``prev_hash`` names no hash of the row before it."""
    seq, label = row[0], f"logbook row {row[0]}"
    other = seq_of_hash.get(row[8])
    if other is not None and other != seq:
        return f"{label}: links to row {other} instead of row {prev_seq} (chain reordered)"
    if prev_seq == 0:
        return f"{label}: prev_hash is not the genesis value (chain broken)"
    return (f"{label}: prev_hash does not match row {prev_seq}'s hash"
            f" (chain broken, or row {prev_seq} rewritten)")


def _content_problem(row: _Row, fields: dict[str, Any] | None, want: str | None,
                     successor: str | None) -> str | None:
    """How a row's content differs from what was sealed, or None."""
    label, stored_canonical, stored_hash = f"logbook row {row[0]}", row[7], row[9]
    if fields is None or want is None:
        return f"{label}: edited (body is not valid JSON)"
    if canonical(fields) != stored_canonical:
        return (f"{label}: edited ({_changed_fields(fields, stored_canonical)}"
                " changed since it was sealed)")
    if want != stored_hash:
        # Content and its canonical text agree but not the hash. If the next link
        # still points at the hash the content deserves, only the hash column was
        # touched; otherwise both were edited.
        if successor == want:
            return f"{label}: hash altered (content intact)"
        return f"{label}: edited (content does not match its hash)"
    return None


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(slots=True)
class _Chain:
    """The log book's head while rows are appended in one transaction."""

    seq: int
    hash: str
    moved: bool = False

    @classmethod
    def head(cls, conn: sqlite3.Connection) -> _Chain:
        return cls(int(get_meta(conn, "logbook_head_seq", 0)),
                   str(get_meta(conn, "logbook_head_hash", GENESIS_HASH)))

    def append(self, conn: sqlite3.Connection, recorded_ms: int, event: Event,
               data: dict[str, Any], body: str) -> None:
        """One sealed row for ``event`` (``data`` its JSON, ``body`` the canonical text)."""
        self.seal(conn, recorded_ms, event.site, event.type, event.id, event.revision, data,
                  body)

    def seal(self, conn: sqlite3.Connection, recorded_ms: int, site: str, type_: str,
             record_id: str, revision: int, data: dict[str, Any], body: str) -> int:
        """One sealed row of any record (an event, an archive file); its seq."""
        self.seq += 1
        content = canonical(_logbook_content(self.seq, recorded_ms, site, type_, record_id,
                                             revision, data))
        row_hash = _chain_hash(self.hash, content)
        conn.execute(
            "INSERT INTO logbook (seq, recorded_ms, site, type, event_id, revision,"
            " body, canonical, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (self.seq, recorded_ms, site, type_, record_id, revision, body, content,
             self.hash, row_hash))
        self.hash, self.moved = row_hash, True
        return self.seq

    def save(self, conn: sqlite3.Connection) -> None:
        if self.moved:
            put_meta(conn, "logbook_head_seq", self.seq)
            put_meta(conn, "logbook_head_hash", self.hash)


def seal_record(conn: sqlite3.Connection, recorded_ms: int, site: str, type_: str,
                record_id: str, data: dict[str, Any]) -> int:
    """Append one log book row that is no event of the vocabulary (``archive.py``: an archive file
    and its SHA-256) inside the caller's transaction; its seq. The chain covers it like
    any other row; readers of events skip such types (``RECORD_TYPES``)."""
    chain = _Chain.head(conn)
    seq = chain.seal(conn, recorded_ms, site, type_, record_id, 0, data, canonical(data))
    chain.save(conn)
    return seq


def _chain_hash(prev_hash: str, content: str) -> str:
    return _sha256(prev_hash + content)


def _logbook_content(seq: int, recorded_ms: int, site: str, type_: str, event_id: str,
                     revision: int, body: Any) -> dict[str, Any]:
    """What a log book row seals; ``logbook_verify`` rebuilds it from the columns."""
    return {"seq": seq, "recorded_ms": recorded_ms, "site": site, "type": type_,
            "event_id": event_id, "revision": revision, "body": body}


def _rows_label(first: int, last: int) -> str:
    return f"logbook row {first}" if first == last else f"logbook rows {first}-{last}"


def _changed_fields(content: dict[str, Any], stored_canonical: str) -> str:
    """Which sealed fields the columns no longer match, for a readable verdict."""
    try:
        sealed = json.loads(stored_canonical)
    except ValueError:
        return "canonical text"
    if not isinstance(sealed, dict):
        return "canonical text"
    changed = sorted(k for k in content.keys() | sealed.keys()
                     if content.get(k) != sealed.get(k))
    return ", ".join(changed) if changed else "canonical text"

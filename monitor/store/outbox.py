"""The transactional outbox: alerts waiting for delivery, and who confirmed them.

``outbox`` has one row per (event revision, route tag), written in the same
transaction as its event (``EventLog.record`` calls ``add_alerts``;
monitor/README.md, "Architecture"). The delivery worker
(``monitor/notify/worker.py``) drains it: ``due``, then ``receipt`` per target
that confirmed, then ``mark`` (delivered, retry later, or given up) or
``withhold`` (settled without sending, ``monitor/notify/policy.py``: superseded,
not a correction; ``delivered`` with ``withheld`` saying why and no
``delivered_ms``). ``outbox_receipts`` records which targets (Apprise URLs, by
key) confirmed which row: a tag may name several targets, and a retry after a
partial failure, or a restart, must not send again to those that took it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..contract.events import Event
from .db import Db, StoreError, load_event


@dataclass(frozen=True, slots=True)
class DueAlert:
    """A pending outbox row whose next attempt is due, with its event.

    ``created_ms`` is when the row was made (its event's ``recorded_ms`` for
    routed rows), the start of its escalation and give-up timers.
    """

    id: int
    event_seq: int
    alert_id: str
    tag: str
    attempts: int
    next_attempt_ms: int
    last_error: str | None
    created_ms: int
    event: Event


@dataclass(frozen=True, slots=True)
class OutboxRow:
    """One outbox row, without its event."""

    id: int
    event_seq: int
    alert_id: str
    tag: str
    status: str
    attempts: int
    next_attempt_ms: int
    last_error: str | None
    delivered_ms: int | None
    withheld: str | None
    created_ms: int | None


@dataclass(frozen=True, slots=True)
class SentAlert:
    """An outbox row with its event: what was (or is to be) sent."""

    id: int
    alert_id: str
    tag: str
    status: str
    attempts: int
    last_error: str | None
    withheld: str | None
    created_ms: int
    event_id: str
    revision: int
    type: str
    at_ms: int
    event: Event


@dataclass(frozen=True, slots=True)
class OutboxSummary:
    """Alert delivery at a glance: rows by status, how many were withheld as noise,
    and when the oldest still-pending row was created (None when none is)."""

    pending: int
    delivered: int
    failed: int
    withheld: int
    oldest_pending_ms: int | None


def add_alerts(conn: sqlite3.Connection, event_seq: int, alert_id: str, tags: Iterable[str],
               now_ms: int) -> None:
    """Outbox rows of one new event revision (inside ``EventLog.record``'s transaction)."""
    conn.executemany(
        "INSERT INTO outbox (event_seq, alert_id, tag, status, attempts,"
        " next_attempt_ms) VALUES (?, ?, ?, 'pending', 0, ?)"
        " ON CONFLICT DO NOTHING",  # a tag routed twice is one alert
        [(event_seq, alert_id, tag, now_ms) for tag in tags])


class Outbox:
    """The ``outbox`` and ``outbox_receipts`` tables."""

    def __init__(self, db: Db) -> None:
        self.db = db

    def due(self, now_ms: int, limit: int = 100) -> list[DueAlert]:
        """Pending alerts whose next attempt is due, oldest due first, with their event."""
        return [DueAlert(id_, event_seq, alert_id, tag, attempts, next_ms, error, created,
                         load_event(body))
                for id_, event_seq, alert_id, tag, attempts, next_ms, error, created, body
                in self.db.conn.execute(
                    "SELECT o.id, o.event_seq, o.alert_id, o.tag, o.attempts,"
                    " o.next_attempt_ms, o.last_error, ifnull(o.created_ms, e.recorded_ms),"
                    " e.body"
                    " FROM outbox AS o JOIN events AS e ON e.seq = o.event_seq"
                    " WHERE o.status = 'pending' AND o.next_attempt_ms <= ?"
                    " ORDER BY o.next_attempt_ms, o.id LIMIT ?", (now_ms, limit))]

    def mark(self, outbox_id: int, *, delivered: bool, now_ms: int,
             error: str | None = None, next_attempt_ms: int | None = None) -> None:
        """Record one delivery attempt of a pending alert.

        delivered            -> ``delivered`` at ``now_ms``;
        failed, with a retry -> stays ``pending`` until ``next_attempt_ms``;
        failed, no retry     -> ``failed`` (given up; kept for the record).
        """
        if delivered:
            sql = ("UPDATE outbox SET status = 'delivered', attempts = attempts + 1,"
                   " delivered_ms = ?, last_error = NULL WHERE id = ? AND status = 'pending'")
            params: tuple[Any, ...] = (now_ms, outbox_id)
        elif next_attempt_ms is not None:
            sql = ("UPDATE outbox SET attempts = attempts + 1, last_error = ?,"
                   " next_attempt_ms = ? WHERE id = ? AND status = 'pending'")
            params = (error, next_attempt_ms, outbox_id)
        else:
            sql = ("UPDATE outbox SET status = 'failed', attempts = attempts + 1,"
                   " last_error = ? WHERE id = ? AND status = 'pending'")
            params = (error, outbox_id)
        with self.db.write() as conn:
            if conn.execute(sql, params).rowcount != 1:
                # An outcome is recorded once; a second one is a worker bug.
                raise StoreError(f"outbox row {outbox_id} does not exist or is not pending")

    def rows(self) -> list[OutboxRow]:
        """Every outbox row (without the event body), in creation order."""
        return [OutboxRow(*row) for row in self.db.conn.execute(
            "SELECT id, event_seq, alert_id, tag, status, attempts, next_attempt_ms, last_error,"
            " delivered_ms, withheld, created_ms FROM outbox ORDER BY id")]

    def summary(self) -> OutboxSummary:
        """Alert delivery at a glance (``status --json``)."""
        counts = {"pending": 0, "delivered": 0, "failed": 0, "withheld": 0}
        for status, withheld, n in self.db.conn.execute(
                "SELECT status, withheld IS NOT NULL, count(*) FROM outbox"
                " GROUP BY status, withheld IS NOT NULL"):
            if withheld:
                counts["withheld"] += n
            else:
                counts[status] = counts.get(status, 0) + n
        # Routed rows take their creation time from their event (see ``due``).
        (oldest,) = self.db.conn.execute(
            "SELECT min(coalesce(o.created_ms, e.recorded_ms)) FROM outbox AS o"
            " JOIN events AS e ON e.seq = o.event_seq WHERE o.status = 'pending'").fetchone()
        return OutboxSummary(counts["pending"], counts["delivered"], counts["failed"],
                             counts["withheld"], oldest)

    def receipt(self, outbox_id: int, target: str, *, now_ms: int) -> None:
        """Record that one target confirmed a pending row (before the row is settled).

        Its own transaction, right after the send: the window in which a crash
        makes a target receive the alert twice is this one commit.
        """
        with self.db.write() as conn:
            conn.execute("INSERT INTO outbox_receipts (outbox_id, target, delivered_ms)"
                         " VALUES (?, ?, ?) ON CONFLICT DO NOTHING", (outbox_id, target, now_ms))

    def receipts(self, alert_id: str) -> set[str]:
        """The targets that confirmed the alert, through any of its rows (tags)."""
        return {target for (target,) in self.db.conn.execute(
            "SELECT r.target FROM outbox_receipts AS r JOIN outbox AS o ON o.id = r.outbox_id"
            " WHERE o.alert_id = ?", (alert_id,))}

    def withhold(self, outbox_id: int, reason: str, *, now_ms: int) -> None:
        """Settle a pending row without sending it; ``reason`` is kept in ``withheld``."""
        with self.db.write() as conn:
            if conn.execute("UPDATE outbox SET status = 'delivered', withheld = ?,"
                            " last_error = NULL, next_attempt_ms = ?"
                            " WHERE id = ? AND status = 'pending'",
                            (reason, now_ms, outbox_id)).rowcount != 1:
                raise StoreError(f"outbox row {outbox_id} does not exist or is not pending")

    def escalate(self, outbox_id: int, tag: str, *, now_ms: int) -> str | None:
        """Add a pending row sending row ``outbox_id``'s event to ``tag`` as an escalation.

        Its alert id is ``{alert_id}/esc-{the row's tag}``, unique with ``tag``:
        returns it, or None when that escalation exists already (so escalating
        is idempotent across retries and restarts).
        """
        with self.db.write() as conn:
            cur = conn.execute(
                "INSERT INTO outbox (event_seq, alert_id, tag, status, attempts,"
                " next_attempt_ms, created_ms)"
                " SELECT event_seq, alert_id || '/esc-' || tag, ?, 'pending', 0, ?, ?"
                " FROM outbox WHERE id = ? ON CONFLICT DO NOTHING",
                (tag, now_ms, now_ms, outbox_id))
            if cur.rowcount != 1:
                return None
            row = conn.execute("SELECT alert_id FROM outbox WHERE id = ?",
                               (cur.lastrowid,)).fetchone()
        return str(row[0])

    def alerts(self, *, site: str | None = None, types: Sequence[str] | None = None,
               tag: str | None = None, event_id: str | None = None
                      ) -> list[SentAlert]:
        """Outbox rows with their event, in event time order: what was (to be) sent."""
        sql = ("SELECT o.id, o.alert_id, o.tag, o.status, o.attempts, o.last_error, o.withheld,"
               " ifnull(o.created_ms, e.recorded_ms), e.id, e.revision, e.type, e.at_ms, e.body"
               " FROM outbox AS o JOIN events AS e ON e.seq = o.event_seq WHERE 1")
        params: list[Any] = []
        for column, value in (("e.site", site), ("o.tag", tag), ("e.id", event_id)):
            if value is not None:
                sql += f" AND {column} = ?"
                params.append(value)
        if types is not None:
            sql += f" AND e.type IN ({', '.join('?' * len(types))})"
            params.extend(types)
        return [SentAlert(id_, alert_id, tag_, status, attempts, error, withheld, created,
                          eid, revision, type_, at_ms, load_event(body))
                for (id_, alert_id, tag_, status, attempts, error, withheld, created, eid,
                     revision, type_, at_ms, body)
                in self.db.conn.execute(sql + " ORDER BY e.at_ms, e.revision, o.id", params)]

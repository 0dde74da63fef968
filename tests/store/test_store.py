"""The durable store (monitor/store/) on real SQLite files.

Tampering is done the way an attacker with file access would: a second, raw
sqlite3 connection that drops the append-only triggers first. Crashes are real
SIGKILLs of a child process, so the rows must come back from the WAL file.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import cast

import pytest

from monitor.contract.events import Event, SensorStale, TrapCleanoutRequired
from monitor.contract.inputs import Inspection, Reading
from monitor.contract.times import iso
from monitor.store import (
    GENESIS_HASH,
    DeadLetter,
    DeadLetterIn,
    JournalIn,
    LogbookRow,
    OutboxSummary,
    Store,
    StoreError,
)
from monitor.store.journal import JournalKind
from monitor.store.schema import SCHEMA_VERSION

from ..support.storekit import MIN, SITE, T0, event, qualified, reading, started, trap_fill

REPO = Path(__file__).resolve().parents[2]


# -- builders ------------------------------------------------------------------




def inspection(ts_ms: int, inspector: str = "J. Qualified") -> JournalIn:
    i = Inspection(site=SITE, inspector=inspector, ts_ms=ts_ms, kind="storm")
    return JournalIn("inspection", SITE, None, ts_ms, i.to_json())


def tick(now_ms: int) -> JournalIn:
    return JournalIn("tick", None, None, now_ms, {"now_ms": now_ms})








def stale(id_: str, at_ms: int, sensor: str, site: str = SITE) -> Event:
    return event(SensorStale(sensor=sensor, last_seen=iso(at_ms - 60 * MIN),
                             stale_after_minutes=30.0), id_, at_ms, site=site)




def routes(ev: Event) -> list[str]:
    return {"storm_qualified": ["qp", "officer"], "trap_cleanout_required": ["qp"]}.get(
        ev.type, [])


def raw(db: Path) -> sqlite3.Connection:
    """A second connection to the same file, outside the Store (the attacker's)."""
    return sqlite3.connect(db, isolation_level=None)


def seal_logbook(store: Store, n: int = 5) -> None:
    """n log book rows: n distinct events recorded one per call."""
    for i in range(n):
        store.events.record([qualified(f"storm-{i + 1}", T0 + i * MIN)], applied_seq=i + 1,
                            recorded_ms=T0 + i * MIN + 1, routes=routes)


def lines_naming(problems: list[str], seq: int) -> list[str]:
    return [p for p in problems if p.startswith(f"logbook row {seq}:")]


# -- opening, schema, pragmas --------------------------------------------------


def test_open_creates_schema_with_durable_pragmas(db: Path) -> None:
    with Store(db) as s:
        conn = s.db.conn
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    with raw(db) as c:
        version = c.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    assert version == SCHEMA_VERSION
    # Reopening an up-to-date file changes nothing and keeps the data.
    with Store(db) as s:
        s.journal.commit([reading(T0)])
    with Store.in_dir(db.parent) as s:
        assert s.journal.count() == 1


def test_newer_schema_is_refused(db: Path) -> None:
    Store(db).close()
    with raw(db) as c:
        c.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match="newer"):
        Store(db)


def test_readonly_needs_an_existing_initialised_file(db: Path) -> None:
    with pytest.raises(StoreError, match="no such database"):
        Store(db, readonly=True)
    sqlite3.connect(db).close()  # an empty file nobody initialised
    with pytest.raises(StoreError, match="schema version 0"):
        Store(db, readonly=True)


# -- journal ---------------------------------------------------------------------


def test_duplicates_are_ignored_and_counted(store: Store) -> None:
    a, b, c = reading(T0), reading(T0 + MIN, 4.0), reading(T0 + 2 * MIN, 5.0)
    first = store.journal.commit([a, b, a])  # a repeated within one batch
    assert first[0] is not None and first[1] is not None and first[0] < first[1]
    assert first[2] is None
    # MQTT QoS 1 redelivery of a (a new message object, same content) plus a new one.
    again = store.journal.commit([reading(T0), c])
    assert again[0] is None and again[1] is not None and again[1] > first[1]
    assert store.journal.count() == 3
    assert store.journal.counter("accepted") == 3
    assert store.journal.counter("duplicates") == 2
    assert store.journal.counters() == {"accepted": 3, "duplicates": 2}
    # Same instant, other value or other sensor: a different reading, not a duplicate.
    distinct = store.journal.commit([reading(T0, 9.0), reading(T0, sensor="tb-down")])
    assert None not in distinct


def test_identity_ignores_key_order_and_delivery_metadata(store: Store) -> None:
    body = reading(T0).body
    reordered = dict(reversed(list(body.items())))
    again = JournalIn("reading", SITE, "tb-up", T0, reordered, topic="other", received_ms=1)
    assert store.journal.commit([reading(T0), again])[1] is None


def test_a_redelivered_inspection_is_the_same_though_it_arrived_later(store: Store) -> None:
    """An inspection's body holds when it reached the daemon (``entered_ms``); a QoS 1
    redelivery arrives later and is still the same message (the fuzz target counted
    it twice)."""
    first = Inspection(SITE, "J. Qualified", T0, "routine", entered_ms=T0 + MIN)
    again = dataclasses.replace(first, entered_ms=T0 + 5 * MIN)
    seqs = store.journal.commit([
        JournalIn("inspection", SITE, None, T0, first.to_json(), received_ms=T0 + MIN),
        JournalIn("inspection", SITE, None, T0, again.to_json(), received_ms=T0 + 5 * MIN)])
    assert seqs[0] is not None and seqs[1] is None
    assert store.journal.counters() == {"accepted": 1, "duplicates": 1}


def test_ts_ms_must_be_the_body_time(store: Store) -> None:
    good = reading(T0)
    with pytest.raises(ValueError, match="differs"):
        store.journal.commit([JournalIn("reading", SITE, "tb-up", T0 + 1, good.body)])
    with pytest.raises(ValueError, match="differs"):
        store.journal.commit([JournalIn("tick", None, None, T0, {"now_ms": T0 + 1})])
    assert store.journal.count() == 0


def test_journal_after_is_seq_ascending_and_round_trips(store: Store) -> None:
    items = [reading(T0 + i * MIN, float(i)) for i in range(25)]
    seqs: list[int | None] = []
    for start in range(0, 25, 10):
        seqs += store.journal.commit(items[start:start + 10])
    page = store.journal.after(0, limit=10)
    assert [r.seq for r in page] == seqs[:10]
    rest = store.journal.after(page[-1].seq)
    assert [r.seq for r in rest] == seqs[10:]
    assert [Reading.from_json(r.body) for r in page + rest] == [
        Reading.from_json(i.body) for i in items]
    assert all(r.kind == "reading" and r.received_ms == i.received_ms
               for r, i in zip(page + rest, items, strict=True))
    assert store.journal.max_seq() == seqs[-1]
    assert store.journal.after(store.journal.max_seq()) == []


def test_ticks_and_inspections(store: Store) -> None:
    assert store.journal.max_seq() == 0
    seqs = store.journal.commit([tick(T0), inspection(T0 + MIN), tick(T0), reading(T0)])
    assert seqs[2] is None  # a tick with the same now_ms, despite site/sensor being NULL
    assert store.journal.count() == 2
    assert store.journal.count(("tick",)) == 1
    assert store.journal.count(()) == 0
    # Ticks are the daemon's clock, not ingest: not in accepted/duplicates.
    assert store.journal.counters() == {"accepted": 2}
    rows = store.journal.after(0)
    assert [r.kind for r in rows] == ["tick", "inspection", "reading"]
    assert Inspection.from_json(rows[1].body).inspector == "J. Qualified"
    assert rows[0].body == {"now_ms": T0}


def test_dead_letters_keep_raw_bytes_and_count_reasons(store: Store) -> None:
    junk = b"\xff\xfe{not json"
    assert store.journal.commit([], [
        DeadLetterIn("stormwatch/v1/x/y/reading", junk, "invalid_json", "not UTF-8", T0),
        DeadLetterIn("stormwatch/v1/zz/rg1/reading", b'{"ts":1}', "unknown_site", "zz", T0 + 1),
    ]) == []
    seqs = store.journal.commit([reading(T0)], [
        DeadLetterIn(None, b"\x00" * 5000, "oversize", "5000 bytes", T0 + 2)])
    assert seqs[0] is not None
    assert store.journal.reject_counts() == {"invalid_json": 1, "oversize": 1, "unknown_site": 1}
    assert store.journal.counter("rejected.invalid_json") == 1
    letters = store.journal.dead_letters()
    assert [d.reason for d in letters] == ["oversize", "unknown_site", "invalid_json"]
    assert letters[2].payload == junk and isinstance(letters[2].payload, bytes)
    # Only the first 4 KiB of a body are kept, with its original length.
    assert letters[0].topic is None and letters[0].payload == b"\x00" * 4096
    assert letters[0].cut_from == letters[0].size == 5000
    assert dataclasses.replace(letters[1], id=0) == DeadLetter(
        0, "stormwatch/v1/zz/rg1/reading", b'{"ts":1}', "unknown_site", "zz", T0 + 1)
    assert len(store.journal.dead_letters(limit=1)) == 1


def test_a_batch_is_all_or_nothing(store: Store) -> None:
    store.journal.commit([reading(T0)])
    bad = JournalIn(cast(JournalKind, "status"), SITE, "x", T0, {})  # refused by CHECK
    with pytest.raises(sqlite3.IntegrityError):
        store.journal.commit([reading(T0 + MIN), bad],
                             [DeadLetterIn(None, b"x", "invalid_json", "", T0)])
    assert store.journal.count() == 1
    assert store.journal.reject_counts() == {}
    assert store.journal.counters() == {"accepted": 1}
    # The connection is usable afterwards (the failed transaction was rolled back).
    assert store.journal.commit([reading(T0 + MIN)])[0] is not None


def test_meta_values_and_cursors(db: Path, store: Store) -> None:
    assert store.state.meta_get("lag_ms") is None and store.state.cursor("influx") == 0
    store.state.meta_set("lag_ms", 412)
    store.state.meta_set("note", "x")
    store.state.set_cursors({"influx": 1234})
    with Store(db, readonly=True) as reader:
        assert reader.state.meta_get("lag_ms") == 412 and reader.state.meta_get("note") == "x"
        assert reader.state.cursor("influx") == 1234
    with pytest.raises(ValueError, match="maintained by the store"):
        store.state.meta_set("applied_seq", 99)


# -- events and outbox -------------------------------------------------------------


def test_record_events_is_idempotent(db: Path, store: Store) -> None:
    evs = [qualified("storm-1"),
           event(TrapCleanoutRequired(trap="trap-1", fill_fraction=0.5, depth_in=20.0,
                                      sensor="trap1-depth", threshold=0.5, repeat=0),
                 "trap-1", T0 + MIN),
           stale("stale-1", T0 + 2 * MIN, "rg1")]
    assert store.events.record(evs, applied_seq=7, recorded_ms=T0 + 5, routes=routes) == 3
    assert store.events.applied_seq() == 7
    # The same (id, revision) again, e.g. re-derived after a crash: nothing new.
    assert store.events.record(evs, applied_seq=9, recorded_ms=T0 + 6, routes=routes) == 0
    assert store.events.applied_seq() == 9  # the cursor still moves
    assert store.events.all() == evs
    assert len(store.events.logbook()) == 3
    outbox = store.outbox.rows()
    assert [(o.alert_id, o.tag) for o in outbox] == [
        ("storm-1:0", "qp"), ("storm-1:0", "officer"), ("trap-1:0", "qp")]
    assert all(o.status == "pending" and o.attempts == 0 and o.last_error is None
               and o.delivered_ms is None and o.next_attempt_ms == T0 + 5
               for o in outbox)
    # A new revision of the same id is a new event with its own alert id.
    assert store.events.record([qualified("storm-1", T0 - MIN, revision=1)], applied_seq=10,
                               recorded_ms=T0 + 7, routes=routes) == 1
    assert [o.alert_id for o in store.outbox.rows()][-2:] == ["storm-1:1", "storm-1:1"]
    with raw(db) as c:
        assert c.execute("SELECT count(*) FROM events").fetchone()[0] == 4
        assert c.execute("SELECT count(*) FROM logbook").fetchone()[0] == 4


def test_outbox_summary_counts_by_status(store: Store) -> None:
    assert store.outbox.summary() == OutboxSummary(0, 0, 0, 0, None)
    store.events.record([qualified("storm-1")], applied_seq=1, recorded_ms=T0, routes=routes)
    first, second = store.outbox.rows()
    store.outbox.mark(first.id, delivered=True, now_ms=T0 + 1)
    assert store.outbox.summary() == OutboxSummary(1, 1, 0, 0, T0)
    store.outbox.withhold(second.id, "superseded", now_ms=T0 + 2)
    assert store.outbox.summary() == OutboxSummary(0, 1, 0, 1, None)


def test_record_events_without_routes_and_filters(store: Store) -> None:
    other = stale("s-2", T0, "tb-up", site="other-site")
    store.events.record([qualified(), other], applied_seq=1, recorded_ms=T0)
    assert store.outbox.rows() == []
    assert store.events.all(site="other-site") == [other]
    assert store.events.all(types=["storm_qualified"]) == [qualified()]
    assert store.events.all(site=SITE, types=["sensor_stale"]) == []
    assert [r.site for r in store.events.logbook("other-site")] == ["other-site"]


def test_record_events_rolls_back_as_a_whole(store: Store) -> None:
    def broken(ev: Event) -> list[str]:
        raise RuntimeError("routing table broken")

    with pytest.raises(RuntimeError):
        store.events.record([qualified()], applied_seq=3, recorded_ms=T0, routes=broken)
    assert store.events.all() == [] and store.events.logbook() == []
    assert store.events.applied_seq() == 0


def test_current_events_latest_revision_without_retracted(store: Store) -> None:
    half_second = T0 + 500  # iso() writes ms only when non-zero: text order != time order
    store.events.record([
        qualified("a", T0 + 10 * MIN),
        started("b", T0 + 20 * MIN),
        started("c", half_second),
        trap_fill("d", T0, "trap-1", 0.41, 15.0),
        trap_fill("e", T0, "t", 0.4, 1.0, site="other-site"),
    ], applied_seq=1, recorded_ms=T0)
    store.events.record([
        qualified("a", T0 + 5 * MIN, revision=1),  # a late reading moved it earlier
        started("b", T0 + 20 * MIN, 1, retracted=True),
    ], applied_seq=2, recorded_ms=T0 + 1)
    current = store.events.current(SITE)
    assert [(e.id, e.revision) for e in current] == [("d", 0), ("c", 0), ("a", 1)]
    assert current[1].to_json()["at"] == "2026-05-01T12:00:00.500Z"
    assert {e.id for e in store.events.current()} == {"a", "c", "d", "e"}
    assert len(store.events.all()) == 7  # every revision is kept


def test_outbox_due_and_mark(store: Store) -> None:
    store.events.record([qualified()], applied_seq=1, recorded_ms=T0, routes=routes)
    assert store.outbox.due(T0 - 1) == []
    due = store.outbox.due(T0)
    assert [(d.tag, d.alert_id) for d in due] == [("qp", "storm-1:0"),
                                                          ("officer", "storm-1:0")]
    assert due[0].event == qualified()
    qp, officer = due[0].id, due[1].id
    store.outbox.mark(qp, delivered=False, now_ms=T0 + 1, error="SMTP 451",
                      next_attempt_ms=T0 + MIN)
    assert [d.id for d in store.outbox.due(T0 + 1)] == [officer]
    store.outbox.mark(officer, delivered=True, now_ms=T0 + 2)
    retry = store.outbox.due(T0 + MIN, limit=10)
    assert [(d.id, d.attempts, d.last_error) for d in retry] == [(qp, 1, "SMTP 451")]
    store.outbox.mark(qp, delivered=False, now_ms=T0 + MIN, error="SMTP 550 no such user")
    assert store.outbox.due(T0 + 10 * MIN) == []
    rows = {o.id: o for o in store.outbox.rows()}
    assert rows[officer].status == "delivered" and rows[officer].delivered_ms == T0 + 2
    assert rows[qp].status == "failed" and rows[qp].attempts == 2
    with pytest.raises(StoreError, match="not pending"):
        store.outbox.mark(officer, delivered=True, now_ms=T0 + 3)


# -- snapshots ------------------------------------------------------------------------


def test_engine_snapshots_write_only_what_changed(db: Path, store: Store) -> None:
    assert store.state.latest_snapshot() is None and store.state.load_snapshot() is None
    store.state.save_snapshot("engine", 100, '{"head": 1}', created_ms=T0,
                              put=[("s/gauge:rg1", 0, "a"), ("s/gauge:rg1", 60, "b")],
                               keep_from={"s/gauge:rg1": 0})
    # The next snapshot adds one checkpoint, replaces one, and compaction drops one.
    store.state.save_snapshot("engine", 200, '{"head": 2}', created_ms=T0 + 1,
                              put=[("s/gauge:rg1", 60, "B"), ("s/gauge:rg1", 120, "c")],
                               keep_from={"s/gauge:rg1": 60})
    snap = store.state.load_snapshot()
    assert snap is not None
    assert (snap.applied_seq, snap.head) == (200, '{"head": 2}')
    assert snap.checkpoints == {"s/gauge:rg1": {60: "B", 120: "c"}}
    assert store.state.latest_snapshot() == (200, {"head": 2})
    with raw(db) as c:
        assert c.execute("SELECT count(*) FROM snapshots").fetchone()[0] == 1
    # Owners are apart; a rebuild drops the owner's old checkpoints first.
    store.state.save_snapshot("export", 150, '{"x": 1}', created_ms=T0,
                              put=[("s/pair:p", 0, "p")], keep_from={})
    store.state.save_snapshot("engine", 10, '{"head": "rebuilt"}', created_ms=T0 + 2,
                              put=[("s/gauge:rg1", 0, "z")], keep_from={}, replace_all=True)
    assert store.state.load_snapshot().checkpoints == {"s/gauge:rg1": {0: "z"}}  # type: ignore[union-attr]
    assert store.state.load_snapshot("export").checkpoints == {  # type: ignore[union-attr]
        "s/pair:p": {0: "p"}}
    assert store.state.snapshot_size() == len('{"head": "rebuilt"}') + 1


# -- log book ---------------------------------------------------------------------------


def test_logbook_rows_and_intact_chain(store: Store) -> None:
    assert store.events.logbook_verify() == []
    seal_logbook(store, 3)
    rows = store.events.logbook()
    assert [r.seq for r in rows] == [1, 2, 3]
    assert rows[0].prev_hash == GENESIS_HASH
    assert [r.prev_hash for r in rows[1:]] == [r.hash for r in rows[:-1]]
    assert dataclasses.replace(rows[0], prev_hash="", hash="") == LogbookRow(
        1, "2026-05-01T12:00:00.001Z", SITE, "storm_qualified", "storm-1", 0,
        qualified("storm-1").to_json(), "", "")
    assert store.events.logbook_head() == (3, rows[-1].hash)
    assert store.events.logbook_verify() == []


def test_logbook_refuses_update_and_delete(db: Path, store: Store) -> None:
    seal_logbook(store, 2)
    with raw(db) as c:
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            c.execute("UPDATE logbook SET site = 'elsewhere' WHERE seq = 1")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            c.execute("DELETE FROM logbook WHERE seq = 2")
    assert store.events.logbook_verify() == []


def test_verify_detects_an_edited_body(db: Path, store: Store) -> None:
    seal_logbook(store)
    with raw(db) as c:
        c.execute("DROP TRIGGER logbook_no_update")
        body = c.execute("SELECT body FROM logbook WHERE seq = 3").fetchone()[0]
        assert '"total_in":0.62' in body
        c.execute("UPDATE logbook SET body = ? WHERE seq = 3",
                  (body.replace('"total_in":0.62', '"total_in":0.42'),))
    problems = store.events.logbook_verify()
    assert any("logbook_no_update" in p for p in problems)
    edited = lines_naming(problems, 3)
    assert len(edited) == 1 and "edited" in edited[0] and "body" in edited[0]
    assert all(not lines_naming(problems, n) for n in (1, 2, 4, 5))  # no cascade


def test_verify_detects_an_edit_that_also_rewrites_the_canonical_text(db: Path,
                                                                      store: Store) -> None:
    seal_logbook(store)
    with raw(db) as c:
        c.execute("DROP TRIGGER logbook_no_update")
        # Backdate row 2 by an hour, in the column and in the sealed text alike.
        recorded = c.execute("SELECT recorded_ms FROM logbook WHERE seq = 2").fetchone()[0]
        c.execute("UPDATE logbook SET recorded_ms = ?, canonical = replace(canonical, ?, ?)"
                  " WHERE seq = 2", (recorded - 3_600_000, f'"recorded_ms":{recorded}',
                                     f'"recorded_ms":{recorded - 3_600_000}'))
    problems = store.events.logbook_verify()
    assert lines_naming(problems, 2) == ["logbook row 2: edited (content does not match its hash)"]


def test_verify_detects_a_deleted_row(db: Path, store: Store) -> None:
    seal_logbook(store)
    with raw(db) as c:
        c.execute("DROP TRIGGER logbook_no_delete")
        c.execute("DELETE FROM logbook WHERE seq = 2")
    problems = store.events.logbook_verify()
    assert "logbook row 2: missing (deleted)" in problems
    assert all(not lines_naming(problems, n) for n in (1, 3, 4, 5))


def test_verify_detects_rows_deleted_at_either_end(db: Path, store: Store) -> None:
    seal_logbook(store)
    with raw(db) as c:
        c.execute("DROP TRIGGER logbook_no_delete")
        c.execute("DELETE FROM logbook WHERE seq IN (1, 4, 5)")
    problems = store.events.logbook_verify()
    assert "logbook row 1: missing (deleted)" in problems
    assert "logbook rows 4-5: missing at the end (deleted)" in problems
    # The next row continues from the recorded head, so the gap stays visible.
    store.events.record([qualified("storm-9")], applied_seq=9, recorded_ms=T0 + 9)
    assert store.events.logbook()[-1].seq == 6
    assert "logbook rows 4-5: missing (deleted)" in store.events.logbook_verify()


def test_verify_detects_an_edited_hash(db: Path, store: Store) -> None:
    seal_logbook(store)
    with raw(db) as c:
        c.execute("DROP TRIGGER logbook_no_update")
        c.execute("UPDATE logbook SET hash = ? WHERE seq = 2", ("f" * 64,))
        c.execute("UPDATE logbook SET hash = ? WHERE seq = 5", ("e" * 64,))
    problems = store.events.logbook_verify()
    assert lines_naming(problems, 2) == ["logbook row 2: hash altered (content intact)"]
    assert lines_naming(problems, 5) == ["logbook row 5: hash altered (content intact)"]
    assert not lines_naming(problems, 3)


def test_verify_detects_a_reordered_chain(db: Path, store: Store) -> None:
    seal_logbook(store)
    with raw(db) as c:
        c.execute("DROP TRIGGER logbook_no_update")
        c.execute("UPDATE logbook SET seq = -1 WHERE seq = 2")
        c.execute("UPDATE logbook SET seq = 2 WHERE seq = 3")
        c.execute("UPDATE logbook SET seq = 3 WHERE seq = -1")
    problems = store.events.logbook_verify()
    assert any(p.startswith("logbook row 2: links to row 3 instead of row 1 (chain reordered)")
               for p in problems)
    assert any(p.startswith("logbook row 2: edited (seq changed") for p in problems)
    assert lines_naming(problems, 3)


def test_verify_detects_a_forged_appended_row(db: Path, store: Store) -> None:
    seal_logbook(store, 2)
    with raw(db) as c:
        c.execute("INSERT INTO logbook SELECT 3, recorded_ms, site, type, event_id, revision,"
                  " body, replace(canonical, '\"seq\":2', '\"seq\":3'), hash, hash"
                  " FROM logbook WHERE seq = 2")
    problems = store.events.logbook_verify()
    assert any(p.startswith("logbook row 3: not written by stormwatch") for p in problems)


# -- concurrency and crashes ------------------------------------------------------------


def test_writer_and_readonly_reader_work_concurrently(db: Path) -> None:
    writer = Store(db)
    reader = Store(db, readonly=True)
    try:
        with pytest.raises(StoreError, match="read-only"):
            reader.journal.commit([reading(T0)])
        # A write transaction held open elsewhere does not block a WAL reader.
        with raw(db) as c:
            c.execute("BEGIN IMMEDIATE")
            c.execute("INSERT INTO counters VALUES ('held', 1)")
            assert reader.journal.count() == 0 and reader.journal.counters() == {}
            c.execute("ROLLBACK")

        errors: list[BaseException] = []
        batches, per_batch = 40, 50

        def write() -> None:
            try:
                with Store(db) as w:  # each thread its own Store
                    for b in range(batches):
                        w.journal.commit([reading(T0 + (b * per_batch + i) * MIN)
                                          for i in range(per_batch)])
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        thread = threading.Thread(target=write)
        thread.start()
        seen = [reader.journal.count()]
        while thread.is_alive():
            seen.append(reader.journal.count())
            rows = reader.journal.after(0)
            assert len(rows) % per_batch == 0  # never half a batch
        thread.join()
        assert not errors
        assert seen == sorted(seen)
        assert reader.journal.count() == batches * per_batch
        assert writer.journal.count() == batches * per_batch
    finally:
        reader.close()
        writer.close()


CHILD = textwrap.dedent("""
    import os, signal, sys
    from monitor.store import JournalIn, Store
    db, batches = sys.argv[1], int(sys.argv[2])
    store = Store(db)
    for b in range(batches):
        rows = [JournalIn("reading", "s", "tb", b * 1000 + i,
                          {"site": "s", "sensor": "tb", "kind": "turbidity",
                           "ts_ms": b * 1000 + i, "ntu": 1.0}) for i in range(1000)]
        seqs = store.journal.commit(rows)
        print(b, max(s for s in seqs if s is not None), flush=True)   # "acknowledged"
    if batches == 1:
        os.kill(os.getpid(), signal.SIGKILL)   # right after commit_batch returned
    signal.pause()
""")


def _child(db: Path, batches: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", CHILD, str(db), str(batches)], cwd=REPO,
                            stdout=subprocess.PIPE, text=True)


def test_committed_rows_survive_sigkill_right_after_commit(db: Path) -> None:
    child = _child(db, 1)
    out, _ = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    assert out.split() == ["0", "1000"]
    # Killed with the WAL unmerged: recovery on open must bring the rows back.
    assert Path(f"{db}-wal").exists()
    with Store(db) as s:
        assert s.journal.count() == 1000
        assert s.journal.max_seq() == 1000
        assert s.journal.counter("accepted") == 1000


def test_every_acknowledged_batch_survives_a_kill_mid_stream(db: Path) -> None:
    child = _child(db, 10_000)
    assert child.stdout is not None
    acked = [child.stdout.readline().split() for _ in range(5)]
    os.kill(child.pid, signal.SIGKILL)  # somewhere inside a later batch
    child.communicate(timeout=60)
    with Store(db) as s:
        count = s.journal.count()
        assert count >= 5000 and count % 1000 == 0  # whole batches only
        assert s.journal.max_seq() >= int(acked[-1][1])
        rows = s.journal.after(0, limit=count)
        assert [r.body["ts_ms"] for r in rows] == list(range(count))
        assert s.journal.counter("accepted") == count

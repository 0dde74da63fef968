"""The daemon's ingest under hostile input: seq identity, a bounded
dead-letter table, linear-time log redaction, a bounded reject log, and the
health file that ``status`` reads. (The broker side: ``test_broker_hostile.py``;
a full disk: ``test_disk_full.py``.)

The store, the log formatter and the reject log are tested directly, then
through a real Mosquitto and the real daemon process (``tests/support/daemonkit.py``).
No assertion here is on elapsed time (monitor/README.md, "Development"): the redaction is tested for
its output and for linear *structure* (each ``://`` looked at once), the
reject log for its size; ``bench/hostile.py`` has the speed.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor import logs
from monitor.config import DeadLettersConfig
from monitor.contract.inputs import Reading
from monitor.contract.rejects import RejectReason
from monitor.daemon.rejectlog import RejectLog
from monitor.logs import TOPIC_MAX, clip, redact
from monitor.store import SEQ_CONFLICT, DeadLetterIn, JournalIn, Store
from monitor.store.deadletters import BYTES_COUNTER, KEEP_BYTES, PRUNED_COUNTER
from monitor.store.health import HealthFile, StoreTrouble, read_health
from monitor.store.journal import SEQ_LOOKUP_ROWS, seq_lookup_sql
from monitor.store.schema import MIGRATIONS

from ..conftest import MakeMosquitto
from ..support.daemonkit import (
    PREFIX,
    ROOT,
    DaemonProcess,
    Publisher,
    cli,
    journal_count,
    reading_topic,
    store_of,
    wait_until,
    write_config,
)

SITE = "branch-meadows"

#: The schema version whose migration identifies rows by their node seq (``msg_seq``).
MSG_SEQ_VERSION = next(i + 1 for i, steps in enumerate(MIGRATIONS)
                       if any("ADD COLUMN msg_seq" in step for step in steps))
T0 = 1_777_636_800_000  # 2026-05-01T12:00:00Z
MIN = 60_000


def rain(ts_ms: int, precip_in: float, seq: int | None, sensor: str = "rg1") -> JournalIn:
    r = Reading(site=SITE, sensor=sensor, kind="rain", ts_ms=ts_ms, precip_in=precip_in,
                seq=seq)
    return JournalIn("reading", SITE, sensor, ts_ms, r.to_json(),
                     topic=f"{PREFIX}/{SITE}/{sensor}/reading", received_ms=ts_ms + 50)


def status_msg(ts_ms: int, seq: int, battery_v: float) -> JournalIn:
    r = Reading(site=SITE, sensor="rg1", kind="status", ts_ms=ts_ms, seq=seq,
                battery_v=battery_v)
    return JournalIn("reading", SITE, "rg1", ts_ms, r.to_json())


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with Store(tmp_path / "stormwatch.db") as s:
        yield s


# --------------------------------------------------------------------------- 1. seq identity


def test_the_store_names_the_reason_the_rules_name() -> None:
    assert RejectReason.seq_conflict.value == SEQ_CONFLICT


def test_a_seq_sent_again_with_another_body_is_a_dead_letter_not_more_rain(store: Store) -> None:
    """The issue's case: {"precip_in": 0.30, "seq": 7} again a minute later."""
    first = store.journal.commit([rain(T0, 0.30, 7)])
    assert first[0] is not None
    again = store.journal.commit([rain(T0 + MIN, 0.30, 7)])
    assert again == [None]
    assert store.journal.count() == 1  # 0.30 in, not 0.60
    (letter,) = store.journal.dead_letters()
    assert letter.reason == "seq_conflict"
    assert f"journal row {first[0]}" in letter.detail and "seq: 7 of branch-meadows/rg1" \
        in letter.detail
    assert json.loads(letter.payload)["ts_ms"] == T0 + MIN  # the refused one's own body
    assert store.journal.counters() == {"accepted": 1, "rejected.seq_conflict": 1,
                                        BYTES_COUNTER: store.journal.counter(BYTES_COUNTER)}
    # The same body again is still a plain duplicate (a QoS 1 redelivery).
    assert store.journal.commit([rain(T0, 0.30, 7)]) == [None]
    assert store.journal.counter("duplicates") == 1
    assert store.journal.counter("rejected.seq_conflict") == 1


def test_seq_identity_within_one_batch_and_per_sensor(store: Store) -> None:
    seqs = store.journal.commit([
        rain(T0, 0.1, 1), rain(T0 + MIN, 0.2, 1),     # conflict inside the batch
        rain(T0, 0.1, 1),                             # duplicate inside the batch
        rain(T0, 0.1, 1, sensor="rg2"),               # the same seq of another sensor
        rain(T0 + 2 * MIN, 0.1, None, sensor="rg2"),  # no seq: identity by content only
        status_msg(T0, 1, 3.9),                       # a status message's seq is not looked at
    ])
    assert [s is not None for s in seqs] == [True, False, False, True, True, True]
    (letter,) = store.journal.dead_letters()
    assert "earlier in this batch" in letter.detail
    assert store.journal.counters()["accepted"] == 4
    assert store.journal.counter("duplicates") == 1


def test_the_conflict_letter_is_the_callers_raw_message(store: Store) -> None:
    store.journal.commit([rain(T0, 0.1, 5)])
    calls: list[tuple[int, str]] = []

    def conflict(index: int, detail: str) -> DeadLetterIn:
        calls.append((index, detail))
        return DeadLetterIn("the/topic", b"raw bytes", SEQ_CONFLICT, detail, 42)

    assert store.journal.commit([rain(T0 + MIN, 0.3, 6), rain(T0 + MIN, 0.2, 5)],
                                conflict=conflict)[1] is None
    assert [i for i, _ in calls] == [1]
    (letter, *_) = store.journal.dead_letters()
    assert (letter.topic, letter.payload, letter.received_ms) == ("the/topic", b"raw bytes", 42)


def test_the_seq_lookup_is_one_query_per_batch_and_uses_the_index(store: Store) -> None:
    """Mind ingest speed: a batch of 1000 readings with seq costs one lookup query
    per ``SEQ_LOOKUP_ROWS`` (not one per row), answered from the index."""
    batch = [rain(T0 + k * 1000, 0.01, k + 1, sensor=f"rg{k % 7}") for k in range(1000)]
    statements: list[str] = []
    store.db.conn.set_trace_callback(statements.append)
    try:
        assert None not in store.journal.commit(batch)
        assert None not in store.journal.commit([rain(T0 - MIN, 0.01, 5000)])
    finally:
        store.db.conn.set_trace_callback(None)
    lookups = [s for s in statements if "CROSS JOIN" in s]
    assert len(lookups) == -(-1000 // SEQ_LOOKUP_ROWS) + 1
    plan = store.db.conn.execute("EXPLAIN QUERY PLAN " + seq_lookup_sql(2),
                                 (1, SITE, "rg1", 2, SITE, "rg1")).fetchall()
    details = " | ".join(row[3] for row in plan)
    assert "SEARCH j USING INDEX journal_msg_seq (msg_seq=? AND site=? AND sensor=?)" in \
        details, details
    assert "SCAN j" not in details


def _version(path: Path, version: int) -> sqlite3.Connection:
    """A database file exactly as stormwatch at schema ``version`` left it."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value NOT NULL) WITHOUT ROWID")
    for statements in MIGRATIONS[:version]:
        for statement in statements:
            conn.execute(statement)
    conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (version,))
    return conn


def test_an_older_database_is_migrated_with_its_conflicts_and_big_letters(
        tmp_path: Path) -> None:
    path = tmp_path / "stormwatch.db"
    conn = _version(path, MSG_SEQ_VERSION - 1)
    old_rows = [rain(T0, 0.3, 7), rain(T0 + MIN, 0.3, 7), rain(T0 + 2 * MIN, 0.1, 8),
                status_msg(T0, 7, 3.9), rain(T0 - 8 * 1440 * MIN, 0.1, 3)]
    for seq, row in enumerate(old_rows, 1):
        conn.execute("INSERT INTO journal (seq, kind, site, sensor, ts_ms, ident, body)"
                     " VALUES (?, 'reading', ?, ?, ?, ?, ?)",
                     (seq, row.site, row.sensor, row.ts_ms, bytes([seq]), json.dumps(row.body)))
    conn.execute("INSERT INTO dead_letters (topic, payload, reason, detail, received_ms)"
                 " VALUES ('t', ?, 'oversize', 'big', 1)", (b"x" * 1_000_000,))
    conn.close()
    with Store(path) as store:
        rows = dict(store.db.conn.execute("SELECT seq, msg_seq FROM journal").fetchall())
        # The first of the two seq-7 rows identifies it, the other stays as it is; rows
        # older than a week before the newest are left alone (no journal rewrite).
        assert rows == {1: 7, 2: None, 3: 8, 4: None, 5: None}
        assert store.journal.commit([rain(T0 + 5 * MIN, 0.5, 8)]) == [None]  # conflicts now
        letter = store.journal.dead_letters()[-1]
        assert len(letter.payload) == KEEP_BYTES and letter.cut_from == 1_000_000
        held = store.journal.counter(BYTES_COUNTER)
        assert KEEP_BYTES < held < 3 * KEEP_BYTES + 1000


# --------------------------------------------------------------------------- 2. dead letters


def test_dead_letters_keep_4_kib_and_the_original_length(store: Store) -> None:
    store.journal.commit([], [DeadLetterIn("t" * 70_000, b"y" * 1_000_000, "oversize", "", T0),
                              DeadLetterIn("t", b"{}", "missing_field", "ts: required", T0)])
    small, big = store.journal.dead_letters()
    assert big.payload == b"y" * KEEP_BYTES and big.size == 1_000_000
    assert big.topic is not None and len(big.topic) == KEEP_BYTES
    assert small.payload == b"{}" and small.cut_from is None and small.size == 2


def test_the_table_is_capped_oldest_first_and_pruning_is_counted(store: Store) -> None:
    cap = 100 * 1024
    store.journal.max_dead_bytes = cap
    for i in range(200):
        store.journal.commit([], [DeadLetterIn("t", b"%05d" % i + b"z" * 9000, "oversize",
                                               "", T0 + i)])
    letters = store.journal.dead_letters(limit=1000)
    held = store.journal.counter(BYTES_COUNTER)
    assert held <= cap
    assert held == sum(len(d.payload) + 1 + 64 for d in letters)  # detail "" + topic "t"
    kept = sorted(int(d.payload[:5]) for d in letters)
    assert kept == list(range(200 - len(kept), 200))  # the newest, the oldest pruned first
    assert store.journal.counter(PRUNED_COUNTER) == 200 - len(kept)
    assert store.journal.counter("rejected.oversize") == 200  # every one still counted
    # Pruning on demand, to a smaller cap.
    assert store.journal.prune_dead_letters(10_000) > 0
    assert store.journal.counter(BYTES_COUNTER) <= 10_000


def test_dead_letters_max_mb_default_is_documented() -> None:
    assert DeadLettersConfig().max_mb == 64
    assert DeadLettersConfig(max_mb=0.5).max_bytes == 512 * 1024
    example = (ROOT / "config" / "example.yaml").read_text()
    assert re.search(r"^dead_letters:\n  max_mb: 64$", example, re.MULTILINE)


# --------------------------------------------------------------------------- 3. log redaction

_URL_SECRET = re.compile(
    r"(?P<pre>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]+:)(?P<secret>[^@\s]+)(?P<post>@)")
_QUERY_SECRET = re.compile(
    r"(?P<pre>[?&](?:token|password|pass|key|secret|apikey)=)(?P<secret>[^&\s]+)(?P<post>)",
    re.IGNORECASE)


def _old_redact(text: str) -> str:
    """The quadratic original, the reference for short lines."""
    for pattern in (_URL_SECRET, _QUERY_SECRET):
        text = pattern.sub(lambda m: f"{m.group('pre')}***{m.group('post')}", text)
    return text


_PIECES = st.sampled_from(["://", "a", "Z", "9", "+", ".", "-", ":", "/", "@", " ", "\t", "?",
                           "&", "=", "token=", "Pass=", "x", "é", "mailtos://u:p@h"])


@settings(max_examples=3000, deadline=None)
@given(st.lists(_PIECES, max_size=30).map("".join))
def test_redact_masks_exactly_what_the_old_patterns_masked(text: str) -> None:
    assert redact(text) == _old_redact(text)


def test_redact_examples() -> None:
    assert redact("mailtos://user:s3cr3t@mail.example.org?to=qp@example.org") == \
        "mailtos://user:***@mail.example.org?to=qp@example.org"
    assert redact("influx http://admin:pw@influx:8086/write?db=x&token=abc&u=1 done") == \
        "influx http://admin:***@influx:8086/write?db=x&token=***&u=1 done"
    assert redact("no secrets here: a/b/c") == "no secrets here: a/b/c"


@pytest.mark.parametrize(("line", "expected"), [
    # The slow case of the old pattern: a 60 000-character run of letters.
    ("stormwatch/v1/" + "a" * 60_000 + "/rg1/reading", None),
    ("a" * 60_000 + "://user:pw@host", "a" * 60_000 + "://user:***@host"),
    # Many candidates, each failing at once, or all swallowed by the first.
    ("a://b/" * 10_000, None),
    ("x://u:" * 10_000 + "mailtos://user:secret@host", "x://u:***@host"),
    ("x://u:" * 10_000 + " done", None),
], ids=["letters", "long-scheme", "no-user", "one-secret", "no-at"])
def test_a_60000_character_line_is_redacted_right_looking_at_each_url_once(
        monkeypatch: pytest.MonkeyPatch, line: str, expected: str | None) -> None:
    """Long hostile lines: the output is what the old pattern gave, and the scan asks
    where each ``://`` candidate's user part ends at most once (what makes it linear;
    the old pattern restarted at every letter)."""
    searches = 0
    real = logs._USER_END

    class Counting:
        def search(self, text: str, pos: int) -> re.Match[str] | None:
            nonlocal searches
            searches += 1
            return real.search(text, pos)

    monkeypatch.setattr(logs, "_USER_END", Counting())
    assert redact(line) == (line if expected is None else expected)
    assert searches <= line.count("://")


def test_clip_marks_what_it_cut() -> None:
    assert clip("short") == "short"
    cut = clip("t" * 60_000)
    assert cut.startswith("t" * TOPIC_MAX) and cut.endswith("…[60000 chars]")
    assert len(cut) < TOPIC_MAX + 20
    # A newline in a topic must not forge a log line (the fuzz target's report).
    assert clip("a/b\n12:00:00 WARNING forged\x00/c") == "a/b\\n12:00:00 WARNING forged\\x00/c"
    assert clip("né/ü") == "né/ü"


def test_the_reject_log_memory_stays_bounded(caplog: pytest.LogCaptureFixture) -> None:
    """5 000 distinct 60 000-character topics within one minute: at most ``max_keys``
    entries of at most a clipped topic each; every line clipped."""
    rejects = RejectLog(logging.getLogger("test.rejects"), max_keys=500)
    caplog.set_level(logging.WARNING, "test.rejects")
    for i in range(5000):
        topic = f"{PREFIX}/{i:05d}{'s' * 60_000}/rg1/reading"
        rejects.note(topic, "bad_topic", "topic: site id is invalid", now=1000.0 + i * 0.001)
        assert len(rejects.last) <= 500
    assert all(len(sensor) <= TOPIC_MAX + 20 for sensor, _ in rejects.last)
    assert max(len(r.getMessage()) for r in caplog.records) < 3 * TOPIC_MAX
    # Once per (sensor, reason) per minute still holds; older entries are forgotten.
    topic = f"{PREFIX}/{SITE}/rg1/reading"
    assert rejects.note(topic, "x", "d", 2000.0)
    assert not rejects.note(topic, "x", "d", 2030.0)
    assert rejects.note(topic, "y", "d", 2030.0)
    assert rejects.note(topic, "x", "d", 2061.0)
    assert len(rejects.last) == 2


# --------------------------------------------------------------------------- the health file


def test_the_health_file_is_rewritten_in_place(tmp_path: Path) -> None:
    health = HealthFile(tmp_path / "stormwatch.health")
    assert read_health(tmp_path) == {}
    assert health.open({"broker": {"state": "disconnected", "since_ms": 1}}) is None
    inode, size = health.path.stat().st_ino, health.path.stat().st_size
    assert health.update(disk_full_since_ms=5, store_error="x" * 5000)
    assert (health.path.stat().st_ino, health.path.stat().st_size) == (inode, size)
    data = read_health(tmp_path)
    assert data["disk_full_since_ms"] == 5 and len(data["store_error"]) <= 301
    assert data["broker"] == {"state": "disconnected", "since_ms": 1}
    health.close()


def test_store_trouble_backs_off_and_keeps_one_episode() -> None:
    trouble = StoreTrouble(first_s=1, max_s=4, rejoin_s=60)
    exc = sqlite3.OperationalError("database or disk is full")
    assert trouble.start(exc, disk_full=True, now=0, now_ms=1000)
    delays = []
    for now in range(1, 6):
        assert not trouble.start(exc, disk_full=True, now=now, now_ms=0)
        delays.append(trouble.retry_at - now)
    assert delays == [2, 4, 4, 4, 4]
    assert trouble.health() == {"disk_full_since_ms": 1000, "store_error": str(exc)}
    trouble.end(10)
    assert trouble.health() == {"disk_full_since_ms": None, "store_error": None}
    assert not trouble.start(exc, disk_full=True, now=30, now_ms=9999)  # within rejoin_s
    assert trouble.since_ms == 1000 and trouble.retry_at == 31
    trouble.end(31)
    assert trouble.start(exc, disk_full=True, now=200, now_ms=7777)
    assert trouble.since_ms == 7777


# --------------------------------------------------------------------------- with the daemon


def _status(cfg: Path) -> dict[str, Any]:
    out = cli("status", "--config", str(cfg), "--json")
    assert out.returncode == 0, out.stderr
    status: dict[str, Any] = json.loads(out.stdout)
    return status


@pytest.mark.integration
def test_daemon_a_repeated_seq_counts_once(tmp_path: Path, make_mosquitto: MakeMosquitto) -> None:
    broker = make_mosquitto()
    cfg = write_config(tmp_path, broker.port)
    daemon = DaemonProcess(cfg)
    try:
        daemon.start()
        now = int(time.time())
        pub = Publisher(broker.port)
        pub.send(reading_topic("rg1"), {"ts": now - 120, "precip_in": 0.30, "seq": 7})
        pub.send(reading_topic("rg1"), {"ts": now - 60, "precip_in": 0.30, "seq": 7})
        pub.send(reading_topic("rg1"), {"ts": now - 120, "precip_in": 0.30, "seq": 7})
        pub.send(reading_topic("rg1"), {"ts": now, "precip_in": 0.05, "seq": 8})
        pub.close()
        status = wait_until(lambda: (s := _status(cfg))["ingest"]["accepted"] == 2 and
                            s["ingest"]["duplicates"] == 1 and s, 20, "the four messages")
        assert status["ingest"]["rejected"] == {"seq_conflict": 1}
        log = daemon.log_text()
        assert "rejected message on stormwatch/v1/branch-meadows/rg1/reading: seq_conflict" \
            in log
        with store_of(cfg) as store:
            bodies = [r.body for r in store.journal.after(0) if r.kind == "reading"]
        assert sum(b["precip_in"] for b in bodies) == pytest.approx(0.35)
        assert daemon.stop() == 0
    finally:
        daemon.close()


@pytest.mark.integration
def test_daemon_hostile_topics_and_bodies_are_bounded(tmp_path: Path,
                                                      make_mosquitto: MakeMosquitto) -> None:
    """Five 60 000-character topics and 40 bodies of 20 kB, then a valid reading: the
    reading is journaled, the log quotes topics clipped, and the dead letters stay
    within ``dead_letters.max_mb`` with the pruning counted."""
    broker = make_mosquitto()
    cfg = write_config(tmp_path, broker.port, sections="dead_letters: {max_mb: 0.05}\n")
    daemon = DaemonProcess(cfg)
    try:
        daemon.start()
        now = int(time.time())
        pub = Publisher(broker.port)
        long_topics = [f"{PREFIX}/{'a' * 60_000}{i}/rg1/reading" for i in range(5)]
        pub.send_many([(t, {"ts": now, "tips_total": 1}) for t in long_topics])
        pub.send_many([(reading_topic("tb-up"), b"x" * 20_000) for _ in range(40)])
        pub.send(reading_topic("tb-up"), {"ts": now, "ntu": 2.5})
        pub.close()
        wait_until(lambda: journal_count(cfg) == 1, 30, "the valid reading")
        status = wait_until(lambda: (s := _status(cfg))["ingest"]["rejected"].get("oversize")
                            == 40 and s, 20, "every reject counted")
        assert status["ingest"]["rejected"]["bad_topic"] == 5
        assert status["ingest"]["dead_letters_pruned"] > 0
        with store_of(cfg) as store:
            letters = store.journal.dead_letters(limit=1000)
            held = store.journal.counter(BYTES_COUNTER)
        assert held <= 0.05 * 1024 * 1024
        assert all(len(d.payload) <= KEEP_BYTES for d in letters)
        assert {d.size for d in letters if d.reason == "oversize"} == {20_000}
        lines = daemon.log_text().splitlines()
        assert max(len(line) for line in lines) < 2000
        assert any("…[600" in line and "bad_topic" in line for line in lines)
        assert "Traceback" not in daemon.log_text()
        assert daemon.stop() == 0
    finally:
        daemon.close()

"""The log book's anchor: ``logbook anchor`` prints and sends the
chain head, ``logbook verify --anchor`` detects a rewrite the chain alone cannot, and
the report prints the head and reads its events from the log book.

The attacks are the ones the issue verified to pass ``verify``: with write access to
the SQLite file, drop the append-only triggers, edit (or delete and renumber) rows,
recompute every hash with the store's own hash function and the head the store keeps,
put the triggers back, and make the ``events`` table agree. Real SQLite, the real
engine host, the real command line as a subprocess, and Apprise posting to a real
HTTP receiver.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from contextlib import closing
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from monitor.cli import build_parser
from monitor.config.file import load_config
from monitor.contract.inputs import Inspection, Reading
from monitor.contract.times import MS_PER_HOUR, parse_iso
from monitor.host.engine import EngineHost
from monitor.host.rows import journal_in
from monitor.store import GENESIS_HASH, Store, canonical
from monitor.store.events import LOGBOOK_TRIGGERS, _chain_hash, _logbook_content
from monitor.store.opening import open_store
from monitor.views.logbook import current_events, verify_logbook

from ..support.commandkit import assert_refused, stormwatch
from ..support.daemonkit import SITE, write_config
from ..support.receivers import HttpReceiver, closed_port
from ..support.reportkit import ACTIVE, gauge_readings, table_cells

ROOT = Path(__file__).resolve().parents[2]
H = MS_PER_HOUR
NOW = parse_iso("2026-06-01T04:00:00Z")
HEAD_LINE = re.compile(r"log book head: row (\d+), sha256 ([0-9a-f]{64}), recorded (.+)")


def may_items() -> list[Reading | Inspection]:
    """May 2026 at the site (as in ``test_report_month``): two storms, three inspections,
    one of them backdated."""
    may3, may13 = parse_iso("2026-05-03T14:00:00Z"), parse_iso("2026-05-13T14:00:00Z")
    items: list[Reading | Inspection] = list(gauge_readings(
        parse_iso("2026-05-01T04:00:00Z"), NOW, [(may3, 70), (may13, 61)]))
    items += [
        Inspection(site=SITE, inspector="J. Rivera", ts_ms=may3 + 6 * H, kind="storm",
                   credentials=("CPESC 12345",), entered_ms=may3 + 7 * H),
        Inspection(site=SITE, inspector="A. Lee", ts_ms=parse_iso("2026-05-14T12:00:00Z"),
                   kind="storm", entered_ms=parse_iso("2026-05-17T12:00:00Z")),
        Inspection(site=SITE, inspector="J. Rivera", ts_ms=parse_iso("2026-05-20T14:00:00Z"),
                   entered_ms=parse_iso("2026-05-20T15:00:00Z")),
    ]
    return sorted(items, key=lambda it: it.ts_ms)


def build_site(tmp_path: Path, *, sections: str = "", backlog: bool = False) -> Path:
    """The month through the real engine host into a real store, ticked to June 1.

    ``backlog``: the readings arrive a day after their time, as a node replaying its
    buffer, and the host coalesces as the daemon does: their events wait for their
    log book rows (``deferred``), which are not settled here.
    """
    path = write_config(tmp_path, 1, sections=sections, name=f"Branch Meadows\n{ACTIVE}")
    config = load_config(path, env={})
    items = may_items()
    with open_store(config) as store:
        host = EngineHost.restore(config, store, clock=lambda: NOW / 1000)
        host.coalesce = backlog
        store.journal.commit([journal_in(it, topic=None, received_ms=NOW if backlog else None)
                              for it in items])
        host.catch_up()
        if not backlog:
            host.tick()
    return path


def db_of(cfg: Path) -> Path:
    return cfg.parent / "state" / "stormwatch.db"


def logbook(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return stormwatch(cfg, ("logbook", *args))


def head_of(cfg: Path) -> tuple[int, str]:
    with Store(db_of(cfg), readonly=True) as store:
        return store.events.logbook_head()


def row_hash(cfg: Path, seq: int) -> str:
    with closing(sqlite3.connect(db_of(cfg))) as c:
        return str(c.execute("SELECT hash FROM logbook WHERE seq = ?", (seq,)).fetchone()[0])


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return build_site(tmp_path)


# --------------------------------------------------------------------------- the attacker

Row = list[Any]  # seq, recorded_ms, site, type, event_id, revision, body (canonical JSON)


def rewrite_chain(cfg: Path, edit: Callable[[list[Row]], list[Row]],
                  then: Callable[[sqlite3.Connection], object] | None = None) -> None:
    """Rewrite the log book the way the store writes it, and leave no trace ``verify``
    sees: triggers dropped and put back, every row renumbered and rehashed with the
    store's hash function, the head in ``meta`` moved; ``then`` makes the events table
    agree, in the same transaction."""
    with closing(sqlite3.connect(db_of(cfg), isolation_level=None)) as c:
        triggers = [sql for (sql,) in c.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'logbook'")]
        assert len(triggers) == len(LOGBOOK_TRIGGERS)
        c.execute("BEGIN IMMEDIATE")
        for name in LOGBOOK_TRIGGERS:
            c.execute(f"DROP TRIGGER {name}")
        rows = edit([list(r) for r in c.execute(
            "SELECT seq, recorded_ms, site, type, event_id, revision, body FROM logbook"
            " ORDER BY seq")])
        c.execute("DELETE FROM logbook")
        prev = GENESIS_HASH
        for seq, (_, recorded, site, type_, eid, revision, body) in enumerate(rows, 1):
            sealed = canonical(_logbook_content(seq, recorded, site, type_, eid, revision,
                                                json.loads(body)))
            digest = _chain_hash(prev, sealed)
            c.execute("INSERT INTO logbook (seq, recorded_ms, site, type, event_id, revision,"
                      " body, canonical, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      (seq, recorded, site, type_, eid, revision, body, sealed, prev, digest))
            prev = digest
        c.execute("UPDATE meta SET value = ? WHERE key = 'logbook_head_seq'", (len(rows),))
        c.execute("UPDATE meta SET value = ? WHERE key = 'logbook_head_hash'", (prev,))
        if then is not None:
            then(c)
        for sql in triggers:
            c.execute(sql)
        c.execute("COMMIT")


def first(rows: list[Row], type_: str) -> int:
    """The index of the first row of ``type_``."""
    return next(i for i, r in enumerate(rows) if r[3] == type_)


def lower_the_second_storm(cfg: Path) -> int:
    """Edit the second storm's storm_qualified row (qualified at 0.50 in, now 0.45 in:
    below the threshold) and recompute the chain; return the seq of the edited row."""
    edited: list[Row] = []

    def edit(rows: list[Row]) -> list[Row]:
        row = [r for r in rows if r[3] == "storm_qualified"][1]
        body = json.loads(row[6])
        assert body["total_in"] == pytest.approx(0.5)
        body["total_in"] = 0.45
        row[6] = canonical(body)
        edited.append(row)
        return rows

    rewrite_chain(cfg, edit, lambda c: c.execute(
        "UPDATE events SET body = ? WHERE id = ? AND revision = ?",
        (edited[0][6], edited[0][4], edited[0][5])))
    return int(edited[0][0])


# --------------------------------------------------------------------------- anchor


def test_anchor_prints_the_head_in_full(site: Path) -> None:
    seq, digest = head_of(site)
    assert seq > 10
    proc = logbook(site, "anchor")
    assert proc.returncode == 0, proc.stderr
    line, hint = proc.stdout.splitlines()
    match = HEAD_LINE.fullmatch(line)
    assert match is not None, line
    assert (int(match[1]), match[2]) == (seq, digest)
    # Recorded when the host recorded it, in the site's time with the zone named.
    assert match[3] == "2026-06-01 00:00 EDT"
    assert hint.startswith(f"hash chain intact ({seq} rows); check later with: ")
    assert hint.endswith(f"logbook verify --config {site} --anchor {seq}:{digest}")

    data = json.loads(logbook(site, "anchor", "--json").stdout)
    assert data == {"seq": seq, "hash": digest, "anchor": f"{seq}:{digest}",
                    "recorded_at": "2026-06-01T04:00:00Z",
                    "recorded_local": "2026-06-01 00:00 EDT", "rows": seq, "intact": True,
                    "problems": []}


def test_anchor_of_a_broken_chain_is_exit_1(site: Path) -> None:
    with closing(sqlite3.connect(db_of(site), isolation_level=None)) as c:
        c.execute("DROP TRIGGER logbook_no_update")
        c.execute("UPDATE logbook SET body = replace(body, '\"total_in\":0.5', "
                  "'\"total_in\":0.4') WHERE type = 'storm_qualified'")
    proc = logbook(site, "anchor")
    assert proc.returncode == 1
    assert HEAD_LINE.fullmatch(proc.stdout.splitlines()[0])  # still printed, for the record
    assert "hash chain intact" not in proc.stdout
    assert "edited" in proc.stderr and "logbook_no_update" in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("logbook anchor: the hash chain does not"
                                                   " verify")


# --------------------------------------------------------------------------- verify --anchor


def test_verify_against_an_anchor_that_holds(site: Path) -> None:
    seq, digest = head_of(site)
    for anchor in (f"{seq}:{digest}", digest, f" {seq}:{digest.upper()} "):
        proc = logbook(site, "verify", "--anchor", anchor)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == (f"logbook verify: OK ({seq} rows, hash chain intact; anchor row"
                               f" {seq} unchanged, 0 row(s) after it)\n")
    # An anchor of an earlier row, and rows appended since: still holds.
    early = row_hash(site, 3)
    proc = logbook(site, "verify", "--anchor", f"3:{early}")
    assert proc.returncode == 0, proc.stderr
    assert f"anchor row 3 unchanged, {seq - 3} row(s) after it" in proc.stdout
    assert logbook(site, "verify", "--anchor", f"0:{GENESIS_HASH}").returncode == 0


def test_edit_and_recompute_passes_verify_but_not_the_anchor(site: Path) -> None:
    seq, digest = head_of(site)
    early = row_hash(site, 2)
    edited = lower_the_second_storm(site)
    assert 2 < edited < seq
    # The finding: the rewritten chain (and events table) verify.
    plain = logbook(site, "verify")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.startswith(f"logbook verify: OK ({seq} rows, hash chain intact")
    assert head_of(site) != (seq, digest)
    # Against the head taken before: caught, saying what differs.
    for anchor in (f"{seq}:{digest}", digest):
        proc = logbook(site, "verify", "--anchor", anchor)
        assert proc.returncode == 1, proc.stdout
        lines = proc.stderr.splitlines()
        assert lines[-1] == f"logbook verify: FAILED (1 problem(s) in {seq} rows)"
        assert "Traceback" not in proc.stderr
    proc = logbook(site, "verify", "--anchor", f"{seq}:{digest}")
    assert proc.stderr.splitlines()[0] == (
        f"anchor: row {seq} now has hash {head_of(site)[1]}, the anchor has {digest}:"
        f" row {seq} or a row before it was rewritten since the anchor was taken")
    assert logbook(site, "verify", "--anchor", digest).stderr.startswith(
        f"anchor: no row has hash {digest} any more")
    # An anchor taken before the edited row still holds: rows after an anchor are
    # only as safe as the next one.
    assert logbook(site, "verify", "--anchor", f"2:{early}").returncode == 0


def test_delete_renumber_and_rehash_fails_the_anchor(site: Path) -> None:
    seq, digest = head_of(site)
    middle = seq - 3
    mid_hash = row_hash(site, middle)
    gone: dict[str, Any] = {}

    def delete_the_backdated_inspection(rows: list[Row]) -> list[Row]:
        i = first(rows, "inspection_backdated")
        gone.update(seq=rows[i][0], id=rows[i][4])
        return rows[:i] + rows[i + 1:]

    rewrite_chain(site, delete_the_backdated_inspection,
                  lambda c: c.execute("DELETE FROM events WHERE id = ?", (gone["id"],)))
    assert gone["seq"] < middle
    plain = logbook(site, "verify")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.startswith(f"logbook verify: OK ({seq - 1} rows, hash chain intact")

    proc = logbook(site, "verify", "--anchor", f"{seq}:{digest}")
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[0] == (
        f"anchor: row {seq} is gone (the log book ends at row {seq - 1}): rows were deleted"
        " since the anchor was taken")
    proc = logbook(site, "verify", "--anchor", f"{middle}:{mid_hash}")
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"anchor: row {middle} now has hash ")
    proc = logbook(site, "verify", "--anchor", mid_hash)
    assert proc.returncode == 1 and proc.stderr.startswith(f"anchor: no row has hash {mid_hash}")


def test_an_edit_of_the_events_table_alone_fails_verify(site: Path) -> None:
    """The issue's third finding: edits to the ``events`` table passed ``verify``."""
    with closing(sqlite3.connect(db_of(site), isolation_level=None)) as c:
        c.execute("UPDATE events SET body = replace(body, '\"total_in\":0.5,', "
                  "'\"total_in\":0.45,') WHERE type = 'storm_qualified'")
        (n,) = c.execute("SELECT changes()").fetchone()
    assert n >= 1
    proc = logbook(site, "verify")
    assert proc.returncode == 1
    problems = proc.stderr.splitlines()[:-1]
    assert problems and all(re.fullmatch(
        r"events table: event \S+ \(storm_qualified\) differs from log book row \d+ "
        r"\(total_in\): edited outside stormwatch", p) for p in problems), problems


@pytest.mark.parametrize("rehash", [True, False], ids=["no event, rehashed", "not JSON"])
def test_an_unreadable_row_is_a_verdict_not_a_traceback(site: Path, tmp_path: Path,
                                                        rehash: bool) -> None:
    seq, digest = head_of(site)
    if rehash:
        def blank(rows: list[Row]) -> list[Row]:
            rows[4][6] = canonical({"note": "nothing happened"})
            return rows
        rewrite_chain(site, blank)
    else:
        with closing(sqlite3.connect(db_of(site), isolation_level=None)) as c:
            c.execute("DROP TRIGGER logbook_no_update")
            c.execute("UPDATE logbook SET body = 'nothing happened' WHERE seq = 5")
    for args in (("verify",), ("verify", "--anchor", f"{seq}:{digest}"), ("anchor",)):
        proc = logbook(site, *args)
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert "logbook row 5: edited" in proc.stderr or \
            "log book row 5: its body is not an event of the vocabulary" in proc.stderr, proc.stderr
    proc = stormwatch(site, ("report", "--site", SITE, "--from", "2026-05-01", "--to",
                             "2026-05-31"), out=tmp_path / "r.html")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("stormwatch report: ")
    assert proc.stderr.rstrip().endswith("; no report written")
    assert not (tmp_path / "r.html").exists()


BAD_ANCHORS = [
    ("not hex", "xyz"),
    ("short", "12:" + "ab" * 31),
    ("long", "a" * 65),
    ("row not a number", "row12:" + "a" * 64),
    ("negative row", "-1:" + "a" * 64),
    ("row 0 not genesis", "0:" + "a" * 64),
    ("empty", ""),
]


@pytest.mark.parametrize(("name", "anchor"), BAD_ANCHORS, ids=[n for n, _ in BAD_ANCHORS])
def test_a_malformed_anchor_is_exit_2(site: Path, name: str, anchor: str) -> None:
    # --anchor=VALUE: argparse would take "-1:..." after a space for an option.
    assert_refused(logbook(site, "verify", f"--anchor={anchor}"), "stormwatch logbook: --anchor: ",
                   "is not an anchor")


@pytest.mark.parametrize("args", [("verify", "--json"), ("anchor", "--anchor", "1:" + "a" * 64),
                                  ("verify", "--send"), ("anchor", "--tag", "qp")])
def test_flags_of_another_action_are_exit_2(site: Path, args: tuple[str, ...]) -> None:
    assert_refused(logbook(site, *args), "stormwatch logbook: ", "goes with")


# --------------------------------------------------------------------------- --send


def notify_section(*targets: tuple[str, str]) -> str:
    lines = "".join(f'    - {{url: "{url}", tags: [{tag}]}}\n' for url, tag in targets)
    return f"notify:\n  targets:\n{lines}"


def test_send_reaches_the_officer_with_the_full_hash(tmp_path: Path, http: HttpReceiver) -> None:
    cfg = build_site(tmp_path, sections=notify_section(
        (f"json://{http.base}/officer", "officer"), (f"json://{http.base}/qp", "qp")))
    seq, digest = head_of(cfg)
    proc = logbook(cfg, "anchor", "--send")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == f"sent   json://{http.base}/officer [officer]"
    (post,) = http.posts  # the officer only: the qp target is not asked
    assert post.path == "/officer"
    assert post.body["title"] == f"stormwatch log book anchor: row {seq} (Branch Meadows)"
    message = post.body["message"]
    assert f"SHA-256: {digest}\n" in message
    assert f"Log book head: row {seq}, recorded 2026-06-01 00:00 EDT" in message
    assert f"Chain check: intact ({seq} rows)" in message
    assert f"--anchor {seq}:{digest}" in message
    # What was sent checks out against the log book, as its reader would use it.
    assert logbook(cfg, "verify", "--anchor", f"{seq}:{digest}").returncode == 0


def test_send_failures_are_reported(tmp_path: Path, http: HttpReceiver) -> None:
    down = f"json://127.0.0.1:{closed_port()}/officer"
    cfg = build_site(tmp_path, sections=notify_section(
        (f"json://{http.base}/officer", "officer"), (down, "officer")))
    proc = logbook(cfg, "anchor", "--send", "--json")
    assert proc.returncode == 1
    sent = json.loads(proc.stdout)["sent"]
    assert [s["ok"] for s in sent] == [True, False]
    assert proc.stderr.splitlines()[-1].startswith(
        "logbook anchor: 1 of 2 target(s) did not take the anchor: json://127.0.0.1:")
    assert len(http.posts) == 1

    # No target receives the tag: nothing to send to is a configuration error.
    (tmp_path / "qp-only").mkdir()
    lonely = build_site(tmp_path / "qp-only", sections=notify_section(
        (f"json://{http.base}/qp", "qp")))
    assert_refused(logbook(lonely, "anchor", "--send"), "no notification target receives tag"
                   " 'officer'")
    assert len(http.posts) == 1


def test_the_shipped_units_run_anchor_send_weekly(tmp_path: Path) -> None:
    units = ROOT / "deploy" / "systemd"
    service = (units / "stormwatch-anchor.service").read_text()
    timer = (units / "stormwatch-anchor.timer").read_text()
    (exec_start,) = [line.split("=", 1)[1] for line in service.splitlines()
                     if line.startswith("ExecStart=")]
    program, *argv = exec_start.split()
    assert program.endswith("/stormwatch")
    args = build_parser().parse_args(argv)
    assert (args.command, args.action, args.send) == ("logbook", "anchor", True)
    assert "Type=oneshot" in service and "User=stormwatch" in service
    assert "OnCalendar=Mon *-*-* 07:00:00" in timer and "Persistent=true" in timer
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        return  # the parse above is the check that matters; systemd's own is a bonus
    # systemd-analyze checks that ExecStart's program exists: point it at one that does.
    (tmp_path / "stormwatch-anchor.service").write_text(
        service.replace(f"ExecStart={program}", "ExecStart=/bin/true"))
    (tmp_path / "stormwatch-anchor.timer").write_text(timer)
    proc = subprocess.run([analyze, "verify", str(tmp_path / "stormwatch-anchor.service"),
                           str(tmp_path / "stormwatch-anchor.timer")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr


# --------------------------------------------------------------------------- the report


def report(cfg: Path, out: Path) -> str:
    proc = stormwatch(cfg, ("report", "--site", SITE, "--from", "2026-05-01", "--to",
                            "2026-05-31"), out=out)
    assert proc.returncode == 0, proc.stderr
    return out.read_text(encoding="utf-8")


def header(html: str) -> dict[str, str]:
    table = html.split("<h2>", 1)[0]
    return {unescape(k): unescape(v) for k, v in
            re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", table)}


def test_the_report_prints_the_head(site: Path, tmp_path: Path) -> None:
    seq, digest = head_of(site)
    head = header(report(site, tmp_path / "may.html"))
    assert head["Log book head"] == (
        f"row {seq}, sha256 {digest}, recorded 2026-06-01 00:00 EDT; the events below are"
        f" read from the log book up to this row (anchor {seq}:{digest})")
    assert head["Log book check"] == "hash chain intact"
    assert "Not yet in the log book" not in head


def test_the_report_reads_the_log_book_not_the_events_table(site: Path, tmp_path: Path) -> None:
    before = report(site, tmp_path / "before.html")
    with closing(sqlite3.connect(db_of(site), isolation_level=None)) as c:
        # The second storm's inspection erased from the events table only.
        c.execute("DELETE FROM events WHERE type = 'inspection_recorded'"
                  " AND body LIKE '%A. Lee%'")
        (n,) = c.execute("SELECT changes()").fetchone()
    assert n == 1
    after = report(site, tmp_path / "after.html")
    assert table_cells(after, "Inspections") == table_cells(before, "Inspections")
    assert table_cells(after, "Summary") == table_cells(before, "Summary")
    assert header(after)["Log book check"] == (
        "FAILED: 1 problem(s); run `stormwatch logbook verify`")


def test_report_input_from_the_log_book_is_the_events_table(site: Path) -> None:
    with Store(db_of(site), readonly=True) as store:
        recorded = current_events(store, SITE)
        assert recorded.pending == 0
        assert recorded.events == store.events.current(SITE)
        assert len(recorded.events) > 20
        assert recorded.head.seq == store.events.logbook_head()[0]


def test_a_backlog_being_applied_changes_no_count(tmp_path: Path) -> None:
    """While a backlog is applied, its events wait for their log book rows
    (``deferred``): the report counts them all the same, and says so."""
    cfg = build_site(tmp_path, backlog=True)
    config = load_config(cfg, env={})
    with Store(db_of(cfg), readonly=True) as store:
        assert store.events.deferred_count() > 0
        waiting = current_events(store, SITE)
        assert waiting.pending > 0
        assert waiting.events == store.events.current(SITE)
        assert verify_logbook(store).problems == []  # not an edit: their rows are to come
    during = report(cfg, tmp_path / "during.html")
    assert header(during)["Not yet in the log book"].startswith(
        f"{waiting.pending} event(s) of a backlog still being applied")

    with open_store(config) as store:
        host = EngineHost.restore(config, store, clock=lambda: NOW / 1000)
        assert host.settle_backfill(all_sites=True) > 0
        assert store.events.deferred_count() == 0
        settled = current_events(store, SITE)
        assert settled.pending == 0
        assert settled.events == store.events.current(SITE) == waiting.events
    after = report(cfg, tmp_path / "after.html")
    assert "Not yet in the log book" not in header(after)
    for section in ("Summary", "Storms", "Inspections", "Corrective actions"):
        assert table_cells(after, section) == table_cells(during, section), section

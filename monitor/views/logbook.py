"""The site log book (§ 134-9A(2): "Inspection reports shall be maintained in a
site log book"): hash-chain verification, the anchor, and the events as the log
book holds them (its export, as people read it, is ``logexport.py``).

Rows are appended by the store in the same transaction as the events they
record; each carries the SHA-256 of the previous row, so an edited, deleted or
reordered row breaks the chain and ``logbook verify`` says where.

What the chain cannot show by itself is a *whole* rewrite: someone who can
write the database may edit a row and recompute every later hash (and the
head the store keeps), and the chain is intact again. The anchor closes that
gap. ``logbook anchor`` prints the head (row number and hash), and sends it to
the officer on a schedule (``deploy/systemd/stormwatch-anchor.timer``), so a
copy lives where the site cannot change it. Row *n*'s hash covers, through the
links, every row before it; so ``logbook verify --anchor N:HASH`` passes only
while row N still has that hash, i.e. while rows 1 to N are exactly what they
were when the anchor was taken. Rows after N are only as safe as the next
anchor.

The report reads its events from here (``current_events``), not from the
``events`` table, so what it shows is what the chain covers; ``verify`` also
compares the ``events`` table with the log book, since other readers (status,
the InfluxDB exporter) read that table and an edit there breaks no hash, and
the journal's inspections (``journalcheck.py``), from which the engine's
state is made again after a restart without its snapshot.

Every function takes an open (read-only) store: the caller refuses a missing
or unreadable database (``commands/common.py``), because an empty log book and
no log book are different answers, and only the first is "OK".

Times are the site's local time with the zone named (``localtime.py``), as
in ``status`` and the report: a log book is read by people at the site.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final
from zoneinfo import ZoneInfo

from ..config import Config
from ..config.invocation import program
from ..contract.events import Event
from ..contract.localtime import local_text
from ..contract.message import INFO, WARNING, Message, md_escape
from ..errors import CheckFailed
from ..store import GENESIS_HASH, LogbookRow, Store
from ..store.archive import ArchiveFile, check_file
from ..store.events import ARCHIVED, RECORD_TYPES
from ..store.photos import check_photo
from .journalcheck import journal_problems

#: The log book rows whose ``photos`` are evidence (``photo_problems``).
PHOTO_TYPES: Final = frozenset({"inspection_recorded", "corrective_action_done"})

# --------------------------------------------------------------------------- the head


@dataclass(frozen=True, slots=True)
class Head:
    """The last row of the chain: its number, its hash and when it was recorded.

    Row 0 with the genesis hash (64 zeros) is the empty log book.
    """

    seq: int
    hash: str
    recorded_at: str | None = None

    @property
    def anchor(self) -> str:
        """The head as ``logbook verify --anchor`` takes it back: ``SEQ:HASH``."""
        return f"{self.seq}:{self.hash}"

    def describe(self, zone: ZoneInfo) -> str:
        """``row 1234, sha256 <64 hex>, recorded 2026-11-30 14:00 EST``: the full hash,
        as a shortened one could not be checked against."""
        if self.seq == 0:
            return f"row 0 (empty), sha256 {self.hash}"
        when = f", recorded {local_text(self.recorded_at, zone)}" if self.recorded_at else ""
        return f"row {self.seq}, sha256 {self.hash}{when}"


def head_of(rows: Sequence[LogbookRow]) -> Head:
    """The head of the chain as its rows stand (the store's own copy of it, in
    ``meta``, is compared with them by ``logbook_verify``)."""
    if not rows:
        return Head(0, GENESIS_HASH)
    return Head(rows[-1].seq, rows[-1].hash, rows[-1].recorded_at)


def chain_zone(config: Config) -> ZoneInfo:
    """Where chain-wide times are shown: the sites' zone when they share one (the
    usual case), else UTC, named as such: the chain spans every site."""
    zones = {s.timezone for s in config.sites}
    return config.sites[0].zone if len(zones) == 1 else ZoneInfo("UTC")


# --------------------------------------------------------------------------- the anchor

ANCHOR_FORM: Final = "give SEQ:HASH or HASH, as `logbook anchor` prints them"
_HEX64: Final = re.compile(r"[0-9a-f]{64}")
_ROW: Final = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class Anchor:
    """A head taken earlier and kept elsewhere: its hash, and its row when given."""

    seq: int | None
    hash: str


def parse_anchor(text: str) -> Anchor:
    """``SEQ:HASH`` or ``HASH``; ``ValueError`` saying what is wrong with it."""
    seq_text, sep, hash_text = text.strip().rpartition(":")
    hash_text = hash_text.strip().lower()
    if not _HEX64.fullmatch(hash_text):
        raise ValueError(f"{text!r} is not an anchor: the hash must be 64 hex digits"
                         f" ({ANCHOR_FORM})")
    seq: int | None = None
    if sep:
        if not _ROW.fullmatch(seq_text.strip()):
            raise ValueError(f"{text!r} is not an anchor: {seq_text!r} is not a row number"
                             f" ({ANCHOR_FORM})")
        seq = int(seq_text)
        if seq == 0 and hash_text != GENESIS_HASH:
            raise ValueError(f"{text!r} is not an anchor: row 0 is the empty log book,"
                             " whose hash is 64 zeros")
    return Anchor(seq, hash_text)


def check_anchor(rows: Sequence[LogbookRow], anchor: Anchor) -> tuple[list[str], str | None]:
    """Whether the chain still holds the anchored row, unchanged, with the next row
    linked to it: (problems, what held, or None).

    Together with ``logbook_verify`` (every row's hash follows from its content,
    every link holds) this means rows 1 to N are what they were when the anchor
    was taken: a row rewritten at or before N changes every hash from it on,
    including N's. Which of those rows changed cannot be told from the anchor.
    """
    if anchor.hash == GENESIS_HASH and anchor.seq in (None, 0):
        return [], "anchor row 0 (the empty log book)"
    by_seq = {r.seq: r for r in rows}
    found = [r.seq for r in rows if r.hash == anchor.hash]
    seq = anchor.seq
    if seq is None:
        if not found:
            return [f"anchor: no row has hash {anchor.hash} any more: the log book was"
                    " rewritten up to the anchored row since the anchor was taken (or the"
                    " anchor is of another log book)"], None
        seq = found[0]
    else:
        moved = (f"; the anchored hash is at row {found[0]} now (rows renumbered)"
                 if found and found[0] != seq else "")
        row = by_seq.get(seq)
        if row is None:
            last = rows[-1].seq if rows else 0
            return [f"anchor: row {seq} is gone (the log book ends at row {last}): rows were"
                    f" deleted since the anchor was taken{moved}"], None
        if row.hash != anchor.hash:
            return [f"anchor: row {seq} now has hash {row.hash}, the anchor has {anchor.hash}:"
                    f" row {seq} or a row before it was rewritten since the anchor was taken"
                    f"{moved}"], None
    successor = by_seq.get(seq + 1)
    if successor is not None and successor.prev_hash != anchor.hash:
        return [f"anchor: row {seq + 1} does not link to the anchored row {seq} (rows after"
                " the anchor were rewritten from a different row)"], None
    after = sum(1 for r in rows if r.seq > seq)
    return [], f"anchor row {seq} unchanged, {after} row(s) after it"


# --------------------------------------------------------------------------- verify


@dataclass(frozen=True, slots=True)
class Verification:
    """What ``logbook verify`` found: one line per problem (none when intact), the rows
    checked, the head, and what an anchor showed when one was given and held."""

    problems: list[str]
    rows: int
    head: Head
    anchored: str | None = None


def verify_logbook(store: Store, anchor: Anchor | None = None,
                   photos_dir: Path | None = None,
                   sites: Collection[str] | None = None) -> Verification:
    """The chain (``EventLog.logbook_verify``), the ``events`` table and the journal's
    inspections (``journalcheck.py``; ``sites``: the configured ones) against the log
    book, when given an anchor, and with ``photos_dir`` every photo the log book
    names (``photo_problems``)."""
    problems: list[str] = []
    rows: list[LogbookRow] | None = None
    # One snapshot for the rows and the tables they are compared with: a daemon
    # recording between two reads would look like an edit.
    with store.db.read():
        try:
            rows = store.events.logbook()
            problems += _events_table_problems(store, rows)
            problems += journal_problems(store, archived=True, sites=sites, logbook=rows)
        except LogbookUnreadable as exc:
            problems.append(str(exc))
        except ValueError:
            pass  # a body that is not JSON: logbook_verify names its row
    # The chain is checked after that snapshot, so it covers every row read in it.
    problems = store.events.logbook_verify() + problems
    if rows is None:
        seq, digest = store.events.logbook_head()
        if anchor is not None:
            problems.append("anchor: not checked, as the log book cannot be read")
        return Verification(problems, seq, Head(seq, digest))
    anchored = None
    if anchor is not None:
        found, anchored = check_anchor(rows, anchor)
        problems += found
    if photos_dir is not None:
        problems += photo_problems(rows, photos_dir)
    problems += archive_problems(store, rows)
    return Verification(problems, len(rows), head_of(rows), anchored)


def photo_problems(rows: Sequence[LogbookRow], photos_dir: Path) -> list[str]:
    """Each photo an inspection or a corrective action reported done names in the log
    book (by SHA-256, sealed by the chain) that is missing under ``photos_dir`` or no
    longer has that hash: the chain proves which photos were taken, the file must
    still be that photo."""
    problems, seen = [], set()
    for row in rows:
        if row.type not in PHOTO_TYPES:
            continue
        for photo in row.body.get("photos") or ():
            sha = photo.get("sha256") if isinstance(photo, dict) else None
            if not isinstance(sha, str) or sha in seen:
                continue
            seen.add(sha)
            wrong = check_photo(photos_dir, sha)
            if wrong is not None:
                what = (f"inspection at {row.body.get('inspected_at')}"
                        if row.type == "inspection_recorded" else
                        f"corrective action {row.body.get('action_id')} done at"
                        f" {row.body.get('at')}")
                problems.append(f"log book row {row.seq} ({row.site}, {what}): {wrong}")
    return problems


def archive_problems(store: Store, rows: Sequence[LogbookRow]) -> list[str]:
    """Each archive file the log book names (``journal_archived`` rows: name and
    SHA-256 sealed by the chain) that is missing, unreadable or edited, and an
    archive index that no longer agrees with the log book: archived journal rows
    are the record too, and the chain is what proves which files there were."""
    index = {f.name: f for f in store.journal.archive.files()}
    root = store.journal.archive.root
    problems, sealed = [], set()
    for row in rows:
        if row.type != ARCHIVED:
            continue
        name, sha = row.body.get("file"), row.body.get("sha256")
        if not isinstance(name, str) or not isinstance(sha, str):
            continue  # an edited body: the chain check names the row
        sealed.add(name)
        held = index.get(name)
        if held is None or held.sha256 != sha:
            problems.append(f"archive index: {name} (log book row {row.seq}) is missing or"
                            " altered in the database: edited outside stormwatch")
        wrong = check_file(root, replace(held or _sealed_file(name, sha, row), sha256=sha,
                                         logbook_seq=row.seq))
        if wrong is not None:
            problems.append(wrong)
    for name in sorted(index.keys() - sealed):
        problems.append(f"archive index: {name} has no log book row: added outside stormwatch")
    return problems


def _sealed_file(name: str, sha: str, row: LogbookRow) -> ArchiveFile:
    """The file a log book row names, for a check when the index lost it."""
    return ArchiveFile(name, row.site, str(row.body.get("month", "")), 0, 0, 0, 0, 0, 0, sha,
                       row.seq)


class LogbookUnreadable(CheckFailed):
    """A log book row (or a stored event) is no event of the vocabulary any more: it was edited, and
    nothing can be read from it; ``logbook verify`` says more."""


def _latest(rows: Iterable[LogbookRow]) -> dict[str, tuple[LogbookRow, Event]]:
    """The latest revision of each event id in the log book, and the row holding it.

    A row's body is the event's full JSON, sealed by the chain. Of two rows with
    the same revision (a live revision logged, then logged again when a backlog
    deferral settles) the later one is kept; they hold the same event.
    """
    out: dict[str, tuple[LogbookRow, Event]] = {}
    for row in rows:
        if row.type in RECORD_TYPES:
            continue  # an archive file's row: sealed by the chain, no event of the vocabulary
        try:
            event = Event.from_json(row.body)
        except (KeyError, TypeError, ValueError) as exc:
            raise LogbookUnreadable(f"log book row {row.seq}: its body is not an event of"
                                    f" the vocabulary ({exc})") from None
        held = out.get(event.id)
        if held is None or event.revision >= held[1].revision:
            out[event.id] = (row, event)
    return out


def _pending_ids(store: Store, site: str | None = None) -> set[str]:
    """Ids of the events held back while a site's backlog is applied: their settled
    revision gets its log book row later (``EventLog.settle_deferred``).

    The store has no reader for its ``deferred`` table (only ``deferred_count``),
    so this one read-only query is here; it belongs in ``EventLog``.
    """
    sql = "SELECT DISTINCT e.id FROM deferred AS d JOIN events AS e ON e.seq = d.event_seq"
    params: tuple[str, ...] = ()
    if site is not None:
        sql += " WHERE d.site = ?"
        params = (site,)
    return {str(eid) for (eid,) in store.db.conn.execute(sql, params)}


def _events_table_problems(store: Store, rows: Sequence[LogbookRow]) -> list[str]:
    """Where the current set of the ``events`` table (``EventLog.current``) differs
    from the log book's, one line per event.

    Both are written in one transaction, and only the latest revision of an event
    is authoritative, so away from a backlog being applied (whose events are
    skipped: their rows are still to come) they hold the same events. A
    difference is an edit outside stormwatch; the hash chain cannot see it.
    """
    pending = _pending_ids(store)
    try:
        table = {e.id: e for e in store.events.current()}
    except (KeyError, TypeError, ValueError):
        return ["events table: a stored event is no event of the vocabulary any more:"
                " edited outside stormwatch"]
    book = {eid: held for eid, held in _latest(rows).items() if not held[1].retracted}
    problems = []
    for eid, (row, logged) in sorted(book.items(), key=lambda item: item[1][0].seq):
        if eid in pending:
            continue
        stored = table.get(eid)
        if stored is None:
            problems.append(f"events table: event {eid} ({logged.type}, log book row"
                            f" {row.seq}) is missing or retracted: removed outside stormwatch")
        elif stored != logged:
            ours, theirs = stored.to_json(), logged.to_json()
            fields = ", ".join(sorted(k for k in ours.keys() | theirs.keys()
                                      if ours.get(k) != theirs.get(k)))
            problems.append(f"events table: event {eid} ({logged.type}) differs from log book"
                            f" row {row.seq} ({fields}): edited outside stormwatch")
    for eid, stored in table.items():
        if eid not in book and eid not in pending:
            problems.append(f"events table: event {eid} ({stored.type}) is not in the log"
                            " book: added outside stormwatch")
    return problems


# --------------------------------------------------------------------------- the current set


@dataclass(frozen=True, slots=True)
class Recorded:
    """A site's events as the log book holds them, and the head that covers them.

    ``events`` is the current set (monitor/README.md, "Architecture": the latest revision of each
    id,
    retracted ones dropped) in ``EventLog.current``'s order (event time, id).
    ``pending`` counts the events of a backlog still being applied, taken from
    the ``events`` table because their log book rows are not written yet: left
    out, a report made during a backfill would count differently from one made
    a minute later, when they settle.
    """

    head: Head
    events: list[Event]
    pending: int
    #: The facts whose latest revision is a retraction (a forecast a later issue no
    #: longer holds): not in ``events``, but a report may say what was withdrawn.
    retracted: list[Event] = field(default_factory=list)


def current_events(store: Store, site: str) -> Recorded:
    """The current set of one site, read from the log book (``Recorded``);
    ``LogbookUnreadable`` when a row cannot be read."""
    with store.db.read():  # one snapshot: a deferral settling meanwhile is seen once
        try:
            # The site's rows only (the others' bodies unparsed), and the chain's head.
            rows = store.events.logbook(site)
            head = store.events.logbook_newest()
            pending = [e for e in map(store.events.latest, sorted(_pending_ids(store, site)))
                       if e is not None]
        except (KeyError, TypeError, ValueError):
            raise LogbookUnreadable("a log book row or a stored event is not JSON or no"
                                    " event of the vocabulary (`stormwatch logbook verify`"
                                    " names it)") from None
    latest = {eid: event for eid, (_, event) in _latest(rows).items()}
    for event in pending:
        held = latest.get(event.id)
        if held is None or event.revision >= held.revision:
            latest[event.id] = event
    current = sorted((e for e in latest.values() if not e.retracted),
                     key=lambda e: (e.at_ms, e.id))
    retracted = sorted((e for e in latest.values() if e.retracted),
                       key=lambda e: (e.at_ms, e.id))
    return Recorded(head_of(head), current, len(pending), retracted)


# --------------------------------------------------------------------------- sending it off


def anchor_message(config: Config, verdict: Verification, config_path: str,
                   now_ms: int) -> Message:
    """The head as a message for the officer: the anchor to keep, and how to check
    the log book against it later."""
    head, zone = verdict.head, chain_zone(config)
    sites = ", ".join(s.name or s.id for s in config.sites)
    recorded = f", recorded {local_text(head.recorded_at, zone)}" if head.recorded_at else ""
    check = (f"intact ({verdict.rows} rows)" if not verdict.problems else
             f"FAILED ({len(verdict.problems)} problem(s)): {verdict.problems[0]}")
    intro = (f"The head of the stormwatch log book (§ 134-9A(2)) of {sites}. Keep this "
             "message where the site cannot change it: it is the anchor against which a "
             "later rewrite of the log book is detected. The check below passes only while "
             f"rows 1 to {head.seq} are exactly as they are now.")
    if verdict.problems:
        intro += (" WARNING: the log book does not verify now, so this head is no anchor to"
                  " trust; ask for the output of `stormwatch logbook verify`.")
    command = f"{program()} logbook verify --config {config_path} --anchor {head.anchor}"
    facts = [("Log book head", f"row {head.seq}{recorded}", False), ("SHA-256", head.hash, True),
             ("Chain check", check, False),
             ("Sent", f"{local_text(now_ms, zone)} from {socket.gethostname()}", False),
             ("Check later with", command, True)]
    text = intro + "\n\n" + "\n".join(f"{k}: {v}" for k, v, _ in facts) + "\n"
    # Code spans keep the hash and the command whole (Markdown would read `_` and `*`).
    markdown = md_escape(intro) + "\n\n" + "  \n".join(
        f"**{k}:** " + (f"`{v}`" if code else md_escape(v)) for k, v, code in facts) + "\n"
    title = (("[CHECK FAILED] " if verdict.problems else "")
             + f"stormwatch log book anchor: row {head.seq} ({sites})")
    return Message(title, text, markdown, WARNING if verdict.problems else INFO)

"""The journal's inspections against the log book: an edit of either one is found.

Theory of operation
-------------------
The log book is a hash chain, and ``logbook verify`` with an anchor proves its
rows are those that were written. But the engine's state (open corrective
actions, closed clocks, what ``status`` and the field app show) is derived
from the *journal*, which is no chain: an ``UPDATE`` of an inspection's
corrective action in the journal, plus a deleted snapshot, made ``status``
and the site page show the forged text after a restart, while the log book
kept the original and verified. What people write is the inspections (the
rest is measured, and a reading's row is what the sensor sent), so each
inspection row of the journal is checked against the log book's
``inspection_recorded``:

1. **Every journal inspection the log book records agrees with it.** A row's
   event is the one of its site, time and inspector
   (``clocks.inspection_fact_ids``); its body must be the row's
   (``records.recorded_body``) in everything but ``closes`` and ``backdated``,
   which depend on the storms and the configuration. Of several rows with one
   key (the same visit recorded twice) the engine keeps one, so one of them
   must agree.
2. **Every inspection the log book records has its journal row.** An
   ``inspection_recorded`` (its latest revision, not retracted) whose row is
   gone, or whose row now names another time or inspector, is an edit.
   Without the archive (``archived=False``: the daemon at its start, which
   must not read a season of files first) an event no later than its site's
   newest archived row is not looked for; those rows are in sealed files that
   ``logbook verify`` checks by their SHA-256.
3. **What is not judged.** Rows after the engine's ``applied_seq`` (not
   applied yet: their events come), rows of sites not configured (kept,
   skipped), site closures, steps of corrective actions (their records are
   what the chain seals, photos included: ``logbook.photo_problems``), and a
   row without any event (the engine refused it as older than its compaction
   horizon). A row *inserted* outside
   stormwatch cannot be told from one ``stormwatch inspect`` wrote for a
   running daemon: it is recorded in the log book with the time it was
   entered, which is what the officer sees (``inspection_backdated``).

Each problem is one line naming the journal row and the log book row.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Final

from ..contract.events import Event, InspectionRecorded
from ..contract.inputs import Inspection, is_inspection_body
from ..rules.clocks.records import inspection_fact_ids, recorded_body
from ..store import LogbookRow, Store
from ..store.journal import JournalRow

RECORDED: Final = "inspection_recorded"


@dataclass(frozen=True, slots=True)
class _Logged:
    row: LogbookRow
    body: InspectionRecorded
    at_ms: int


def journal_problems(store: Store, *, archived: bool, sites: Collection[str] | None = None,
                     logbook: Sequence[LogbookRow] | None = None) -> list[str]:
    """Where the journal's inspections and the log book's disagree (module docstring),
    one line each; [] when they agree. ``sites``: the configured sites (None: all);
    ``logbook``: the log book's rows when the caller has read them already."""
    rows, unread = store.journal.inspection_rows(archived=archived)
    applied = store.events.applied_seq()
    if logbook is None:
        logbook = store.events.logbook(types=(RECORDED,))
    logged = _latest_recorded(logbook, sites)
    by_id: dict[str, list[tuple[JournalRow, Inspection]]] = {}
    problems = [f"journal: archive file {u}: its inspections were not compared" for u in unread]
    for row in rows:
        if row.seq > applied or not is_inspection_body(row.body):
            continue
        try:
            insp = Inspection.from_json(row.body)
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(f"journal row {row.seq}: not an inspection any more ({exc}):"
                            " edited outside stormwatch")
            continue
        if sites is not None and insp.site not in sites:
            continue
        by_id.setdefault(inspection_fact_ids(insp.site, insp)[0], []).append((row, insp))
    for eid, held in sorted(logged.items(), key=lambda item: item[1].row.seq):
        candidates = by_id.get(eid)
        if candidates is None:
            if archived or not _maybe_archived(store, held):
                problems.append(
                    f"journal: the inspection of log book row {held.row.seq} ({held.row.site},"
                    f" {held.body.inspected_at} by {held.body.inspector}) has no journal row:"
                    " removed or altered outside stormwatch")
            continue
        wrong = [_differs(held.body, insp) for _, insp in candidates]
        if all(wrong):
            row, _ = candidates[0]
            problems.append(
                f"journal row {row.seq} ({held.row.site}, inspection at"
                f" {held.body.inspected_at}) differs from log book row {held.row.seq}"
                f" ({wrong[0]}): edited outside stormwatch")
    return problems


def _latest_recorded(rows: Sequence[LogbookRow], sites: Collection[str] | None
                     ) -> dict[str, _Logged]:
    """The latest revision of each ``inspection_recorded`` in the log book, not retracted."""
    latest: dict[str, tuple[LogbookRow, Event]] = {}
    for row in rows:
        if row.type != RECORDED or (sites is not None and row.site not in sites):
            continue
        try:
            event = Event.from_json(row.body)
        except (KeyError, TypeError, ValueError):
            continue  # an unreadable row: the chain check names it
        held = latest.get(event.id)
        if held is None or event.revision >= held[1].revision:
            latest[event.id] = (row, event)
    return {eid: _Logged(row, event.body, event.at_ms)
            for eid, (row, event) in latest.items()
            if not event.retracted and isinstance(event.body, InspectionRecorded)}


def _differs(logged: InspectionRecorded, insp: Inspection) -> str:
    """The fields in which ``logged`` is not ``insp``'s record ("" when it is)."""
    expected = recorded_body(insp, logged.closes, logged.backdated)
    if expected == logged:
        return ""
    ours, theirs = expected.to_json(), logged.to_json()
    return ", ".join(sorted(k for k in ours.keys() | theirs.keys()
                            if ours.get(k) != theirs.get(k)))


def _maybe_archived(store: Store, held: _Logged) -> bool:
    """Whether the row of ``held`` may be in an archive file (not read at the daemon's
    start): its site has archived rows as late as its time."""
    return any(f.max_ts_ms >= held.at_ms for f in store.journal.archive.files(held.row.site))

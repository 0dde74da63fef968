"""The site log book as people read it: ``stormwatch logbook --format csv|md`` and the
field app's site page (§ 134-9A(2): "Inspection reports shall be maintained in a site
log book").

Every row is shown, in the order the chain holds them, its details in words
(``SUMMARY_FIELDS``; times in the site's zone, an inspection's findings,
corrective actions and photos one phrase each). What the rows alone do not say
is said beside them: a row whose fact a later revision withdrew would read as a
fact, so it is marked (``withdrawals``). People read each row as a sentence
(``contract/sentences.py``: "Sediment trap trap-1 is 50% full — clean it out,
§ 134-9A(1)"): the Markdown export and the site page; the hashes and ids stay
beside it, out of the way. The CSV, for programs, keeps its columns: its
``details`` are the fields by name. The CSV keeps the recorded UTC times in
its ``recorded_at`` and ``at`` columns for programs, beside the local
``recorded_local`` and ``at_local``; columns are only ever added at the end.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from ..config import Config, SiteConfig
from ..contract.clocknames import spoken
from ..contract.events import Event
from ..contract.localtime import local_text
from ..contract.sentences import sentence
from ..store import LogbookRow, Store
from ..store.events import ARCHIVED, RECORD_TYPES

SUMMARY_FIELDS = ("inspector", "credentials", "kind", "inspected_at", "entered_at", "backdated",
                  "notes", "findings", "corrective_actions", "resolves", "photos", "closes",
                  "gauge", "qualified_at", "total_in", "due", "outcome", "clock_id", "week",
                  "action_id", "text", "closed_at", "by", "trap", "fill_fraction", "pair",
                  "state", "delta_ntu", "sensor", "forecast_in", "reference", "reference_in",
                  "gauge_in", "issued_at", "window_from", "window_to", "file", "rows", "from",
                  "to", "sha256")
#: Fields of ``SUMMARY_FIELDS`` that hold a time (ISO 8601 UTC in the event).
TIME_FIELDS = frozenset({"inspected_at", "entered_at", "qualified_at", "due", "closed_at",
                         "issued_at", "window_from", "window_to", "from", "to"})


def _item(value: Any, zone: ZoneInfo) -> str:
    # Findings, corrective actions and photos are objects; a reader wants one phrase each.
    if isinstance(value, dict):
        if "sha256" in value:
            # The hash is what the chain seals: the file must still have it (verify).
            return f"{value.get('caption') or 'photo'} (sha256 {value['sha256']})"
        if "practice" in value:
            return f"{value['practice']}: {value.get('condition', '')}"
        if "text" in value:
            due = f" (due {local_text(value['due'], zone)})" if value.get("due") else ""
            return f"{value.get('id', '')}: {value['text']}{due}"
    return str(value)


def _summary(body: dict[str, Any], zone: ZoneInfo) -> str:
    parts = []
    for key in SUMMARY_FIELDS:
        value = body.get(key)
        if value in (None, [], "", False) or (key == "credentials" and not any(value)):
            continue
        if key == "credentials":
            # Only the certifying inspector carries one; a companion's is blank.
            value = ", ".join(str(v) for v in value if v)
        elif isinstance(value, list):
            value = ", ".join(_item(v, zone) for v in value)
        elif key in TIME_FIELDS:
            value = local_text(value, zone)
        parts.append(f"{key}={value}")
    return "; ".join(parts)


def withdrawals(rows: Sequence[LogbookRow]) -> dict[int, str]:
    """What a reader must know of rows a later revision withdrew, by row number.

    A fact that no longer holds (a forecast a later issue drops, a storm end a late
    reading undoes) is recorded once more with ``retracted``; the rows before stay,
    sealed by the chain, and would read as facts. So each is marked ``RETRACTED
    (withdrawn by row N)``, and the retraction itself ``RETRACTION (withdraws row
    M, ...)``. A revision after a retraction holds again and is not marked.
    """
    open_rows: dict[str, list[int]] = {}
    marks: dict[int, str] = {}
    for row in rows:
        if row.type in RECORD_TYPES:
            continue
        earlier = open_rows.setdefault(row.event_id, [])
        if row.body.get("retracted"):
            for seq in earlier:
                marks[seq] = f"RETRACTED (withdrawn by row {row.seq})"
            marks[row.seq] = ("RETRACTION (withdraws row"
                              f"{'s' if len(earlier) > 1 else ''} "
                              f"{', '.join(map(str, earlier)) or 'none before it'})")
            earlier.clear()
        else:
            earlier.append(row.seq)
    return marks


def row_words(body: dict[str, Any], site: SiteConfig | None, zone: ZoneInfo) -> str:
    """A log book row as one sentence (``contract/sentences.py``); an archive record
    says which readings went to which file; a row no version reads any more, its kind
    and time (never its raw fields)."""
    if body.get("type") == ARCHIVED:
        return (f"Readings from {spoken(body.get('from'), zone)} to "
                f"{spoken(body.get('to'), zone)} archived to {body.get('file')} "
                f"({body.get('rows')} rows, sealed by its SHA-256)")
    try:
        return sentence(Event.from_json(body), site)
    except (KeyError, TypeError, ValueError):
        kind = str(body.get("type", "entry")).replace("_", " ").capitalize()
        return f"{kind} at {spoken(body.get('at'), zone)}"


def photo_hashes(body: dict[str, Any]) -> list[str]:
    """The SHA-256 of each photo of an inspection row: what the chain seals of it."""
    photos = body.get("photos") or []
    return [str(p["sha256"]) for p in photos if isinstance(p, dict) and "sha256" in p]


@dataclass(frozen=True, slots=True)
class BookLine:
    """One log book row as people read it: the row, its event time in the site's zone,
    its details by field (the CSV's), its withdrawal mark (``withdrawals``; "" for
    none) and the sentence a person reads (``row_words``)."""

    row: LogbookRow
    at_local: str
    details: str
    mark: str
    words: str = ""


def book_lines(config: Config, store: Store, site: str, last: int | None = None
               ) -> list[BookLine]:
    """The site's log book rows in order (only the ``last`` ones when given: the
    withdrawal marks still read the whole book), each with what a reader must see of it."""
    rows = store.events.logbook(site)
    cfg = config.site(site)
    zone = cfg.zone if cfg is not None else ZoneInfo("UTC")
    marks = withdrawals(rows)
    shown = rows if last is None else rows[-last:] if last > 0 else []
    return [BookLine(r, local_text(r.body.get("at"), zone, empty=""), _summary(r.body, zone),
                     marks.get(r.seq, ""), row_words(r.body, cfg, zone)) for r in shown]


def export_logbook(config: Config, store: Store, site: str, fmt: str) -> str:
    """The site's log book as CSV (``fmt`` "csv") or a Markdown table ("md", each row a
    sentence with its hash, and an inspection's photos by SHA-256, in the last
    column); a row a later revision withdrew says so (``withdrawals``)."""
    lines = book_lines(config, store, site)
    cfg = config.site(site)
    zone = cfg.zone if cfg is not None else ZoneInfo("UTC")
    if fmt == "md":
        name = (cfg.name if cfg is not None else None) or site
        out = [f"# Site log book — {name}", "",
               "Kept under Chapter 134, § 134-9A(2). Each entry is chained to the previous "
               "one by SHA-256; `stormwatch logbook verify` checks the chain. Times are "
               f"local to the site ({zone.key}).", "",
               "| # | at | entry | recorded | hash |",
               "|---|---|---|---|---|"]
        for line in lines:
            r = line.row
            words = ((f"**{line.mark}** " if line.mark else "") + line.words
                     ).replace("|", "\\|")
            seals = "<br>".join([f"`{r.hash[:12]}`"] + [
                f"photo `{h}`" for h in photo_hashes(r.body)])
            out.append(f"| {r.seq} | {line.at_local} | {words} | "
                       f"{local_text(r.recorded_at, zone)} | {seals} |")
        return "\n".join(out) + "\n"
    buf = io.StringIO()
    writer = csv.writer(buf)
    # ``retracted`` is last: a column added, none moved, for the programs reading it.
    writer.writerow(["seq", "recorded_at", "recorded_local", "site", "type", "at", "at_local",
                     "event_id", "revision", "details", "prev_hash", "hash", "retracted"])
    for line in lines:
        r = line.row
        writer.writerow([r.seq, r.recorded_at, local_text(r.recorded_at, zone), r.site, r.type,
                         r.body.get("at", ""), line.at_local, r.event_id, r.revision,
                         line.details, r.prev_hash, r.hash, line.mark])
    return buf.getvalue()

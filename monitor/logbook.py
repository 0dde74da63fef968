"""The site log book (§ 134-9A(2): "Inspection reports shall be maintained in a
site log book"): export and hash-chain verification.

Rows are appended by the store in the same transaction as the events they
record; each carries the SHA-256 of the previous row, so an edited, deleted or
reordered row breaks the chain and ``logbook verify`` says where.

Both take an open (read-only) store: the caller refuses a missing or
unreadable database (``cli.py``), because an empty log book and no log book
are different answers, and only the first is "OK".
"""

from __future__ import annotations

import csv
import io
from typing import Any

from .config import Config
from .store import Store

SUMMARY_FIELDS = ("inspector", "credentials", "kind", "inspected_at", "entered_at", "backdated",
                  "notes", "findings", "corrective_actions", "resolves", "closes", "gauge",
                  "qualified_at", "total_in", "due", "outcome", "clock_id", "week", "action_id",
                  "text", "closed_at", "by", "trap", "fill_fraction", "pair", "state",
                  "delta_ntu", "sensor")


def _item(value: Any) -> str:
    # Findings and corrective actions are objects; a reader wants one phrase each.
    if isinstance(value, dict):
        if "practice" in value:
            return f"{value['practice']}: {value.get('condition', '')}"
        if "text" in value:
            due = f" (due {value['due']})" if value.get("due") else ""
            return f"{value.get('id', '')}: {value['text']}{due}"
    return str(value)


def _summary(body: dict[str, Any]) -> str:
    parts = []
    for key in SUMMARY_FIELDS:
        value = body.get(key)
        if value in (None, [], "", False) or (key == "credentials" and not any(value)):
            continue
        if isinstance(value, list):
            value = ", ".join(_item(v) for v in value)
        parts.append(f"{key}={value}")
    return "; ".join(parts)


def export_logbook(config: Config, store: Store, site: str, fmt: str) -> str:
    """The site's log book as CSV (``fmt`` "csv") or a Markdown table ("md")."""
    rows = store.events.logbook(site)
    if fmt == "md":
        cfg = config.site(site)
        name = (cfg.name if cfg is not None else None) or site
        out = [f"# Site log book — {name}", "",
               "Kept under Chapter 134, § 134-9A(2). Each entry is chained to the previous "
               "one by SHA-256; `stormwatch logbook verify` checks the chain.", "",
               "| # | recorded (UTC) | event | at | details | hash |",
               "|---|---|---|---|---|---|"]
        for r in rows:
            details = _summary(r.body).replace("|", "\\|")
            out.append(f"| {r.seq} | {r.recorded_at} | {r.type} | {r.body.get('at', '')}"
                       f" | {details} | `{r.hash[:12]}` |")
        return "\n".join(out) + "\n"
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["seq", "recorded_at", "site", "type", "at", "event_id", "revision",
                     "details", "prev_hash", "hash"])
    for r in rows:
        writer.writerow([r.seq, r.recorded_at, r.site, r.type, r.body.get("at", ""), r.event_id,
                         r.revision, _summary(r.body), r.prev_hash, r.hash])
    return buf.getvalue()


def verify_logbook(store: Store) -> tuple[list[str], int]:
    """Problems found (empty when intact) and the number of rows checked."""
    return store.events.logbook_verify(), len(store.events.logbook())

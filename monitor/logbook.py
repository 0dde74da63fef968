"""The site log book (§ 134-9A(2): "Inspection reports shall be maintained in a
site log book"): export and hash-chain verification.

Rows are appended by the store in the same transaction as the events they
record; each carries the SHA-256 of the previous row, so an edited, deleted or
reordered row breaks the chain and ``logbook verify`` says where.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from .config import Config
from .host import db_path, open_store
from .store import LogbookRow

SUMMARY_FIELDS = ("inspector", "kind", "notes", "findings", "closes", "gauge", "qualified_at",
                  "total_in", "due", "outcome", "clock_id", "trap", "fill_fraction", "pair",
                  "state", "delta_ntu", "sensor")


def _summary(body: dict[str, Any]) -> str:
    parts = []
    for key in SUMMARY_FIELDS:
        value = body.get(key)
        if value in (None, [], ""):
            continue
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        parts.append(f"{key}={value}")
    return "; ".join(parts)


def export_logbook(config: Config, site: str, fmt: str) -> str:
    if not db_path(config).exists():
        rows: list[LogbookRow] = []
    else:
        with open_store(config, readonly=True) as store:
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


def verify_logbook(config: Config) -> tuple[list[str], int]:
    """Problems found (empty when intact) and the number of rows checked."""
    if not db_path(config).exists():
        return [], 0
    with open_store(config, readonly=True) as store:
        return store.events.logbook_verify(), len(store.events.logbook())

"""Journal rows and engine inputs, both ways: what is journaled, and how a row is applied."""

from __future__ import annotations

import logging

from ..contract.events import Event
from ..contract.inputs import Inspection, Reading, SiteClosure
from ..engine.core import Engine
from ..store import JournalIn, JournalRow

log = logging.getLogger("stormwatch.daemon")


def journal_in(item: Reading | Inspection | SiteClosure, *, topic: str | None,
               received_ms: int | None) -> JournalIn:
    if isinstance(item, Inspection):
        return JournalIn("inspection", item.site, None, item.ts_ms, item.to_json(), topic,
                         received_ms)
    if isinstance(item, SiteClosure):
        # Journaled as an inspection row (the table's kinds are fixed by a CHECK
        # constraint in databases already out there); its body says ``closure``.
        return JournalIn("inspection", item.site, None, item.ts_ms, item.to_json(), topic,
                         received_ms)
    return JournalIn("reading", item.site, item.sensor, item.ts_ms, item.to_json(), topic,
                     received_ms)


def apply_item(engine: Engine, item: Reading | Inspection | SiteClosure) -> list[Event]:
    """Feed one input to the engine, unless the configuration no longer has its site or
    sensor (the row was journaled under another configuration: kept, skipped)."""
    se = engine.sites.get(item.site)
    if se is None or (isinstance(item, Reading) and item.sensor not in se.health):
        return []
    return engine.apply(item)


def apply_row(engine: Engine, row: JournalRow) -> list[Event]:
    """Feed one journal row to the engine (the engine's window must stand at ``row.seq``)."""
    if row.kind == "reading":
        return apply_item(engine, Reading.from_json(row.body))
    if row.kind == "inspection" and row.body.get("closure"):
        return apply_item(engine, SiteClosure.from_json(row.body))
    if row.kind == "inspection":
        return apply_item(engine, Inspection.from_json(row.body))
    if row.kind == "tick":
        return engine.tick(int(row.body["now_ms"]))
    log.warning("journal row %s has unknown kind %r; skipped", row.seq, row.kind)
    return []

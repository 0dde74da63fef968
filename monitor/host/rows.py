"""Journal rows and engine inputs, both ways: what is journaled, and how a row is applied."""

from __future__ import annotations

import logging

from ..contract.events import Event
from ..contract.inputs import (
    ActionStep,
    Forecast,
    Inspection,
    Reading,
    ReferenceObservation,
    ShutdownNotice,
    SiteClosure,
)
from ..engine import Engine
from ..store import JournalIn, JournalRow

log = logging.getLogger("stormwatch.daemon")


#: Every input the engine takes, as journaled.
Input = (Reading | Inspection | SiteClosure | ShutdownNotice | Forecast | ReferenceObservation
         | ActionStep)
#: The body key that marks a step of a corrective action (``ActionStep``).
STEP_KEY = "action_step"
#: The body key that marks a weather row, and its value per input type.
WEATHER_KEY = "weather"


def journal_in(item: Input, *, topic: str | None, received_ms: int | None) -> JournalIn:
    if isinstance(item, Forecast | ReferenceObservation):
        # Journaled as a tick row: the table's kinds are fixed by a CHECK constraint in
        # databases already out there, and tick rows are the ones no reader but the
        # engine looks at (not counted as ingest: weather is fetched, not received);
        # the body says ``weather`` and which input it is.
        kind = "forecast" if isinstance(item, Forecast) else "observation"
        return JournalIn("tick", item.site, None, item.ts_ms,
                         {**item.to_json(), WEATHER_KEY: kind}, topic, received_ms)
    if isinstance(item, Inspection):
        return JournalIn("inspection", item.site, None, item.ts_ms, item.to_json(), topic,
                         received_ms)
    if isinstance(item, SiteClosure | ShutdownNotice | ActionStep):
        # Journaled as an inspection row (the table's kinds are fixed by a CHECK
        # constraint in databases already out there); its body says ``closure``,
        # ``shutdown`` or ``action_step``: what people enter, kept and counted as
        # inspections.
        return JournalIn("inspection", item.site, None, item.ts_ms, item.to_json(), topic,
                         received_ms)
    return JournalIn("reading", item.site, item.sensor, item.ts_ms, item.to_json(), topic,
                     received_ms)


def apply_item(engine: Engine, item: Input) -> list[Event]:
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
    if row.kind == "inspection" and row.body.get(STEP_KEY):
        return apply_item(engine, ActionStep.from_json(row.body))
    if row.kind == "inspection" and row.body.get("closure"):
        return apply_item(engine, SiteClosure.from_json(row.body))
    if row.kind == "inspection" and row.body.get("shutdown"):
        return apply_item(engine, ShutdownNotice.from_json(row.body))
    if row.kind == "inspection":
        return apply_item(engine, Inspection.from_json(row.body))
    if row.kind == "tick" and row.body.get(WEATHER_KEY) == "forecast":
        return apply_item(engine, Forecast.from_json(row.body))
    if row.kind == "tick" and row.body.get(WEATHER_KEY) == "observation":
        return apply_item(engine, ReferenceObservation.from_json(row.body))
    if row.kind == "tick":
        return engine.tick(int(row.body["now_ms"]))
    log.warning("journal row %s has unknown kind %r; skipped", row.seq, row.kind)
    return []

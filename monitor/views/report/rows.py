"""Rows of the compliance report (``report.py``) read off what the engine concluded.

The report never re-derives a rule; these helpers only read: the storm
events as their log-book events tell them (``storm_rows``), what a storm that
qualified on rain revealed after a silence must say about its deadline
(``revealed_note``, DESIGN § 4 "Silence is not dry weather"), and each
sensor's health as the recorded status has it (``sensor_rows``: ``ok``,
``STALE`` or ``unknown``, never ``ok`` for a gauge whose silence says
nothing). Cells come back as plain text; ``report.py`` escapes and lays them
out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ...config import SiteConfig
from ...contract.events import Event, StormEnded, StormQualified, StormStarted
from ...engine.readout import SiteNow

#: A time (ms, ISO text or None) as the report writes it, in the site's zone.
Local = Callable[[int | str | None], str]


@dataclass(slots=True)
class StormRow:
    """A storm event as its events tell it (the later event's value wins)."""

    started_at: str | None = None
    ended_at: str | None = None
    qualified_at: str | None = None
    total_in: float | None = None
    max_24h_in: float | None = None
    due: str | None = None
    clock_id: str | None = None
    informational: bool = False
    qualified: bool = False
    event_id: str = ""
    #: Qualified on revealed rain: it may have qualified this early, and been due then.
    qualified_not_before: str | None = None
    due_not_before: str | None = None


def storm_rows(events: Iterable[Event]) -> list[StormRow]:
    by_id: dict[str, StormRow] = {}
    for e in events:
        b = e.body
        if not isinstance(b, StormStarted | StormQualified | StormEnded):
            continue
        s = by_id.setdefault(b.event_id, StormRow(event_id=b.event_id))
        s.started_at = b.started_at
        if isinstance(b, StormQualified):
            s.qualified_at, s.total_in, s.max_24h_in = b.qualified_at, b.total_in, b.max_24h_in
            s.due, s.qualified = b.due, True
            s.clock_id = b.clock_id or s.clock_id
            s.informational = bool(b.informational) or s.informational
            s.qualified_not_before, s.due_not_before = b.qualified_not_before, b.due_not_before
        elif isinstance(b, StormEnded):
            s.ended_at, s.total_in, s.max_24h_in = b.ended_at, b.total_in, b.max_24h_in
            s.qualified = b.qualified
    return sorted(by_id.values(), key=lambda s: s.started_at or "")


def revealed_note(row: StormRow, local: Local) -> str:
    """What the storms table adds to a storm that qualified on rain a silent gauge
    revealed; "" for any other storm."""
    if row.qualified_not_before is None:
        return ""
    note = (f" (rain revealed after a silence: may have qualified as early as "
            f"{local(row.qualified_not_before)}")
    if row.due_not_before is not None:
        note += f"; inspection may have been due as early as {local(row.due_not_before)}"
    return note + ")"


def sensor_rows(site: SiteConfig, state: SiteNow | None, local: Local) -> list[list[str]]:
    """One row per configured sensor: id, kind, reporting, health, last seen."""
    sensors = state.sensors if state is not None else {}
    rows = []
    for sensor in site.sensors:
        h = sensors.get(sensor.id)
        health = "unknown (no recorded state)" if h is None else {
            "stale": "STALE", "ok": "ok"}.get(h.health, "unknown")
        if h is not None and h.health == "unknown":
            health += (" (reporting: on_tip without heartbeat_minutes: a dry gauge and a "
                       "dead one look alike)")
        how: str = sensor.reporting if sensor.kind == "rain" else ""
        if sensor.on_tip and sensor.heartbeat_minutes is not None:
            how += f", heartbeat {sensor.heartbeat_minutes:g} min"
        rows.append([sensor.id, sensor.kind, how, health,
                     local(h.last_seen_ms if h is not None else None)])
    return rows

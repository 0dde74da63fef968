"""Rows of the compliance report (``build.py``) read off what the engine concluded.

The report never re-derives a rule; these helpers only read: the storms and
their outcomes come from the engine (``rules/clocks/outcomes.py``); here is what a
storm that qualified on rain revealed after a silence must say about its
deadline (``revealed_note``, monitor/README.md, "Silence is not dry weather"), and each
sensor's health as the recorded status has it (``sensor_rows``: ``ok``,
``STALE`` or ``unknown``, never ``ok`` for a gauge whose silence says
nothing). Cells come back as plain text; ``build.py`` escapes and lays them
out.
"""

from __future__ import annotations

from collections.abc import Callable

from ...config import SiteConfig
from ...contract.clocknames import clock_name
from ...engine import SiteNow
from ...rules.clocks.outcomes import StormRecord

#: A time (ms, ISO text or None) as the report writes it, in the site's zone.
Local = Callable[[int | str | None], str]


def revealed_note(storm: StormRecord, local: Local) -> str:
    """What the storms table adds to a storm that qualified on rain a silent gauge
    revealed; "" for any other storm."""
    if storm.qualified_not_before_ms is None:
        return ""
    note = (f" (rain revealed after a silence: may have qualified as early as "
            f"{local(storm.qualified_not_before_ms)}")
    if storm.due_not_before_ms is not None:
        note += f"; inspection may have been due as early as {local(storm.due_not_before_ms)}"
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


def closed_words(clock_ids: tuple[str, ...], outcomes: dict[str, str], site: SiteConfig
                 ) -> str:
    """The clocks an inspection closed, by name (``storm of May 3 (met)``, ``week of May 1``
    when no closing is recorded), as every page names them (``contract/clocknames.py``)."""
    return ", ".join(clock_name(c, site.zone, days=site.cadence_days(c))
                     + (f" ({outcomes[c]})" if c in outcomes else "") for c in clock_ids)


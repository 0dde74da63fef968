"""What a site looks like now: the engine's answer for ``status``, the exporter and reports.

Two steps, so the answer can be recorded and read elsewhere: ``site_summary``
takes what the engine knows (JSON-ready, independent of the wall clock; the
daemon keeps it in the store's ``site_status`` table), and ``at_now`` turns it
into the ``status --json`` site object at a given instant (hours left, which
sensors are stale). Domain math stays here: the command, the dashboards and
the report ask the engine instead of recomputing.
"""

from __future__ import annotations

from typing import Any, cast

from .core import Engine
from .health import HealthFold, is_stale
from .times import MS_PER_HOUR, iso, parse_iso
from .traps import TrapFold
from .turbidity import PairFold

#: The shape of ``site_summary``'s output (recorded by the daemon, read by ``status``).
SUMMARY_VERSION = 1


def site_summary(engine: Engine, site_id: str) -> dict[str, Any]:
    """The engine's state of one site, for any later *now*."""
    se = engine.site_engine(site_id)
    site = se.config
    clocks = []
    for clock in engine.clocks(site_id):
        clocks.append({
            "clock_id": clock.clock_id, "clock": clock.clock,
            "started_at": iso(clock.start if clock.start is not None else clock.opened_at),
            "due": iso(clock.due) if clock.due is not None else None,
            "closed_at": iso(clock.closed_at) if clock.closed_at is not None else None,
            **({"event_id": clock.storm.event_id} if clock.storm is not None else {}),
        })
    sensors = {}
    for sensor in site.sensors:
        tl = se.health[sensor.id]
        fold = cast(HealthFold, tl.fold)
        sensors[sensor.id] = {
            "kind": sensor.kind,
            "last_seen": iso(tl.state.last_seen) if tl.state.last_seen is not None else None,
            "battery_v": tl.state.battery_v,
            "stale_after_minutes": fold.stale_ms / 60_000,
            "readings": se.readings.get(sensor.id, 0),
        }
    return {
        "version": SUMMARY_VERSION,
        "name": site.name,
        "condition": site.condition,
        "clocks": clocks,
        "last_inspection": (iso(se.last_inspection_ms)
                            if se.last_inspection_ms is not None else None),
        "traps": {tid: cast(TrapFold, tl.fold).summary(tl.state) for tid, tl in se.traps.items()},
        "turbidity": {pid: cast(PairFold, tl.fold).summary(tl.state)
                      for pid, tl in se.pairs.items()},
        "sensors": sensors,
        "event_time": iso(engine.now_ms) if engine.now_ms is not None else None,
    }


def at_now(summary: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """The ``status --json`` object of a site (DESIGN § 6) at ``now_ms``."""
    open_clocks = []
    for c in summary["clocks"]:
        if c["closed_at"] is not None and parse_iso(c["closed_at"]) <= now_ms:
            continue
        due = parse_iso(c["due"]) if c["due"] is not None else None
        entry = {k: v for k, v in c.items() if k != "closed_at"}
        entry["hours_left"] = round((due - now_ms) / MS_PER_HOUR, 2) if due is not None else None
        open_clocks.append(entry)
    open_clocks.sort(key=lambda c: (c["due"] is None, c["due"] or ""))
    sensors = {}
    for sid, h in summary["sensors"].items():
        last_seen = parse_iso(h["last_seen"]) if h["last_seen"] is not None else None
        sensors[sid] = {
            "last_seen": h["last_seen"],
            "stale": is_stale(last_seen, round(h["stale_after_minutes"] * 60_000), now_ms),
            "battery_v": h["battery_v"],
            "kind": h["kind"],
            "readings": h["readings"],
        }
    return {
        "name": summary["name"],
        "condition": summary["condition"],
        "open_clocks": open_clocks,
        "last_inspection": summary["last_inspection"],
        "traps": summary["traps"],
        "turbidity": summary["turbidity"],
        "sensors": sensors,
    }


def site_status(engine: Engine, site_id: str, now_ms: int) -> dict[str, Any]:
    """``at_now(site_summary(...))``: a site's status straight from an engine."""
    return at_now(site_summary(engine, site_id), now_ms)

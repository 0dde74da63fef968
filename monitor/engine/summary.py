"""What a site looks like now: the engine's answer for ``status``, the exporter and reports.

Two steps, so the answer can be recorded and read elsewhere: ``site_summary``
takes what the engine knows (JSON-ready, independent of the wall clock; the
daemon keeps it in the store's ``site_status`` table), and ``at_now`` turns it
into the ``status --json`` site object at a given instant (hours left, which
sensors are stale). ``judged_at`` says which instant a recorded summary is read
at: never before the engine's own event time, so a clock the engine closed is
never shown open again. Domain math stays here: the command, the dashboards
and the report ask the engine instead of recomputing.
"""

from __future__ import annotations

from typing import Any, cast

from ..contract.times import MS_PER_HOUR, iso, parse_iso
from .actions import action_states, record_of
from .core import Engine
from .health import HealthFold, is_stale
from .routine import missed_weeks
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
            "ends_at": iso(clock.ends_at) if clock.ends_at is not None else None,
            **({"event_id": clock.storm.event_id} if clock.storm is not None else {}),
        })
    # Actions whose inspection is still in memory are those not final yet (settle.py).
    actions = [a.to_json() for a in action_states(record_of(i) for i in se.inspections)]
    sensors = {}
    for sensor in site.sensors:
        tl = se.health[sensor.id]
        fold = cast(HealthFold, tl.fold)
        sensors[sensor.id] = {
            "kind": sensor.kind,
            "last_seen": iso(tl.state.last_seen) if tl.state.last_seen is not None else None,
            "battery_v": tl.state.battery_v,
            "stale_after_minutes": fold.stale_ms / 60_000,
            # An on_tip gauge without heartbeats: a dry one and a dead one look alike.
            "judged": fold.judged,
            "readings": se.readings.get(sensor.id, 0),
            "buffered": tl.state.buffered,
            "dropped": tl.state.dropped,
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
        "corrective_actions": actions,
        "missed_weeks_settled": se.missed_weeks_settled,
        "closed_at": iso(se.closure.ts_ms) if se.closure is not None else None,
    }


def judged_at(summary: dict[str, Any], wall_ms: int) -> int:
    """The instant to read a recorded summary at: the later of the wall clock and the
    engine's event-time now when it recorded it (``event_time``).

    The engine judges clocks and silences in event time (its newest tick or
    input, ``Engine.now_ms``), which can run ahead of the reader's wall clock: a
    demo's simulated clock, or a node stamping readings ahead. Reading the
    summary any earlier than the engine did would reopen clocks it has closed
    (an inspection always advances event time to its own instant) and count
    hours left from a past the engine has already left.
    """
    event_time = summary.get("event_time")
    return wall_ms if event_time is None else max(wall_ms, parse_iso(event_time))


def at_now(summary: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """The ``status --json`` object of a site (DESIGN § 6) at ``now_ms``.

    A recorded summary is read at ``judged_at(summary, wall_ms)``, not at the
    wall clock alone; an engine's own summary (``site_status``) at any instant.
    """
    open_clocks = []
    missed = int(summary.get("missed_weeks_settled", 0))
    for c in summary["clocks"]:
        if parse_iso(c["started_at"]) > now_ms:
            continue  # not begun: a clock is listed only once it exists (DESIGN § 4)
        due = parse_iso(c["due"]) if c["due"] is not None else None
        ended = [parse_iso(c[k]) for k in ("closed_at", "ends_at") if c.get(k) is not None]
        weeks = 0
        if c["clock"] == "routine" and due is not None:
            weeks = missed_weeks(due, now_ms, min(ended) if ended else None)
            missed += weeks
        if ended and min(ended) <= now_ms:
            continue
        entry = {k: v for k, v in c.items() if k not in ("closed_at", "ends_at")}
        entry["hours_left"] = round((due - now_ms) / MS_PER_HOUR, 2) if due is not None else None
        entry["overdue"] = due is not None and now_ms > due
        if c["clock"] == "routine":
            entry["missed_weeks"] = weeks
        open_clocks.append(entry)
    open_clocks.sort(key=lambda c: (c["due"] is None, c["due"] or ""))
    sensors = {}
    for sid, h in summary["sensors"].items():
        last_seen = parse_iso(h["last_seen"]) if h["last_seen"] is not None else None
        stale = (is_stale(last_seen, round(h["stale_after_minutes"] * 60_000), now_ms)
                 if h.get("judged", True) else None)
        sensors[sid] = {
            "last_seen": h["last_seen"],
            # Null when it cannot be told (``health``: unknown), never a false "not stale".
            "stale": stale,
            "health": health_word(stale),
            "battery_v": h["battery_v"],
            "kind": h["kind"],
            "readings": h["readings"],
            # From the node's latest status (null until one came).
            "buffered": h.get("buffered"),
            "dropped": h.get("dropped"),
        }
    return {
        "name": summary["name"],
        "condition": summary["condition"],
        "open_clocks": open_clocks,
        "last_inspection": summary["last_inspection"],
        "traps": summary["traps"],
        "turbidity": summary["turbidity"],
        "sensors": sensors,
        "missed_weeks": missed,
        "corrective_actions": [
            {**a, "overdue": a["due"] is not None and parse_iso(a["due"]) < now_ms}
            for a in summary.get("corrective_actions", ())
            if parse_iso(a["opened_at"]) <= now_ms
            and (a["resolved_at"] is None or parse_iso(a["resolved_at"]) > now_ms)],
        "closed_at": summary.get("closed_at"),
    }


def health_word(stale: bool | None) -> str:
    """A sensor's health as ``status`` shows it: ``ok``, ``stale``, or ``unknown`` when
    its silence says nothing (an on_tip gauge without ``heartbeat_minutes``)."""
    return "unknown" if stale is None else "stale" if stale else "ok"


def site_status(engine: Engine, site_id: str, now_ms: int) -> dict[str, Any]:
    """``at_now(site_summary(...))``: a site's status straight from an engine."""
    return at_now(site_summary(engine, site_id), now_ms)

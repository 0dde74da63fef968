"""What a site looks like now: the engine's answer for ``status``, the exporter and reports.

Two steps, so the answer can be recorded and read elsewhere: ``summarize``
takes what the engine knows (a ``SiteSummary``, independent of the wall
clock; the daemon keeps its JSON in the store's ``site_status`` table), and
``status_at`` judges it at a given instant (a ``SiteNow``: hours left, which
sensors are stale, the weeks missed). ``judged_at`` says which instant a
recorded summary is read at: never before the engine's own event time, so a
clock the engine closed is never shown open again. Domain math stays here:
the command, the dashboards and the report ask the engine instead of
recomputing (``is_overdue`` is the one rule of lateness; ``SiteNow`` has the
headline numbers the exporter writes). The types and their one JSON form are
``readout.py``; ``site_summary``, ``at_now`` and ``site_status`` are the same
answers as that JSON (the shape of ``status --json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, cast

from ..contract.times import MS_PER_HOUR
from ..rules.active import calendar_zone, missed_weeks
from ..rules.clocks.actions import action_states, record_of
from ..rules.clocks.clocks import is_overdue
from ..rules.health.health import HealthFold, is_stale
from ..rules.readout import (
    SUMMARY_VERSION,
    ActionNow,
    ClockSummary,
    OpenClock,
    PairSummary,
    SensorNow,
    SensorSummary,
    SiteNow,
    SiteSummary,
)
from ..rules.traps.traps import TrapFold
from ..rules.turbidity.turbidity import PairFold
from .core import Engine
from .site import SiteEngine, pair_unknown

__all__ = ["SUMMARY_VERSION", "at_now", "health_word", "is_overdue", "judged_at", "pair_at",
           "site_now", "site_status", "site_summary", "status_at", "summarize"]


def summarize(engine: Engine, site_id: str) -> SiteSummary:
    """The engine's state of one site, for any later *now*."""
    se = engine.site_engine(site_id)
    site = se.config
    clocks = tuple(
        ClockSummary(clock.clock_id, clock.clock,
                     clock.start if clock.start is not None else clock.opened_at, clock.due,
                     clock.closed_at, clock.ends_at,
                     clock.storm.event_id if clock.storm is not None else None,
                     clock.permit, clock.section)
        for clock in engine.clocks(site_id))
    sensors = {}
    for sensor in site.sensors:
        tl = se.health[sensor.id]
        fold = cast(HealthFold, tl.fold)
        sensors[sensor.id] = SensorSummary(
            sensor.kind, tl.state.last_seen, tl.state.battery_v, fold.stale_ms / 60_000,
            # An on_tip gauge without heartbeats: a dry one and a dead one look alike.
            judged=fold.judged, readings=se.readings.get(sensor.id, 0),
            buffered=tl.state.buffered, dropped=tl.state.dropped)
    return SiteSummary(
        site.name, site.condition, clocks, se.last_inspection_ms,
        {tid: cast(TrapFold, tl.fold).summary(tl.state) for tid, tl in se.traps.items()},
        _pairs(se, engine.now_ms), sensors, engine.now_ms,
        # Actions whose inspection is still in memory are those not final yet (settle.py).
        tuple(action_states((record_of(i) for i in se.inspections),
                            se.action_steps.values())),
        se.missed_weeks_settled,
        se.closure.ts_ms if se.closure is not None else None,
        zone.key if (zone := calendar_zone(site)) is not None else None)


def _pairs(se: SiteEngine, now_ms: int | None) -> dict[str, PairSummary]:
    """Each pair's readings (``PairFold.summary``) with why its contrast is unknown
    (``unmonitored.py``), judged at the engine's *now*."""
    out = {}
    for pair in se.config.turbidity_pairs:
        tl = se.pairs[pair.id]
        p = cast(PairFold, tl.fold).summary(tl.state)
        unknown = pair_unknown(se, pair)
        if unknown is not None:
            p = replace(p, unknown_reason=unknown.reason, unknown_since_ms=unknown.since_ms,
                        notice_ms=unknown.notice_ms)
        out[pair.id] = p if now_ms is None else pair_at(p, now_ms)
    return out


def pair_at(p: PairSummary, now_ms: int) -> PairSummary:
    """A pair at ``now_ms``: ``unknown`` while its contrast is, ``unmonitored`` once the
    notice is due (an ``exceeded`` or ``clearing`` episode is still shown as such), and
    never ``ok`` for a downstream reading older than the probe's ``stale_after_minutes``
    (a recorded summary read after the daemon last judged it)."""
    reason, since = p.unknown_reason, p.unknown_since_ms
    stale_ms = None if p.stale_after_minutes is None else round(p.stale_after_minutes * 60_000)
    if reason is None and p.at_ms is not None and stale_ms is not None \
            and now_ms - p.at_ms > stale_ms:
        reason, since = "downstream_stale", p.at_ms + stale_ms
    if reason is None:
        return p
    if p.state in ("exceeded", "clearing"):
        state = p.state
    else:
        state = "unmonitored" if p.notice_ms is not None and p.notice_ms <= now_ms else "unknown"
    return replace(p, state=state, unknown_reason=reason, unknown_since_ms=since)


def judged_at(summary: SiteSummary | Mapping[str, Any], wall_ms: int) -> int:
    """The instant to read a recorded summary at: the later of the wall clock and the
    engine's event-time now when it recorded it (``event_time``).

    The engine judges clocks and silences in event time (its newest tick or
    input, ``Engine.now_ms``), which can run ahead of the reader's wall clock: a
    demo's simulated clock, or a node stamping readings ahead. Reading the
    summary any earlier than the engine did would reopen clocks it has closed
    (an inspection always advances event time to its own instant) and count
    hours left from a past the engine has already left.
    """
    if not isinstance(summary, SiteSummary):
        summary = SiteSummary.from_json(summary)
    event_time = summary.event_time_ms
    return wall_ms if event_time is None else max(wall_ms, event_time)


def status_at(summary: SiteSummary, now_ms: int) -> SiteNow:
    """The site at ``now_ms`` (README.md, "Commands").

    A recorded summary is read at ``judged_at(summary, wall_ms)``, not at the
    wall clock alone; an engine's own summary (``site_now``) at any instant.
    """
    open_clocks = []
    missed = summary.missed_weeks_settled
    for c in summary.clocks:
        if c.started_ms > now_ms:
            # Not begun: a clock is listed only once it exists (monitor/README.md, "The rules").
            continue
        due = c.due_ms
        ended = [t for t in (c.closed_ms, c.ends_ms) if t is not None]
        weeks = 0
        if c.clock == "routine" and due is not None:
            weeks = missed_weeks(due, now_ms, min(ended) if ended else None,
                                 summary.week_zone)
            missed += weeks
        if ended and min(ended) <= now_ms:
            continue
        open_clocks.append(OpenClock(
            c.clock_id, c.clock, c.started_ms, due, c.event_id,
            round((due - now_ms) / MS_PER_HOUR, 2) if due is not None else None,
            is_overdue(due, now_ms), weeks if c.clock == "routine" else None,
            c.permit, c.section))
    open_clocks.sort(key=lambda c: (c.due_ms is None, c.due_ms or 0))
    sensors = {}
    for sid, h in summary.sensors.items():
        stale = (is_stale(h.last_seen_ms, round(h.stale_after_minutes * 60_000), now_ms)
                 if h.judged else None)
        sensors[sid] = SensorNow(h.kind, h.last_seen_ms, stale, health_word(stale), h.battery_v,
                                 h.readings, h.buffered, h.dropped)
    return SiteNow(
        summary.name, summary.condition, tuple(open_clocks), summary.last_inspection_ms,
        summary.traps, {pid: pair_at(p, now_ms) for pid, p in summary.turbidity.items()},
        sensors, missed,
        tuple(ActionNow(a, is_overdue(a.due_ms, now_ms))
              for a in summary.corrective_actions if a.open_at(now_ms)),
        summary.closed_ms)


def health_word(stale: bool | None) -> str:
    """A sensor's health as ``status`` shows it: ``ok``, ``stale``, or ``unknown`` when
    its silence says nothing (an on_tip gauge without ``heartbeat_minutes``)."""
    return "unknown" if stale is None else "stale" if stale else "ok"


def site_now(engine: Engine, site_id: str, now_ms: int) -> SiteNow:
    """``status_at(summarize(...))``: a site at ``now_ms`` straight from an engine."""
    return status_at(summarize(engine, site_id), now_ms)


# --------------------------------------------------------------------------- as JSON


def site_summary(engine: Engine, site_id: str) -> dict[str, Any]:
    """``summarize`` as the JSON the daemon records."""
    return summarize(engine, site_id).to_json()


def at_now(summary: SiteSummary | Mapping[str, Any], now_ms: int) -> dict[str, Any]:
    """``status_at`` of a summary (typed, or as recorded) as the ``status --json`` site
    object."""
    if not isinstance(summary, SiteSummary):
        summary = SiteSummary.from_json(summary)
    return status_at(summary, now_ms).to_json()


def site_status(engine: Engine, site_id: str, now_ms: int) -> dict[str, Any]:
    """``site_now`` as the ``status --json`` site object."""
    return site_now(engine, site_id, now_ms).to_json()

"""The engine's answer about a site, as types: what ``status``, the exporter and the report read.

Theory of operation
-------------------
Two answers, both frozen dataclasses with times in integer milliseconds:

``SiteSummary``  what the engine knows of a site, for any later *now*: every
                 clock with its start, due and end, each trap's fill, each
                 pair's contrast, each sensor's last word, the corrective
                 actions. The daemon records it in the store (``site_status``)
                 at every tick, as ``SiteSummary.to_json()``; ``status`` reads
                 it back with ``SiteSummary.from_json``.
``SiteNow``      the same site judged at one instant (``summary.status_at``):
                 the clocks open then, hours left, which sensors are stale, the
                 weeks missed. ``SiteNow.to_json()`` is the site object of
                 ``status --json`` (README.md, "Commands"), key for key.

Each type has one ``to_json`` (and the recorded ones one ``from_json``), so
the JSON the store keeps and the JSON ``status --json`` prints have one
definition each; a reader uses attributes, which ``mypy --strict`` checks. A
summary recorded by an older version lacks some keys: ``from_json`` reads them
with the meaning they had then (no settled missed weeks, every sensor
judged, a trap's level equal to its state).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from ..contract.times import iso, parse_iso
from .clocks.actions import ActionState

#: The shape of ``SiteSummary.to_json()`` (recorded by the daemon, read by ``status``).
SUMMARY_VERSION = 1


def _iso(ms: int | None) -> str | None:
    return None if ms is None else iso(ms)


def _ms(text: str | None) -> int | None:
    return None if text is None else parse_iso(text)


# --------------------------------------------------------------------------- rules


@dataclass(frozen=True, slots=True)
class FaultSummary:
    """A trap sensor's open fault episode (``sediment.py``): why, and since when."""

    reason: str
    since_ms: int

    def to_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "since": iso(self.since_ms)}


@dataclass(frozen=True, slots=True)
class TrapSummary:
    """A trap's entry (``TrapFold.summary``): the smoothed fill of design volume and
    depth; ``state`` is ``fault`` while the sensor is faulty (the fill is then the
    last valid one and ``level`` its level), else the level: ``unknown`` during
    warm-up, ``ok``, ``warn`` or ``cleanout``."""

    fill_fraction: float | None
    depth_in: float | None
    state: str
    level: str
    sensor_fault: FaultSummary | None = None

    def to_json(self) -> dict[str, Any]:
        return {"fill_fraction": self.fill_fraction, "depth_in": self.depth_in,
                "state": self.state, "level": self.level,
                "sensor_fault": None if self.sensor_fault is None else self.sensor_fault.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TrapSummary:
        fault = data.get("sensor_fault")
        return cls(data.get("fill_fraction"), data.get("depth_in"), data["state"],
                   # Recorded before the fault state existed: the level was the state.
                   data.get("level", data["state"]),
                   None if fault is None else FaultSummary(fault["reason"],
                                                           parse_iso(fault["since"])))


@dataclass(frozen=True, slots=True)
class PairSummary:
    """A turbidity pair's entry (``PairFold.summary``, ``summary.pair_at``): its state,
    the basis and start of the episode shown, and the latest evaluated reading's values.

    ``state`` is the episode (``pending``, ``exceeded``, ``clearing``) or ``ok`` while
    the contrast is known; ``unknown`` while it is not, and ``unmonitored`` once the
    qualified professional has been told so (``turbidity_unmonitored``); never ``ok``
    then. ``unknown_reason``, ``unknown_since_ms`` and ``notice_ms`` say why, since
    when, and when that notice is (or falls) due, None while it is known (``notice_ms``
    also None when no notice will come in the site's active period).
    ``stale_after_minutes`` is the downstream probe's: a summary read later than the
    latest reading by more than that knows no contrast now."""

    state: str
    basis: str | None = None
    delta_ntu: float | None = None
    limit_ntu: float | None = None
    upstream_ntu: float | None = None
    downstream_ntu: float | None = None
    at_ms: int | None = None
    started_ms: int | None = None
    unknown_reason: str | None = None
    unknown_since_ms: int | None = None
    notice_ms: int | None = None
    stale_after_minutes: float | None = None

    def to_json(self) -> dict[str, Any]:
        unknown = None if self.unknown_reason is None else {
            "reason": self.unknown_reason, "since": _iso(self.unknown_since_ms),
            "notice_at": _iso(self.notice_ms)}
        return {"state": self.state, "basis": self.basis, "delta_ntu": self.delta_ntu,
                "limit_ntu": self.limit_ntu, "upstream_ntu": self.upstream_ntu,
                "downstream_ntu": self.downstream_ntu, "at": _iso(self.at_ms),
                "started_at": _iso(self.started_ms), "unknown": unknown,
                "stale_after_minutes": self.stale_after_minutes}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PairSummary:
        unknown = data.get("unknown") or {}
        return cls(data["state"], data.get("basis"), data.get("delta_ntu"),
                   data.get("limit_ntu"), data.get("upstream_ntu"), data.get("downstream_ntu"),
                   _ms(data.get("at")), _ms(data.get("started_at")), unknown.get("reason"),
                   _ms(unknown.get("since")), _ms(unknown.get("notice_at")),
                   data.get("stale_after_minutes"))


#: How bad a pair's state is, least first: the site's worst state is the fleet's headline.
#: A contrast nobody can check is worse than a known good one, and one the qualified
#: professional has been told of is worse than an exceedance still pending.
TURBIDITY_SEVERITY = ("ok", "unknown", "pending", "clearing", "unmonitored", "exceeded")


# --------------------------------------------------------------------------- recorded


@dataclass(frozen=True, slots=True)
class ClockSummary:
    """An inspection clock as the engine knows it: started (``start``, or when it
    opened), due (None until an ``event_end`` storm has ended), closed, cut."""

    clock_id: str
    clock: str
    started_ms: int
    due_ms: int | None
    closed_ms: int | None = None
    ends_ms: int | None = None
    #: The storm event of a storm clock (None for a routine clock).
    event_id: str | None = None
    #: The permit whose rule the clock keeps and the rule's section (None at a site
    #: that names no permits: Chapter 134's § 134-9A(2)).
    permit: str | None = None
    section: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"clock_id": self.clock_id, "clock": self.clock,
                "started_at": iso(self.started_ms), "due": _iso(self.due_ms),
                "closed_at": _iso(self.closed_ms), "ends_at": _iso(self.ends_ms),
                **({"event_id": self.event_id} if self.event_id is not None else {}),
                **_source_json(self.permit, self.section)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClockSummary:
        return cls(data["clock_id"], data["clock"], parse_iso(data["started_at"]),
                   _ms(data["due"]), _ms(data.get("closed_at")), _ms(data.get("ends_at")),
                   data.get("event_id"), data.get("permit"), data.get("section"))


def _source_json(permit: str | None, section: str | None) -> dict[str, Any]:
    """A clock's ``permit`` and ``section`` when the site names its permits."""
    return {"permit": permit, "section": section} if permit is not None else {}


@dataclass(frozen=True, slots=True)
class SensorSummary:
    """A sensor's last word: when, its battery, how many readings, and its node's
    buffer (from the node's latest status; None until one came)."""

    kind: str
    last_seen_ms: int | None
    battery_v: float | None
    stale_after_minutes: float
    #: False for an on_tip gauge without heartbeats: a dry one and a dead one look alike.
    judged: bool = True
    readings: int = 0
    buffered: int | None = None
    dropped: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "last_seen": _iso(self.last_seen_ms),
                "battery_v": self.battery_v, "stale_after_minutes": self.stale_after_minutes,
                "judged": self.judged, "readings": self.readings, "buffered": self.buffered,
                "dropped": self.dropped}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SensorSummary:
        return cls(data["kind"], _ms(data["last_seen"]), data["battery_v"],
                   data["stale_after_minutes"], data.get("judged", True), data["readings"],
                   data.get("buffered"), data.get("dropped"))


@dataclass(frozen=True, slots=True)
class SiteSummary:
    """What the engine knows of one site, for any later *now* (module docstring)."""

    name: str | None
    condition: str
    clocks: tuple[ClockSummary, ...]
    last_inspection_ms: int | None
    traps: Mapping[str, TrapSummary]
    turbidity: Mapping[str, PairSummary]
    sensors: Mapping[str, SensorSummary]
    #: The engine's event-time now when it answered (``summary.judged_at``).
    event_time_ms: int | None
    corrective_actions: tuple[ActionState, ...] = ()
    #: Weeks missed by routine clocks already settled out of memory (``settle.py``).
    missed_weeks_settled: int = 0
    closed_ms: int | None = None
    #: The time zone whose calendar the routine clocks count in (their missed weeks
    #: end at the ends of local days a week apart); None: weeks of 7 x 24 hours.
    calendar_zone: str | None = None

    @property
    def week_zone(self) -> ZoneInfo | None:
        return ZoneInfo(self.calendar_zone) if self.calendar_zone is not None else None

    def to_json(self) -> dict[str, Any]:
        return {
            "version": SUMMARY_VERSION,
            "name": self.name,
            "condition": self.condition,
            "clocks": [c.to_json() for c in self.clocks],
            "last_inspection": _iso(self.last_inspection_ms),
            "traps": {tid: t.to_json() for tid, t in self.traps.items()},
            "turbidity": {pid: p.to_json() for pid, p in self.turbidity.items()},
            "sensors": {sid: s.to_json() for sid, s in self.sensors.items()},
            "event_time": _iso(self.event_time_ms),
            "corrective_actions": [a.to_json() for a in self.corrective_actions],
            "missed_weeks_settled": self.missed_weeks_settled,
            "closed_at": _iso(self.closed_ms),
            "calendar_zone": self.calendar_zone,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SiteSummary:
        return cls(
            data["name"], data["condition"],
            tuple(ClockSummary.from_json(c) for c in data["clocks"]),
            _ms(data["last_inspection"]),
            {tid: TrapSummary.from_json(t) for tid, t in data["traps"].items()},
            {pid: PairSummary.from_json(p) for pid, p in data["turbidity"].items()},
            {sid: SensorSummary.from_json(s) for sid, s in data["sensors"].items()},
            _ms(data.get("event_time")),
            tuple(_action(a) for a in data.get("corrective_actions", ())),
            int(data.get("missed_weeks_settled", 0)),
            _ms(data.get("closed_at")),
            # Recorded before calendar weeks: weeks of 7 x 24 hours.
            data.get("calendar_zone"))


def _action(data: Mapping[str, Any]) -> ActionState:
    """An ``ActionState`` from its ``to_json``."""
    return ActionState(data["id"], data["text"], _ms(data["due"]), parse_iso(data["opened_at"]),
                       data["inspector"], _ms(data.get("resolved_at")), data.get("resolved_by"),
                       _ms(data.get("sent_at")), data.get("sent_by"), data.get("sent_to"),
                       _ms(data.get("done_at")), data.get("done_by"), data.get("done_note"),
                       kind="maintenance" if data.get("kind") == "maintenance" else "corrective")


# --------------------------------------------------------------------------- at an instant


@dataclass(frozen=True, slots=True)
class OpenClock:
    """A clock open at the instant: begun, not closed, not cut."""

    clock_id: str
    clock: str
    started_ms: int
    due_ms: int | None
    event_id: str | None
    #: Hours to due (negative: late), to 0.01 h; None while the due is unknown.
    hours_left: float | None
    #: Past due at the instant (``clocks.is_overdue``): the one rule of lateness.
    overdue: bool
    #: A routine clock's weeks missed so far (§ 134-12D); None for a storm clock.
    missed_weeks: int | None = None
    #: The permit and section of the clock's rule (``ClockSummary``).
    permit: str | None = None
    section: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"clock_id": self.clock_id, "clock": self.clock,
                               "started_at": iso(self.started_ms), "due": _iso(self.due_ms)}
        if self.event_id is not None:
            out["event_id"] = self.event_id
        out["hours_left"] = self.hours_left
        out["overdue"] = self.overdue
        if self.missed_weeks is not None:
            out["missed_weeks"] = self.missed_weeks
        out.update(_source_json(self.permit, self.section))
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OpenClock:
        return cls(data["clock_id"], data["clock"], parse_iso(data["started_at"]),
                   _ms(data["due"]), data.get("event_id"), data["hours_left"],
                   data["overdue"], data.get("missed_weeks"), data.get("permit"),
                   data.get("section"))


@dataclass(frozen=True, slots=True)
class SensorNow:
    """A sensor at the instant: ``stale`` is None when that cannot be told (``health``
    is then ``unknown``, never a false "not stale")."""

    kind: str
    last_seen_ms: int | None
    stale: bool | None
    health: str
    battery_v: float | None
    readings: int
    buffered: int | None = None
    dropped: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"last_seen": _iso(self.last_seen_ms), "stale": self.stale,
                "health": self.health, "battery_v": self.battery_v, "kind": self.kind,
                "readings": self.readings, "buffered": self.buffered, "dropped": self.dropped}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SensorNow:
        return cls(data["kind"], _ms(data["last_seen"]), data["stale"], data["health"],
                   data["battery_v"], data["readings"], data.get("buffered"),
                   data.get("dropped"))


@dataclass(frozen=True, slots=True)
class ActionNow:
    """A corrective action open at the instant, and whether it is past its due."""

    action: ActionState
    overdue: bool

    def to_json(self) -> dict[str, Any]:
        return {**self.action.to_json(), "overdue": self.overdue}


@dataclass(frozen=True, slots=True)
class SiteNow:
    """A site at one instant: the site object of ``status --json`` (README.md, "Commands")."""

    name: str | None
    condition: str
    open_clocks: tuple[OpenClock, ...]
    last_inspection_ms: int | None
    traps: Mapping[str, TrapSummary]
    turbidity: Mapping[str, PairSummary]
    sensors: Mapping[str, SensorNow]
    #: Weeks without a required inspection (§ 134-12D, each a separate violation).
    missed_weeks: int | None
    corrective_actions: tuple[ActionNow, ...] = ()
    closed_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "condition": self.condition,
            "open_clocks": [c.to_json() for c in self.open_clocks],
            "last_inspection": _iso(self.last_inspection_ms),
            "traps": {tid: t.to_json() for tid, t in self.traps.items()},
            "turbidity": {pid: p.to_json() for pid, p in self.turbidity.items()},
            "sensors": {sid: s.to_json() for sid, s in self.sensors.items()},
            "missed_weeks": self.missed_weeks,
            "corrective_actions": [a.to_json() for a in self.corrective_actions],
            "closed_at": _iso(self.closed_ms),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SiteNow:
        """Read a ``status --json`` site object back (extra keys of the view, such as
        ``recorded_at`` or a sensor's ``clock``, are left to the view)."""
        return cls(
            data["name"], data["condition"],
            tuple(OpenClock.from_json(c) for c in data["open_clocks"]),
            _ms(data["last_inspection"]),
            {tid: TrapSummary.from_json(t) for tid, t in data["traps"].items()},
            {pid: PairSummary.from_json(p) for pid, p in data["turbidity"].items()},
            {sid: SensorNow.from_json(s) for sid, s in data["sensors"].items()},
            data.get("missed_weeks"),
            tuple(ActionNow(_action(a), a["overdue"]) for a in data.get("corrective_actions", ())),
            _ms(data.get("closed_at")))

    # ------------------------------------------------------------ the headline numbers

    def next_clock(self) -> OpenClock | None:
        """The open clock due first (the one with the fewest hours left)."""
        return next((c for c in self.open_clocks if c.due_ms is not None), None)

    def overdue_clocks(self) -> list[OpenClock]:
        return [c for c in self.open_clocks if c.overdue]

    def worst_turbidity(self) -> str:
        """The worst state of the site's pairs (``TURBIDITY_SEVERITY``); "" without pairs."""
        return max((p.state for p in self.turbidity.values()), key=TURBIDITY_SEVERITY.index,
                   default="")

    def traps_at(self, level: str) -> list[str]:
        """The traps whose level (the last valid fill's, through a fault) is ``level``."""
        return [tid for tid, t in self.traps.items() if t.level == level]


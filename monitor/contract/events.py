"""Domain events: the one vocabulary of monitor/README.md, "Events", as types.

Each event type of the vocabulary is a frozen dataclass of its own fields (a *body*:
``StormQualified``, ``TrapCleanoutRequired`` ...), built by the rule that
concludes it, so a misspelt or missing field is a type error where the event
is made, and consumers read attributes. ``EVENT_TYPES`` maps each type name to
its class; ``EVENT_FIELDS`` (the fields of each type) is read off the classes.
How a body becomes JSON is ``body.py``; the turbidity types are
``turbidity_events.py``, the weather types ``weather_events.py``.

A ``Fact`` is what the rules conclude (site, event time, stable id and the
body). An ``Event`` is a fact as published: with the ``revision`` it has
reached. When late data changes a fact, the engine publishes the same id
again with ``revision + 1``; when late data shows a fact never held (a storm
start that moved earlier gets a new id), the old id is published once more
with ``retracted: true``. The latest revision is authoritative.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

# Re-exported: the vocabulary's base (``body.py``).
from .body import CONTRACT as CONTRACT
from .body import Body as Body
from .body import contract_field as contract_field
from .permit_events import CorrectiveActionOverdue as CorrectiveActionOverdue
from .permit_events import SiteShutdown as SiteShutdown
from .permit_events import TurbidityBenchmarkExceeded as TurbidityBenchmarkExceeded
from .snow_events import SnowEvent as SnowEvent
from .times import iso, parse_iso
from .turbidity_events import BackgroundMissing as BackgroundMissing
from .turbidity_events import Pegged as Pegged
from .turbidity_events import ProbesSuspect as ProbesSuspect
from .turbidity_events import TurbidityContrast as TurbidityContrast
from .turbidity_events import TurbidityMonitored as TurbidityMonitored
from .turbidity_events import TurbidityUnknown as TurbidityUnknown
from .turbidity_events import TurbidityUnmonitored as TurbidityUnmonitored
from .turbidity_events import UnknownReason as UnknownReason
from .weather_events import GaugeDisagrees as GaugeDisagrees
from .weather_events import StormForecast as StormForecast

# --------------------------------------------------------------------------- storms


@dataclass(frozen=True, slots=True, kw_only=True)
class StormStarted(Body):
    TYPE: ClassVar[str] = "storm_started"
    gauge: str
    event_id: str
    started_at: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StormQualified(Body):
    """§ 134-9A(2): a storm event reached the threshold; ``due`` is the inspection's
    deadline (null until the storm ends for ``clock_start: event_end``, and for a
    site the clocks do not apply to or a storm outside the site's active period,
    which are ``informational``)."""

    TYPE: ClassVar[str] = "storm_qualified"
    gauge: str
    event_id: str
    started_at: str
    qualified_at: str
    total_in: float
    max_24h_in: float
    due: str | None
    #: Of ``total_in``, the inches of unknown timing: rain a gauge revealed when it
    #: came back from a silence (monitor/README.md, "Silence is not dry weather").
    uncertain_in: float
    #: The gauges that counted (``gauges: all``/``mean`` leave out the stale ones).
    gauges: tuple[str, ...]
    threshold_in: float
    mode: str
    clock_id: str | None = None
    informational: bool | None = None
    #: Qualified at a reading that revealed rain after a silence (monitor/README.md, "The rules"):
    #: it may have qualified as early as the silence began (this), and the inspection may be
    #: due as early as ``due_not_before``. Both null otherwise.
    qualified_not_before: str | None = contract_field()
    due_not_before: str | None = contract_field()
    #: ``reference`` when no site gauge qualified it but the reference stations did
    #: (``weather.reference_opens_clock``, ``rules/weather/weather.py``): then ``reference``
    #: is the station and ``reference_in`` its 24-hour depth (``total_in`` too), and
    #: ``gauge`` the site gauge that disagreed. Unset for a gauge's own storm.
    source: str | None = None
    reference: str | None = None
    reference_in: float | None = None
    #: Why a storm at a site the clocks apply to opens no clock (it is then
    #: ``informational``): it qualified outside the site's active period,
    #: ``before_active_since``, ``before_start`` (before the start a site without
    #: ``active_since`` has from its readings), ``after_final_stabilization`` or
    #: ``paused``. Unset otherwise.
    outside: str | None = None
    #: The permit whose rule the clock keeps, and the rule's citation (config/README.md,
    #: "Permits"); unset at a site that names no permits (Chapter 134 alone).
    permit: str | None = None
    section: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StormEnded(Body):
    TYPE: ClassVar[str] = "storm_ended"
    gauge: str
    event_id: str
    started_at: str
    ended_at: str
    total_in: float
    max_24h_in: float
    qualified: bool
    uncertain_in: float


@dataclass(frozen=True, slots=True, kw_only=True)
class GaugeQualified(Body):
    """A gauge's own storm event qualified (internal: the clocks decide what the site's
    storm is, and publish ``storm_qualified``)."""

    TYPE: ClassVar[str] = "_gauge_qualified"
    gauge: str
    event_id: str
    started_at: str
    qualified_at: str
    total_in: float
    max_24h_in: float
    last_rain: str
    uncertain_in: float
    gauges: tuple[str, ...]
    qualified_not_before: str | None = None
    #: The permit storm rule it qualified under (``rules/permits``); None: the site's own.
    rule: str | None = None


# --------------------------------------------------------------------------- inspections


@dataclass(frozen=True, slots=True, kw_only=True)
class InspectionRecorded(Body):
    """§ 134-9A(2): an inspection report for the site log book.

    ``inspectors`` and ``credentials`` (from the roster when it was entered) are
    parallel lists: the first inspector certifies the report and carries the
    credential, the others are companions (credential ""); ``entered_at`` is when
    it reached stormwatch, ``backdated`` whether that was more than
    ``backdate_alert_hours`` after ``inspected_at``.
    ``findings`` are ``{practice, condition}``, ``corrective_actions`` ``{id, text,
    due}``; ``resolves`` names earlier corrective actions it closes. From the field
    app also ``photos`` (``{sha256, taken_at, lat, lon, caption}``), ``location``
    (``{lat, lon, accuracy_m}``) and ``certified``; ``via`` says how it was entered
    (``web``/``cli``/``mqtt``/``replay``). These four are left out when not set."""

    TYPE: ClassVar[str] = "inspection_recorded"
    inspector: str
    kind: str
    inspected_at: str
    closes: tuple[str, ...]
    entered_at: str | None
    backdated: bool
    findings: tuple[dict[str, str], ...]
    corrective_actions: tuple[dict[str, str | None], ...]
    inspectors: tuple[str, ...]
    credentials: tuple[str, ...]
    resolves: tuple[str, ...]
    notes: str | None = None
    photos: tuple[dict[str, Any], ...] | None = None
    location: dict[str, Any] | None = None
    certified: bool | None = None
    via: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class InspectionBackdated(Body):
    """An inspection entered long after its own time: the officer hears of it, since it
    may close a clock that stood overdue in the meantime."""

    TYPE: ClassVar[str] = "inspection_backdated"
    inspector: str
    inspected_at: str
    entered_at: str
    closes: tuple[str, ...]
    hours_late: float


@dataclass(frozen=True, slots=True, kw_only=True)
class CorrectiveActionDue(Body):
    """A corrective action an inspection asked for reached its due date unresolved."""

    TYPE: ClassVar[str] = "corrective_action_due"
    action_id: str
    text: str
    due: str
    opened_at: str
    inspector: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CorrectiveActionSent(Body):
    """A corrective action sent to the contractor as a link (by ``sent_by``; ``to`` the
    address it was mailed to, null when the link was handed over otherwise). The
    link itself is never recorded."""

    TYPE: ClassVar[str] = "corrective_action_sent"
    action_id: str
    text: str
    sent_by: str
    to: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CorrectiveActionDone(Body):
    """A corrective action reported done by ``done_by`` (the qualified professional, or
    ``contractor`` through the link, ``via: link``), with a note and ``photos`` as
    an inspection's; the next inspection verifies it (``resolves``)."""

    TYPE: ClassVar[str] = "corrective_action_done"
    action_id: str
    text: str
    done_by: str
    note: str | None
    photos: tuple[dict[str, Any], ...]
    via: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class InspectionMissed(Body):
    """§ 134-12D: "each week ... shall constitute a separate violation". One per 7-day
    period a routine clock stands unsatisfied: ``week`` 1 from ``due``, 2 from a week
    later, and so on (``week_from`` .. ``week_to``)."""

    TYPE: ClassVar[str] = "inspection_missed"
    clock_id: str
    clock: str
    due: str
    week: int
    week_from: str
    week_to: str
    #: The permit whose rule the clock keeps, and the rule's citation (config/README.md,
    #: "Permits"); unset at a site that names no permits (Chapter 134 alone).
    permit: str | None = None
    section: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SiteClosed(Body):
    """Final stabilization recorded (``stormwatch site close``): no routine clock runs
    from ``closed_at`` on."""

    TYPE: ClassVar[str] = "site_closed"
    closed_at: str
    entered_at: str | None
    by: str | None = None
    notes: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class InspectionDueSoon(Body):
    TYPE: ClassVar[str] = "inspection_due_soon"
    clock_id: str
    clock: str
    due: str
    hours_left: float
    #: ``reference`` for a storm clock the reference stations opened (``StormQualified``).
    source: str | None = None
    #: The permit whose rule the clock keeps, and the rule's citation (config/README.md,
    #: "Permits"); unset at a site that names no permits (Chapter 134 alone).
    permit: str | None = None
    section: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class InspectionOverdue(Body):
    TYPE: ClassVar[str] = "inspection_overdue"
    clock_id: str
    clock: str
    due: str
    hours_late: float
    #: ``reference`` for a storm clock the reference stations opened (``StormQualified``).
    source: str | None = None
    #: The permit whose rule the clock keeps, and the rule's citation (config/README.md,
    #: "Permits"); unset at a site that names no permits (Chapter 134 alone).
    permit: str | None = None
    section: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClockClosed(Body):
    TYPE: ClassVar[str] = "clock_closed"
    clock_id: str
    clock: str
    due: str
    inspected_at: str
    outcome: Literal["met", "late"]
    entered_at: str | None
    backdated: bool
    #: ``reference`` for a storm clock the reference stations opened (``StormQualified``).
    source: str | None = None
    #: The permit whose rule the clock keeps, and the rule's citation (config/README.md,
    #: "Permits"); unset at a site that names no permits (Chapter 134 alone).
    permit: str | None = None
    section: str | None = None


# --------------------------------------------------------------------------- traps


@dataclass(frozen=True, slots=True, kw_only=True)
class TrapFill(Body):
    """§ 134-9A(1): the fill of design capacity reached the warning level."""

    TYPE: ClassVar[str] = "trap_fill"
    trap: str
    fill_fraction: float
    depth_in: float
    sensor: str
    threshold: float


@dataclass(frozen=True, slots=True, kw_only=True)
class TrapCleanoutRequired(Body):
    """§ 134-9A(1): the fill reached the clean-out level (50 % by default). Repeated every
    ``cleanout_repeat_hours`` while it holds: ``repeat`` is 0 for the first demand, then 1, 2 ..."""

    TYPE: ClassVar[str] = "trap_cleanout_required"
    trap: str
    fill_fraction: float
    depth_in: float
    sensor: str
    threshold: float
    repeat: int
    #: A repeat concluded while the trap's sensor is faulty (monitor/README.md, "The rules") names
    #: the fault's ``reason``: the fill is then the last valid one.
    fault: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TrapCleaned(Body):
    """A maintenance record: the fill fell by 0.2 or more within 24 hours. One per fall,
    made when the drop first reaches 0.2 and revised (same id) with the fill where the
    fall settled (``fill_after``)."""

    TYPE: ClassVar[str] = "trap_cleaned"
    trap: str
    fill_before: float
    fill_after: float
    sensor: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SensorFault(Body):
    """A reading that cannot be true (monitor/README.md, "The rules"): kept in the journal, left out
    of the rule, reported once per episode (a run of such readings) from ``since`` on.

    ``reason`` ``beyond_bottom``: the depth is below the trap bottom (``distance_in``
    above ``sensor_height_in``, or a negative ``depth_in``); ``above_max_fill``: the
    depth is above ``max_fill_fraction`` of the design depth; ``impossible_step``: the
    depth moved more than ``max_step_in`` from the last valid reading and did not stay
    there for ``median_of`` readings. ``value`` is the depth in inches the first
    faulty reading gives (whichever form it came in); ``distance_in`` the distance it
    was measured as, when it was; ``last_valid_in`` the last valid depth before it."""

    TYPE: ClassVar[str] = "sensor_fault"
    sensor: str
    reason: Literal["beyond_bottom", "above_max_fill", "impossible_step"]
    value: float
    since: str
    trap: str | None = None
    distance_in: float | None = None
    last_valid_in: float | None = None


# --------------------------------------------------------------------------- sensors


@dataclass(frozen=True, slots=True, kw_only=True)
class SensorStale(Body):
    TYPE: ClassVar[str] = "sensor_stale"
    sensor: str
    #: Null for a sensor that never reported since monitoring started.
    last_seen: str | None
    stale_after_minutes: float


@dataclass(frozen=True, slots=True, kw_only=True)
class SensorRecovered(Body):
    TYPE: ClassVar[str] = "sensor_recovered"
    sensor: str
    last_seen: str
    stale_since: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BatteryLow(Body):
    TYPE: ClassVar[str] = "battery_low"
    sensor: str
    battery_v: float
    battery_low_v: float


@dataclass(frozen=True, slots=True, kw_only=True)
class CounterReset(Body):
    TYPE: ClassVar[str] = "counter_reset"
    sensor: str
    tips_before: int
    tips_after: int


#: Every published event type by name, in the order that breaks ties at one
#: instant (causes before consequences).
EVENT_TYPES: dict[str, type[Body]] = {cls.TYPE: cls for cls in (
    StormStarted, StormQualified, StormEnded, InspectionRecorded, InspectionBackdated,
    InspectionDueSoon, InspectionOverdue, InspectionMissed, ClockClosed, CorrectiveActionDue,
    SiteClosed, TrapFill,
    TrapCleanoutRequired, TrapCleaned, TurbidityContrast, SensorStale, SensorRecovered,
    BatteryLow, CounterReset, BackgroundMissing, Pegged, SensorFault, ProbesSuspect,
    TurbidityUnmonitored, TurbidityMonitored, StormForecast, GaugeDisagrees,
    CorrectiveActionSent, CorrectiveActionDone, SnowEvent, CorrectiveActionOverdue,
    TurbidityBenchmarkExceeded, SiteShutdown)}
#: Each event type's fields (monitor/README.md, "Events" and what the rules add), read off the
#: types.
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    name: tuple(f.name for f in dataclasses.fields(cls)) for name, cls in EVENT_TYPES.items()}
_INTERNAL: dict[str, type[Body]] = {GaugeQualified.TYPE: GaugeQualified,
                                    TurbidityUnknown.TYPE: TurbidityUnknown}

#: Tie-break for events at the same instant: causes before consequences.
TYPE_ORDER = {name: i for i, name in enumerate(EVENT_TYPES)}


def make_id(*parts: object) -> str:
    """A stable id: the first 16 hex digits of SHA-256 over the parts."""
    text = "\x1f".join(str(p) for p in parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Fact:
    """A concluded domain fact: where, when, its stable id, and its typed body."""

    site: str
    at_ms: int
    id: str
    body: Body

    @property
    def type(self) -> str:
        return self.body.TYPE

    @property
    def fields(self) -> dict[str, Any]:
        """The body as JSON-ready data (for writers that treat every type alike)."""
        return self.body.to_json()

    def sort_key(self) -> tuple[int, int, str]:
        return (self.at_ms, TYPE_ORDER.get(self.type, 99), self.id)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "site": self.site, "at": iso(self.at_ms), "id": self.id,
                **self.body.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fact:
        """The fact of an event's JSON (``KeyError``/``TypeError`` when it is not one)."""
        kind = str(data["type"])
        body_type = EVENT_TYPES.get(kind) or _INTERNAL.get(kind)
        if body_type is None:
            raise KeyError(f"unknown event type {kind!r}")
        return cls(str(data["site"]), parse_iso(data["at"]), str(data["id"]),
                   body_type.from_json(data))


@dataclass(frozen=True, slots=True)
class Event:
    """A published fact with its revision (monitor/README.md, "Architecture": latest revision
    wins)."""

    fact: Fact
    revision: int = 0
    retracted: bool = False

    @property
    def type(self) -> str:
        return self.fact.type

    @property
    def id(self) -> str:
        return self.fact.id

    @property
    def site(self) -> str:
        return self.fact.site

    @property
    def at_ms(self) -> int:
        return self.fact.at_ms

    def to_json(self) -> dict[str, Any]:
        out = self.fact.to_json()
        out["revision"] = self.revision
        if self.retracted:
            out["retracted"] = True
        return out

    @property
    def body(self) -> Body:
        return self.fact.body

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Event:
        return cls(Fact.from_json(data), int(data.get("revision", 0)),
                   bool(data.get("retracted", False)))


def in_event_order(events: list[Event]) -> list[Event]:
    """Events by event time (causes before consequences at one instant), then revision."""
    return sorted(events, key=lambda e: (e.fact.sort_key(), e.revision))

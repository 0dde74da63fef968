"""Which tags an event is alerted to: the routing table of config/README.md ``notify.routes``.

Theory of operation
-------------------
The engine thread calls ``Router.__call__(event)`` inside the transaction that
records the event (``EventLog.record(..., routes=...)``), and one outbox
row is written per tag it returns. So this module is pure and cheap: no I/O,
no clock, the same answer for the same event every time (a replayed event
must get the same rows, which ``ON CONFLICT DO NOTHING`` then ignores).

A route key is an event type of monitor/README.md, "Events", or ``type.variant`` for the few
types whose meaning depends on a field (``VARIANTS``): a storm at a site
without inspection clocks is ``storm_qualified.informational``, an
inspection recorded after its deadline closes ``clock_closed.late``, a
turbidity episode ends as ``turbidity_contrast.cleared``. The tags for an
event are the first of these that is set::

    site routes[type.variant], site routes[type],
    notify.routes[type.variant], notify.routes[type],
    DEFAULT_ROUTES[type.variant], DEFAULT_ROUTES[type]

so a route the user writes for ``clock_closed`` covers both outcomes, and an
empty list means "record in the log book, send nothing".

What is never routed, whatever the table says (the rest of the noise rules
need the store and are applied at delivery time, see ``policy.py``):

* internal facts (types starting with ``_``) and retractions (``retracted:
  true``): they are not new facts for a person; the log book keeps them;
* revisions (``revision > 0``) of every type except ``storm_qualified``:
  only the storm carries the deadline that a late reading can move earlier
  (monitor/README.md, "Architecture"), and its correction is decided at delivery against what was
  actually sent. A late reading that refines a trap's fill fraction or the
  start of a turbidity episode is not worth a second message.

Tags that no configured target receives are dropped here (and named once at
start-up by ``describe_gaps``), so the outbox holds only rows that can be
delivered; a target without tags receives every tag.

Urgency (``is_urgent``): the alerts that carry a duty of Chapter 134 with a
deadline or a violation — ``storm_qualified`` (§ 134-9A(2), 24 hours),
``inspection_due_soon`` and ``inspection_overdue`` (§ 134-9A(2)),
``trap_cleanout_required`` (§ 134-9A(1)) and an exceeded
``turbidity_contrast`` (§ 134-8C). Only urgent alerts are escalated when their
route cannot be reached. Everything else is informational.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from ...contract.events import ClockClosed, Event, StormQualified, TurbidityContrast
from ...contract.routes import ROUTE_KEYS

#: The qualified professional's tag: alerts routed to it carry the form link (``host/links.py``).
QP_TAG: Final = "qp"

#: The default route of every event type of the vocabulary: a decision for each, [] = log book only.
DEFAULT_ROUTES: Final[dict[str, tuple[str, ...]]] = {
    # A drizzle starts and ends a storm event; only a qualifying one is news.
    "storm_started": (),
    # § 134-9A(2): the 24-hour clock starts. The officer sees every one.
    "storm_qualified": ("qp", "officer"),
    # A site below Conditions A-C: recorded and reported, no deadline.
    "storm_qualified.informational": ("qp",),
    "storm_ended": (),
    # The qualified professional recorded it; clock_closed says what it settled.
    "inspection_recorded": (),
    # Entered long after its own time: it may have closed a clock that stood
    # overdue meanwhile, so the officer hears of it.
    "inspection_backdated": ("officer",),
    # Each missed week is a separate violation (§ 134-12D); the overdue notices
    # already go out every few hours, so these are for the log book and report.
    "inspection_missed": (),
    "corrective_action_due": ("qp",),
    # The qualified professional sent it to the contractor: the log book's record.
    "corrective_action_sent": (),
    # Reported done (by the contractor's link): the qualified professional verifies it
    # at the next inspection.
    "corrective_action_done": ("qp",),
    # Final stabilization: the routine cadence ends; the officer is told.
    "site_closed": ("qp", "officer"),
    "inspection_due_soon": ("qp",),
    # An overdue clock also notifies the officer.
    "inspection_overdue": ("qp", "officer"),
    "clock_closed": ("qp",),
    # A late inspection is a missed § 134-9A(2) deadline: the officer hears of it.
    "clock_closed.late": ("qp", "officer"),
    "trap_fill": ("qp",),
    "trap_cleanout_required": ("qp",),
    "trap_cleaned": (),
    "turbidity_contrast": ("qp",),
    # Sensor health goes to whoever keeps the nodes running.
    "sensor_stale": ("ops",),
    "sensor_recovered": ("ops",),
    "battery_low": ("ops",),
    "counter_reset": ("ops",),
    "background_missing": ("ops",),
    "pegged": ("ops",),
    # A trap sensor reading what cannot be true: operations fixes the
    # sensor, and the qualified professional hears of it because § 134-9A(1) goes
    # unwatched meanwhile (the demand repeats on the last valid fill; a trap filling
    # further is not seen): the trap needs a look by eye.
    "sensor_fault": ("qp", "ops"),
    # Upstream far above downstream for hours: swapped probes hide every § 134-8C
    # exceedance (the contrast comes out negative), a plume at the upstream probe is
    # a site problem. Either way the qualified professional must look, and
    # operations check the probes.
    "probes_suspect": ("qp", "ops"),
    # § 134-8C cannot be checked: the background probe dead, the downstream
    # one silent or pegged for unknown_notice_hours. Operations fix the probe; the
    # qualified professional must look at the water meanwhile, and both hear when the
    # contrast is known again.
    "turbidity_unmonitored": ("qp", "ops"),
    "turbidity_monitored": ("qp", "ops"),
    # A storm in the forecast: the qualified professional checks the controls
    # before the rain (§ 134-9A(2) follows the storm); no clock, no officer.
    "storm_forecast": ("qp",),
    # The reference saw a storm the gauge did not: operations look at the gauge,
    # the qualified professional at the site (it may have rained there).
    "gauge_disagrees": ("qp", "ops"),
    # Snow whose melt is a storm event's discharge: the qualified professional checks
    # the controls before the thaw, like a forecast storm; no clock yet, no officer.
    "snow_event": ("qp",),
}

#: Types whose alerts carry a deadline or a violation (see the module docstring).
URGENT_TYPES: Final = frozenset({"storm_qualified", "inspection_due_soon", "inspection_overdue",
                                 "trap_cleanout_required", "turbidity_contrast"})
#: Variants of urgent types that are informational.
INFORMATIONAL_VARIANTS: Final = frozenset({"storm_qualified.informational",
                                           "turbidity_contrast.cleared"})
#: The one type whose revisions are routed (monitor/README.md, "Architecture": a deadline moved
#: earlier).
REVISED_TYPES: Final = frozenset({"storm_qualified"})


def variant(event: Event) -> str | None:
    """The variant of an event of a ``VARIANTS`` type, or None."""
    match event.body:
        case StormQualified(informational=True):
            return "informational"
        case ClockClosed(outcome=("met" | "late") as outcome):
            return outcome
        case TurbidityContrast(state=("exceeded" | "cleared") as state):
            return state
    return None


def route_keys(event: Event) -> list[str]:
    """The keys an event's route is looked up under, most specific first."""
    v = variant(event)
    return [f"{event.type}.{v}", event.type] if v is not None else [event.type]


def is_urgent(event: Event) -> bool:
    """Whether an alert carries a Chapter 134 deadline or violation (and is escalated)."""
    keys = route_keys(event)
    return keys[-1] in URGENT_TYPES and keys[0] not in INFORMATIONAL_VARIANTS


def is_alertable(event: Event) -> bool:
    """False for what is never sent: internal facts, retractions, most revisions."""
    if event.type.startswith("_") or event.retracted:
        return False
    return event.revision == 0 or event.type in REVISED_TYPES


RouteTable = Mapping[str, Iterable[str]]


@dataclass(frozen=True)
class Router:
    """The routing table with its overrides; call it with an event for its tags.

    ``available`` is the set of tags some target receives, or None when every
    tag is received (a target without tags exists, or nothing is known).
    """

    routes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    site_routes: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    available: frozenset[str] | None = None

    @classmethod
    def build(cls, routes: RouteTable, site_routes: Mapping[str, RouteTable],
              available: Iterable[str] | None = None) -> Router:
        return cls({k: tuple(v) for k, v in routes.items()},
                   {site: {k: tuple(v) for k, v in r.items()} for site, r in site_routes.items()},
                   frozenset(available) if available is not None else None)

    def table_tags(self, event: Event) -> tuple[str, ...]:
        """The tags the tables give the event's type (overrides applied, nothing filtered)."""
        return self._tags(event.site, route_keys(event))

    def _tags(self, site: str, keys: list[str]) -> tuple[str, ...]:
        for table in (self.site_routes.get(site, {}), self.routes, DEFAULT_ROUTES):
            for key in keys:
                if key in table:
                    return table[key]
        return ()

    def __call__(self, event: Event) -> list[str]:
        """The tags to write outbox rows for (``EventLog.record(routes=...)``)."""
        if not is_alertable(event):
            return []
        tags = dict.fromkeys(self.table_tags(event))  # ordered, without repeats
        if self.available is not None:
            return [t for t in tags if t in self.available]
        return list(tags)

    def gaps(self, site_ids: Iterable[str]) -> dict[str, list[str]]:
        """Route keys whose tags no target receives: {tag: [route key, ...]}."""
        if self.available is None:
            return {}
        sites = list(site_ids)
        out: dict[str, list[str]] = {}
        for key in ROUTE_KEYS:
            kind = key.partition(".")[0]
            keys = [key, kind] if key != kind else [kind]
            for site in sites:
                for tag in self._tags(site, keys):
                    if tag not in self.available and key not in out.setdefault(tag, []):
                        out[tag].append(key)
        return out

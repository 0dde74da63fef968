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

(``DEFAULT_ROUTES`` gathers each rule family's ``ALERT_ROUTES``, where the
reason for each default is written beside it)

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
from ...rules.registry import ALERT_ROUTES

#: The qualified professional's tag: alerts routed to it carry the form link (``host/links.py``).
QP_TAG: Final = "qp"

#: The default route of every event type of the vocabulary, [] = log book only: each
#: rule family's decision for its own types (``Family.alert_routes``).
DEFAULT_ROUTES: Final[dict[str, tuple[str, ...]]] = dict(ALERT_ROUTES)

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

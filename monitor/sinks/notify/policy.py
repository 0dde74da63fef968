"""What reaches a phone: the rules applied when an alert is about to be sent, and retry timing.

Theory of operation
-------------------
Routing (``routing.py``) decides from the event alone which tags get an
outbox row. Whether a row is still worth sending can only be decided when it
is sent, against what the store knows *then*: after a catch-up (the daemon
restarted after a day, a node replaying its buffer) many rows arrive at
once, and an unattended clock goes ``inspection_overdue`` every
``overdue_repeat_hours`` for as long as nobody inspects. ``decide`` settles
each due row as *send* (possibly as a correction) or *withhold* (the row is
kept, marked ``delivered`` with ``withheld`` saying why, and the event stays
in the log book):

1. **Retracted.** The latest revision of the event is ``retracted``: late
   data showed the fact never held; its replacement, if any, has its own id.
2. **Clock closed.** An ``inspection_due_soon`` or ``inspection_overdue``
   whose clock has been closed (an inspection was recorded) says something
   no longer true. ``clock_closed`` itself is routed (a late one also to the
   officer), so the outcome is not lost.
3. **Superseded notice.** An ``inspection_due_soon``/``inspection_overdue``
   for which a later notice of the same clock has its own row for the same
   tag: that one is sent instead, saying how late it is *now*. In a
   catch-up only the newest notice per clock reaches the phone; an overdue
   notice older than one repeat interval at delivery time always has such a
   newer one (the issue's rule), and a 6-hour reminder still queued when the
   1-hour one exists is dropped too.
4. **Superseded revision.** A ``storm_qualified`` row for which a higher
   revision of the same event has its own row for the same tag.
5. **Correction or nothing.** A ``storm_qualified`` revision > 0 is compared
   with the revision last *delivered* to the same tag (what the person
   knows): it is sent, titled as a correction, when its deadline is earlier
   by more than ``CORRECTION_MIN_MS`` (5 minutes, monitor/README.md, "Architecture") or is newly
   known (``clock_start: event_end``, the storm has ended); otherwise it is
   withheld. With nothing delivered before (the earlier revision was still
   queued, and rule 4 dropped it), it is sent as a new alert.
6. **Clean-out done or demanded again.** A ``trap_cleanout_required`` is
   withheld when a ``trap_cleaned`` of the same trap comes later in event
   time (the sediment was removed: the demand is moot), and, like rule 3,
   when a later demand for the same trap (a repeat, every
   ``cleanout_repeat_hours`` while the fill holds) has its own row for the
   same tag: in a catch-up only the newest demand per trap reaches the phone.

Escalation rows (``…/esc-qp``) follow the same rules: an escalation of a
notice whose clock has closed is as moot as the notice.

Retry timing (``backoff_s``): capped exponential, ``retry_initial_s`` ×
2^(failures − 1) up to ``retry_max_s``, less a random share of up to
``retry_jitter`` of it, so many rows failing together (a mail server down)
do not come back in lock-step.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from ...contract.events import (
    ClockClosed,
    Event,
    InspectionDueSoon,
    InspectionOverdue,
    StormQualified,
    TrapCleaned,
    TrapCleanoutRequired,
)
from ...contract.times import MS_PER_MINUTE, iso
from ...store import DueAlert, Store
from .messages import ms_of

#: monitor/README.md, "Architecture": "A revision that moves a deadline earlier by more than 5
#: minutes is alerted as a correction."
CORRECTION_MIN_MS: Final = 5 * MS_PER_MINUTE
CLOCK_NOTICES: Final = (InspectionDueSoon.TYPE, InspectionOverdue.TYPE)


@dataclass(frozen=True, slots=True)
class Decision:
    """Send (``withheld`` None; ``previous`` set for a correction) or withhold, and why."""

    withheld: str | None = None
    previous: Event | None = None


SEND: Final = Decision()


def decide(store: Store, row: DueAlert) -> Decision:
    """Apply the rules of the module docstring to one due outbox row (``Outbox.due``)."""
    event = row.event
    latest = store.events.latest(event.id)
    if latest is not None and latest.retracted:
        return Decision(f"retracted in revision {latest.revision}: the fact no longer holds")
    match event.body:
        case InspectionDueSoon(clock_id=clock_id) | InspectionOverdue(clock_id=clock_id):
            return _clock_notice(store, event, clock_id, row.tag)
        case StormQualified(due=due):
            return _revision(store, event, due, row.tag)
        case TrapCleanoutRequired(trap=trap):
            return _cleanout_demand(store, event, trap, row.tag)
    return SEND


def _clock_notice(store: Store, event: Event, clock_id: str, tag: str) -> Decision:
    closes: dict[str, Event] = {}
    for e in store.events.all(event.site, types=[ClockClosed.TYPE]):
        if isinstance(e.body, ClockClosed) and e.body.clock_id == clock_id:
            closes[e.id] = e  # in storage order: the last is the latest revision
    for e in closes.values():
        if not e.retracted and isinstance(e.body, ClockClosed):
            return Decision(f"clock closed: inspection recorded at {e.body.inspected_at}")
    later = [other for other in store.outbox.alerts(site=event.site, types=list(CLOCK_NOTICES),
                                                    tag=tag)
             if _clock_of(other.event) == clock_id and other.at_ms > event.at_ms
             and not other.event.retracted and other.event_id != event.id]
    if later:  # in event time order: name the newest, the one that is sent
        return Decision(f"superseded by alert {later[-1].alert_id}, a later notice for "
                        f"clock {clock_id}")
    return SEND


def _clock_of(event: Event) -> str | None:
    body = event.body
    return body.clock_id if isinstance(body, InspectionDueSoon | InspectionOverdue) else None


def _cleanout_demand(store: Store, event: Event, trap: str, tag: str) -> Decision:
    cleaned = [e for e in _latest(store, event.site, TrapCleaned.TYPE).values()
               if not e.retracted and isinstance(e.body, TrapCleaned) and e.body.trap == trap
               and e.at_ms > event.at_ms]
    if cleaned:
        first = min(cleaned, key=lambda e: e.at_ms)
        return Decision(f"trap {trap} cleaned at {iso(first.at_ms)}: the demand was met")
    # A demand retracted by late data never held: it supersedes nothing. Rows are made
    # for revision 0 only, so their own event does not tell; the latest revision does.
    standing = {i for i, e in _latest(store, event.site, TrapCleanoutRequired.TYPE).items()
                if not e.retracted}
    later = [other for other in store.outbox.alerts(
                 site=event.site, types=[TrapCleanoutRequired.TYPE], tag=tag)
             if other.event_id in standing and other.event_id != event.id
             and other.at_ms > event.at_ms and isinstance(other.event.body, TrapCleanoutRequired)
             and other.event.body.trap == trap]
    if later:  # in event time order: name the newest, the one that is sent
        return Decision(f"superseded by alert {later[-1].alert_id}, a later clean-out demand "
                        f"for trap {trap}")
    return SEND


def _latest(store: Store, site: str, type_: str) -> dict[str, Event]:
    """The latest stored revision of every event of ``type_`` at ``site``, by id."""
    latest: dict[str, Event] = {}
    for e in store.events.all(site, types=[type_]):
        latest[e.id] = e  # in storage order: the last is the latest revision
    return latest


def _revision(store: Store, event: Event, due: str | None, tag: str) -> Decision:
    revision = event.revision
    rows = store.outbox.alerts(event_id=event.id, tag=tag)
    later = [r for r in rows if r.revision > revision]
    if later:
        return Decision(f"superseded by revision {later[-1].revision} "
                        f"({later[-1].alert_id})")
    if revision == 0:
        return SEND
    sent = [r for r in rows if r.revision < revision and r.status == "delivered"
            and r.withheld is None]
    if not sent:
        return SEND  # nothing about this storm reached the tag yet: this is news
    previous = sent[-1].event
    before = previous.body.due if isinstance(previous.body, StormQualified) else None
    old, new = ms_of(before), ms_of(due)
    if new is not None and (old is None or new < old - CORRECTION_MIN_MS):
        return Decision(previous=previous)
    moved = "no deadline" if new is None or old is None else \
        f"the deadline by {(new - old) / MS_PER_MINUTE:+.0f} minutes"
    return Decision(f"revision {revision} changes {moved}; not a correction to alert")


def backoff_s(failures: int, initial_s: float, max_s: float, jitter: float,
              rand: Callable[[], float] = random.random) -> float:
    """Seconds to wait after the ``failures``-th failed attempt (see the module docstring)."""
    base = min(max_s, initial_s * 2.0 ** min(max(failures - 1, 0), 60))
    return base * (1.0 - jitter * rand())

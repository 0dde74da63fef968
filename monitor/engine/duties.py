"""What a site still owed at an instant: the duties of Chapter 134 not yet met.

Theory of operation
-------------------
A report that only counts ("1 open at the end") leaves the qualified
professional to find out what is open. ``outstanding_duties`` lists each
duty still owed at ``at_ms``, with what it is, since when, by when, and the
section that imposes it. It reads what the rules already concluded, never
re-deciding a rule:

``inspection``  an inspection clock begun and neither closed nor cut at the
                instant (§ 134-9A(2)); ``overdue`` past its due
                (``clocks.is_overdue``), a routine clock with the weeks it has
                missed so far (``period.missed_weeks``, § 134-12D: each week a
                separate violation). The clocks are the recorded summary's
                (``readout.ClockSummary``: start, due, closed, cut), and the
                clocks that have left it since (``settle.py`` drops only closed
                clocks) from their ``clock_closed``; without a recorded summary
                the events alone decide (a clock named by ``storm_qualified`` or
                a notice and not closed by the instant is owed: a cut cannot be
                told then, and owed is the safe answer).
``cleanout``    a trap whose clean-out demand stood at its last reading up to
                the instant (``TrapSample.demand_since_ms``, the trap rule's
                own state: not answered by a clean-out, not re-armed by the fill
                staying below), § 134-9A(1): "Sediment shall be removed ...
                whenever their design capacity has been reduced by 50%". It is
                owed at once (no due), so always ``overdue``.
``action``      a corrective action asked for by an inspection and not resolved
                by a later one at the instant (``actions.py``), under the duty
                to "properly operate and maintain all facilities and systems of
                treatment and control" (§ 134-9A(1)); overdue past its due.
``turbidity``   a pair whose latest ``turbidity_contrast`` up to the instant is
                ``exceeded``: the contrast § 134-8C forbids is still going on.

Duties come back overdue first, then by when they arose.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal
from zoneinfo import ZoneInfo

from ..contract.events import (
    ClockClosed,
    Event,
    InspectionDueSoon,
    InspectionMissed,
    InspectionOverdue,
    InspectionRecorded,
    StormQualified,
    TurbidityContrast,
)
from ..contract.times import parse_iso
from ..rules.active import missed_weeks
from ..rules.clocks.actions import action_states, record_of_event
from ..rules.clocks.clocks import is_overdue
from ..rules.clocks.routine import routine_start_ms
from ..rules.readout import ClockSummary
from .series import TrapSample

DutyKind = Literal["inspection", "cleanout", "action", "turbidity"]

#: The section of Chapter 134 behind each kind of duty.
SECTION: dict[DutyKind, str] = {"inspection": "§ 134-9A(2)", "cleanout": "§ 134-9A(1)",
                                "action": "§ 134-9A(1)", "turbidity": "§ 134-8C"}


@dataclass(frozen=True, slots=True)
class Duty:
    """One duty owed at the instant (module docstring). ``subject`` is the clock, trap,
    action or pair id; the fields after ``overdue`` are those of its kind (None else)."""

    kind: DutyKind
    subject: str
    since_ms: int
    due_ms: int | None
    overdue: bool
    #: ``storm`` or ``routine`` (inspection); weeks missed so far (routine inspection).
    clock: str | None = None
    missed_weeks: int | None = None
    #: The trap's fill of design volume at its last reading, that reading's time, and
    #: the sensor fault open then (the fill is then the last valid one).
    fill_fraction: float | None = None
    measured_ms: int | None = None
    fault: str | None = None
    #: The corrective action's text and who asked for it.
    text: str | None = None
    by: str | None = None
    #: The turbidity episode's basis (``background``/``absolute``).
    basis: str | None = None

    @property
    def section(self) -> str:
        return SECTION[self.kind]


def outstanding_duties(events: Iterable[Event], clocks: Sequence[ClockSummary] | None,
                       traps: Mapping[str, Sequence[TrapSample]], at_ms: int, *,
                       week_zone: ZoneInfo | None) -> list[Duty]:
    """Every duty owed at ``at_ms`` (module docstring). ``events`` is the site's current
    set, ``clocks`` the recorded summary's clocks (None when none was recorded),
    ``traps`` each trap's samples in time order (at least the last one before
    ``at_ms``), ``week_zone`` the calendar of the routine clocks' weeks
    (``active.calendar_zone``)."""
    events = list(events)
    duties = _clock_duties(events, clocks, at_ms, week_zone)
    duties += _cleanout_duties(traps, at_ms)
    for a in action_states(record_of_event(e.body) for e in events
                           if isinstance(e.body, InspectionRecorded)):
        if a.open_at(at_ms):
            duties.append(Duty("action", a.id, a.opened_ms, a.due_ms,
                               is_overdue(a.due_ms, at_ms), text=a.text, by=a.inspector))
    duties += _turbidity_duties(events, at_ms)
    return sorted(duties, key=lambda d: (not d.overdue, d.since_ms, d.kind, d.subject))


def _clock_duties(events: Sequence[Event], recorded: Sequence[ClockSummary] | None,
                  at_ms: int, week_zone: ZoneInfo | None) -> list[Duty]:
    closed: dict[str, ClockClosed] = {}
    known: dict[str, ClockSummary] = {}
    for e in events:
        b = e.body
        if isinstance(b, ClockClosed):
            closed[b.clock_id] = b
        elif isinstance(b, StormQualified) and b.clock_id and e.at_ms <= at_ms:
            known.setdefault(b.clock_id, ClockSummary(
                b.clock_id, "storm", parse_iso(b.qualified_at), _ms(b.due)))
        elif isinstance(b, InspectionDueSoon | InspectionOverdue | InspectionMissed) \
                and e.at_ms <= at_ms:
            start = routine_start_ms(b.clock_id)
            known.setdefault(b.clock_id, ClockSummary(
                b.clock_id, b.clock, start if start is not None else parse_iso(b.due),
                parse_iso(b.due)))
    if recorded is not None:
        # The summary is exact (start, cut); only closed clocks have left it.
        known = {cid: c for cid, c in known.items() if cid in closed}
        known.update({c.clock_id: c for c in recorded})
    for cid, body in closed.items():
        if cid not in known:
            start = routine_start_ms(cid)
            known[cid] = ClockSummary(cid, body.clock, start if start is not None
                                      else parse_iso(body.due), parse_iso(body.due))
    out = []
    for c in known.values():
        shut = closed.get(c.clock_id)
        closed_ms = c.closed_ms if c.closed_ms is not None else (
            parse_iso(shut.inspected_at) if shut is not None else None)
        if c.started_ms > at_ms or any(t is not None and t <= at_ms
                                       for t in (closed_ms, c.ends_ms)):
            continue
        weeks = (missed_weeks(c.due_ms, at_ms, zone=week_zone)
                 if c.clock == "routine" and c.due_ms is not None else None)
        out.append(Duty("inspection", c.clock_id, c.started_ms, c.due_ms,
                        is_overdue(c.due_ms, at_ms), clock=c.clock, missed_weeks=weeks))
    return out


def _cleanout_duties(traps: Mapping[str, Sequence[TrapSample]], at_ms: int) -> list[Duty]:
    out = []
    for trap, samples in traps.items():
        last = next((s for s in reversed(samples) if s.ts_ms <= at_ms), None)
        if last is None or last.demand_since_ms is None:
            continue
        out.append(Duty("cleanout", trap, last.demand_since_ms, None, True,
                        fill_fraction=last.fill_fraction, measured_ms=last.ts_ms,
                        fault=last.fault))
    return out


def _turbidity_duties(events: Sequence[Event], at_ms: int) -> list[Duty]:
    latest: dict[str, TurbidityContrast] = {}
    for e in sorted(events, key=lambda e: e.at_ms):
        if isinstance(e.body, TurbidityContrast) and e.at_ms <= at_ms:
            latest[e.body.pair] = e.body
    return [Duty("turbidity", pair, parse_iso(b.started_at), None, True, basis=b.basis)
            for pair, b in latest.items() if b.state == "exceeded"]


def _ms(text: str | None) -> int | None:
    return None if text is None else parse_iso(text)

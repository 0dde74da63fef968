"""The facts of one report period ``[from, to)``: the one list every section reads.

Theory of operation
-------------------
A compliance report covers a period; its summary counts, its table of what
is still owed, its storms, inspections and corrective actions must all say
the same thing about it. So they are not worked out section by section: the
site's events are read once into a ``Period`` here, and every section reads
that (``monitor/README.md``, "Report periods"). Three rules:

1. *The period's events.* An event belongs to the period when its ``at``
   lies in ``[from, to)``: a clock closed, a week missed, an inspection
   backdated, a trap or turbidity finding.
2. *Judged at the end.* What is owed, a storm's outcome and a corrective
   action's state are judged at ``judged_ms``: the last instant of the period
   (``to - 1``), or the instant the engine last judged the site when that is
   earlier (a period not over yet). Never at the time the report is made: a
   week's report made a month later says what was owed at the end of that
   week, and an inspection after the week has not happened yet for it. The
   instant is the caller's ``summary.judged_at`` (the later of the wall clock
   and the engine's event time), so a period still running is judged where
   the engine judged it.
3. *A storm belongs to the period in which it qualified* (a storm that did
   not qualify, to the period in which it began), as it stood at
   ``judged_ms``: a storm still raining then has no end, and its running total
   and largest 24 hours so far (``series.running_totals``,
   ``running_max_24h``). Consecutive periods count each storm once, however
   long its rain runs on.

The counts a summary shows are methods of ``Period`` over these lists, so the
summary and the duties table cannot disagree: the open clocks of the summary
*are* the inspection duties owed at ``judged_ms``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from ..config import SiteConfig
from ..contract.events import Body, ClockClosed, Event, InspectionRecorded
from ..rules.active import calendar_zone
from ..rules.clocks.actions import (
    ActionState,
    action_states,
    record_of_event,
    resolved_nothing,
    steps_of_events,
)
from ..rules.clocks.outcomes import StormRecord, storm_records
from ..rules.readout import ClockSummary
from .duties import Duty, outstanding_duties
from .series import StormSample, TrapSample, running_max_24h, running_totals

B = TypeVar("B", bound=Body)


@dataclass(frozen=True, slots=True)
class Tally:
    """A kind of inspection clock over the period: closed in it on time (``met``) or
    after due (``late``), and still owed at its end (``open``, of them ``overdue``)."""

    met: int
    late: int
    open: int
    overdue: int


@dataclass(frozen=True, slots=True)
class Period:
    """One period's facts (module docstring)."""

    from_ms: int
    to_ms: int
    #: Where what is owed is judged (rule 2).
    judged_ms: int
    #: The events whose ``at`` lies in the period, in event order (rule 1).
    events: tuple[Event, ...]
    #: The storms that belong to the period, with their outcomes at ``judged_ms`` (rule 3).
    storms: tuple[StormRecord, ...]
    #: Every duty owed at ``judged_ms`` (``duties.outstanding_duties``).
    duties: tuple[Duty, ...]
    #: The corrective actions open at some time in the period, as they stood at
    #: ``judged_ms`` (a resolution after it is not in them).
    actions: tuple[ActionState, ...]
    #: By the event id of an inspection of the period: the ``resolves`` ids it named
    #: that resolved nothing (``actions.resolved_nothing``; one from MQTT is recorded
    #: as sent).
    resolved_nothing: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def ended(self) -> bool:
        """Whether the period is judged at its end (rule 2), not where the engine is."""
        return self.judged_ms >= self.to_ms - 1

    def bodies(self, kind: type[B]) -> list[B]:
        """The bodies of the period's events of one type."""
        return [e.body for e in self.events if isinstance(e.body, kind)]

    def tally(self, clock: str) -> Tally:
        """The ``storm`` or ``routine`` clocks: closed in the period, owed at its end."""
        closed = [b.outcome for b in self.bodies(ClockClosed) if b.clock == clock]
        owed = [d for d in self.duties if d.kind == "inspection" and d.clock == clock]
        return Tally(closed.count("met"), closed.count("late"), len(owed),
                     sum(d.overdue for d in owed))

    def action_counts(self) -> tuple[int, int, int]:
        """Corrective actions (opened in the period, resolved in it, open at its end)."""
        opened = sum(self.from_ms <= a.opened_ms for a in self.actions)
        resolved = sum(a.resolved_ms is not None for a in self.actions)
        return opened, resolved, sum(d.kind == "action" for d in self.duties)


def storm_instant(storm: StormRecord) -> int:
    """Where a storm belongs in time (rule 3): when it qualified, else when it began."""
    if storm.qualified and storm.qualified_ms is not None:
        return storm.qualified_ms
    return storm.started_ms


def period_facts(site: SiteConfig, events: Iterable[Event],
                 clocks: Sequence[ClockSummary] | None,
                 traps: Mapping[str, Sequence[TrapSample]], from_ms: int, to_ms: int,
                 judged_ms: int, storm_samples: Iterable[StormSample] = ()) -> Period:
    """The facts of ``[from_ms, to_ms)`` (module docstring). ``events`` is the site's
    current set, ``clocks`` the recorded summary's clocks (None when none was
    recorded), ``traps`` each trap's samples up to the end of the period,
    ``judged_ms`` where the engine judged the site (``summary.judged_at``) and
    ``storm_samples`` the judged gauges' samples of the period (``series.py``: a
    storm still open at its end is shown with its running total and 24 hours)."""
    events = list(events)
    at = min(to_ms - 1, judged_ms)
    # What had happened by ``at``: the later facts are not yet facts of the period.
    known = [e for e in events if e.at_ms <= at]
    samples = list(storm_samples)
    storms = [s for s in storm_records(site, known, at, running_totals(samples),
                                       running_max_24h(samples))
              if from_ms <= storm_instant(s) < to_ms]
    actions = [a for a in action_states((record_of_event(e.body) for e in known
                                         if isinstance(e.body, InspectionRecorded)),
                                        steps_of_events(site.id, known))
               if a.resolved_ms is None or a.resolved_ms >= from_ms]
    mine = tuple(e for e in events if from_ms <= e.at_ms < to_ms)
    states = action_states(record_of_event(e.body) for e in events
                           if isinstance(e.body, InspectionRecorded))
    nothing = {e.id: ids for e in mine if isinstance(e.body, InspectionRecorded)
               and (ids := resolved_nothing(states, record_of_event(e.body)))}
    return Period(from_ms, to_ms, at, mine, tuple(storms),
                  tuple(outstanding_duties(events, clocks, traps, at,
                                            week_zone=calendar_zone(site))),
                  tuple(actions), nothing)

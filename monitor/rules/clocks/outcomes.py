"""What became of each storm: its events read back, and its inspection's outcome.

    "... within 24 hours of any storm event producing 0.5 inch of precipitation or
    more."  — Chapter 134, § 134-9A(2)

Theory of operation
-------------------
The report (and anything else that lists a site's storms) asks here instead
of deciding for itself. ``storm_records`` reads a site's events back into one
``StormRecord`` per storm event of the gauges its storms are judged on
(``sitestorms.judged_gauge``: the ``mean`` gauge under ``gauges: mean``, else
each real gauge), the later event's value winning, and gives each its
outcome:

``not qualified``  its gauge's event never reached the threshold
``no clock``       its gauge's event did, but the site's rule opened no clock for
                   it (under ``any`` or ``all`` it joined the site storm of another
                   gauge; under ``all`` not every live gauge qualified): no
                   ``storm_qualified`` names it, as no alert did
``informational``  qualified at a site the clocks do not apply to (§ 134-7B(2))
``met``, ``late``  its clock closed on or before due, or after (``clock_closed``)
``overdue``        its clock is open and past due (``clocks.is_overdue``)
``open``           its clock is open and not yet due

A storm that is still open is shown with its running total so far (the
caller's ``running_in``, from ``series.running_totals``, and its largest 24
hours so far, ``series.running_max_24h``), not the depth at which it
qualified, and says so (``running``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from ...config import SiteConfig
from ...contract.events import ClockClosed, Event, StormEnded, StormQualified, StormStarted
from ...contract.times import parse_iso
from ..rain.sitestorms import judged_gauge
from .clocks import is_overdue


@dataclass(frozen=True, slots=True)
class StormRecord:
    """One storm event of a gauge as its events tell it, and its outcome."""

    gauge: str
    event_id: str
    started_ms: int
    ended_ms: int | None = None
    qualified_ms: int | None = None
    total_in: float | None = None
    max_24h_in: float | None = None
    due_ms: int | None = None
    clock_id: str | None = None
    informational: bool = False
    #: A ``storm_qualified`` names this event: the site's storm, alerted.
    qualified: bool = False
    #: The gauge's own event reached the threshold (``storm_ended.qualified``).
    gauge_qualified: bool = False
    #: Qualified on revealed rain: it may have qualified this early, and been due then.
    qualified_not_before_ms: int | None = None
    due_not_before_ms: int | None = None
    #: ``total_in`` is the running total of a storm still open.
    running: bool = False
    outcome: str = "not qualified"
    #: When the inspection that closed its clock took place.
    inspected_ms: int | None = None
    #: The reference station, for a storm only it saw (``weather.reference_opens_clock``).
    reference: str | None = None


def _ms(text: str | None) -> int | None:
    return None if text is None else parse_iso(text)


def _read(events: Iterable[Event], site: SiteConfig) -> list[StormRecord]:
    """The storm events of the judged gauges, the later event's value winning."""
    by_id: dict[str, StormRecord] = {}
    for e in events:
        b = e.body
        if not isinstance(b, StormStarted | StormQualified | StormEnded) \
                or not judged_gauge(site, b.gauge):
            continue
        s = by_id.get(b.event_id) or StormRecord(b.gauge, b.event_id, parse_iso(b.started_at))
        s = replace(s, started_ms=parse_iso(b.started_at))
        if isinstance(b, StormQualified):
            s = replace(s, qualified_ms=parse_iso(b.qualified_at), total_in=b.total_in,
                        max_24h_in=b.max_24h_in, due_ms=_ms(b.due), qualified=True,
                        gauge_qualified=True, clock_id=b.clock_id or s.clock_id,
                        informational=bool(b.informational) or s.informational,
                        qualified_not_before_ms=_ms(b.qualified_not_before),
                        due_not_before_ms=_ms(b.due_not_before), reference=b.reference)
        elif isinstance(b, StormEnded):
            s = replace(s, ended_ms=parse_iso(b.ended_at), total_in=b.total_in,
                        max_24h_in=b.max_24h_in, gauge_qualified=b.qualified or s.qualified)
        by_id[b.event_id] = s
    return sorted(by_id.values(), key=lambda s: (s.started_ms, s.gauge))


def storm_outcome(storm: StormRecord, closed: Mapping[str, ClockClosed], now_ms: int) -> str:
    """The outcome of one storm at ``now_ms`` (module docstring), given the clocks closed
    so far by id."""
    if not storm.qualified:
        return "no clock" if storm.gauge_qualified else "not qualified"
    if storm.informational or not storm.clock_id:
        return "informational"
    closing = closed.get(storm.clock_id)
    if closing is not None:
        return closing.outcome
    return "overdue" if is_overdue(storm.due_ms, now_ms) else "open"


def storm_records(site: SiteConfig, events: Iterable[Event], now_ms: int,
                  running_in: Mapping[str, float] | None = None,
                  running_max_in: Mapping[str, float] | None = None) -> list[StormRecord]:
    """The site's storms with their outcomes at ``now_ms`` (the instant the engine judges
    clocks at: ``summary.judged_at``), in the order they started. ``running_in`` is
    the running total of storms still open, by event id, and ``running_max_in``
    their largest 24 hours so far."""
    events = list(events)
    closed = {e.body.clock_id: e.body for e in events if isinstance(e.body, ClockClosed)}
    out = []
    for s in _read(events, site):
        if s.ended_ms is None and running_in and s.event_id in running_in:
            s = replace(s, total_in=running_in[s.event_id], running=True,
                        max_24h_in=(running_max_in or {}).get(s.event_id, s.max_24h_in))
        closing = closed.get(s.clock_id or "")
        out.append(replace(s, outcome=storm_outcome(s, closed, now_ms),
                           inspected_ms=_ms(closing.inspected_at) if closing else None))
    return out

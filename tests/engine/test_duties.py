"""What a site still owes at an instant (``engine/duties.py``), checked by hand.

A site at the end of May 2026 (T = June 1 04:00 UTC): which inspection clocks,
clean-outs, corrective actions and turbidity episodes are still owed then, and
none of those met, answered or begun only later.
"""

from __future__ import annotations

from monitor.contract.events import (
    ClockClosed,
    Event,
    InspectionRecorded,
    StormQualified,
)
from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE, iso, parse_iso
from monitor.engine.duties import Duty, outstanding_duties
from monitor.engine.series import Sample, TrapSample, TrapSampler
from monitor.engine.timeline import Timeline
from monitor.rules.clocks.routine import routine_start_ms
from monitor.rules.readout import ClockSummary
from monitor.rules.traps.traps import TrapFold

from ..support.trapkit import BOX, BOX_SENSOR, SITE, at, depth
from ..support.util import contrast, ev

H = MS_PER_HOUR
T = parse_iso("2026-06-01T04:00:00Z")




def closed(clock_id: str, clock: str, due: str, inspected: str) -> Event:
    return ev(parse_iso(inspected), ClockClosed(
        clock_id=clock_id, clock=clock, due=due, inspected_at=inspected,
        outcome="met" if parse_iso(inspected) <= parse_iso(due) else "late",
        entered_at=None, backdated=False))


def inspection(at_iso: str, actions: tuple[dict[str, str | None], ...] = (),
               resolves: tuple[str, ...] = ()) -> Event:
    return ev(parse_iso(at_iso), InspectionRecorded(
        inspector="J. Rivera", kind="routine", inspected_at=at_iso, closes=(),
        entered_at=at_iso, backdated=False, findings=(), corrective_actions=actions,
        inspectors=("J. Rivera",), credentials=("",), resolves=resolves))




def test_routine_clock_ids_give_their_start() -> None:
    assert routine_start_ms("routine-2026-05-20T14:00:00Z") == parse_iso("2026-05-20T14:00:00Z")
    assert routine_start_ms("routine-2026-05-20T14:00:00Z#2") == \
        parse_iso("2026-05-20T14:00:00Z")
    assert routine_start_ms("storm-rg1-20260503T140000Z") is None


def test_clocks_owed_at_the_instant() -> None:
    routine = ClockSummary("routine-2026-05-20T14:00:00Z", "routine",
                           parse_iso("2026-05-20T14:00:00Z"), parse_iso("2026-05-27T04:00:00Z"))
    storm_open = ClockSummary("storm-rg1-20260531T200000Z", "storm",
                              parse_iso("2026-05-31T21:00:00Z"), parse_iso("2026-06-01T21:00:00Z"))
    later = ClockSummary("storm-rg1-20260602T000000Z", "storm", T + 3 * H, T + 27 * H)
    cut = ClockSummary("routine-2026-05-01T04:00:00Z", "routine",
                       parse_iso("2026-05-01T04:00:00Z"), parse_iso("2026-05-08T04:00:00Z"),
                       ends_ms=parse_iso("2026-05-05T00:00:00Z"))
    events = [
        # Closed before T: not owed. Closed after T, past due at T, out of the summary
        # since (settled): owed and overdue at T.
        closed("storm-rg1-20260503T140000Z", "storm", "2026-05-04T14:49:00Z",
               "2026-05-04T10:00:00Z"),
        closed("storm-rg1-20260528T100000Z", "storm", "2026-05-29T11:00:00Z",
               "2026-06-02T12:00:00Z"),
    ]
    duties = outstanding_duties(events, [routine, storm_open, later, cut], {}, T, week_zone=None)
    assert duties == [
        Duty("inspection", "routine-2026-05-20T14:00:00Z", parse_iso("2026-05-20T14:00:00Z"),
             parse_iso("2026-05-27T04:00:00Z"), True, clock="routine", missed_weeks=1),
        Duty("inspection", "storm-rg1-20260528T100000Z", parse_iso("2026-05-29T11:00:00Z"),
             parse_iso("2026-05-29T11:00:00Z"), True, clock="storm"),
        Duty("inspection", "storm-rg1-20260531T200000Z", parse_iso("2026-05-31T21:00:00Z"),
             parse_iso("2026-06-01T21:00:00Z"), False, clock="storm"),
    ]
    assert all(d.section == "§ 134-9A(2)" for d in duties)


def test_without_a_recorded_summary_the_events_decide() -> None:
    q = StormQualified(gauge="rg1", event_id="rg1-20260531T200000Z",
                       started_at="2026-05-31T20:00:00Z", qualified_at="2026-05-31T21:00:00Z",
                       total_in=0.6, max_24h_in=0.6, due="2026-06-01T21:00:00Z",
                       uncertain_in=0.0, gauges=("rg1",), threshold_in=0.5, mode="event_total",
                       clock_id="storm-rg1-20260531T200000Z")
    (duty,) = outstanding_duties([ev(parse_iso("2026-05-31T21:00:00Z"), q)], None, {}, T,
                                 week_zone=None)
    assert (duty.subject, duty.since_ms, duty.due_ms, duty.overdue) == (
        "storm-rg1-20260531T200000Z", parse_iso("2026-05-31T21:00:00Z"),
        parse_iso("2026-06-01T21:00:00Z"), False)
    # Closed at 03:00, before T: nothing owed.
    shut = closed("storm-rg1-20260531T200000Z", "storm", "2026-06-01T21:00:00Z",
                  "2026-06-01T03:00:00Z")
    assert outstanding_duties([ev(parse_iso("2026-05-31T21:00:00Z"), q), shut], None, {}, T,
                              week_zone=None) == []


def test_open_corrective_actions_and_standing_turbidity() -> None:
    events = [
        inspection("2026-05-03T20:00:00Z", actions=(
            {"id": "ca-1", "text": "re-trench silt fence north", "due": "2026-05-07T04:00:00Z"},
            {"id": "ca-2", "text": "sweep entrance", "due": "2026-05-10T04:00:00Z"},
            {"id": "ca-3", "text": "reseed stockpile", "due": None})),
        inspection("2026-05-09T14:00:00Z", resolves=("ca-2",)),
        inspection("2026-06-03T14:00:00Z", resolves=("ca-1",)),  # after T: open at T
        contrast("2026-05-20T10:10:00Z", "exceeded", "2026-05-20T10:00:00Z"),
        contrast("2026-05-20T12:00:00Z", "cleared", "2026-05-20T10:00:00Z"),
        contrast("2026-05-31T23:10:00Z", "exceeded", "2026-05-31T23:00:00Z", pair="outfall-2"),
        contrast("2026-06-01T05:00:00Z", "exceeded", "2026-06-01T04:50:00Z"),  # after T
    ]
    duties = outstanding_duties(events, [], {}, T, week_zone=None)
    opened = parse_iso("2026-05-03T20:00:00Z")
    assert duties == [
        Duty("action", "ca-1", opened, parse_iso("2026-05-07T04:00:00Z"), True,
             text="re-trench silt fence north", by="J. Rivera"),
        Duty("turbidity", "outfall-2", parse_iso("2026-05-31T23:00:00Z"), None, True,
             basis="background"),
        Duty("action", "ca-3", opened, None, False, text="reseed stockpile", by="J. Rivera"),
    ]
    assert [d.section for d in duties] == ["§ 134-9A(1)", "§ 134-8C", "§ 134-9A(1)"]


def _samples(readings: list[Reading]) -> list[TrapSample]:
    samples: list[Sample] = []
    tl = Timeline(TrapFold(SITE, BOX, BOX_SENSOR))
    tl.observer = TrapSampler(SITE, "box", tl.fold, samples.append)  # type: ignore[arg-type]
    for r in readings:
        tl.insert(r)
    return [s for s in samples if isinstance(s, TrapSample)]


def test_a_standing_cleanout_demand_is_owed_until_the_trap_is_cleaned() -> None:
    """The box fills 1 in per 48 in: 26 in at minute 20 is 54 % (a demand), still there at
    minute 60; at minute 90 it is cleaned to 6 in (12.5 %): nothing owed after that."""
    readings = [depth(0, 10.0), depth(10, 20.0), depth(20, 26.0), depth(60, 27.0),
                depth(90, 6.0)]
    samples = _samples(readings)
    assert [s.demand_since_ms for s in samples] == [None, None, at(20), at(20), None]
    (duty,) = outstanding_duties([], [], {"box": samples}, at(75), week_zone=None)
    assert duty == Duty("cleanout", "box", at(20), None, True,
                        fill_fraction=0.5625, measured_ms=at(60))
    assert duty.section == "§ 134-9A(1)"
    assert outstanding_duties([], [], {"box": samples}, at(19), week_zone=None) == []
    assert outstanding_duties([], [], {"box": samples}, at(90), week_zone=None) == []
    assert outstanding_duties([], [], {"box": samples}, at(90) + 10 * MS_PER_MINUTE,
                              week_zone=None) == []
    assert iso(at(20)) == "2026-05-01T12:20:00Z"

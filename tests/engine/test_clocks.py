"""Inspection clocks of § 134-9A(2), driven through the whole engine."""

from __future__ import annotations

from monitor.contract.inputs import Inspection, Reading
from monitor.contract.times import MS_PER_DAY, MS_PER_HOUR, MS_PER_MINUTE
from monitor.engine.core import Engine

from ..support.util import (
    SITE,
    counter_series,
    final,
    inspection,
    of_type,
    rain,
    run,
    site_config,
    ts,
)

H = MS_PER_HOUR


def storm(start_ms: int, hundredths: int, seq0: int = 0, sensor: str = "rg1") -> list[Reading]:
    """``hundredths`` readings of 0.01 in, one a minute from ``start_ms``."""
    return [rain(sensor, start_ms + i * MS_PER_MINUTE, 0.01, seq0 + i) for i in range(hundredths)]


def test_storm_clock_reminders_overdue_and_late_close() -> None:
    # 0.50 in reached at 10:49 -> due 10:49 the next day.
    eng, _ = run(storm(ts("10:00"), 60))
    (q,) = final(eng, "storm_qualified")
    assert q["qualified_at"] == "2026-05-01T10:49:00Z"
    assert q["due"] == "2026-05-02T10:49:00Z"
    clock_id = q["clock_id"]
    due = ts("2026-05-02T10:49:00Z")

    early = eng.tick(due - 6 * H - 1)
    assert not of_type(early, "inspection_due_soon")
    soon = eng.tick(due - 6 * H)
    assert [e["hours_left"] for e in of_type(soon, "inspection_due_soon")] == [6.0]
    soon = eng.tick(due - 1 * H)
    assert [e["hours_left"] for e in of_type(soon, "inspection_due_soon")] == [1.0]
    over = eng.tick(due)
    assert [(e["clock_id"], e["hours_late"]) for e in of_type(over, "inspection_overdue")] == [
        (clock_id, 0.0)]
    assert not of_type(eng.tick(due + 4 * H - 1), "inspection_overdue")
    assert [e["hours_late"] for e in of_type(eng.tick(due + 4 * H), "inspection_overdue")] == [4.0]

    closed = eng.apply(inspection(due + 5 * H))
    (cc,) = [e for e in of_type(closed, "clock_closed") if e["clock"] == "storm"]
    assert cc["outcome"] == "late"
    assert cc["inspected_at"] == "2026-05-02T15:49:00Z"
    (rec,) = of_type(closed, "inspection_recorded")
    assert clock_id in rec["closes"]
    # No more overdue notices once inspected.
    assert not of_type(eng.tick(due + 48 * H), "inspection_overdue")


def test_inspection_within_24h_is_met_and_before_storm_does_not_count() -> None:
    items: list[Reading | Inspection] = [inspection(ts("09:00")), *storm(ts("10:00"), 60),
                                         inspection(ts("2026-05-02T08:00:00Z"))]
    eng, _ = run(items, now_ms=ts("2026-05-03T00:00:00Z"))
    storm_closed = [e for e in final(eng, "clock_closed") if e["clock"] == "storm"]
    assert [(e["inspected_at"], e["outcome"]) for e in storm_closed] == [
        ("2026-05-02T08:00:00Z", "met")]
    assert not final(eng, "inspection_overdue")


def test_late_reading_completing_a_storm_is_overdue_at_next_tick() -> None:
    # The daemon has been ticking for two days; then a node delivers a buffered storm.
    eng = Engine(site_config())
    eng.apply(rain("rg1", ts("00:00"), 0.0, 0))
    eng.tick(ts("2026-05-03T00:00:00Z"))
    events = []
    for r in storm(ts("10:00"), 60, seq0=1):
        events += eng.apply(r)
    (q,) = of_type(events, "storm_qualified")
    assert q["due"] == "2026-05-02T10:49:00Z"
    # The clock is overdue as soon as it exists (here already when the storm
    # qualifies, at the latest at the next tick).
    overdue = of_type(events + eng.tick(ts("2026-05-03T00:00:05Z")), "inspection_overdue")
    # Due 10:49 on the 2nd; now is 00:00 on the 3rd: notices at +0 h, +4 h, +8 h, +12 h.
    assert [e["hours_late"] for e in overdue if e["clock"] == "storm"] == [0.0, 4.0, 8.0, 12.0]


def test_late_reading_moves_qualified_at_earlier_as_a_revision() -> None:
    readings = storm(ts("10:00"), 60)
    eng = Engine(site_config())
    held_back = readings[20]
    events = []
    for r in readings:
        if r is not held_back:
            events += eng.apply(r)
    first = of_type(events, "storm_qualified")
    assert first[-1]["qualified_at"] == "2026-05-01T10:50:00Z"  # one hundredth missing
    revised = of_type(eng.apply(held_back), "storm_qualified")
    assert revised[0]["qualified_at"] == "2026-05-01T10:49:00Z"
    assert revised[0]["id"] == first[-1]["id"]
    assert revised[0]["revision"] == first[-1]["revision"] + 1
    assert revised[0]["due"] == "2026-05-02T10:49:00Z"


def test_clock_start_event_end() -> None:
    eng, _ = run(storm(ts("10:00"), 60), now_ms=ts("2026-05-01T20:00:00Z"),
                 rain={"clock_start": "event_end"})
    (q,) = final(eng, "storm_qualified")
    # Last rain 10:59; storm ends (in event time) at 16:59; due 24 h after the last rain.
    assert q["due"] == "2026-05-02T10:59:00Z"
    # An inspection during the rain does not satisfy the clock; one after it does.
    eng2, _ = run([*storm(ts("10:00"), 60), inspection(ts("10:55")), inspection(ts("12:00"))],
                  now_ms=ts("2026-05-03T00:00:00Z"), rain={"clock_start": "event_end"})
    (cc,) = [e for e in final(eng2, "clock_closed") if e["clock"] == "storm"]
    assert cc["inspected_at"] == "2026-05-01T12:00:00Z"


def test_condition_outside_abc_is_informational() -> None:
    eng, _ = run(storm(ts("10:00"), 60), now_ms=ts("2026-05-05T00:00:00Z"), condition="none")
    (q,) = final(eng, "storm_qualified")
    assert q["due"] is None and q["informational"] is True
    assert not final(eng, "inspection_overdue")
    assert eng.clocks(SITE) == []


def test_routine_clock_every_seven_days() -> None:
    eng, _ = run([inspection(ts("2026-04-05T12:00:00Z"), kind="routine")],
                 now_ms=ts("2026-04-20T00:00:00Z"), active_since="2026-04-01")
    # active_since 2026-04-01 (EDT, UTC-4): due at the end of 04-08 local, 23:59:59.999 EDT
    # = 04-09 03:59:59.999Z; inspected 04-05 08:00 EDT (met); the next is due at the end
    # of 04-12 local (04-13 03:59:59.999Z), overdue from then on.
    closed = final(eng, "clock_closed")
    assert [(c["clock"], c["due"], c["outcome"]) for c in closed] == [
        ("routine", "2026-04-09T03:59:59.999Z", "met")]
    overdue = final(eng, "inspection_overdue")
    assert overdue[0]["due"] == "2026-04-13T03:59:59.999Z"
    # 04-13 03:59:59.999Z to 04-20 00:00Z is 164 h and 1 ms: notices at 0, 4, ..., 164 h.
    assert len(overdue) == 164 // 4 + 1


def test_gauges_any_all_mean() -> None:
    sensors = [{"id": "rg1", "kind": "rain"}, {"id": "rg2", "kind": "rain"}]
    # rg1 gets 0.60 in from 10:00, rg2 0.30 in from 10:10.
    items = storm(ts("10:00"), 60) + storm(ts("10:10"), 30, sensor="rg2")
    now = ts("2026-05-01T23:00:00Z")
    eng_any, _ = run(items, now, sensors=sensors, turbidity_pairs=[], traps=[],
                     rain={"gauges": "any"})
    (q,) = final(eng_any, "storm_qualified")
    assert (q["gauge"], q["qualified_at"]) == ("rg1", "2026-05-01T10:49:00Z")
    eng_all, _ = run(items, now, sensors=sensors, turbidity_pairs=[], traps=[],
                     rain={"gauges": "all"})
    assert final(eng_all, "storm_qualified") == []
    eng_mean, _ = run(items, now, sensors=sensors, turbidity_pairs=[], traps=[],
                      rain={"gauges": "mean"})
    # Mean of 0.60 and 0.30 = 0.45 in: below 0.50.
    assert final(eng_mean, "storm_qualified") == []
    more = items + storm(ts("10:40"), 30, seq0=100, sensor="rg2")
    eng_mean, _ = run(more, now, sensors=sensors, turbidity_pairs=[], traps=[],
                      rain={"gauges": "mean"})
    (q,) = final(eng_mean, "storm_qualified")
    # (rg1 + rg2) / 2 reaches 0.50 when rg1 + rg2 = 1.00 in: rg1 has 0.60 by 10:59 and rg2
    # 0.40 by 10:49 (30 from 10:10 + 10 from 10:40), so at 10:49: rg1 0.50 + rg2 0.40 = 0.90,
    # at 10:54: 0.55 + 0.45 = 1.00.
    assert (q["gauge"], q["qualified_at"]) == ("mean", "2026-05-01T10:54:00Z")
    assert q["total_in"] == 0.5


def test_storm_ended_and_started_events_in_counter_form() -> None:
    series = counter_series(ts("09:00"), 24 * 60, {60 + i: 1 for i in range(60)})
    eng, _ = run(series)
    (end,) = final(eng, "storm_ended")
    assert end["ended_at"] == "2026-05-01T10:59:00Z"
    assert end["total_in"] == 0.6 and end["qualified"] is True
    assert final(eng, "sensor_stale") == []


def test_stale_and_recovered_in_event_time() -> None:
    series = counter_series(ts("00:00"), 60, {}) + counter_series(ts("02:00"), 10, {})
    eng, _ = run(series, now_ms=ts("03:00"))
    stale = [e for e in final(eng, "sensor_stale") if e["sensor"] == "rg1"]
    # Last seen 00:59; 15 min later (01:14) it is stale; back at 02:00; silent again after 02:09.
    assert [(e["at"], e["last_seen"]) for e in stale] == [
        ("2026-05-01T01:14:00Z", "2026-05-01T00:59:00Z"),
        ("2026-05-01T02:24:00Z", "2026-05-01T02:09:00Z")]
    (rec,) = final(eng, "sensor_recovered")
    assert rec["at"] == "2026-05-01T02:00:00Z"
    # The site's other sensors never reported: stale since 00:15.
    silent = sorted((e["sensor"], e["at"], e["last_seen"]) for e in final(eng, "sensor_stale")
                    if e["sensor"] != "rg1")
    assert silent == [(s, "2026-05-01T00:15:00Z", None)
                      for s in ("tb-down", "tb-up", "trap1-depth")]


def test_state_dump_restore_round_trip() -> None:
    items = storm(ts("10:00"), 60) + [inspection(ts("2026-05-02T09:00:00Z"))]
    eng, _ = run(items, now_ms=ts("2026-05-02T12:00:00Z"))
    restored = Engine.restore(eng.config, eng.dump())
    assert [e.to_json() for e in restored.current_events()] == [
        e.to_json() for e in eng.current_events()]
    later = ts("2026-05-02T12:00:00Z") + 9 * MS_PER_DAY
    assert [e.to_json() for e in restored.tick(later)] == [e.to_json() for e in eng.tick(later)]


def test_battery_low_with_hysteresis_from_readings_and_status() -> None:
    from monitor.contract.inputs import Reading

    def status(at: str, volts: float) -> Reading:
        return Reading(site=SITE, sensor="tb-up", kind="status", ts_ms=ts(at), battery_v=volts)

    # battery_low_v defaults to 3.5 V; it re-arms 0.1 V above the limit.
    items = [status("10:00", 3.9), status("10:05", 3.45), status("10:10", 3.40),
             status("10:15", 3.58), status("10:20", 3.62), status("10:25", 3.30)]
    eng, _ = run(items, now_ms=ts("10:30"))
    low = final(eng, "battery_low")
    assert [(e["at"], e["battery_v"]) for e in low] == [
        ("2026-05-01T10:05:00Z", 3.45), ("2026-05-01T10:25:00Z", 3.3)]
    assert all(e["sensor"] == "tb-up" for e in low)

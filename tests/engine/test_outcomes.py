"""What became of each storm (``rules/clocks/outcomes.py``): the report's storms, decided here.

Expected outcomes are worked out from monitor/README.md, "The rules" by hand: which storm opened a
clock, when it is due (24 h after ``qualified_at``), and that an inspection on
or before due meets it.
"""

from __future__ import annotations

from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE
from monitor.engine.core import Engine
from monitor.engine.series import Sample, StormSample, running_totals
from monitor.engine.series import attach as attach_samplers
from monitor.rules.clocks.outcomes import storm_records

from ..support.util import counter_series, inspection, run, site_config, ts

H = MS_PER_HOUR
GAUGES = [{"id": "rg1", "kind": "rain", "in_per_tip": 0.01},
          {"id": "rg2", "kind": "rain", "in_per_tip": 0.01}]


def _two_gauges() -> list[Reading]:
    """rg1: 60 tips in 10:01..11:00 (qualifies at 10:50, tip 50). rg2: 60 tips in
    10:31..11:30 (qualifies at 11:20), overlapping rg1's storm. 10:00..12:59, counters."""
    return (counter_series(ts("10:00"), 180, {m: 1 for m in range(1, 61)}, sensor="rg1")
            + counter_series(ts("10:00"), 180, {m: 1 for m in range(31, 91)}, sensor="rg2"))


def test_a_gauge_event_that_joined_another_storm_has_no_clock_of_its_own() -> None:
    config = site_config(sensors=GAUGES, turbidity_pairs=[], traps=[], rain={"gauges": "any"})
    items = sorted(_two_gauges(), key=lambda r: r.ts_ms)
    eng = Engine(config)
    for item in items:
        eng.apply(item)
    eng.tick(ts("20:00"))
    site = config.sites[0]
    events = eng.current_events()
    assert [e.body.to_json()["gauge"] for e in events if e.type == "storm_qualified"] == ["rg1"]
    due = ts("10:50") + 24 * H
    # Before due: rg1's storm is open; rg2's event reached 0.60 in but joined rg1's storm.
    got = {s.gauge: (s.outcome, s.total_in, s.qualified, s.gauge_qualified)
           for s in storm_records(site, events, due - H)}
    assert got == {"rg1": ("open", 0.6, True, True), "rg2": ("no clock", 0.6, False, True)}
    # At due still open (an inspection then still meets it), a millisecond after: overdue.
    assert [s.outcome for s in storm_records(site, events, due)] == ["open", "no clock"]
    assert [s.outcome for s in storm_records(site, events, due + 1)] == ["overdue", "no clock"]
    # Inspected an hour before due: met, with the inspection's time.
    eng.apply(inspection(due - H))
    (rg1, rg2) = storm_records(site, eng.current_events(), due + 5 * H)
    assert (rg1.outcome, rg1.inspected_ms, rg1.due_ms) == ("met", due - H, due)
    assert (rg2.outcome, rg2.inspected_ms) == ("no clock", None)


def test_drizzle_is_not_qualified_and_a_site_without_clocks_is_informational() -> None:
    drizzle = counter_series(ts("10:00"), 60, {m: 1 for m in range(1, 11)})  # 0.10 in
    storm = counter_series(ts("2026-05-02T10:00:00Z"), 120, {m: 1 for m in range(1, 61)},
                           base=10)
    eng, _ = run([*drizzle, *storm], ts("2026-05-03T10:00:00Z"))
    site = eng.config.sites[0]
    assert [(s.outcome, s.total_in) for s in storm_records(site, eng.current_events(),
                                                          ts("2026-05-02T12:00:00Z"))] == [
        ("not qualified", 0.1), ("open", 0.6)]
    eng_d, _ = run(storm, ts("2026-05-03T10:00:00Z"), condition="none")
    (only,) = storm_records(eng_d.config.sites[0], eng_d.current_events(),
                            ts("2026-05-03T10:00:00Z"))
    assert (only.outcome, only.due_ms, only.clock_id) == ("informational", None, None)


def test_an_open_storm_carries_its_running_total_from_the_samples() -> None:
    # Raining still at 10:40 (40 tips): qualified at neither 0.5 in nor ended.
    config = site_config()
    eng = Engine(config)
    samples: list[Sample] = []
    attach_samplers(eng, samples.append)
    for r in counter_series(ts("10:00"), 41, {m: 1 for m in range(1, 41)}):
        eng.apply(r)
    running = running_totals(s for s in samples if isinstance(s, StormSample))
    assert running == {"rg1-20260501T100100Z": 0.4}
    (storm,) = storm_records(config.sites[0], eng.current_events(), ts("10:40"), running)
    assert (storm.ended_ms, storm.total_in, storm.running, storm.outcome) == (
        None, 0.4, True, "not qualified")
    # An ended storm keeps the total of its storm_ended, whatever the samples say.
    for r in counter_series(ts("10:41"), 400, {}, base=40):
        eng.apply(r)
    eng.tick(ts("10:41") + 400 * MS_PER_MINUTE)
    (storm,) = storm_records(config.sites[0], eng.current_events(), ts("18:00"), {
        "rg1-20260501T100100Z": 9.9})
    assert (storm.total_in, storm.running) == (0.4, False)

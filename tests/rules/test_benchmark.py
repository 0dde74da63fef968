"""The dewatering turbidity benchmark (``monitor/rules/permits/benchmark.py``): a probe's
daily values averaged over the site's local week against 50 NTU (EPA CGP 2022 Part
3.3.1), through the real engine; and the facts as a function of the set of readings."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_DAY, MS_PER_HOUR, MS_PER_MINUTE, parse_iso
from monitor.engine import Engine
from monitor.engine.window import MemoryWindow

from ..support.properties import examples
from ..support.util import SITE, final, site_config

#: Monday 2026-05-04, local midnight in New York (the site's zone): 04:00Z.
MONDAY = parse_iso("2026-05-04T00:00:00-04:00")
SENSORS = [{"id": "rg1", "kind": "rain", "in_per_tip": 0.01},
           {"id": "tb-dw", "kind": "turbidity"}, {"id": "tb-other", "kind": "turbidity"}]
EPA = {"profile": "epa-cgp-2022", "dewatering": ["tb-dw"]}
#: A second permit watching the same probe: 40 NTU, and a day needs two readings.
STRICT = {"profile": "custom", "id": "county-x", "dewatering": ["tb-dw"], "definition": {
    "id": "county-x", "title": "County X", "rules": [{
        "id": "dewatering", "section": "County X 7.1", "quote": "two samples a day",
        "source": "https://example.org/county-x", "verified": True,
        "turbidity_benchmark": {"ntu": 40, "average": "weekly", "min_samples_per_day": 2}}]}}


def readings(daily_ntu: list[float], sensor: str = "tb-dw") -> list[Reading]:
    """Each day of the week from MONDAY: a reading at 09:00 and one at 15:00 local, 2 NTU
    below and above the day's value (their mean), and one at 23:30 local on Sunday
    (Monday 03:30Z: still Sunday at the site) equal to Sunday's value."""
    out = []
    for day, ntu in enumerate(daily_ntu):
        start = MONDAY + day * MS_PER_DAY
        out += [Reading(SITE, sensor, "turbidity", start + 9 * MS_PER_HOUR, ntu=ntu - 2),
                Reading(SITE, sensor, "turbidity", start + 15 * MS_PER_HOUR, ntu=ntu + 2)]
    sunday_late = MONDAY + 6 * MS_PER_DAY + 23 * MS_PER_HOUR + 30 * MS_PER_MINUTE
    return out + [Reading(SITE, sensor, "turbidity", sunday_late, ntu=daily_ntu[6])]


def benchmark_events(items: list[Reading], now_ms: int, **site: Any) -> list[dict[str, Any]]:
    eng = Engine(site_config(sensors=SENSORS, turbidity_pairs=[], traps=[], **site))
    for item in items:
        eng.apply(item)
    eng.tick(now_ms)
    found = final(eng, "turbidity_benchmark_exceeded")
    for event in found:
        event.pop("revision")
    return found


WEEK_END = MONDAY + 7 * MS_PER_DAY
#: (50 + 55 + 60 + 62.5 + 65 + 70 + 75) / 7 = 437.5 / 7 = 62.5 NTU
HIGH = [50, 55, 60, 62.5, 65, 70, 75]


def test_a_week_averaging_62_5_ntu_is_one_event_at_its_end() -> None:
    events = benchmark_events(readings(HIGH), WEEK_END, permits=[EPA])
    assert len(events) == 1
    event = events[0]
    assert event["at"] == event["week_to"] == "2026-05-11T04:00:00Z"
    assert event["week_from"] == "2026-05-04T04:00:00Z"
    assert (event["sensor"], event["mean_ntu"], event["samples"], event["benchmark_ntu"]) == (
        "tb-dw", 62.5, 7, 50.0)
    assert (event["permit"], event["section"]) == ("epa-cgp-2022", "CGP 2022 Part 3.3.1, 5.2.2")
    # Not before the week is over: the Sunday may still bring readings.
    assert benchmark_events(readings(HIGH), WEEK_END - 1, permits=[EPA]) == []
    # A reading of the next week ends it as well as a tick does, with the same event.
    next_week = Reading(SITE, "tb-dw", "turbidity", WEEK_END + MS_PER_HOUR, ntu=3.0)
    assert benchmark_events(readings(HIGH) + [next_week], WEEK_END - 1, permits=[EPA]) == events


def test_a_week_averaging_40_ntu_is_no_event() -> None:
    # (30 + 35 + 40 + 40 + 40 + 45 + 50) / 7 = 280 / 7 = 40 NTU
    assert benchmark_events(readings([30, 35, 40, 40, 40, 45, 50]), WEEK_END,
                            permits=[EPA]) == []


def test_a_site_without_the_epa_permit_is_no_event() -> None:
    assert benchmark_events(readings(HIGH), WEEK_END) == []
    assert benchmark_events(readings(HIGH), WEEK_END, permits=["village-branch-134"]) == []


def test_a_probe_not_listed_as_dewatering_is_no_event() -> None:
    assert benchmark_events(readings(HIGH, "tb-other"), WEEK_END, permits=[EPA]) == []
    bare = {"profile": "epa-cgp-2022"}
    assert benchmark_events(readings(HIGH), WEEK_END, permits=[bare]) == []


def test_days_with_too_few_readings_have_no_sample_and_the_week_is_judged_on_the_rest() -> None:
    # Under County X a day needs two readings: Sunday's three count, and Monday's single
    # reading of 90 NTU does not, so its week is Tuesday .. Sunday of HIGH, both
    # readings of each: (55 + 60 + 62.5 + 65 + 70 + 75) / 6 = 387.5 / 6 = 64.583 NTU.
    # Under EPA (one a day) Monday counts: (90 + 387.5) / 7 = 68.214 NTU.
    items = [r for r in readings(HIGH) if r.ts_ms >= MONDAY + MS_PER_DAY]
    items.append(Reading(SITE, "tb-dw", "turbidity", MONDAY + 10 * MS_PER_HOUR, ntu=90.0))
    events = benchmark_events(items, WEEK_END, permits=[EPA, STRICT])
    assert sorted((e["permit"], e["mean_ntu"], e["samples"], e["benchmark_ntu"])
                  for e in events) == [("county-x", 64.583, 6, 40.0),
                                       ("epa-cgp-2022", 68.214, 7, 50.0)]
    assert len({e["id"] for e in events}) == 2


# --------------------------------------------------------------------------- property

#: Two and a half local weeks from a Thursday, across the start of daylight saving
#: time (2026-03-08 in New York): a partial week, a week of 167 hours, a partial week.
START = parse_iso("2026-03-05T00:00:00-05:00")
SPAN_DAYS = 17
PROPERTY_SITE = {"permits": [EPA, STRICT], "lateness_days": 30}


def scenario(seed: int) -> list[Reading]:
    """A probe that reads at random: some days not at all, some once, some often, some
    readings near local midnight, two different values at one instant now and then;
    values about the benchmarks, so that some weeks exceed them and some do not."""
    rng = random.Random(seed)
    level = rng.uniform(25, 75)
    out = []
    for day in range(SPAN_DAYS):
        for _ in range(rng.choice([0, 1, 1, 2, 3, 6])):
            at = START + day * MS_PER_DAY + rng.choice(
                [rng.randrange(MS_PER_DAY), rng.randrange(10) * MS_PER_MINUTE,
                 MS_PER_DAY - rng.randrange(1, 10) * MS_PER_MINUTE])
            out.append(Reading(SITE, "tb-dw", "turbidity", at, ntu=round(level + rng.uniform(
                -20, 20), 2)))
            if rng.random() < 0.1:
                out.append(Reading(SITE, "tb-dw", "turbidity", at, ntu=round(level, 1)))
    return sorted(out, key=lambda r: (r.ts_ms, r.ntu))


def final_set(batches: list[list[Reading]], window: bool = False) -> list[dict[str, Any]]:
    """The benchmark events after feeding ``batches``, the engine ticked to the newest
    reading after each and to the end of the span at last."""
    eng = Engine(site_config(sensors=SENSORS, turbidity_pairs=[], traps=[], **PROPERTY_SITE),
                 MemoryWindow() if window else None)
    newest = START
    for batch in batches:
        for item in batch:
            eng.apply(item)
            newest = max(newest, item.ts_ms)
        eng.tick(newest)
    eng.tick(START + (SPAN_DAYS + 7) * MS_PER_DAY)
    found = final(eng, "turbidity_benchmark_exceeded")
    for event in found:
        event.pop("revision")
    return sorted(found, key=lambda e: e["id"])


@settings(max_examples=examples(100), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), shuffle_seed=st.integers(0, 2**32))
def test_order_duplicates_and_splitting_do_not_change_the_benchmark_events(
        seed: int, shuffle_seed: int) -> None:
    """100 examples in CI, 12 locally (tests/support/properties.py): each a random
    probe over two and a half weeks, under two benchmarks, checked shuffled (in memory
    and through the daemon's bounded window, which re-reads late readings), with a
    third of its readings twice, and split into batches with a tick after each (a
    week judged early by a tick is judged again when a late reading of it comes)."""
    rnd = random.Random(shuffle_seed)
    items = scenario(seed)
    expected = final_set([items])

    shuffled = list(items)
    rnd.shuffle(shuffled)
    assert final_set([shuffled]) == expected
    assert final_set([shuffled], window=True) == expected

    duplicated = items + rnd.sample(items, len(items) // 3)
    rnd.shuffle(duplicated)
    assert final_set([duplicated]) == expected

    cuts = sorted(rnd.randrange(len(shuffled) + 1) for _ in range(rnd.randrange(1, 5)))
    batches = [shuffled[a:b] for a, b in zip([0, *cuts], [*cuts, len(shuffled)], strict=True)]
    assert final_set(batches) == expected

"""Turbidity contrast (§ 134-8C): the numeric rules, alignment, episodes, probe faults."""

from __future__ import annotations

import json
import random

import pytest

from monitor.config import SensorConfig, TurbidityPair
from monitor.contract.events import Fact, make_id
from monitor.contract.inputs import Reading
from monitor.contract.times import iso
from monitor.engine.series import ContrastSample, PairSampler, Sample
from monitor.engine.timeline import Timeline
from monitor.rules.turbidity.contrast import exceeds, limit_ntu
from monitor.rules.turbidity.turbidity import TRANSITIONS

from ..support.turbiditykit import (
    PAIR,
    SUSPECT,
    UP_400,
    at,
    down,
    every_10,
    fold,
    minutely,
    of_type,
    run,
    up,
)
from ..support.util import SITE


def contrast(facts: list[Fact]) -> list[tuple[str, int, str]]:
    return [(f.fields["state"], f.at_ms, f.fields["started_at"])
            for f in of_type(facts, "turbidity_contrast")]


# --------------------------------------------------------------------------- the rule


@pytest.mark.parametrize(("background", "limit"), [
    (0.0, 5.0),
    (10.0, 5.0),
    (50.0, 5.0),      # the boundary belongs to the fixed 5 NTU
    (60.0, 6.0),      # 10 % of 60
    (100.0, 10.0),    # 10 % of 100
    (250.0, 25.0),
])
def test_wa_173_201a_limit(background: float, limit: float) -> None:
    assert limit_ntu(PAIR, background) == pytest.approx(limit)


def test_wa_branches_meet_at_50_ntu() -> None:
    # 5 NTU fixed at 50, 10 % of 50.001 = 5.0001 just above: no jump.
    assert limit_ntu(PAIR, 50.001) == pytest.approx(5.0001)


def test_delta_ntu_limit_ignores_background() -> None:
    pair = TurbidityPair(id="p", upstream="a", downstream="b", rule="delta_ntu", delta_ntu=7.5)
    assert limit_ntu(pair, 5.0) == 7.5
    assert limit_ntu(pair, 500.0) == 7.5
    assert not exceeds(pair, 500.0, 507.5)      # 7.5 is not more than 7.5
    assert exceeds(pair, 500.0, 507.501)


@pytest.mark.parametrize(("upstream", "downstream", "expected"), [
    (50.0, 55.0, False),       # 5 over a background of 50: at the limit, not over it
    (50.0, 55.001, True),
    (50.1, 55.1, False),       # 5.0 exactly, although 55.1 − 50.1 = 5.000000000000007 in floats
    (100.0, 110.0, False),     # 10 % of 100 = 10
    (100.0, 110.001, True),
    (51.0, 56.0, False),       # limit 5.1, delta 5
    (51.0, 56.2, True),        # delta 5.2 > 5.1
    (10.0, 4.0, False),        # cleaner below than above
])
def test_exceeds(upstream: float, downstream: float, expected: bool) -> None:
    assert exceeds(PAIR, upstream, downstream) is expected


def test_transition_table_is_complete() -> None:
    states = {"ok", "pending", "exceeded", "clearing"}
    assert set(TRANSITIONS) == {(s, x) for s in states for x in (False, True)}
    assert set(TRANSITIONS.values()) <= states


# --------------------------------------------------------------------------- episodes


def test_nine_minutes_of_contrast_raise_nothing() -> None:
    # Down 20 over up 10: delta 10 > 5 from 0:00 to 0:09, then equal. t − s peaks at 9 < 10.
    readings = minutely(0, 9, 10.0, 20.0) + minutely(10, 60, 10.0, 10.0)
    assert contrast(run(fold(), readings, now_minutes=61)) == []


def test_ten_minutes_of_contrast_raise_exceeded_at_0_10() -> None:
    readings = minutely(0, 10, 10.0, 20.0) + minutely(11, 30, 10.0, 10.0)
    facts = run(fold(), readings, now_minutes=31)
    assert contrast(facts) == [("exceeded", at(10), iso(at(0)))]
    fact = of_type(facts, "turbidity_contrast")[0]
    assert fact.id == make_id("turbidity_contrast", SITE, "outfall-1", "exceeded", at(0))
    assert fact.fields == {
        "pair": "outfall-1", "state": "exceeded", "started_at": iso(at(0)),
        "basis": "background",
        "upstream_ntu": 10.0, "downstream_ntu": 20.0, "delta_ntu": 10.0, "limit_ntu": 5.0,
        "upstream_at": iso(at(10)),
    }


def test_clears_after_30_minutes_below() -> None:
    # Exceeded at 0:10; below from 0:11 (c); cleared at the first reading with t − c ≥ 30: 0:41.
    readings = minutely(0, 10, 10.0, 20.0) + minutely(11, 60, 10.0, 12.0)
    facts = run(fold(), readings, now_minutes=61)
    assert contrast(facts) == [("exceeded", at(10), iso(at(0))),
                               ("cleared", at(41), iso(at(0)))]
    cleared = of_type(facts, "turbidity_contrast")[1]
    assert cleared.id == make_id("turbidity_contrast", SITE, "outfall-1", "cleared", at(0))
    assert cleared.fields["delta_ntu"] == 2.0
    assert cleared.fields["limit_ntu"] == 5.0


def test_a_relapse_while_clearing_continues_the_episode() -> None:
    # Below 0:11–0:39 (28 min, not 30), over again at 0:40: back to exceeded, no event.
    # Below again from 0:41 (new c), cleared at 1:11, still the episode started at 0:00.
    readings = (minutely(0, 10, 10.0, 20.0) + minutely(11, 39, 10.0, 10.0)
                + minutely(40, 40, 10.0, 20.0) + minutely(41, 80, 10.0, 10.0))
    facts = run(fold(), readings, now_minutes=81)
    assert contrast(facts) == [("exceeded", at(10), iso(at(0))),
                               ("cleared", at(71), iso(at(0)))]


def test_a_dip_while_pending_restarts_the_count() -> None:
    # Over 0:00–0:05, equal at 0:06 (pending → ok), over from 0:07: exceeded at 0:17.
    readings = (minutely(0, 5, 10.0, 20.0) + minutely(6, 6, 10.0, 10.0)
                + minutely(7, 30, 10.0, 20.0))
    assert contrast(run(fold(), readings, now_minutes=31)) == [
        ("exceeded", at(17), iso(at(7)))]


def test_zero_sustain_and_clear_fire_on_the_reading() -> None:
    pair = PAIR.model_copy(update={"sustain_minutes": 0, "clear_minutes": 0})
    readings = minutely(0, 0, 10.0, 20.0) + minutely(1, 1, 10.0, 10.0)
    assert contrast(run(fold(pair), readings, now_minutes=2)) == [
        ("exceeded", at(0), iso(at(0))), ("cleared", at(1), iso(at(0)))]


def test_high_background_uses_ten_percent() -> None:
    # Background 200: limit 20. Down 215 (delta 15) is fine, down 225 (delta 25) is not.
    quiet = minutely(0, 30, 200.0, 215.0)
    assert contrast(run(fold(), quiet, now_minutes=31)) == []
    muddy = minutely(0, 30, 200.0, 225.0)
    facts = run(fold(), muddy, now_minutes=31)
    assert contrast(facts) == [("exceeded", at(10), iso(at(0)))]
    assert of_type(facts, "turbidity_contrast")[0].fields["limit_ntu"] == 20.0


# --------------------------------------------------------------------------- alignment

INSTANT = PAIR.model_copy(update={"sustain_minutes": 0})


def test_nearest_upstream_may_come_after_the_downstream_reading() -> None:
    # Down at 0:02. Upstream at 0:00 (100 NTU, 2 min away) and 0:03 (10 NTU, 1 min away).
    # Nearest is 0:03: delta 10 > 5, exceeded. Against 0:00 it would be −80.
    readings = [up(0, 100.0), down(2, 20.0), up(3, 10.0), up(20, 10.0)]
    facts = run(fold(INSTANT), readings)
    assert contrast(facts) == [("exceeded", at(2), iso(at(2)))]
    fields = of_type(facts, "turbidity_contrast")[0].fields
    assert fields["upstream_ntu"] == 10.0
    assert fields["upstream_at"] == iso(at(3))


def test_late_upstream_corrects_the_provisional_answer() -> None:
    # The daemon's view: the downstream reading is in, time passes, the nearer
    # upstream reading arrives a little later (a buffered node).
    tl = Timeline(fold(INSTANT))
    tl.insert(up(0, 100.0))
    tl.insert(down(2, 20.0))
    tl.advance_to(at(2.5))
    # Provisionally against 0:00 (100 NTU, limit 10): down is 80 below, no contrast.
    assert of_type(tl.facts(), "turbidity_contrast") == []
    tl.insert(up(3, 10.0))
    tl.advance_to(at(3.5))
    assert contrast(tl.facts()) == [("exceeded", at(2), iso(at(2)))]
    for r in (up(20, 10.0), down(20, 10.0)):
        tl.insert(r)
    assert contrast(tl.facts()) == [("exceeded", at(2), iso(at(2)))]


def test_a_tie_goes_to_the_earlier_upstream() -> None:
    # Down at 0:02, upstream 0:00 (10 NTU) and 0:04 (30 NTU), both 2 min away.
    # The earlier gives delta 10: exceeded; the later would give −10.
    readings = [up(0, 10.0), down(2, 20.0), up(4, 30.0), up(20, 30.0)]
    facts = run(fold(INSTANT), readings)
    assert [f.fields["upstream_at"] for f in of_type(facts, "turbidity_contrast")] == [
        iso(at(0))]


def test_upstream_beyond_the_skew_is_not_nearest() -> None:
    # Down at 0:30; upstream at 0:15 (15 min before, 10 NTU) and 0:41 (11 min after,
    # 30 NTU). Neither is within ±10 min; the fallback is the last one before: 0:15.
    readings = [up(15, 10.0), down(30, 20.0), up(41, 30.0), up(60, 30.0)]
    facts = run(fold(INSTANT), readings)
    assert [f.fields["upstream_at"] for f in of_type(facts, "turbidity_contrast")] == [
        iso(at(15))]


def test_fallback_background_and_background_missing() -> None:
    pair = PAIR.model_copy(update={"sustain_minutes": 0, "clear_minutes": 0})
    readings = [
        up(0, 10.0),
        down(30, 20.0),   # no upstream within ±10; fallback 0:00 (30 min old < 60): exceeded
        down(60, 20.0),   # 0:00 is 60 min old, not younger than 60: background_missing
        down(61, 10.0),   # still missing: no second event, episode unchanged
        down(62, 10.0),
        up(80, 10.0),
        down(81, 10.0),   # background again (0:80, 1 min): cleared; missing re-armed
        down(160, 10.0),  # 0:80 is 80 min old: background_missing again
    ]
    facts = run(fold(pair), readings, now_minutes=170)
    assert contrast(facts) == [("exceeded", at(30), iso(at(30))),
                               ("cleared", at(81), iso(at(30)))]
    assert of_type(facts, "turbidity_contrast")[0].fields["upstream_at"] == iso(at(0))
    missing = of_type(facts, "background_missing")
    assert [f.at_ms for f in missing] == [at(60), at(160)]
    assert missing[0].id == make_id("background_missing", SITE, "outfall-1", "tb-up", at(60))
    assert missing[0].fields == {"sensor": "tb-up", "pair": "outfall-1", "downstream_ntu": 20.0}


def test_fallback_lasts_the_whole_background_age() -> None:
    # One upstream reading at 0:00, then downstream every minute: 0:01–0:59 are younger
    # than 60 min and use it; 0:60 is the first without a background.
    readings = [up(0, 10.0)] + [down(m, 11.0) for m in range(1, 70)]
    facts = run(fold(), readings, now_minutes=70)
    assert [(f.type, f.at_ms) for f in facts] == [("background_missing", at(60))]


def test_no_upstream_at_all_is_missing_once() -> None:
    readings = [down(m, 50.0) for m in range(0, 120, 5)]
    facts = run(fold(), readings, now_minutes=120)
    assert [(f.type, f.at_ms) for f in facts] == [("background_missing", at(0))]


def test_arrival_order_and_duplicates_do_not_matter() -> None:
    rng = random.Random(2026)
    readings: list[Reading] = []
    # Six hours, probes every minute but with jitter and gaps; two muddy spells and a
    # quiet upstream outage, so every rule gets exercised.
    for m in range(360):
        muddy = 60 <= m < 100 or 200 <= m < 215 or 250 <= m < 300
        if not 150 <= m < 230:
            readings.append(up(m + rng.choice((0, 0.25, 0.5)), round(rng.uniform(8, 12), 2)))
        level = 30.0 if muddy else 11.0
        readings.append(down(m + rng.choice((0, 0.1)), round(level + rng.uniform(-1, 1), 2)))
    readings.append(down(300, 1000.0))
    expected = run(fold(), readings, now_minutes=361)
    assert {f.type for f in expected} == {"turbidity_contrast", "background_missing", "pegged"}
    assert len(contrast(expected)) >= 4
    for seed in range(4):
        shuffled = readings + rng.sample(readings, 60)
        random.Random(seed).shuffle(shuffled)
        assert run(fold(), shuffled, now_minutes=361) == expected


def test_upstream_buffer_stays_small() -> None:
    f = fold()
    state = f.initial()
    for m in range(24 * 60):
        f.step(state, up(m, 10.0), [])
        f.step(state, down(m, 11.0), [])
    # Kept: max_skew + max(max_skew, background_max_age) = 70 min of minutely readings.
    assert len(state.ups) <= 71
    assert len(state.pending) <= 11


# --------------------------------------------------------------------------- absolute basis

NO_ABSOLUTE = PAIR.model_copy(update={"absolute_ntu": None})


def gross(start: int, stop: int, ntu: float) -> list[Reading]:
    """The downstream probe alone every minute from ``start`` to ``stop`` inclusive."""
    return [down(m, ntu) for m in range(start, stop + 1)]


def with_basis(facts: list[Fact]) -> list[tuple[str, int, str, str]]:
    return [(f.fields["state"], f.at_ms, f.fields["started_at"], f.fields["basis"])
            for f in of_type(facts, "turbidity_contrast")]


def most_exceeded_at_once(facts: list[Fact]) -> int:
    """Walking the contrast facts in order: the most episodes exceeded at the same time."""
    exceeded: set[tuple[str, str]] = set()
    most = 0
    for f in of_type(facts, "turbidity_contrast"):
        episode = (f.fields["basis"], f.fields["started_at"])
        if f.fields["state"] == "exceeded":
            exceeded.add(episode)
        else:
            exceeded.discard(episode)
        most = max(most, len(exceeded))
    return most


def absolute_fields(state: str, started: int, downstream_ntu: float) -> dict[str, object]:
    return {"pair": "outfall-1", "state": state, "basis": "absolute",
            "started_at": iso(started), "upstream_ntu": None, "downstream_ntu": downstream_ntu,
            "delta_ntu": None, "limit_ntu": 250.0, "upstream_at": None}


def test_gross_turbidity_without_background_is_exceeded_on_an_absolute_basis() -> None:
    # The upstream probe silent from the start, downstream 800 NTU
    # every minute for an hour. Above 250 NTU from 0:00; exceeded at 0:10 (sustain).
    facts = run(fold(), gross(0, 60, 800.0), now_minutes=61)
    assert [(f.type, f.at_ms) for f in facts] == [
        ("background_missing", at(0)), ("turbidity_contrast", at(10))]
    missing = facts[0]
    assert missing.id == make_id("background_missing", SITE, "outfall-1", "tb-up", at(0))
    assert missing.fields == {"sensor": "tb-up", "pair": "outfall-1", "downstream_ntu": 800.0}
    fact = facts[1]
    assert fact.id == make_id("turbidity_contrast", SITE, "outfall-1", "absolute", "exceeded",
                              at(0))
    assert fact.id != make_id("turbidity_contrast", SITE, "outfall-1", "exceeded", at(0))
    assert fact.fields == absolute_fields("exceeded", at(0), 800.0)
    assert fact.fields["upstream_ntu"] is None and fact.fields["delta_ntu"] is None
    assert fact.fields["upstream_at"] is None


def test_a_dead_upstream_probe_hands_over_to_the_absolute_limit() -> None:
    # Upstream 10 NTU until 0:05, then dead; downstream 12 NTU (within the contrast)
    # until 1:04, 800 NTU from 1:05. The 0:05 reading serves as background while it
    # is younger than 60 min, up to 1:04; from 1:05 there is none.
    readings = ([up(m, 10.0) for m in range(6)] + gross(0, 64, 12.0)
                + gross(65, 130, 800.0))
    facts = run(fold(), readings, now_minutes=131)
    assert [(f.type, f.at_ms) for f in facts] == [
        ("background_missing", at(65)), ("turbidity_contrast", at(75))]
    assert facts[0].fields["downstream_ntu"] == 800.0
    assert facts[1].fields == absolute_fields("exceeded", at(65), 800.0)


def test_absolute_episode_clears_after_clear_minutes_below_the_limit() -> None:
    # 800 NTU 0:00–1:00, then 20 NTU from 1:01 (c): cleared at 1:31, t − c = 30.
    facts = run(fold(), gross(0, 60, 800.0) + gross(61, 120, 20.0), now_minutes=121)
    assert with_basis(facts) == [("exceeded", at(10), iso(at(0)), "absolute"),
                                 ("cleared", at(91), iso(at(0)), "absolute")]
    cleared = of_type(facts, "turbidity_contrast")[1]
    assert cleared.id == make_id("turbidity_contrast", SITE, "outfall-1", "absolute", "cleared",
                                 at(0))
    assert cleared.fields == absolute_fields("cleared", at(0), 20.0)
    # One run of readings without a background: background_missing once, as before.
    assert [f.at_ms for f in of_type(facts, "background_missing")] == [at(0)]


@pytest.mark.parametrize(("pair", "ntu"), [
    (NO_ABSOLUTE, 800.0),   # absolute_ntu: null turns the absolute basis off
    (PAIR, 200.0),          # below 250
    (PAIR, 250.0),          # at the limit is not above it
])
def test_no_absolute_contrast(pair: TurbidityPair, ntu: float) -> None:
    facts = run(fold(pair), gross(0, 60, ntu), now_minutes=61)
    assert [(f.type, f.at_ms) for f in facts] == [("background_missing", at(0))]
    assert facts[0].fields["downstream_ntu"] == ntu


def test_with_a_background_the_absolute_limit_does_not_apply() -> None:
    # 800 NTU over a background of 790: 10 NTU, within 10 % of 790. Nothing.
    assert run(fold(), minutely(0, 60, 790.0, 800.0), now_minutes=61) == []
    # 800 over 10: the background comparison, unchanged, and nothing absolute.
    facts = run(fold(), minutely(0, 60, 10.0, 800.0), now_minutes=61)
    assert with_basis(facts) == [("exceeded", at(10), iso(at(0)), "background")]
    fact = of_type(facts, "turbidity_contrast")[0]
    assert fact.id == make_id("turbidity_contrast", SITE, "outfall-1", "exceeded", at(0))
    assert (fact.fields["upstream_ntu"], fact.fields["delta_ntu"], fact.fields["limit_ntu"]) == (
        10.0, 790.0, 5.0)


def handover(up_ntu: float) -> list[Reading]:
    """800 NTU downstream throughout; upstream at ``up_ntu`` only from 0:41, so the
    downstream readings have a background (nearest within 10 min) from 0:31."""
    return gross(0, 80, 800.0) + [up(m, up_ntu) for m in range(41, 81)]


def test_a_returning_background_closes_the_absolute_episode() -> None:
    facts = run(fold(), handover(10.0), now_minutes=81)
    # The background episode starts on its own first reading (0:31) and needs its own
    # 10 minutes: it does not inherit the absolute episode's start or state.
    assert with_basis(facts) == [("exceeded", at(10), iso(at(0)), "absolute"),
                                 ("cleared", at(31), iso(at(0)), "absolute"),
                                 ("exceeded", at(41), iso(at(31)), "background")]
    contrast_facts = of_type(facts, "turbidity_contrast")
    assert contrast_facts[1].fields == absolute_fields("cleared", at(0), 800.0)
    assert contrast_facts[2].fields["upstream_at"] == iso(at(41))
    assert most_exceeded_at_once(facts) == 1


def test_a_clean_returning_background_just_closes_the_absolute_episode() -> None:
    facts = run(fold(), handover(790.0), now_minutes=81)
    assert with_basis(facts) == [("exceeded", at(10), iso(at(0)), "absolute"),
                                 ("cleared", at(31), iso(at(0)), "absolute")]


def test_an_open_background_episode_is_not_doubled_by_an_absolute_one() -> None:
    # Background exceeded at 0:10; upstream dead after 0:15 and downstream 800 NTU.
    # The 0:15 reading serves until 1:14; from 1:15 no background, but the background
    # episode is still exceeded and stands for the pair: no absolute episode.
    facts = run(fold(), minutely(0, 15, 10.0, 20.0) + gross(16, 140, 800.0),
                now_minutes=141)
    assert with_basis(facts) == [("exceeded", at(10), iso(at(0)), "background")]
    assert [f.at_ms for f in of_type(facts, "background_missing")] == [at(75)]


def absolute_story() -> list[Reading]:
    """Absolute episode, handover, background episode, upstream dead, absolute again."""
    readings = handover(10.0) + gross(81, 139, 12.0) + [up(m, 10.0) for m in range(81, 91)]
    readings += gross(150, 170, 900.0) + gross(171, 240, 20.0)
    return readings


def test_absolute_arrival_order_and_duplicates_do_not_matter() -> None:
    readings = absolute_story()
    expected = run(fold(), readings, now_minutes=241)
    assert with_basis(expected) == [
        ("exceeded", at(10), iso(at(0)), "absolute"),
        ("cleared", at(31), iso(at(0)), "absolute"),
        ("exceeded", at(41), iso(at(31)), "background"),
        ("cleared", at(111), iso(at(31)), "background"),
        ("exceeded", at(160), iso(at(150)), "absolute"),
        ("cleared", at(201), iso(at(150)), "absolute"),
    ]
    assert most_exceeded_at_once(expected) == 1
    rng = random.Random(8)
    for seed in range(4):
        shuffled = readings + rng.sample(readings, 60)
        random.Random(seed).shuffle(shuffled)
        assert run(fold(), shuffled, now_minutes=241) == expected


def test_absolute_episode_round_trips_through_json() -> None:
    f = fold()
    state = f.initial()
    for r in gross(0, 25, 800.0):
        f.step(state, r, [])
    data = f.dump(state)
    assert (data["abs_episode"], data["abs_started"]) == ("exceeded", at(0))
    restored = f.load(json.loads(json.dumps(data)))
    copied = f.copy(state)
    assert f.dump(restored) == f.dump(state) == f.dump(copied)
    outs: list[list[Fact]] = [[], [], []]
    for s, out in zip((state, copied, restored), outs, strict=True):
        for r in gross(26, 80, 20.0):
            f.step(s, r, out)
    assert outs[0] == outs[1] == outs[2]
    assert with_basis(outs[0]) == [("cleared", at(56), iso(at(0)), "absolute")]


def test_summary_shows_the_absolute_episode() -> None:
    f = fold()
    state = f.initial()
    for r in gross(0, 20, 800.0):
        f.step(state, r, [])
    assert f.summary(state).to_json() == {
        "state": "exceeded", "basis": "absolute", "delta_ntu": None, "limit_ntu": 250.0,
        "upstream_ntu": None, "downstream_ntu": 800.0, "at": iso(at(20)),
        # Why the contrast is unknown is the site's to say (summary.pair_at).
        "started_at": iso(at(0)), "unknown": None, "stale_after_minutes": 15.0}
    g = fold(NO_ABSOLUTE)
    other = g.initial()
    for r in gross(0, 20, 800.0):
        g.step(other, r, [])
    assert (g.summary(other).state, g.summary(other).basis) == ("unknown", None)


def samples(pair: TurbidityPair, readings: list[Reading], now_minutes: float) -> dict[
        int, ContrastSample]:
    """The last contrast sample per time, as the report and the exporter keep them."""
    got: dict[int, ContrastSample] = {}

    def sink(sample: Sample) -> None:
        assert isinstance(sample, ContrastSample)
        got[sample.ts_ms] = sample

    f = fold(pair)
    tl = Timeline(f)
    tl.observer = PairSampler(SITE, pair.id, f, sink)
    for r in readings:
        tl.insert(r)
    tl.advance_to(at(now_minutes))
    return got


def test_samples_follow_the_absolute_episode() -> None:
    got = samples(PAIR, gross(0, 60, 800.0) + gross(61, 120, 20.0), 121)
    view = {m: (got[at(m)].state, got[at(m)].basis, got[at(m)].exceeding)
            for m in (0, 9, 10, 60, 61, 90, 91)}
    assert view == {0: ("pending", "absolute", True), 9: ("pending", "absolute", True),
                    10: ("exceeded", "absolute", True), 60: ("exceeded", "absolute", True),
                    61: ("clearing", "absolute", False), 90: ("clearing", "absolute", False),
                    91: ("unknown", "absolute", False)}
    # The plotted contrast stays unknown: the absolute limit is a level, not an increase.
    s = got[at(10)]
    assert (s.background, s.upstream_ntu, s.delta_ntu, s.limit_ntu, s.allowed_ntu) == (
        False, None, None, None, None)
    assert s.downstream_ntu == 800.0
    off = samples(NO_ABSOLUTE, gross(0, 20, 800.0), 21)[at(10)]
    assert (off.state, off.basis, off.exceeding) == ("unknown", None, None)
    with_background = samples(PAIR, minutely(0, 20, 10.0, 20.0), 21)[at(10)]
    assert (with_background.state, with_background.basis) == ("exceeded", "background")


# --------------------------------------------------------------------------- probe faults


def test_pegged_once_per_run_of_full_scale_readings() -> None:
    small = SensorConfig(id="tb-down", kind="turbidity", max_ntu=100)
    readings = [down(m, ntu) for m, ntu in enumerate([50.0, 100.0, 100.0, 99.0, 120.0])]
    readings += [up(m, 10.0) for m in range(5)]
    facts = of_type(run(fold(downstream=small), readings), "pegged")
    assert [f.at_ms for f in facts] == [at(1), at(4)]
    assert facts[0].id == make_id("pegged", SITE, "outfall-1", "tb-down", at(1))
    assert facts[0].fields == {"sensor": "tb-down", "pair": "outfall-1", "ntu": 100.0,
                               "max_ntu": 100.0}


def test_pegged_upstream_uses_the_default_full_scale() -> None:
    readings = [up(0, 999.0), up(1, 1000.0), down(1, 1000.0)]
    facts = of_type(run(fold(), readings), "pegged")
    assert [(f.fields["sensor"], f.at_ms, f.fields["max_ntu"]) for f in facts] == [
        ("tb-up", at(1), 1000.0), ("tb-down", at(1), 1000.0)]


# --------------------------------------------------------------------------- state


def test_summary() -> None:
    f = fold()
    state = f.initial()
    assert f.summary(state).state == "unknown"
    for r in minutely(0, 10, 10.0, 20.0):
        f.step(state, r, [])
    # 0:00–0:10 are still pending in the state; summary evaluates them on a copy.
    s = f.summary(state).to_json()
    assert s["state"] == "exceeded"
    assert (s["delta_ntu"], s["limit_ntu"], s["started_at"]) == (10.0, 5.0, iso(at(0)))
    assert len(state.pending) == 11  # the state itself is untouched


def test_summary_unknown_without_background() -> None:
    f = fold()
    state = f.initial()
    f.step(state, down(0, 12.0), [])
    s = f.summary(state).to_json()
    assert s["state"] == "unknown"
    assert s["downstream_ntu"] == 12.0
    assert s["delta_ntu"] is None


def test_state_round_trips_through_json() -> None:
    f = fold()
    state = f.initial()
    for r in minutely(0, 25, 10.0, 20.0):
        f.step(state, r, [])
    restored = f.load(json.loads(json.dumps(f.dump(state))))
    copied = f.copy(state)
    assert f.dump(restored) == f.dump(state) == f.dump(copied)
    outs: list[list[Fact]] = [[], [], []]
    for s, out in zip((state, copied, restored), outs, strict=True):
        for r in minutely(26, 80, 10.0, 10.0):
            f.step(s, r, out)
    assert outs[0] == outs[1] == outs[2]
    assert [x.fields["state"] for x in outs[0]] == ["cleared"]


# --------------------------------------------------------------------------- more



def test_a_pegged_upstream_probe_is_no_background_the_absolute_rule_applies() -> None:
    # Upstream pegged at its 400 NTU full scale, downstream 300 NTU, every minute for
    # 15 minutes. Compared as read, 300 − 400 is no contrast at all; but the background
    # is only known to be 400 or more, so the pair falls back to the absolute rule:
    # 300 > 250 from 0:00, sustained 10 minutes at 0:10.
    readings = minutely(0, 15, 400.0, 300.0)
    facts = run(fold(upstream=UP_400), readings, now_minutes=16)
    assert [(f.type, f.at_ms) for f in facts] == [("pegged", at(0)),
                                                   ("turbidity_contrast", at(10))]
    contrast_fact = facts[1]
    assert contrast_fact.id == make_id("turbidity_contrast", SITE, "outfall-1", "absolute",
                                       "exceeded", at(0))
    assert contrast_fact.fields == {
        "pair": "outfall-1", "state": "exceeded", "basis": "absolute",
        "started_at": iso(at(0)), "upstream_ntu": None, "downstream_ntu": 300.0,
        "delta_ntu": None, "limit_ntu": 250.0, "upstream_at": None}
    # The pegged fact already says why; no background_missing besides it.
    assert "background_missing" not in {f.type for f in facts}


def test_a_pegged_background_is_unknown_contrast_not_ok() -> None:
    # Downstream 100 NTU under a pegged upstream: below the absolute limit, but the
    # contrast is unknown, not fine.
    f = fold(upstream=UP_400)
    state = f.initial()
    for r in minutely(0, 15, 400.0, 100.0):
        f.step(state, r, [])
    s = f.summary(state).to_json()
    assert (s["state"], s["upstream_ntu"], s["delta_ntu"]) == ("unknown", None, None)
    facts = run(fold(upstream=UP_400), minutely(0, 15, 400.0, 100.0), now_minutes=16)
    assert [(f.type, f.at_ms) for f in facts] == [("pegged", at(0))]
    # Just below full scale the upstream probe is a background again: 100 − 399 is ok.
    g = fold(upstream=UP_400)
    other = g.initial()
    for r in minutely(0, 15, 399.0, 100.0):
        g.step(other, r, [])
    assert g.summary(other).state == "ok"




def test_probes_suspect_after_suspect_hours_of_upstream_far_above_downstream() -> None:
    # Upstream 30, downstream 10 (20 above, more than 10) from 0:00: after 6 h, once.
    facts = of_type(run(fold(SUSPECT), every_10(480, 30.0, 10.0), now_minutes=481),
                    "probes_suspect")
    assert [(f.at_ms, f.id) for f in facts] == [
        (at(360), make_id("probes_suspect", SITE, "outfall-1", at(0)))]
    assert facts[0].fields == {"pair": "outfall-1", "upstream_ntu": 30.0,
                               "downstream_ntu": 10.0, "hours": 6.0, "since": iso(at(0)),
                               "upstream": "tb-up", "downstream": "tb-down",
                               "suspect_delta_ntu": 10.0}


def test_probes_suspect_is_off_by_default_and_needs_an_unbroken_run() -> None:
    assert PAIR.suspect_delta_ntu is None and PAIR.suspect_hours == 6.0
    assert of_type(run(fold(), every_10(480, 30.0, 10.0), now_minutes=481),
                   "probes_suspect") == []
    # A reading at 2:00 with upstream only 5 above ends the run; the next starts at 2:10
    # and is 6 h long at 8:10 (490 min), after the 8:00 end here, before the 8:20 there.
    broken = of_type(run(fold(SUSPECT), every_10(480, 30.0, 10.0, dip_at=120),
                         now_minutes=481), "probes_suspect")
    assert broken == []
    longer = of_type(run(fold(SUSPECT), every_10(500, 30.0, 10.0, dip_at=120),
                         now_minutes=501), "probes_suspect")
    assert [(f.at_ms, f.fields["since"], f.fields["hours"]) for f in longer] == [
        (at(490), iso(at(130)), 6.0)]
    # Exactly suspect_delta_ntu above is not more than it.
    assert of_type(run(fold(SUSPECT), every_10(480, 20.0, 10.0), now_minutes=481),
                   "probes_suspect") == []


def test_a_pegged_upstream_counts_as_at_least_its_full_scale_for_suspicion() -> None:
    # A plume at the upstream probe: pegged at 400, downstream 12 NTU, for 6 h.
    pair = SUSPECT.model_copy(update={"suspect_hours": 1.0})
    facts = run(fold(pair, upstream=UP_400), every_10(60, 400.0, 12.0), now_minutes=61)
    assert [(f.type, f.at_ms) for f in facts] == [("pegged", at(0)),
                                                   ("probes_suspect", at(60))]
    assert facts[1].fields["upstream_ntu"] == 400.0



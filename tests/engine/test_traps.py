"""Sediment traps (§ 134-9A(1)): geometry by hand, then the fill rule over readings."""

from __future__ import annotations

import json
import math
import random

import pytest

from monitor.config import SensorConfig, TrapConfig
from monitor.contract.events import Fact, make_id
from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE, iso
from monitor.engine.series import Sample, TrapSample, TrapSampler
from monitor.engine.summary import site_status
from monitor.engine.timeline import Timeline
from monitor.rules.traps.traps import (
    TrapFold,
    depth_for_fraction_in,
    design_volume_cf,
    fill_fraction,
    trap_state,
    volume_cf,
)

from ..support.trapkit import (
    BOX,
    BOX5,
    BOX_SENSOR,
    LASER_CM,
    MOUNTED,
    SITE,
    at,
    depth,
    distance,
    run,
)
from ..support.util import run as run_engine

# The trapezoidal trap of config/README.md.
BLUE_BOOK_TRAP = TrapConfig(id="trap-1", sensor="trap1-depth", shape="trapezoidal",
                            bottom_length_ft=20, bottom_width_ft=10, side_slope=2,
                            design_depth_ft=4)


def steps(fold: TrapFold, readings: list[Reading]) -> list[tuple[int, Fact]]:
    """Every fact the fold says, with the index of the reading it says it at (a
    revision is the same id said again)."""
    state, said = fold.initial(), []
    for i, r in enumerate(readings):
        out: list[Fact] = []
        fold.step(state, r, out)
        said += [(i, f) for f in out]
    return said


def kinds(facts: list[Fact]) -> list[tuple[str, int]]:
    return [(f.type, f.at_ms) for f in facts]


def every(minutes: int, start: float, end: float, depth_in: float) -> list[Reading]:
    """A reading of ``depth_in`` every ``minutes`` from ``start`` to before ``end``."""
    return [depth(m, depth_in) for m in range(round(start), round(end), minutes)]


# --------------------------------------------------------------------------- geometry


def test_rectangular_half_volume_is_half_depth() -> None:
    # V = L·W·h = 10·10·4 = 400 cf; V(2 ft) = 200 cf.
    assert design_volume_cf(BOX) == pytest.approx(400.0)
    assert volume_cf(BOX, 2.0) == pytest.approx(200.0)
    assert fill_fraction(BOX, 24.0) == pytest.approx(0.5)
    assert depth_for_fraction_in(BOX, 0.5) == pytest.approx(24.0, abs=1e-5)


def test_trapezoidal_design_volume_by_hand() -> None:
    # V(h) = L·W·h + (L+W)·z·h² + 4/3·z²·h³ with L=20, W=10, z=2:
    # V(4) = 800 + 30·2·16 + 4/3·4·64 = 800 + 960 + 341.333 = 2101.333 cf
    # V(2) = 400 + 30·2·4  + 4/3·4·8  = 400 + 240 +  42.667 =  682.667 cf
    assert design_volume_cf(BLUE_BOOK_TRAP) == pytest.approx(2101.3333, abs=1e-3)
    assert volume_cf(BLUE_BOOK_TRAP, 2.0) == pytest.approx(682.6667, abs=1e-3)


def test_trapezoidal_half_capacity_is_not_half_depth() -> None:
    # Half the design depth (24 in) holds 682.667 / 2101.333 = 0.3249 of the capacity.
    assert fill_fraction(BLUE_BOOK_TRAP, 24.0) == pytest.approx(0.32487, abs=1e-5)
    assert fill_fraction(BLUE_BOOK_TRAP, 24.0) < 0.5
    # Half the capacity is 1050.667 cf. V(2.65) = 530 + 421.35 + 99.251 = 1050.60 (below)
    # and V(2.6502) = 1050.73 (above), so the depth lies in (31.800, 31.8024) in.
    half_in = depth_for_fraction_in(BLUE_BOOK_TRAP, 0.5)
    assert 31.800 < half_in < 31.8024
    assert fill_fraction(BLUE_BOOK_TRAP, half_in) == pytest.approx(0.5, abs=1e-6)


def test_trapezoid_with_vertical_sides_is_a_box() -> None:
    flat = TrapConfig(id="t", sensor="s", shape="trapezoidal", bottom_length_ft=20,
                      bottom_width_ft=10, side_slope=0, design_depth_ft=4)
    # z = 0 leaves L·W·h = 20·10·3 = 600 cf.
    assert volume_cf(flat, 3.0) == pytest.approx(600.0)


def test_cylindrical() -> None:
    riser = TrapConfig(id="riser", sensor="s", shape="cylindrical", diameter_ft=2,
                       design_depth_ft=3)
    # π·(2/2)²·3 = 3π = 9.4248 cf; 1 ft of sediment takes π = 3.1416 cf, a third.
    assert design_volume_cf(riser) == pytest.approx(9.42478, abs=1e-5)
    assert volume_cf(riser, 1.0) == pytest.approx(3.14159, abs=1e-5)
    assert fill_fraction(riser, 12.0) == pytest.approx(1 / 3)
    assert depth_for_fraction_in(riser, 0.5) == pytest.approx(18.0, abs=1e-5)


STAGE = TrapConfig(id="pond", sensor="s", shape="stage_storage",
                   stage_storage=[(0.0, 0.0), (1.0, 100.0), (2.0, 300.0), (3.0, 600.0)],
                   design_depth_ft=3)


@pytest.mark.parametrize(("depth_ft", "volume"), [
    (0.0, 0.0),
    (0.5, 50.0),      # 0 + (100 − 0) · 0.5
    (1.0, 100.0),     # on a row
    (1.5, 200.0),     # 100 + (300 − 100) · 0.5
    (2.5, 450.0),     # 300 + (600 − 300) · 0.5
    (3.0, 600.0),
    (4.0, 900.0),     # past the table, last slope 300 cf/ft: 600 + 300
])
def test_stage_storage_interpolation(depth_ft: float, volume: float) -> None:
    assert volume_cf(STAGE, depth_ft) == pytest.approx(volume)


def test_stage_storage_fill_and_inverse() -> None:
    # 18 in = 1.5 ft holds 200 of 600 cf.
    assert fill_fraction(STAGE, 18.0) == pytest.approx(1 / 3)
    # 300 cf is the row at 2 ft = 24 in.
    assert depth_for_fraction_in(STAGE, 0.5) == pytest.approx(24.0, abs=1e-5)
    # 1.5 of capacity = 900 cf lies past the table at 4 ft = 48 in.
    assert depth_for_fraction_in(STAGE, 1.5) == pytest.approx(48.0, abs=1e-5)


def test_stage_storage_without_a_bottom_row() -> None:
    # The configuration insists on a first row of [0, 0]; a table built without one
    # (model_construct skips validation) is read as starting from (0, 0) all the same.
    pond = TrapConfig.model_construct(id="pond", sensor="s", shape="stage_storage",
                                      stage_storage=[(1.0, 100.0), (2.0, 400.0)],
                                      design_depth_ft=2.0)
    assert volume_cf(pond, 0.5) == pytest.approx(50.0)     # 100 · 0.5 / 1
    assert volume_cf(pond, 1.5) == pytest.approx(250.0)    # 100 + 300 · 0.5
    assert volume_cf(pond, 3.0) == pytest.approx(700.0)    # 400 + 300 · 1
    assert fill_fraction(pond, 12.0) == pytest.approx(0.25)


def test_no_sediment_holds_nothing() -> None:
    for trap in (BOX, BLUE_BOOK_TRAP, STAGE):
        assert volume_cf(trap, 0.0) == 0.0
        assert volume_cf(trap, -1.0) == 0.0
        assert depth_for_fraction_in(trap, 0.0) == 0.0


def test_trap_state_levels() -> None:
    assert trap_state(0.0, BOX) == "ok"
    assert trap_state(0.399, BOX) == "ok"
    assert trap_state(0.4, BOX) == "warn"
    assert trap_state(0.4999, BOX) == "warn"
    assert trap_state(0.5, BOX) == "cleanout"
    assert trap_state(1.2, BOX) == "cleanout"


# --------------------------------------------------------------------------- the fold


def test_warn_then_cleanout_with_fields() -> None:
    # Box: fill = depth/48. 18 in → 0.375, 19.2 in → 0.4 (warn), 24 in → 0.5 (clean-out).
    facts = run(TrapFold(SITE, BOX, BOX_SENSOR),
                [depth(0, 18.0), depth(10, 19.2), depth(20, 20.0), depth(30, 24.0)])
    assert kinds(facts) == [("trap_fill", at(10)), ("trap_cleanout_required", at(30))]
    warn, cleanout = facts
    assert warn.id == make_id("trap_fill", SITE, "box", at(10))
    assert warn.fields == {"trap": "box", "fill_fraction": 0.4, "depth_in": 19.2,
                           "sensor": "box-depth", "threshold": 0.4}
    assert cleanout.id == make_id("trap_cleanout_required", SITE, "box", at(30))
    assert cleanout.fields == {"trap": "box", "fill_fraction": 0.5, "depth_in": 24.0,
                               "sensor": "box-depth", "threshold": 0.5, "repeat": 0}
    assert cleanout.to_json()["at"] == iso(at(30))


def test_a_jump_past_both_thresholds_raises_both() -> None:
    facts = run(TrapFold(SITE, BOX, BOX_SENSOR), [depth(0, 10.0), depth(10, 30.0)])
    # 30 / 48 = 0.625
    assert kinds(facts) == [("trap_fill", at(10)), ("trap_cleanout_required", at(10))]
    assert facts[1].fields["fill_fraction"] == 0.625


#: The box without the re-arm delay: the 0.05 hysteresis alone.
BOX_NO_DELAY = BOX.model_copy(update={"rearm_hours": 0.0})


def test_hysteresis_rearms_only_0_05_below() -> None:
    readings = [
        depth(0, 19.2),   # 0.4     warn
        depth(10, 17.0),  # 0.3542  not 0.05 below: stays disarmed
        depth(20, 19.2),  # 0.4     nothing
        depth(30, 16.8),  # 0.35    = 0.4 − 0.05: re-armed
        depth(40, 19.2),  # 0.4     warn again
    ]
    facts = run(TrapFold(SITE, BOX_NO_DELAY, BOX_SENSOR), readings)
    assert kinds(facts) == [("trap_fill", at(0)), ("trap_fill", at(40))]


def test_cleanout_rearms_at_0_45() -> None:
    readings = [
        depth(0, 24.0),   # 0.5     clean-out (and warn)
        depth(10, 22.0),  # 0.4583  still disarmed
        depth(20, 24.0),  # 0.5     nothing
        depth(30, 21.6),  # 0.45    re-armed; warn stays disarmed (0.45 > 0.35)
        depth(40, 24.5),  # 0.5104  clean-out again
    ]
    facts = run(TrapFold(SITE, BOX_NO_DELAY, BOX_SENSOR), readings)
    assert kinds(facts) == [("trap_fill", at(0)), ("trap_cleanout_required", at(0)),
                            ("trap_cleanout_required", at(40))]


def test_median_ignores_small_noise() -> None:
    box5 = BOX.model_copy(update={"median_of": 5})
    fold = TrapFold(SITE, box5, BOX_SENSOR)
    # 12 in ± noise and one 20 in reading (a step of 8 in, possible): the median of
    # 12.2, 11.9, 12.0, 20.0, 12.1 is 12.1, then of 11.9, 12.0, 20.0, 12.1, 12.0: 12.0.
    readings = [depth(m, d) for m, d in enumerate([12.2, 11.9, 12.0, 20.0, 12.1, 12.0])]
    assert run(fold, readings) == []
    state = fold.initial()
    for r in readings:
        fold.step(state, r, [])
    assert fold.summary(state).to_json() == {"fill_fraction": 0.25, "depth_in": 12.0, "state": "ok",
                                   "level": "ok", "sensor_fault": None}


def test_median_follows_a_real_rise() -> None:
    box5 = BOX.model_copy(update={"median_of": 5})
    # Window after each reading and its median:
    # [10] 10 · [10,10] 10 · [10,10,20] 10 · [10,10,20,20] 15 · [10,10,20,20,20] 20 → 0.4167
    readings = [depth(m, d) for m, d in enumerate([10.0, 10.0, 20.0, 20.0, 20.0])]
    facts = run(TrapFold(SITE, box5, BOX_SENSOR), readings)
    assert kinds(facts) == [("trap_fill", at(4))]
    assert facts[0].fields["depth_in"] == 20.0
    assert facts[0].fields["fill_fraction"] == 0.4167


def test_trap_cleaned_on_a_drop_of_0_2_within_24h() -> None:
    readings = [
        depth(0, 24.0),           # 0.5
        depth(60, 14.4),          # 0.3: a drop of exactly 0.2 → cleaned
        depth(70, 4.8),           # 0.1: the same fall goes on (no second record)
        # One reading not lower is no end of it; at 130 min the fill has
        # stayed 0.1 for the hour since 70 min (settle_minutes 60): the record revised.
        *every(10, 80, 140, 4.8),
    ]
    fold = TrapFold(SITE, BOX, BOX_SENSOR)
    facts = [f for f in run(fold, readings) if f.type == "trap_cleaned"]
    assert kinds(facts) == [("trap_cleaned", at(60))]
    assert facts[0].id == make_id("trap_cleaned", SITE, "box", at(60))
    assert facts[0].fields == {"trap": "box", "fill_before": 0.5, "fill_after": 0.1,
                               "sensor": "box-depth"}
    # Step by step: the record when the drop first reaches 0.2, its revision where the
    # fall settled (130 min, reading 8).
    said = steps(fold, readings)
    assert [(i, f.id, f.fields["fill_after"]) for i, f in said if f.type == "trap_cleaned"] \
        == [(1, facts[0].id, 0.3), (8, facts[0].id, 0.1)]


def test_a_smaller_drop_is_not_cleaning() -> None:
    # 0.5 → 0.31 (14.88 in) is a drop of 0.19.
    facts = run(TrapFold(SITE, BOX, BOX_SENSOR), [depth(0, 24.0), depth(60, 14.88)])
    assert "trap_cleaned" not in {f.type for f in facts}


def test_a_drop_spread_over_more_than_24h_is_not_cleaning() -> None:
    # 0.5 at 0 h, 0.45 at 12 h, 0.4 at 24 h (the 0 h maximum leaves the window: it
    # holds (t − 24 h, t]), 0.29 at 30 h: the 24 h maximum is 0.45, a drop of 0.16.
    hours = [(0, 24.0), (12, 21.6), (24, 19.2), (30, 13.92)]
    readings = [depth(h * 60, d) for h, d in hours]
    facts = run(TrapFold(SITE, BOX, BOX_SENSOR), readings)
    assert "trap_cleaned" not in {f.type for f in facts}


def test_cleaning_rearms_the_alerts() -> None:
    readings = [depth(0, 24.0), depth(60, 2.0), depth(1440, 24.0)]
    facts = run(TrapFold(SITE, BOX, BOX_SENSOR), readings)
    assert kinds(facts) == [
        ("trap_fill", at(0)), ("trap_cleanout_required", at(0)),
        ("trap_cleaned", at(60)),
        ("trap_fill", at(1440)), ("trap_cleanout_required", at(1440)),
    ]


def test_distance_form_needs_the_sensor_height() -> None:
    mounted = SensorConfig(id="box-depth", kind="sediment", sensor_height_in=60)
    # depth = 60 − 40.8 = 19.2 in → 0.4
    reading = Reading(site=SITE, sensor="box-depth", kind="sediment", ts_ms=at(0),
                      distance_in=40.8)
    facts = run(TrapFold(SITE, BOX, mounted), [reading])
    assert kinds(facts) == [("trap_fill", at(0))]
    assert facts[0].fields["depth_in"] == 19.2

    fold = TrapFold(SITE, BOX, BOX_SENSOR)  # no sensor_height_in
    assert run(fold, [reading]) == []
    state = fold.initial()
    fold.step(state, reading, [])
    assert fold.summary(state).state == "unknown"


def test_distance_beyond_the_bottom_is_a_fault_not_an_empty_trap() -> None:
    mounted = SensorConfig(id="box-depth", kind="sediment", sensor_height_in=60)
    fold = TrapFold(SITE, BOX, mounted)
    state = fold.initial()
    out: list[Fact] = []
    fold.step(state, Reading(site=SITE, sensor="box-depth", kind="sediment", ts_ms=at(0),
                             distance_in=61.0), out)
    assert [f.type for f in out] == ["sensor_fault"]
    # No valid reading yet: no fill, and the state says fault, not ok or unknown.
    assert fold.summary(state).to_json() == {
        "fill_fraction": None, "depth_in": None, "state": "fault", "level": "unknown",
        "sensor_fault": {"reason": "beyond_bottom", "since": iso(at(0))}}


def test_blue_book_trap_warns_on_volume_not_depth() -> None:
    sensor = SensorConfig(id="trap1-depth", kind="sediment")
    trap = BLUE_BOOK_TRAP.model_copy(update={"median_of": 1})
    # 24 in (half the depth) is 0.3249 of the volume: nothing. 27.6 in passes 0.4
    # (reached at 27.56 in), 31.9 in passes 0.5 (reached at 31.80 in).
    readings = [depth(0, 24.0, "trap1-depth"), depth(10, 27.6, "trap1-depth"),
                depth(20, 31.9, "trap1-depth")]
    facts = run(TrapFold(SITE, trap, sensor), readings)
    assert kinds(facts) == [("trap_fill", at(10)), ("trap_cleanout_required", at(20))]
    assert facts[1].fields["trap"] == "trap-1"


def test_order_and_duplicates_do_not_matter() -> None:
    box5 = BOX.model_copy(update={"median_of": 5})
    rng = random.Random(7)
    # A slow fill over two days, a clean-out, and refilling; readings every 10 min.
    readings = []
    for i in range(400):
        d = 0.1 * i if i < 300 else 0.1 * (i - 300)
        readings.append(depth(10 * i, round(d + rng.uniform(-0.3, 0.3), 2)))
    readings[150] = depth(1500, 45.0)  # one spike: an impossible step
    expected = run(TrapFold(SITE, box5, BOX_SENSOR), readings)
    assert {f.type for f in expected} == {"trap_fill", "trap_cleanout_required", "trap_cleaned",
                                          "sensor_fault"}
    for seed in range(3):
        shuffled = readings + rng.sample(readings, 40)
        random.Random(seed).shuffle(shuffled)
        assert run(TrapFold(SITE, box5, BOX_SENSOR), shuffled) == expected


def test_state_round_trips_through_json() -> None:
    box5 = BOX.model_copy(update={"median_of": 5})
    fold = TrapFold(SITE, box5, BOX_SENSOR)
    state = fold.initial()
    for m, d in enumerate([10.0, 20.0, 24.0, 24.0, 24.0]):
        fold.step(state, depth(m, d), [])
    restored = fold.load(json.loads(json.dumps(fold.dump(state))))
    assert fold.dump(restored) == fold.dump(state)
    copied = fold.copy(state)
    # The same next reading gives the same facts from the original, the copy and the load.
    nxt = depth(10, 2.0)
    outs: list[list[Fact]] = [[], [], []]
    for s, out in zip((state, copied, restored), outs, strict=True):
        fold.step(s, nxt, out)
    assert outs[0] == outs[1] == outs[2]
    assert [f.type for f in outs[0]] == []  # the median is still 24 in
    assert fold.summary(copied).state == "cleanout"


def test_copy_is_independent() -> None:
    fold = TrapFold(SITE, BOX, BOX_SENSOR)
    state = fold.initial()
    fold.step(state, depth(0, 12.0), [])
    copied = fold.copy(state)
    fold.step(copied, depth(1, 30.0), [])
    assert fold.summary(state).depth_in == 12.0
    assert fold.summary(copied).depth_in == 30.0


def test_nothing_happens_with_time_alone() -> None:
    fold = TrapFold(SITE, BOX, BOX_SENSOR)
    state = fold.initial()
    fold.step(state, depth(0, 30.0), [])
    out: list[Fact] = []
    fold.advance(state, at(0) + 48 * MS_PER_HOUR, out)
    assert out == []


def test_volume_is_continuous_in_depth() -> None:
    # The trapezoid volume has no kinks: a tiny step in depth moves the fill a tiny bit.
    a = fill_fraction(BLUE_BOOK_TRAP, 30.0)
    b = fill_fraction(BLUE_BOOK_TRAP, 30.001)
    assert 0 < b - a < 1e-4
    assert math.isclose(fill_fraction(BLUE_BOOK_TRAP, 48.0), 1.0)


# --------------------------------------------------------------------------- warm-up

DAY_MIN = 24 * 60
TRAP1 = SensorConfig(id="trap1-depth", kind="sediment")


def test_an_echo_as_the_first_reading_is_no_fact() -> None:
    # The case: the Blue Book trap (median_of 5 by default), a 60 in echo
    # first (V(5 ft) / V(4 ft) = 3166.67 / 2101.33 = 151 %), then 10 in ten times.
    assert BLUE_BOOK_TRAP.median_of == 5
    assert fill_fraction(BLUE_BOOK_TRAP, 60.0) == pytest.approx(1.507, abs=1e-3)
    readings = [depth(0, 60.0, "trap1-depth")] + [depth(10 * i, 10.0, "trap1-depth")
                                                  for i in range(1, 11)]
    fold = TrapFold(SITE, BLUE_BOOK_TRAP, TRAP1)
    facts = run(fold, readings)
    assert facts == []
    types = {f.type for f in facts}
    assert "trap_fill" not in types
    assert "trap_cleanout_required" not in types
    assert "trap_cleaned" not in types

    # Status and the plotted series agree: no fill during warm-up, then the median.
    # 60 in is a valid first reading (nothing to step from; below 1.5 x 48 in),
    # and the 50 in step down to 10 in is held until it is sustained for five readings.
    state = fold.initial()
    for r in readings[:5]:
        fold.step(state, r, [])
    assert fold.summary(state).to_json() == {
        "fill_fraction": None, "depth_in": None, "state": "unknown", "level": "unknown",
        "sensor_fault": None}
    fold.step(state, readings[5], [])
    # 10 in = 0.8333 ft: (166.667 + 41.667 + 3.086) / 2101.333 = 0.1006
    assert fold.summary(state).to_json() == {
        "fill_fraction": 0.1006, "depth_in": 10.0, "state": "ok", "level": "ok",
        "sensor_fault": None}

    samples: list[Sample] = []
    tl = Timeline(TrapFold(SITE, BLUE_BOOK_TRAP, TRAP1))
    tl.observer = TrapSampler(SITE, "trap-1", tl.fold, samples.append)  # type: ignore[arg-type]
    for r in readings:
        tl.insert(r)
    plotted = [s for s in samples if isinstance(s, TrapSample)]
    # The held readings change nothing and are not plotted; the step is taken at the
    # fifth reading of 10 in, all five at once.
    assert [s.ts_ms for s in plotted] == [r.ts_ms for r in readings[:1] + readings[5:]]
    # Warm-up: the depth is the median so far (of [60]), no fill and no level.
    assert math.isnan(plotted[0].fill_fraction)
    assert (plotted[0].depth_in, plotted[0].state) == (60.0, "unknown")
    # Then what the rule compares: 0.1006, never 151 %.
    assert [(round(s.fill_fraction, 4), s.depth_in, s.state) for s in plotted[1:]] == \
        [(0.1006, 10.0, "ok")] * 6
    assert not any(s.fill_fraction >= 0.4 for s in plotted)


def test_no_fact_before_median_of_readings_exist() -> None:
    # Four readings at 0.625 with median_of 5: nothing; the fifth concludes both levels.
    readings = [depth(m, 30.0) for m in range(5)]
    assert run(TrapFold(SITE, BOX5, BOX_SENSOR), readings[:4]) == []
    facts = run(TrapFold(SITE, BOX5, BOX_SENSOR), readings)
    assert kinds(facts) == [("trap_fill", at(4)), ("trap_cleanout_required", at(4))]
    assert facts[1].fields == {"trap": "box", "fill_fraction": 0.625, "depth_in": 30.0,
                               "sensor": "box-depth", "threshold": 0.5, "repeat": 0}


@pytest.mark.parametrize("position", range(11))
def test_a_single_reading_beyond_the_design_depth_is_not_a_fill(position: int) -> None:
    # 60 in in the 48 in box (fill 1.25) once, anywhere among eleven readings of 12 in
    # (0.25), in the warm-up or after it.
    readings = [depth(10 * i, 60.0 if i == position else 12.0) for i in range(11)]
    fold = TrapFold(SITE, BOX5, BOX_SENSOR)
    facts = run(fold, readings)
    assert not {"trap_fill", "trap_cleanout_required", "trap_cleaned"} & {f.type for f in facts}
    # A step of 48 in that does not last is an impossible_step, reported once
    # it is known (the next reading is back at 12 in); as the first reading it is valid
    # (nothing to step from) and the 12 in after it are the sustained step; as the last
    # one it is still held.
    if 0 < position < 10:
        assert [(f.type, f.at_ms, f.fields["reason"], f.fields["value"],
                 f.fields["last_valid_in"]) for f in facts] == [
            ("sensor_fault", at(10 * position), "impossible_step", 60.0, 12.0)]
    else:
        assert facts == []
    state = fold.initial()
    for r in readings:
        fold.step(state, r, [])
    assert fold.summary(state).to_json() == {"fill_fraction": 0.25, "depth_in": 12.0, "state": "ok",
                                   "level": "ok", "sensor_fault": None}


def test_five_readings_beyond_the_design_depth_are_a_fill() -> None:
    # The control of the test above: a step sustained for median_of (5) readings is
    # real; it is taken at the fifth, all five at once (the median is then 60 in).
    readings = [depth(10 * i, 60.0 if 5 <= i <= 9 else 12.0) for i in range(10)]
    facts = run(TrapFold(SITE, BOX5, BOX_SENSOR), readings)
    assert kinds(facts) == [("trap_fill", at(90)), ("trap_cleanout_required", at(90))]
    assert facts[1].fields["fill_fraction"] == 1.25
    assert facts[1].fields["depth_in"] == 60.0


# --------------------------------------------------------------------------- repeats


def cleanout_ids(facts: list[Fact]) -> list[tuple[int, int, str]]:
    return [(f.at_ms, f.fields["repeat"], f.id) for f in facts
            if f.type == "trap_cleanout_required"]


def test_a_standing_demand_is_repeated_every_24_hours() -> None:
    # 28.8 in = 0.6 of the box, a reading every 30 minutes for 30 days; median_of 5,
    # so the first demand is at the fifth reading (120 min), each repeat 24 h later.
    assert BOX5.cleanout_repeat_hours == 24.0
    readings = every(30, 0, 30 * DAY_MIN, 28.8)
    assert len(readings) == 1440
    facts = run(TrapFold(SITE, BOX5, BOX_SENSOR), readings)
    first = at(120)
    demands = [f for f in facts if f.type == "trap_cleanout_required"]
    assert [(f.at_ms, f.fields["repeat"]) for f in demands] == \
        [(first + k * DAY_MIN * MS_PER_MINUTE, k) for k in range(30)]
    assert demands[0].id == make_id("trap_cleanout_required", SITE, "box", first)
    for k, f in enumerate(demands):
        if k:
            assert f.id == make_id("trap_cleanout_required", SITE, "box", first, k)
        assert f.site == SITE
        assert f.fields == {"trap": "box", "fill_fraction": 0.6, "depth_in": 28.8,
                            "sensor": "box-depth", "threshold": 0.5, "repeat": k}
    assert len({f.id for f in demands}) == 30
    # The warning is said once; nothing was cleaned.
    assert kinds([f for f in facts if f.type != "trap_cleanout_required"]) == \
        [("trap_fill", first)]
    # Stable: the same readings give the same ids.
    again = run(TrapFold(SITE, BOX5, BOX_SENSOR), readings)
    assert cleanout_ids(again) == cleanout_ids(facts)


def test_a_repeat_needs_the_fill_still_at_the_level_and_a_full_interval() -> None:
    readings = [
        depth(0, 24.0),                # 0.5      demand (and warning)
        depth(23 * 60 + 59, 30.0),     # 0.625    23 h 59 min later: too soon
        depth(24 * 60, 22.8),          # 0.475    below the level, not re-armed: no repeat
        depth(25 * 60, 24.0),          # 0.5      25 h after the demand: repeat 1
        depth(48 * 60, 24.0),          # 0.5      23 h after repeat 1: nothing
        depth(49 * 60, 24.0),          # 0.5      24 h after repeat 1: repeat 2
    ]
    facts = run(TrapFold(SITE, BOX, BOX_SENSOR), readings)
    assert kinds(facts) == [("trap_fill", at(0)), ("trap_cleanout_required", at(0)),
                            ("trap_cleanout_required", at(25 * 60)),
                            ("trap_cleanout_required", at(49 * 60))]
    assert [f.fields["repeat"] for f in facts[1:]] == [0, 1, 2]
    assert facts[2].id == make_id("trap_cleanout_required", SITE, "box", at(0), 1)
    assert facts[3].id == make_id("trap_cleanout_required", SITE, "box", at(0), 2)
    assert facts[2].fields["fill_fraction"] == 0.5


def test_repeats_follow_cleanout_repeat_hours() -> None:
    box6h = BOX.model_copy(update={"cleanout_repeat_hours": 6.0})
    facts = run(TrapFold(SITE, box6h, BOX_SENSOR), every(60, 0, 13 * 60, 24.0))
    assert cleanout_ids(facts) == [
        (at(0), 0, make_id("trap_cleanout_required", SITE, "box", at(0))),
        (at(360), 1, make_id("trap_cleanout_required", SITE, "box", at(0), 1)),
        (at(720), 2, make_id("trap_cleanout_required", SITE, "box", at(0), 2))]


def test_repeats_stop_below_the_rearm_level_and_a_new_demand_starts_afresh() -> None:
    # 3 days at 0.6, 3 days at 0.44 (below the re-arm level 0.45; a drop of 0.16 is
    # no clean-out), 2 days at 0.6 again; every 30 minutes, median_of 5.
    readings = (every(30, 0, 3 * DAY_MIN, 28.8) + every(30, 3 * DAY_MIN, 6 * DAY_MIN, 21.12)
                + every(30, 6 * DAY_MIN, 8 * DAY_MIN, 28.8))
    facts = run(TrapFold(SITE, BOX5, BOX_SENSOR), readings)
    first, again = at(120), at(6 * DAY_MIN + 60)  # the median follows at the 3rd reading
    assert kinds(facts) == [
        ("trap_fill", first),
        ("trap_cleanout_required", first),
        ("trap_cleanout_required", first + DAY_MIN * MS_PER_MINUTE),
        ("trap_cleanout_required", first + 2 * DAY_MIN * MS_PER_MINUTE),
        # No repeat at day 3 + 2 h: the fill is 0.44 from day 3 + 1 h on. The warning
        # stays disarmed (0.44 > 0.35), the clean-out re-armed: a new first demand.
        ("trap_cleanout_required", again),
        ("trap_cleanout_required", again + DAY_MIN * MS_PER_MINUTE),
    ]
    assert cleanout_ids(facts)[3:] == [
        (again, 0, make_id("trap_cleanout_required", SITE, "box", again)),
        (again + DAY_MIN * MS_PER_MINUTE, 1,
         make_id("trap_cleanout_required", SITE, "box", again, 1))]
    assert "trap_cleaned" not in {f.type for f in facts}


def test_a_cleaning_ends_the_repeats() -> None:
    # 2 days at 0.6, then cleaned down to 0.1: repeats stop, one trap_cleaned.
    readings = every(30, 0, 2 * DAY_MIN, 28.8) + every(30, 2 * DAY_MIN, 5 * DAY_MIN, 4.8)
    facts = run(TrapFold(SITE, BOX5, BOX_SENSOR), readings)
    # The 24 in step down is held until the fifth reading at 4.8 in (2 h in) sustains it.
    cleaned_at = at(2 * DAY_MIN + 120)
    assert kinds(facts) == [("trap_fill", at(120)), ("trap_cleanout_required", at(120)),
                            ("trap_cleanout_required", at(120 + DAY_MIN)),
                            ("trap_cleaned", cleaned_at)]
    assert facts[-1].fields == {"trap": "box", "fill_before": 0.6, "fill_after": 0.1,
                                "sensor": "box-depth"}


def test_repeats_do_not_depend_on_order_or_duplicates() -> None:
    rng = random.Random(11)
    # Five days around 0.6 with noise and one echo, a clean-out, two days refilling.
    readings = []
    for i in range(7 * 48):
        d = 28.8 if i < 5 * 48 else min(28.8, 4.0 + 0.5 * (i - 5 * 48))
        readings.append(depth(30 * i, round(d + rng.uniform(-0.3, 0.3), 2)))
    readings[100] = depth(3000, 80.0)  # one echo beyond the design depth
    expected = run(TrapFold(SITE, BOX5, BOX_SENSOR), readings)
    repeats = [f.fields["repeat"] for f in expected if f.type == "trap_cleanout_required"]
    assert repeats[:5] == [0, 1, 2, 3, 4] and max(repeats) == 4
    assert "trap_cleaned" in {f.type for f in expected}
    for seed in range(3):
        shuffled = readings + rng.sample(readings, 60)
        random.Random(seed).shuffle(shuffled)
        assert run(TrapFold(SITE, BOX5, BOX_SENSOR), shuffled) == expected


def test_a_standing_demand_survives_dump_load_and_copy() -> None:
    readings = every(30, 0, 3 * DAY_MIN, 28.8)
    fold = TrapFold(SITE, BOX5, BOX_SENSOR)
    whole: list[Fact] = []
    state = fold.initial()
    for r in readings:
        fold.step(state, r, whole)

    half = len(readings) // 2  # 36 h in: the first demand and one repeat made
    first: list[Fact] = []
    state = fold.initial()
    for r in readings[:half]:
        fold.step(state, r, first)
    dumped = fold.dump(state)
    assert (dumped["demand_first_ts"], dumped["demand_last_ts"], dumped["demand_repeats"]) == \
        (at(120), at(120 + DAY_MIN), 1)
    restored = fold.load(json.loads(json.dumps(dumped)))
    assert fold.dump(restored) == dumped
    copied = fold.copy(state)
    for s in (state, restored, copied):
        rest: list[Fact] = []
        for r in readings[half:]:
            fold.step(s, r, rest)
        assert first + rest == whole
    assert [f.fields["repeat"] for f in whole if f.type == "trap_cleanout_required"] == [0, 1, 2]


# --------------------------------------------------------------------------- faults



def demands(facts: list[Fact]) -> list[tuple[int, int, float, str | None]]:
    return [(f.at_ms, f.fields["repeat"], f.fields["fill_fraction"], f.fields.get("fault"))
            for f in facts if f.type == "trap_cleanout_required"]


@pytest.mark.parametrize("form", ["distance_in", "depth_in"])
def test_a_sensor_reading_past_the_bottom_is_a_fault_and_the_demand_keeps_repeating(
        form: str) -> None:
    # The box (fill = depth / 48), median_of 5, a reading every 30 min: 28.8 in (0.6)
    # for a day, then 2 days of readings 1.5 in past the bottom (distance 61.5 in from a
    # sensor 60 in up; or depth_in -1.5), then 28.8 in again until day 5.
    def reading(minutes: int, depth_in: float) -> Reading:
        if form == "depth_in":
            return depth(minutes, depth_in)
        return distance(minutes, round(60.0 - depth_in, 3))

    readings = ([reading(m, 28.8) for m in range(0, DAY_MIN, 30)]
                + [reading(m, -1.5) for m in range(DAY_MIN, 3 * DAY_MIN, 30)]
                + [reading(m, 28.8) for m in range(3 * DAY_MIN, 5 * DAY_MIN, 30)])
    box5 = BOX5.model_copy(update={"id": "box"})
    fold = TrapFold(SITE, box5, MOUNTED)
    facts = run(fold, readings)
    # Never a clean-out from a fault.
    assert "trap_cleaned" not in {f.type for f in facts}
    # The fault, once for the whole episode, at its first reading.
    faults = [f for f in facts if f.type == "sensor_fault"]
    assert len(faults) == 1
    assert faults[0].at_ms == at(DAY_MIN)
    assert faults[0].id == make_id("sensor_fault", SITE, "box-depth", "box", at(DAY_MIN))
    expected = {"sensor": "box-depth", "reason": "beyond_bottom", "value": -1.5,
                "since": iso(at(DAY_MIN)), "trap": "box", "last_valid_in": 28.8}
    if form == "distance_in":
        expected["distance_in"] = 61.5
    assert faults[0].fields == expected
    # The demand (first at the fifth reading, 2 h) repeats every 24 h on the last valid
    # fill, at faulty readings too (26 h and 50 h), which say so; then at 74 h and 98 h.
    assert demands(facts) == [(at(120), 0, 0.6, None),
                              (at(120 + DAY_MIN), 1, 0.6, "beyond_bottom"),
                              (at(120 + 2 * DAY_MIN), 2, 0.6, "beyond_bottom"),
                              (at(120 + 3 * DAY_MIN), 3, 0.6, None),
                              (at(120 + 4 * DAY_MIN), 4, 0.6, None)]
    repeat1 = next(f for f in facts if f.fields.get("repeat") == 1)
    assert repeat1.fields == {"trap": "box", "fill_fraction": 0.6, "depth_in": 28.8,
                              "sensor": "box-depth", "threshold": 0.5, "repeat": 1,
                              "fault": "beyond_bottom"}
    # While faulty, status shows the fault with the last valid fill, never a plain level.
    state = fold.initial()
    for r in readings[:60]:
        fold.step(state, r, [])
    assert fold.summary(state).to_json() == {
        "fill_fraction": 0.6, "depth_in": 28.8, "state": "fault", "level": "cleanout",
        "sensor_fault": {"reason": "beyond_bottom", "since": iso(at(DAY_MIN))}}


def test_distance_and_depth_give_the_same_verdicts_for_the_same_depth() -> None:
    # Depths 12, 12.5, -0.001 (past the bottom), 73 (above 1.5 x 48 = 72), 72 (at the
    # limit: valid), 0 (the bottom: valid) with median_of 1 (every step sustained).
    depths = [12.0, 12.5, -0.001, 73.0, 72.0, 0.0]
    by_depth = [depth(10 * i, d) for i, d in enumerate(depths)]
    by_distance = [distance(10 * i, round(60.0 - d, 3)) for i, d in enumerate(depths)]
    results = []
    for readings in (by_depth, by_distance):
        facts = run(TrapFold(SITE, BOX, MOUNTED), readings)
        results.append([(f.type, f.at_ms, f.fields.get("reason"), f.fields.get("value"))
                        for f in facts])
    assert results[0] == results[1] == [
        ("sensor_fault", at(20), "beyond_bottom", -0.001),
        ("trap_fill", at(40), None, None),
        ("trap_cleanout_required", at(40), None, None),
        # 72 in → 0 in: a drop of 1.5 of capacity, a clean-out.
        ("trap_cleaned", at(50), None, None),
    ]


def test_above_max_fill_is_a_fault_however_long_it_lasts() -> None:
    # 12 in (0.25) six times, then 73 in five times (above 72 in: faulty, so never a
    # sustained step either), then 12 in again: one fault, no fill fact.
    readings = ([depth(10 * i, 12.0) for i in range(6)]
                + [depth(10 * i, 73.0) for i in range(6, 11)]
                + [depth(10 * i, 12.0) for i in range(11, 13)])
    fold = TrapFold(SITE, BOX5, BOX_SENSOR)
    facts = run(fold, readings)
    assert [(f.type, f.at_ms) for f in facts] == [("sensor_fault", at(60))]
    assert facts[0].fields == {"sensor": "box-depth", "reason": "above_max_fill",
                               "value": 73.0, "since": iso(at(60)), "trap": "box",
                               "last_valid_in": 12.0}
    state = fold.initial()
    for r in readings[:9]:
        fold.step(state, r, [])
    assert fold.summary(state).state == "fault"
    for r in readings[9:]:
        fold.step(state, r, [])
    assert fold.summary(state).state == "ok"


@pytest.mark.parametrize("step_in", [28.0, -10.0])
def test_a_step_that_does_not_last_is_an_impossible_step(step_in: float) -> None:
    # 12 in six times (median_of 5; for the step down, 24 in with max_step_in 8), a
    # step for two readings, back.
    base = 12.0 if step_in > 0 else 24.0
    sensor = BOX_SENSOR if step_in > 0 else BOX_SENSOR.model_copy(update={"max_step_in": 8.0})
    level = base + step_in
    readings = ([depth(10 * i, base) for i in range(6)]
                + [depth(60, level), depth(70, level)]
                + [depth(10 * i, base) for i in range(8, 11)])
    facts = run(TrapFold(SITE, BOX5, sensor), readings)
    assert "trap_cleaned" not in {f.type for f in facts}
    faults = [f for f in facts if f.type == "sensor_fault"]
    assert [(f.at_ms, f.fields) for f in faults] == [(at(60), {
        "sensor": "box-depth", "reason": "impossible_step", "value": level,
        "since": iso(at(60)), "trap": "box", "last_valid_in": base})]
    # 24 in is 0.5: the step down case has its demand, and nothing else.
    assert [f.type for f in facts if f.type != "sensor_fault"] == (
        [] if step_in > 0 else ["trap_fill", "trap_cleanout_required"])


def test_a_sustained_step_is_real() -> None:
    # The control: 12 in six times, then 40 in (0.8333) five times: taken at the fifth.
    readings = [depth(10 * i, 12.0 if i < 6 else 40.0) for i in range(11)]
    facts = run(TrapFold(SITE, BOX5, BOX_SENSOR), readings)
    assert kinds(facts) == [("trap_fill", at(100)), ("trap_cleanout_required", at(100))]
    assert facts[1].fields["fill_fraction"] == 0.8333


def test_the_engine_reports_the_fault_and_status_shows_it() -> None:
    sensors = [{"id": "rg1", "kind": "rain"}, {"id": "tb-up", "kind": "turbidity"},
               {"id": "tb-down", "kind": "turbidity"},
               {"id": "trap1-depth", "kind": "sediment", "sensor_height_in": 60}]
    # The Blue Book trap: 20 in of sediment (distance 40), then a reading past the bottom.
    items = [Reading(SITE, "trap1-depth", "sediment", at(10 * i), distance_in=40.0)
             for i in range(6)]
    items.append(Reading(SITE, "trap1-depth", "sediment", at(60), distance_in=62.25))
    eng, events = run_engine(items, sensors=sensors)
    (fault,) = [e.to_json() for e in events if e.type == "sensor_fault"]
    assert fault == {"type": "sensor_fault", "site": SITE, "at": iso(at(60)),
                     "id": make_id("sensor_fault", SITE, "trap1-depth", "trap-1", at(60)),
                     "sensor": "trap1-depth", "reason": "beyond_bottom", "value": -2.25,
                     "since": iso(at(60)), "trap": "trap-1", "distance_in": 62.25,
                     "last_valid_in": 20.0, "revision": 0}
    trap = site_status(eng, SITE, at(70))["traps"]["trap-1"]
    assert trap["state"] == "fault" and trap["level"] == "ok"
    assert trap["sensor_fault"] == {"reason": "beyond_bottom", "since": iso(at(60))}


# --------------------------------------------------------------------------- re-arm


def test_alternating_noise_about_the_line_is_one_demand_and_its_repeats() -> None:
    # The box (median_of 1), hourly for three days: 0.52 (24.96 in) at even hours, 0.44
    # (21.12 in, 0.06 below the line) at odd ones. Once every 0.44 re-armed
    # the demand: a new "repeat 0" every two hours. Now the fill never stays 0.05 below
    # for rearm_hours (6): one demand, repeated at 24 h and 48 h (even hours, 0.52).
    readings = [depth(60 * h, 24.96 if h % 2 == 0 else 21.12) for h in range(72)]
    facts = run(TrapFold(SITE, BOX, BOX_SENSOR), readings)
    assert demands(facts) == [(at(0), 0, 0.52, None), (at(24 * 60), 1, 0.52, None),
                              (at(48 * 60), 2, 0.52, None)]
    assert [f.id for f in facts if f.type == "trap_cleanout_required"] == [
        make_id("trap_cleanout_required", SITE, "box", at(0)),
        make_id("trap_cleanout_required", SITE, "box", at(0), 1),
        make_id("trap_cleanout_required", SITE, "box", at(0), 2)]
    # The warning (0.4, re-armed at 0.35) is said once; nothing is a clean-out.
    assert kinds([f for f in facts if f.type != "trap_cleanout_required"]) == \
        [("trap_fill", at(0))]


@pytest.mark.parametrize(("below_hours", "new_demand"), [(6, True), (5, False)])
def test_the_demand_rearms_after_rearm_hours_below(below_hours: int, new_demand: bool) -> None:
    # 0.52 at hours 0-1, then 0.44 from hour 2 for ``below_hours`` hours and one
    # reading more (hours 2 .. 2 + below_hours), then 0.55 (26.4 in).
    readings = [depth(0, 24.96), depth(60, 24.96)]
    readings += [depth(60 * h, 21.12) for h in range(2, 3 + below_hours)]
    back = 3 + below_hours
    readings.append(depth(60 * back, 26.4))
    facts = run(TrapFold(SITE, BOX, BOX_SENSOR), readings)
    if new_demand:
        # 0.44 since hour 2, for 6 h at hour 8: re-armed; hour 9 is a new first demand.
        assert demands(facts) == [(at(0), 0, 0.52, None), (at(60 * back), 0, 0.55, None)]
    else:
        # 5 h below is not enough: the old demand stands (its repeat is not due yet).
        assert demands(facts) == [(at(0), 0, 0.52, None)]


def test_random_noise_about_the_line_is_one_demand() -> None:
    # Three days every 30 min, fill uniform in 0.40 .. 0.60 (seeded), median_of 5: the
    # median dips to 0.45 and below now and then, but never for 6 hours on end.
    rng = random.Random(18)
    readings = [depth(30 * i, round(48 * rng.uniform(0.40, 0.60), 2))
                for i in range(3 * 48)]
    facts = run(TrapFold(SITE, BOX5, BOX_SENSOR), readings)
    said = demands(facts)
    assert [repeat for _, repeat, _, _ in said] == [0, 1, 2]
    assert [f.type for f in facts if f.type not in ("trap_cleanout_required", "trap_fill")] \
        == []
    assert len([f for f in facts if f.type == "trap_fill"]) == 1
    # Once the dips re-armed it: the same readings gave many "repeat 0".
    no_delay = run(TrapFold(SITE, BOX5.model_copy(update={"rearm_hours": 0.0}), BOX_SENSOR),
                   readings)
    assert sum(1 for _, r, _, _ in demands(no_delay) if r == 0) > 1


# --------------------------------------------------------------------------- falls


def test_one_fall_in_four_steps_is_one_record_revised_to_where_it_settled() -> None:
    # The box (median_of 1), every 10 min: 0.9, 0.7, 0.5, 0.3, 0.1, 0.1, then 0.09 and
    # 0.1 (noise) until 100 min, and 0.09 once more. Taking each step as a fall would
    # give four records (each further 0.2 from the last one).
    readings = [depth(10 * i, d) for i, d in
                enumerate([43.2, 33.6, 24.0, 14.4, 4.8, 4.8, 4.32, 4.8, 4.8, 4.32, 4.8, 4.32])]
    fold = TrapFold(SITE, BOX, BOX_SENSOR)
    facts = run(fold, readings)
    cid = make_id("trap_cleaned", SITE, "box", at(10))
    assert [(f.type, f.at_ms, f.id) for f in facts] == [
        ("trap_fill", at(0), make_id("trap_fill", SITE, "box", at(0))),
        ("trap_cleanout_required", at(0), make_id("trap_cleanout_required", SITE, "box", at(0))),
        ("trap_cleaned", at(10), cid)]
    assert facts[2].fields == {"trap": "box", "fill_before": 0.9, "fill_after": 0.1,
                               "sensor": "box-depth"}
    # Said when the drop first reached 0.2 (0.9 → 0.7), revised once where the fall
    # settled: at 100 min the fill has been within 0.02 of 0.1 since 40 min (ending a
    # fall at the first reading not lower, the second 0.1 at 50 min would have ended
    # it). The noise after it (0.09) is no revision.
    assert [(i, f.id, f.fields["fill_after"]) for i, f in steps(fold, readings)
            if f.type == "trap_cleaned"] == [(1, cid, 0.7), (10, cid, 0.1)]


def test_a_partial_cleanout_is_demanded_again_where_it_settled() -> None:
    # 0.9 → 0.7 (a record) → 0.65 from 20 min on: the fall settles at 0.65 at 80 min,
    # an hour at it (not at the first reading not lower), still above the
    # line; the cleaning re-armed both thresholds, so both fire there, afresh.
    readings = [depth(10 * i, d) for i, d in enumerate([43.2, 33.6] + [31.2] * 7)]
    facts = run(TrapFold(SITE, BOX, BOX_SENSOR), readings)
    assert kinds(facts) == [("trap_fill", at(0)), ("trap_cleanout_required", at(0)),
                            ("trap_cleaned", at(10)), ("trap_fill", at(80)),
                            ("trap_cleanout_required", at(80))]
    assert facts[2].fields["fill_after"] == 0.65
    assert facts[4].fields["repeat"] == 0


def test_a_real_looking_cleanout_and_refill() -> None:
    # A range finder 60 in above the box bottom (distance form), every 30 min, median_of 5:
    # day 0 at 26.4 in (0.55); the morning of day 1 the excavator: 20, 13, 6, 1 in, one
    # reading past the wet bottom (distance 60.8: -0.8 in), then 1.2 in; from day 3 the
    # trap refills 0.6 in per reading up to 24 in (0.5).
    depths = [26.4] * 48 + [20.0, 13.0, 6.0, 1.0, -0.8] + [1.2] * 91
    depths += [round(min(24.0, 1.2 + 0.6 * k), 2) for k in range(1, 49)]
    readings = [distance(30 * i, round(60.0 - d, 2)) for i, d in enumerate(depths)]
    fold = TrapFold(SITE, BOX5, MOUNTED)
    facts = run(fold, readings)
    i_at = {i: at(30 * i) for i in range(len(depths))}
    # Medians: i=50 [26.4,26.4,20,13,6] 20 (0.4167: a drop of 0.13); i=51 [26.4,20,13,6,1]
    # 13 (0.2708: 0.28 below 0.55, the record); i=52 past the bottom: a fault, no fill;
    # i=53 [20,13,6,1,1.2] 6 (0.125); i=54 1.2 (0.025); the fall has settled at i=58,
    # when the fills since an hour before (i=56) and the last five (i=54..58) are all
    # 0.025 (before, one reading not lower, i=55, ended it; the facts are the
    # same, the revision comes 1.5 hours later).
    # The refill: the median of a steady rise is the reading two back; 19.2 in (0.4) at
    # i=175, 24.0 in (0.5) at i=183. The first demand's repeat would have been due at
    # 26 h (i=52), but the clean-out at i=51 ended it.
    assert [(f.type, f.at_ms) for f in facts] == [
        ("trap_fill", i_at[4]), ("trap_cleanout_required", i_at[4]),
        ("trap_cleaned", i_at[51]), ("sensor_fault", i_at[52]),
        ("trap_fill", i_at[175]), ("trap_cleanout_required", i_at[183])]
    cleaned, fault = facts[2], facts[3]
    assert cleaned.id == make_id("trap_cleaned", SITE, "box", i_at[51])
    assert cleaned.fields == {"trap": "box", "fill_before": 0.55, "fill_after": 0.025,
                              "sensor": "box-depth"}
    assert fault.fields == {"sensor": "box-depth", "reason": "beyond_bottom", "value": -0.8,
                            "since": iso(i_at[52]), "trap": "box", "distance_in": 60.8,
                            "last_valid_in": 1.0}
    assert facts[5].fields == {"trap": "box", "fill_fraction": 0.5, "depth_in": 24.0,
                               "sensor": "box-depth", "threshold": 0.5, "repeat": 0}
    assert [(i, f.fields["fill_after"]) for i, f in steps(fold, readings)
            if f.type == "trap_cleaned"] == [(51, 0.2708), (58, 0.025)]
    # Order and duplicates change nothing.
    rng = random.Random(3)
    shuffled = readings + rng.sample(readings, 30)
    rng.shuffle(shuffled)
    assert run(TrapFold(SITE, BOX5, MOUNTED), shuffled) == facts


def test_the_plot_holds_the_last_valid_fill_through_a_fault() -> None:
    samples: list[Sample] = []
    tl = Timeline(TrapFold(SITE, BOX, MOUNTED))
    tl.observer = TrapSampler(SITE, "box", tl.fold, samples.append)  # type: ignore[arg-type]
    for r in [distance(0, 36.0), distance(10, 61.0), distance(20, 36.0)]:
        tl.insert(r)
    plotted = [(s.ts_ms, s.fill_fraction, s.depth_in, s.state, s.fault)
               for s in samples if isinstance(s, TrapSample)]
    # 24 in (0.5), then a fault sampled at the last valid fill, then 24 in again.
    assert plotted == [(at(0), 0.5, 24.0, "cleanout", None),
                       (at(10), 0.5, 24.0, "fault", "beyond_bottom"),
                       (at(20), 0.5, 24.0, "cleanout", None)]


def test_new_state_survives_dump_load_and_copy() -> None:
    # Mid-fault, mid-hold and mid-fall states give the same facts after a round trip.
    readings = [distance(10 * i, 60.0 - d) for i, d in
                enumerate([30.0, 30.0, 30.0, 30.0, 30.0, 20.0, 14.0, 6.0, -1.0, 40.0,
                           6.0, 6.0, 6.0, 6.0, 6.0, 6.0])]
    assert_round_trips(TrapFold(SITE, BOX5, MOUNTED), readings)


def assert_round_trips(fold: TrapFold, readings: list[Reading]) -> None:
    """Cut anywhere, through JSON or a copy: the rest gives the same facts."""
    whole = [f for _, f in steps(fold, readings)]
    for cut in range(1, len(readings)):
        state = fold.initial()
        first: list[Fact] = []
        for r in readings[:cut]:
            fold.step(state, r, first)
        restored = fold.load(json.loads(json.dumps(fold.dump(state))))
        assert fold.dump(restored) == fold.dump(state)
        for s in (restored, fold.copy(state)):
            rest: list[Fact] = []
            for r in readings[cut:]:
                fold.step(s, r, rest)
            assert first + rest == whole


# --------------------------------------------------------------------------- settled


def laser(cm: list[int]) -> list[Reading]:
    return [distance(10 * i, d / 2.54) for i, d in enumerate(cm)]


def test_a_laser_cleanout_over_hours_demands_nothing_until_it_has_settled() -> None:
    readings = laser(LASER_CM)
    fold = TrapFold(SITE, BOX5, MOUNTED)
    facts = run(fold, readings)
    # Medians (cm): 62 from i=4 (0:40, fill 90.4 / 121.92 = 0.7415: both thresholds);
    # i=20 (3:20) 86, 66.4 / 121.92 = 0.5446, 0.197 below the 24 h maximum 0.7415; i=21
    # (3:30) 89, 63.4 / 121.92 = 0.52, 0.2215 below: the clean-out record. The median
    # stays 89 at i=22..24 (3:40-4:00; the bucket's 69 is no median). Ending a fall at
    # the first reading not lower would end it there: at 3:40 trap_fill and
    # trap_cleanout_required at 0.52 while the excavator worked on. Then 90 (0.5118),
    # 95, 100, 104 (4:40, 0.397) and 105 from i=30 (5:00): 47.4 / 121.92 = 0.3888. At
    # i=34 (5:40) the window reaches back to 4:40 (0.397): the fill has fallen
    # 0.0082 <= 0.02 in the hour, over 7 readings: settled. At i=33 it reached back
    # to 4:30 (100 cm, 0.4298): 0.041.
    cid = make_id("trap_cleaned", SITE, "box", at(210))
    assert [(f.type, f.at_ms, f.fields.get("fill_fraction")) for f in facts] == [
        ("trap_fill", at(40), 0.7415), ("trap_cleanout_required", at(40), 0.7415),
        ("trap_cleaned", at(210), None)]
    assert facts[2].id == cid
    assert facts[2].fields == {"trap": "box", "fill_before": 0.7415, "fill_after": 0.3888,
                               "sensor": "box-depth"}
    assert [(i, f.id, f.fields["fill_after"]) for i, f in steps(fold, readings)
            if f.type == "trap_cleaned"] == [(21, cid, 0.52), (34, cid, 0.3888)]
    # Order and duplicates change nothing.
    rng = random.Random(28)
    shuffled = readings + rng.sample(readings, 12)
    rng.shuffle(shuffled)
    assert run(TrapFold(SITE, BOX5, MOUNTED), shuffled) == facts
    # settle_minutes is what keeps it quiet: with 0, five fills within 0.02 are enough,
    # and at i=25 (4:10: 0.52 x 4, then 0.5118) the fall counts as settled mid-pass.
    assert_round_trips(fold, readings)  # mid-settle states too (the window)
    hasty = run(TrapFold(SITE, BOX5.model_copy(update={"settle_minutes": 0}), MOUNTED), readings)
    assert [(f.type, f.at_ms) for f in hasty][3:] == [
        ("trap_fill", at(250)), ("trap_cleanout_required", at(250))]


def test_a_partial_laser_cleanout_is_judged_from_where_it_settled() -> None:
    # The same clean-out stopped after the second pass: 89-90 cm from 3:10 on. The
    # median is 89 (0.52) from i=21 (3:30); at i=27 (4:30) it has held an hour: the
    # record is revised to 0.52 (no change from what it said: no revision) and the
    # thresholds, re-armed by the clean-out, are judged from 0.52: both fire, afresh.
    cm = LASER_CM[:23] + [89, 90, 89, 89, 90, 89, 89]
    facts = run(TrapFold(SITE, BOX5, MOUNTED), laser(cm))
    assert [(f.type, f.at_ms) for f in facts] == [
        ("trap_fill", at(40)), ("trap_cleanout_required", at(40)), ("trap_cleaned", at(210)),
        ("trap_fill", at(270)), ("trap_cleanout_required", at(270))]
    assert facts[4].fields["fill_fraction"] == 0.52 and facts[4].fields["repeat"] == 0

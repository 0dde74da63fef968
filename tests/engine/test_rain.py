"""Storm events from a gauge, hand-computed (monitor/README.md, "The rules", § 134-9A(2))."""

from __future__ import annotations

import random
from typing import Any

import pytest

from monitor.config import RainRules, SensorConfig
from monitor.contract.events import Fact
from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE
from monitor.engine.timeline import Timeline
from monitor.rules.rain.rain import GAUGE_QUALIFIED, GaugeFold

from ..support.util import SITE, counter_series, rain, tips, ts

H = MS_PER_HOUR


def run(readings: list[Reading], now_ms: int | None = None, **rules: Any
        ) -> dict[str, list[Fact]]:
    fold = GaugeFold(SITE, "rg1", RainRules(**rules), [SensorConfig(id="rg1", kind="rain")])
    tl = Timeline(fold)
    for r in readings:
        tl.insert(r)
    if now_ms is not None:
        tl.advance_to(now_ms)
    out: dict[str, list[Fact]] = {}
    for f in sorted(tl.facts(), key=Fact.sort_key):
        out.setdefault(f.type, []).append(f)
    return out


def burst(start_ms: int, total_in: float, minutes: int, seq0: int) -> list[Reading]:
    """``total_in`` spread evenly (in whole hundredths) over ``minutes`` one-minute readings."""
    hundredths = round(total_in * 100)
    per = [hundredths // minutes + (1 if i < hundredths % minutes else 0) for i in range(minutes)]
    return [rain("rg1", start_ms + i * MS_PER_MINUTE, p / 100, seq0 + i)
            for i, p in enumerate(per) if p]


def test_049_never_qualifies_and_050_does() -> None:
    below = run(burst(ts("10:00"), 0.49, 60, 0), now_ms=ts("23:00"))
    assert GAUGE_QUALIFIED not in below
    assert below["storm_ended"][0].fields["total_in"] == pytest.approx(0.49)
    assert below["storm_ended"][0].fields["qualified"] is False

    exact = run(burst(ts("10:00"), 0.50, 50, 0), now_ms=ts("23:00"))
    q = exact[GAUGE_QUALIFIED][0]
    # 50 readings of 0.01 in at 10:00..10:49: the 50th (10:49) reaches 0.50 in.
    assert q.at_ms == ts("10:49")
    assert q.fields["total_in"] == 0.5
    assert exact["storm_ended"][0].fields["qualified"] is True


def test_counter_form_same_as_depth_form() -> None:
    # 60 tips of 0.01 in within one hour, counters published every minute.
    series = counter_series(ts("09:00"), 600, {60 + i: 1 for i in range(60)})
    facts = run(series, now_ms=ts("23:00"))
    q = facts[GAUGE_QUALIFIED][0]
    # Tip 50 falls in minute 60 + 49 -> the counter read at 09:00 + 109 min = 10:49.
    assert q.at_ms == ts("10:49")
    end = facts["storm_ended"][0]
    assert end.fields["total_in"] == pytest.approx(0.60)
    assert end.at_ms == ts("10:59")  # last rain


def test_two_bursts_8h_apart_event_24h_vs_rolling() -> None:
    readings = burst(ts("01:00"), 0.3, 30, 0) + burst(ts("09:29"), 0.3, 30, 100)
    event = run(readings, now_ms=ts("23:59"), mode="event_24h")
    # Last rain of burst 1 at 01:29, burst 2 starts 09:29: 8 h apart >= 6 h gap.
    assert len(event["storm_started"]) == 2
    assert GAUGE_QUALIFIED not in event
    rolling = run(readings, now_ms=ts("23:59"), mode="rolling_24h")
    assert len(rolling["storm_started"]) == 2
    (q,) = rolling[GAUGE_QUALIFIED]
    # Rolling total reaches 0.50 at the 20th reading of burst 2: 09:29 + 19 min.
    assert q.at_ms == ts("09:48")
    assert q.fields["max_24h_in"] == 0.5
    assert q.fields["total_in"] == 0.2  # the second event's own rain so far


def test_event_total_counts_beyond_24h() -> None:
    # 0.3 in at hour 0, 0.1 in every 5 h for 25 h: never 0.5 in any 24 h window
    # of its own... until the total passes 0.5 in.
    readings = [rain("rg1", ts("00:00"), 0.3, 0)]
    readings += [rain("rg1", ts("00:00") + k * 5 * H, 0.1, k) for k in range(1, 6)]
    e24 = run(readings, now_ms=ts("2026-05-03T00:00:00Z"), mode="event_24h")
    total = run(readings, now_ms=ts("2026-05-03T00:00:00Z"), mode="event_total")
    # Within (t-24h, t] at t=20h: 0.3 + 4 x 0.1 = 0.7 >= 0.5 -> qualifies at 10 h already:
    # 0.3 + 0.1 (5 h) + 0.1 (10 h) = 0.5.
    assert e24[GAUGE_QUALIFIED][0].at_ms == ts("10:00")
    assert total[GAUGE_QUALIFIED][0].at_ms == ts("10:00")
    assert e24["storm_ended"][0].fields["total_in"] == pytest.approx(0.8)


def test_event_24h_window_excludes_old_rain_of_same_event() -> None:
    # 0.3 in at 00:00, then 0.1 in every 5 h: at 25 h the first 0.3 in leaves the
    # window; the event's own 24 h sum peaks at 0.3+0.4 = 0.7 at 20 h.
    readings = [rain("rg1", ts("00:00"), 0.3, 0)]
    readings += [rain("rg1", ts("00:00") + k * 5 * H, 0.05, k) for k in range(1, 9)]
    facts = run(readings, now_ms=ts("2026-05-04T00:00:00Z"), mode="event_24h")
    # Own rain in (t-24h, t]: at 20 h 0.3 + 4 x 0.05 = 0.5 -> qualifies at 20 h.
    assert facts[GAUGE_QUALIFIED][0].at_ms == ts("20:00")
    # At 25 h the 00:00 reading falls out: 8 x 0.05 within 24 h... max stays 0.5.
    assert facts["storm_ended"][0].fields["max_24h_in"] == pytest.approx(0.5)
    assert facts["storm_ended"][0].fields["total_in"] == pytest.approx(0.7)


def test_gap_of_exactly_dry_gap_separates_events() -> None:
    readings = [rain("rg1", ts("00:00"), 0.3, 0), rain("rg1", ts("06:00"), 0.3, 1)]
    facts = run(readings, now_ms=ts("23:00"))
    assert len(facts["storm_started"]) == 2
    just_inside = [rain("rg1", ts("00:00"), 0.3, 0), rain("rg1", ts("05:59"), 0.3, 1)]
    facts = run(just_inside, now_ms=ts("23:00"))
    assert len(facts["storm_started"]) == 1
    assert GAUGE_QUALIFIED in facts


def test_storm_ends_only_after_gap_in_event_time() -> None:
    readings = burst(ts("10:00"), 0.2, 10, 0)
    assert "storm_ended" not in run(readings, now_ms=ts("16:08"))
    ended = run(readings, now_ms=ts("16:09"))["storm_ended"][0]
    assert ended.fields["ended_at"] == "2026-05-01T10:09:00Z"


def test_counter_reset_counts_from_zero() -> None:
    readings = [tips("rg1", ts("10:00"), 500), tips("rg1", ts("10:01"), 520),
                tips("rg1", ts("10:02"), 30), tips("rg1", ts("10:03"), 31)]
    facts = run(readings, now_ms=ts("23:00"))
    (reset,) = facts["counter_reset"]
    assert reset.at_ms == ts("10:02")
    assert reset.fields == {"sensor": "rg1", "tips_before": 520, "tips_after": 30}
    # 20 tips + 30 tips (counted from zero) + 1 tip = 0.51 in.
    assert facts["storm_ended"][0].fields["total_in"] == pytest.approx(0.51)
    assert facts[GAUGE_QUALIFIED][0].at_ms == ts("10:02")


def test_rolling_rearms_only_after_falling_below() -> None:
    # 0.6 in at 00:00 crosses; 0.6 in at 12:00 (another event) does not count while
    # the rolling total stays above; 0.6 in at 2 days later does.
    readings = [rain("rg1", ts("00:00"), 0.6, 0), rain("rg1", ts("12:00"), 0.6, 1),
                rain("rg1", ts("2026-05-03T00:00:00Z"), 0.6, 2)]
    facts = run(readings, now_ms=ts("2026-05-04T00:00:00Z"), mode="rolling_24h")
    assert [f.at_ms for f in facts[GAUGE_QUALIFIED]] == [ts("00:00"), ts("2026-05-03T00:00:00Z")]


@pytest.mark.parametrize("mode", ["event_24h", "event_total", "rolling_24h"])
def test_shuffled_and_duplicated_counters_give_same_facts(mode: str) -> None:
    rng = random.Random(7)
    tips_at = {m: rng.choice([0, 0, 1, 2]) for m in range(0, 400)}
    tips_at.update({m: 0 for m in range(400, 900)})
    tips_at.update({m: rng.choice([0, 1, 3]) for m in range(900, 1300)})
    series = counter_series(ts("00:00"), 1500, tips_at)
    expected = run(series, now_ms=ts("2026-05-02T12:00:00Z"), mode=mode)
    shuffled = series + rng.sample(series, 200)
    rng.shuffle(shuffled)
    assert run(shuffled, now_ms=ts("2026-05-02T12:00:00Z"), mode=mode) == expected


def test_same_instant_reset_ordered_by_seq() -> None:
    # 100 at 12:00; at 12:01 the node sends 102 (seq 8) and, reflashed, 1 (seq 9).
    readings = [counter("rg1", ts("12:00"), 100, 7), counter("rg1", ts("12:01"), 102, 8),
                counter("rg1", ts("12:01"), 1, 9)]
    facts = run(list(reversed(readings)), now_ms=ts("23:00"))
    # +2 tips, then a reset counting 1 tip: 0.03 in, not 1.02 in.
    assert facts["storm_ended"][0].fields["total_in"] == pytest.approx(0.03)
    assert len(facts["counter_reset"]) == 1


def counter(sensor: str, at_ms: int, total: int, seq: int) -> Reading:
    return Reading(site=SITE, sensor=sensor, kind="rain", ts_ms=at_ms, tips_total=total, seq=seq)


# --------------------------------------------------------------------------- wraps


def run_gauge(readings: list[Reading], **sensor: Any) -> dict[str, list[Fact]]:
    """``run`` with the gauge's own options (``counter_bits``, ``max_rate_in_per_hour``)."""
    fold = GaugeFold(SITE, "rg1", RainRules(), [SensorConfig(id="rg1", kind="rain", **sensor)])
    tl = Timeline(fold)
    for r in readings:
        tl.insert(r)
    tl.advance_to(ts("23:00"))
    out: dict[str, list[Fact]] = {}
    for f in sorted(tl.facts(), key=Fact.sort_key):
        out.setdefault(f.type, []).append(f)
    return out


def test_a_logger_that_reboots_near_its_maximum_is_a_reset_not_a_storm() -> None:
    # Every ten minutes, dry at 65 300; at 10:10 the logger rebooted: 0. Read as a
    # 16-bit wrap that is 65 536 - 65 300 = 236 tips = 2.36 in in ten minutes, 14.2 in
    # per hour; at most 4.0 in/h x 10/60 h = 0.667 in can fall then: a reset, no rain.
    readings = [tips("rg1", ts("09:50"), 65_300), tips("rg1", ts("10:00"), 65_300),
                tips("rg1", ts("10:10"), 0), tips("rg1", ts("10:20"), 0)]
    facts = run_gauge(readings)
    (reset,) = facts["counter_reset"]
    assert (reset.at_ms, reset.fields) == (
        ts("10:10"), {"sensor": "rg1", "tips_before": 65_300, "tips_after": 0})
    assert "storm_started" not in facts and GAUGE_QUALIFIED not in facts
    # The width forced to 16 bits changes nothing; a gauge rated for 15 in/h could
    # have had 2.5 in in those ten minutes, so for it the drop is a wrap.
    assert run_gauge(readings, counter_bits=16) == facts
    storm = run_gauge(readings, max_rate_in_per_hour=15)
    assert "counter_reset" not in storm
    assert storm["storm_ended"][0].fields["total_in"] == 2.36


@pytest.mark.parametrize(("gap_s", "before", "after", "total_in", "reset"), [
    # 10 min: 65 536 - 65 530 + 4 = 10 tips = 0.10 in <= 0.667 in: a wrap.
    (600, 65_530, 4, 0.10, False),
    # 15 min: 36 + 64 = 100 tips = 1.00 in = 4.0 in/h x 0.25 h exactly: still a wrap.
    (900, 65_500, 64, 1.00, False),
    # 15 min: 101 tips = 1.01 in > 1.00 in: a reset; 65 counts from zero: 0.65 in.
    (900, 65_500, 65, 0.65, True),
    # 20 s (a reboot's first message) is judged as one minute: 4.0 / 60 = 0.0667 in.
    # 2 + 1 = 3 tips (0.03 in) fit: a wrap; 6 + 1 = 7 tips (0.07 in) do not: a reset
    # counting 1 tip from zero.
    (20, 65_534, 1, 0.03, False),
    (20, 65_530, 1, 0.01, True),
    # A 32-bit counter: 4 294 967 296 - 4 294 967 000 + 100 = 396 tips (3.96 in) in
    # 10 min: a reset, 100 tips from zero (1.00 in).
    (600, 4_294_967_000, 100, 1.00, True),
])
def test_a_wrap_counts_on_only_when_its_rain_is_plausible(
        gap_s: int, before: int, after: int, total_in: float, reset: bool) -> None:
    readings = [tips("rg1", ts("09:00"), before), tips("rg1", ts("10:00"), before),
                tips("rg1", ts("10:00") + gap_s * 1000, after)]
    facts = run_gauge(readings)
    assert facts["storm_ended"][0].fields["total_in"] == total_in
    assert ("counter_reset" in facts) is reset

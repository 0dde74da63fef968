"""The vectorised backtest (``engine.rain_columns``) against hand-computed storms and the fold.

The hand-computed cases state the § 134-9A(2) numbers directly; the property
test checks that, on generated one-minute series, the backtest finds exactly
the storm events of the streaming ``GaugeFold`` driven through a ``Timeline``
(monitor/README.md, "The rules"), in all three rain modes and for both input forms.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings

from monitor.config import RainRules, SensorConfig
from monitor.contract.events import Fact
from monitor.contract.inputs import Reading
from monitor.contract.times import iso
from monitor.engine.timeline import Timeline
from monitor.rules.rain.rain import GAUGE_QUALIFIED, GaugeFold, StormState
from monitor.rules.rain.rain_columns import EVENT_COLUMNS, storm_events

from ..support.properties import examples
from ..support.rainseries import MIN, T0, Case, H, cases, epoch_ms

Mode = Literal["event_24h", "event_total", "rolling_24h"]
MODES: tuple[Mode, ...] = ("event_24h", "event_total", "rolling_24h")
SITE = "branch-meadows"

#: One storm event, compared field by field: (started_at, ended_at, total_in,
#: max_24h_in, qualified_at, q_total_in, q_max_24h_in, uncertain_in,
#: q_uncertain_in); times as ISO strings.
Summary = tuple[str, str | None, float, float, str | None, float | None, float | None, float,
                float | None]
#: The first seven of those, what the hand-computed examples state.
Storm = tuple[str, str | None, float, float, str | None, float | None, float | None]


def at(hhmm: str, day: int = 0) -> int:
    """ms of ``HH:MM`` on 2026-05-01 UTC plus ``day`` days."""
    hours, minutes = hhmm.split(":")
    return T0 + day * 24 * H + int(hours) * H + int(minutes) * MIN


# ----------------------------------------------------------------------------- the two paths


def backtest(frame: pd.DataFrame, mode: Mode, in_per_tip: Mapping[str, float] | None = None,
             now: int | None = None, *, max_rate: Mapping[str, float] | None = None,
             **rules: Any) -> dict[str, Summary]:
    events = storm_events(frame, RainRules(mode=mode, **rules), in_per_tip, now=now,
                          max_rate_in_per_hour=max_rate)
    assert tuple(events.columns) == EVENT_COLUMNS
    out: dict[str, Summary] = {}
    for row in events.to_dict("records"):
        assert row["qualified"] == (row["qualified_at"] is not pd.NaT)
        started = _iso(row["started_at"])
        assert started is not None
        out[str(row["event_id"])] = (
            started, _iso(row["ended_at"]), float(row["total_in"]),
            float(row["max_24h_in"]), _iso(row["qualified_at"]),
            None if pd.isna(row["q_total_in"]) else float(row["q_total_in"]),
            None if pd.isna(row["q_max_24h_in"]) else float(row["q_max_24h_in"]),
            float(row["uncertain_in"]),
            None if pd.isna(row["q_uncertain_in"]) else float(row["q_uncertain_in"]),
        )
    return out


def stream(frame: pd.DataFrame, mode: Mode, in_per_tip: Mapping[str, float] | None = None,
           now: int | None = None, *, max_rate: Mapping[str, float] | None = None,
           **rules: Any) -> dict[str, Summary]:
    """The same rows through one ``Timeline(GaugeFold)`` per gauge, in time order."""
    rain_rules = RainRules(mode=mode, **rules)
    rows = frame.assign(ts=epoch_ms(frame["ts"])).sort_values("ts", kind="stable")
    now_ms = int(rows["ts"].max()) if now is None else now
    out: dict[str, Summary] = {}
    for gauge, group in rows.groupby("gauge", sort=True):
        name = str(gauge)
        gauge_config = SensorConfig(id=name, kind="rain",
                                    in_per_tip=(in_per_tip or {}).get(name, 0.01),
                                    max_rate_in_per_hour=(max_rate or {}).get(name, 4.0))
        fold = GaugeFold(SITE, name, rain_rules, [gauge_config])
        tl: Timeline[Any] = Timeline(fold)
        for row in group.to_dict("records"):
            tl.insert(_reading(name, row))
        tl.advance_to(now_ms)
        out.update(_fold_summary(fold, tl))
    return out


def _reading(gauge: str, row: Mapping[Any, Any]) -> Reading:
    seq = row.get("seq")
    seq = None if seq is None or pd.isna(seq) else int(seq)
    if "tips_total" in row:
        return Reading(SITE, gauge, "rain", int(row["ts"]), tips_total=int(row["tips_total"]),
                       seq=seq)
    return Reading(SITE, gauge, "rain", int(row["ts"]), precip_in=float(row["precip_in"]),
                   seq=seq)


def _fold_summary(fold: GaugeFold, tl: Timeline[Any]) -> dict[str, Summary]:
    by_type: dict[str, dict[str, Fact]] = {}
    for fact in tl.facts():
        if fact.type == "counter_reset":
            continue
        by_type.setdefault(fact.type, {})[fact.fields["event_id"]] = fact
    started = by_type.get("storm_started", {})
    qualified = by_type.get(GAUGE_QUALIFIED, {})
    ended = by_type.get("storm_ended", {})
    open_storm: StormState | None = tl.state.storm
    out: dict[str, Summary] = {}
    for event_id, fact in started.items():
        q = qualified.get(event_id)
        if event_id in ended:
            e = ended[event_id].fields
            assert e["qualified"] == (q is not None)
            ended_at, total, max24 = e["ended_at"], e["total_in"], e["max_24h_in"]
            uncertain = e["uncertain_in"]
        else:
            # Still open: its running totals are the fold's current state.
            assert open_storm is not None and fold.event_id(open_storm.started_at) == event_id
            ended_at, total = None, open_storm.total / 1e6
            max24 = open_storm.max24 / 1e6
            uncertain = open_storm.uncertain / 1e6
        out[event_id] = (
            fact.fields["started_at"], ended_at, total, max24,
            None if q is None else q.fields["qualified_at"],
            None if q is None else q.fields["total_in"],
            None if q is None else q.fields["max_24h_in"],
            uncertain, None if q is None else q.fields["uncertain_in"],
        )
    return out


def _iso(value: Any) -> str | None:
    if value is pd.NaT or value is None:
        return None
    return iso((pd.Timestamp(value) - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(1, unit="ms"))




def both(frame: pd.DataFrame, mode: Mode, in_per_tip: Mapping[str, float] | None = None,
         now: int | None = None, *, max_rate: Mapping[str, float] | None = None,
         **rules: Any) -> dict[str, Storm]:
    """The backtest's events, after checking that the fold finds exactly the same (rain
    of unknown timing included; these examples have none unless they say so)."""
    fast = backtest(frame, mode, in_per_tip, now, max_rate=max_rate, **rules)
    slow = stream(frame, mode, in_per_tip, now, max_rate=max_rate, **rules)
    assert fast == slow
    return {k: v[:7] for k, v in fast.items()}


# ----------------------------------------------------------------------------- builders


def counter(start_ms: int, tips_per_minute: list[int], gauge: str = "rg1",
            base: int = 0) -> pd.DataFrame:
    """A gauge publishing its counter each minute; ``tips_per_minute[m]`` fall in minute m.

    The first row (minute 0) is the baseline, so tips listed for minute 0 are
    not rain.
    """
    totals = base + np.cumsum(tips_per_minute)
    return pd.DataFrame({"ts": start_ms + np.arange(len(totals)) * MIN, "gauge": gauge,
                         "tips_total": totals})


def depths(rows: list[tuple[int, float]], gauge: str = "rg1") -> pd.DataFrame:
    """``precip_in`` rows, ``seq`` numbered in the order given."""
    return pd.DataFrame({"ts": [t for t, _ in rows], "gauge": gauge,
                         "precip_in": [d for _, d in rows], "seq": range(len(rows))})


def one_tip_a_minute(first: int, last: int, minutes: int) -> list[int]:
    """A tip in each minute ``first..last`` of a ``minutes`` long series."""
    return [1 if first <= m <= last else 0 for m in range(minutes)]


# ----------------------------------------------------------------------------- hand-computed


@pytest.mark.parametrize("mode", MODES)
def test_049_never_qualifies(mode: Mode) -> None:
    # Baseline at 00:00, one 0.01 in tip in each of the minutes 00:01..00:49.
    frame = counter(T0, one_tip_a_minute(1, 49, 8 * 60))
    events = both(frame, mode, {"rg1": 0.01})
    assert events == {"rg1-20260501T000100Z": (
        "2026-05-01T00:01:00Z", "2026-05-01T00:49:00Z", 0.49, 0.49, None, None, None)}


@pytest.mark.parametrize("mode", MODES)
def test_050_qualifies_at_the_fiftieth_tip(mode: Mode) -> None:
    frame = counter(T0, one_tip_a_minute(1, 50, 8 * 60))
    events = both(frame, mode, {"rg1": 0.01})
    assert events == {"rg1-20260501T000100Z": (
        "2026-05-01T00:01:00Z", "2026-05-01T00:50:00Z", 0.5, 0.5,
        "2026-05-01T00:50:00Z", 0.5, 0.5)}


def test_two_bursts_eight_hours_apart() -> None:
    # 0.30 in at 00:01..00:30 and 0.30 in at 08:01..08:30: 7 h 31 min dry in
    # between, so two events under a 6-hour gap.
    tips = [1 if 1 <= m <= 30 or 481 <= m <= 510 else 0 for m in range(20 * 60)]
    frame = counter(T0, tips)
    first = ("2026-05-01T00:01:00Z", "2026-05-01T00:30:00Z", 0.3, 0.3)
    second = ("2026-05-01T08:01:00Z", "2026-05-01T08:30:00Z", 0.3, 0.3)
    ids = ("rg1-20260501T000100Z", "rg1-20260501T080100Z")
    for mode in ("event_24h", "event_total"):
        assert both(frame, mode, {"rg1": 0.01}) == {
            ids[0]: (*first, None, None, None), ids[1]: (*second, None, None, None)}
    # rolling_24h: the gauge's trailing 24 h reaches 0.30 + 0.20 at the 20th
    # tip of the second burst (08:20); the event's own rain is then 0.20 in.
    assert both(frame, "rolling_24h", {"rg1": 0.01}) == {
        ids[0]: (*first, None, None, None),
        ids[1]: (*second, "2026-05-01T08:20:00Z", 0.2, 0.5)}


def test_rolling_24h_must_fall_below_before_counting_again() -> None:
    # 0.60 in at once every 8 h keeps the trailing 24 h at or above 0.50 in
    # until the rain of 00:30 on day 1 leaves the window at 00:30 on day 2.
    rain = [(at("00:00"), 0.6), (at("08:00"), 0.6), (at("00:30", 1), 0.6),
            (at("00:31", 2), 0.6)]
    frame = depths(rain)
    rolling = both(frame, "rolling_24h")
    assert [v[4] for v in rolling.values()] == [
        "2026-05-01T00:00:00Z", None, None, "2026-05-03T00:31:00Z"]
    # The rolling total at 08:00 is 1.20 in, but B is not a new crossing.
    assert [v[3] for v in rolling.values()] == [0.6, 0.6, 0.6, 0.6]
    assert [v[6] for v in rolling.values()] == [0.6, None, None, 0.6]
    # Per event, every one of them holds 0.60 in.
    assert [v[4] is not None for v in both(frame, "event_24h").values()] == [True] * 4


def test_counter_reset_counts_from_zero() -> None:
    # 100 (baseline) -> 110 -> 120 -> 5 (reset: 5 tips) -> 15, 0.02 in per tip:
    # +0.20, +0.20, +0.10 (0.50 in, qualifies at 00:03), +0.20.
    frame = pd.DataFrame({"ts": [at("00:00"), at("00:01"), at("00:02"), at("00:03"),
                                 at("00:04"), at("07:00")],
                          "gauge": "rg1", "tips_total": [100, 110, 120, 5, 15, 15]})
    for mode in MODES:
        assert both(frame, mode, {"rg1": 0.02}) == {"rg1-20260501T000100Z": (
            "2026-05-01T00:01:00Z", "2026-05-01T00:04:00Z", 0.7, 0.7,
            "2026-05-01T00:03:00Z", 0.5, 0.5)}


def test_a_reboot_near_the_maximum_is_a_reset_and_a_plausible_wrap_counts_on() -> None:
    # 0.01 in tips every ten minutes: 65 300 (baseline), 65 300, then 0 at 00:20 (the
    # logger rebooted), 5 at 00:30. As a 16-bit wrap, 00:20 would be 65 536 - 65 300 =
    # 236 tips (2.36 in) in ten minutes, more than 4.0 in/h x 1/6 h = 0.667 in: a reset
    # counting 0 from zero, and the storm is the 5 tips of 00:30 (0.05 in).
    frame = pd.DataFrame({"ts": [at("00:00"), at("00:10"), at("00:20"), at("00:30"),
                                 at("07:00")],
                          "gauge": "rg1", "tips_total": [65_300, 65_300, 0, 5, 5]})
    for mode in MODES:
        assert both(frame, mode, {"rg1": 0.01}) == {"rg1-20260501T003000Z": (
            "2026-05-01T00:30:00Z", "2026-05-01T00:30:00Z", 0.05, 0.05, None, None, None)}
    # A gauge rated for 15 in/h could take 2.5 in in ten minutes: a wrap, 2.36 in at
    # 00:20 (qualifying there) and 0.05 in at 00:30, 2.41 in.
    assert both(frame, "event_total", {"rg1": 0.01}, max_rate={"rg1": 15.0}) == {
        "rg1-20260501T002000Z": ("2026-05-01T00:20:00Z", "2026-05-01T00:30:00Z", 2.41, 2.41,
                                 "2026-05-01T00:20:00Z", 2.36, 2.36)}
    # At the limit: 65 500 -> 64 fifteen minutes later is 36 + 64 = 100 tips = 1.00 in =
    # 4.0 in/h x 1/4 h, a wrap; 65 500 -> 65 (1.01 in) a reset counting 65 tips, 0.65 in.
    # Two rows 20 s apart are judged over one minute (0.0667 in): 65 534 -> 1 is 3 tips,
    # a wrap; 65 530 -> 1 is 7 tips, a reset counting 1 tip.
    for first, second, gap_ms, total in [(65_500, 64, 15 * MIN, 1.0), (65_500, 65, 15 * MIN, 0.65),
                                         (65_534, 1, 20_000, 0.03), (65_530, 1, 20_000, 0.01)]:
        rows = pd.DataFrame({"ts": [at("00:00"), at("00:10"), at("00:10") + gap_ms],
                             "gauge": "rg1", "tips_total": [first, first, second]})
        assert [v[2] for v in both(rows, "event_total", {"rg1": 0.01}).values()] == [total]


def test_counters_of_one_instant_go_in_the_order_of_their_seq() -> None:
    # A node rebooted within the second: 100 (seq 5) then 3 (seq 6) at 10:01 is a reset,
    # 3 tips (0.03 in), not 100 -> 3 -> ... read by value (3 then 100: 97 more tips,
    # 1.03 in, a storm that never fell).
    frame = pd.DataFrame({"ts": [at("10:00"), at("10:01"), at("10:01"), at("10:02"),
                                 at("20:02")],
                          "gauge": "rg1", "tips_total": [100, 100, 3, 3, 3],
                          "seq": [4, 5, 6, 7, 8]})
    assert both(frame, "event_total", {"rg1": 0.01}) == {"rg1-20260501T100100Z": (
        "2026-05-01T10:01:00Z", "2026-05-01T10:01:00Z", 0.03, 0.03, None, None, None)}


def test_a_gap_of_exactly_dry_gap_hours_separates_events() -> None:
    apart = depths([(at("00:00"), 0.3), (at("06:00"), 0.3)])
    assert list(both(apart, "event_total")) == ["rg1-20260501T000000Z", "rg1-20260501T060000Z"]
    together = depths([(at("00:00"), 0.3), (at("05:59"), 0.3)])
    assert both(together, "event_total") == {"rg1-20260501T000000Z": (
        "2026-05-01T00:00:00Z", None, 0.6, 0.6, "2026-05-01T05:59:00Z", 0.6, 0.6)}


def test_rows_at_one_timestamp_are_one_observation() -> None:
    # 0.10 in at 00:30, then two messages (seq 1 and 2) of 0.25 in at 01:00:
    # the rule holds at the first of them, the totals are those after both.
    frame = depths([(at("00:30"), 0.1), (at("01:00"), 0.25), (at("01:00"), 0.25)])
    for mode in MODES:
        assert both(frame, mode) == {"rg1-20260501T003000Z": (
            "2026-05-01T00:30:00Z", None, 0.6, 0.6, "2026-05-01T01:00:00Z", 0.6, 0.6)}


def test_a_redelivered_row_counts_once() -> None:
    frame = depths([(at("00:30"), 0.3), (at("01:00"), 0.19)])
    twice = pd.concat([frame, frame.iloc[[1]]], ignore_index=True)
    assert [v[2] for v in both(twice, "event_total").values()] == [0.49]


def test_an_event_ends_dry_gap_hours_after_its_last_rain() -> None:
    frame = depths([(at("00:00"), 0.2), (at("01:00"), 0.0)])
    assert both(frame, "event_24h", now=at("05:59"))["rg1-20260501T000000Z"][1] is None
    assert both(frame, "event_24h", now=at("06:00"))["rg1-20260501T000000Z"][1] == (
        "2026-05-01T00:00:00Z")
    # A dry reading 6 h after the rain closes the event whatever ``now`` says,
    # as it does in the fold; and ``now`` defaults to the newest reading.
    closed = depths([(at("00:00"), 0.2), (at("06:00"), 0.0)])
    assert both(closed, "event_24h", now=at("01:00"))["rg1-20260501T000000Z"][1] == (
        "2026-05-01T00:00:00Z")
    assert both(closed, "event_24h")["rg1-20260501T000000Z"][1] == "2026-05-01T00:00:00Z"
    events = storm_events(frame, RainRules(), now=pd.Timestamp("2026-05-01T06:00Z"))
    assert events["ended_at"].notna().all()


def test_datetime_timestamps_and_several_gauges() -> None:
    a = counter(T0, one_tip_a_minute(1, 50, 60), gauge="rg-a")
    b = counter(T0 + 2 * H, one_tip_a_minute(1, 10, 60), gauge="rg-b")
    frame = pd.concat([b, a], ignore_index=True)
    frame["ts"] = pd.to_datetime(frame["ts"], unit="ms", utc=True)
    events = storm_events(frame, RainRules(), {"rg-a": 0.01, "rg-b": 0.01})
    assert list(events["event_id"]) == ["rg-a-20260501T000100Z", "rg-b-20260501T020100Z"]
    assert list(events["qualified"]) == [True, False]
    # The newest reading (02:59) is less than 6 h after either last rain.
    assert events["ended_at"].isna().all()
    assert events["started_at"].dtype == "datetime64[ms, UTC]"


def test_a_dry_gap_below_a_millisecond_is_refused() -> None:
    # The configuration refuses gaps under a minute; the backtest guards on its own too.
    with pytest.raises(ValueError, match="dry_gap_hours"):
        RainRules(dry_gap_hours=1e-7)
    with pytest.raises(ValueError, match="dry_gap_hours"):
        storm_events(depths([(at("00:00"), 0.3)]), RainRules.model_construct(dry_gap_hours=1e-7))


def test_no_rain_gives_an_empty_table() -> None:
    events = storm_events(counter(T0, [0] * 30), RainRules(), {"rg1": 0.01})
    assert tuple(events.columns) == EVENT_COLUMNS and events.empty


@pytest.mark.parametrize(("frame", "message"), [
    (pd.DataFrame({"ts": [0], "gauge": ["g"]}), "exactly one of"),
    (pd.DataFrame({"ts": [0], "gauge": ["g"], "tips_total": [1], "precip_in": [0.1]}),
     "exactly one of"),
    (pd.DataFrame({"ts": [0], "tips_total": [1]}), "lack column"),
    (pd.DataFrame({"ts": [0], "gauge": ["g"], "tips_total": [1]}), "in_per_tip lacks"),
    (pd.DataFrame({"ts": [0.5], "gauge": ["g"], "precip_in": [0.1]}), "ts must hold integers"),
    (pd.DataFrame({"ts": [0], "gauge": ["g"], "precip_in": [float("nan")]}), "precip_in"),
    (pd.DataFrame({"ts": ["2026-05-01T00:00Z"], "gauge": ["g"], "precip_in": [0.1]}),
     "ts must be datetime64 or integer"),
    (pd.DataFrame({"ts": [0], "gauge": [None], "precip_in": [0.1]}), "gauge has missing"),
])
def test_bad_input_is_refused(frame: pd.DataFrame, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        storm_events(frame, RainRules())


# ----------------------------------------------------------------------------- property









@settings(max_examples=examples(100), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
def test_backtest_finds_the_storms_of_the_streaming_fold(case: Case) -> None:
    """100 examples in CI, 12 new ones on each local run (tests/support/properties.py):
    every example is up to three gauges of bursts, drizzles, resets and wraps, checked
    in all three rain modes; the hand-computed cases above pin the numbers."""
    for mode in MODES:
        rules = {"threshold_in": case.threshold_in, "dry_gap_hours": case.dry_gap_hours}
        fast = backtest(case.frame, mode, case.in_per_tip, case.now, max_rate=case.max_rate,
                        **rules)
        slow = stream(case.frame, mode, case.in_per_tip, case.now, max_rate=case.max_rate,
                      **rules)
        assert fast == slow, mode

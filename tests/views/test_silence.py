"""Missing and odd data is never read as "all clear" (monitor/README.md, "The rules").

Each case is the input of the issue as a replay CSV, run through ``replay``
exactly as a user would, with the expected events asserted field by field,
including the ones that must *not* appear (no ``counter_reset`` on a wrap, no
second storm after a silence).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from monitor.config import Config
from monitor.contract.inputs import Reading
from monitor.contract.times import iso, parse_iso
from monitor.engine import Engine
from monitor.views.replay import replay

from ..support.silences import MIN, SITE, T0, H, config, drizzle, every_minute, silent_gauge


def run(cfg: Config, rows: list[tuple[int, str, int]], tmp_path: Path) -> list[dict[str, Any]]:
    """``(ts_ms, sensor, tips_total)`` rows through ``replay``: the final events as JSON."""
    csv = tmp_path / "readings.csv"
    lines = ["ts,site,sensor,tips_total"]
    lines += [f"{iso(t)},{SITE},{sensor},{tips}" for t, sensor, tips in rows]
    csv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = replay(cfg, csv)
    assert sum(result.rejected.values()) == 0, result.first_rejects
    return [e.to_json() for e in result.events()]


def of(events: list[dict[str, Any]], kind: str, **match: Any) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind
            and all(e.get(k) == v for k, v in match.items())]


def own(event: dict[str, Any]) -> dict[str, Any]:
    """An event without its id and revision (stable ids are tested elsewhere)."""
    return {k: v for k, v in event.items() if k not in ("id", "revision")}




# --------------------------------------------------------------------------- 1. the default




def test_the_default_rule_is_event_total_and_a_long_drizzle_qualifies(tmp_path: Path) -> None:
    events = run(config(), drizzle(), tmp_path)
    (q,) = of(events, "storm_qualified")
    # The 50th tip falls at minute 1 + 49 * 30 = 1471 (24:31); 48 of the 50 lie in
    # the trailing 24 hours, so event_24h could never have qualified it.
    assert own(q) == {
        "type": "storm_qualified", "site": SITE, "at": iso(T0 + 1471 * MIN),
        "gauge": "rg1", "event_id": "rg1-20260501T000100Z",
        "started_at": iso(T0 + MIN), "qualified_at": iso(T0 + 1471 * MIN),
        "total_in": 0.5, "max_24h_in": 0.48, "due": iso(T0 + 1471 * MIN + 24 * H),
        "uncertain_in": 0.0, "gauges": ["rg1"], "threshold_in": 0.5, "mode": "event_total",
        "clock_id": "storm-rg1-20260501T000100Z",
        # Nothing revealed: the qualification's time is known.
        "qualified_not_before": None, "due_not_before": None}


def test_event_24h_is_still_there_for_permits_that_say_so(tmp_path: Path) -> None:
    events = run(config(rain={"mode": "event_24h"}), drizzle(), tmp_path)
    assert of(events, "storm_qualified") == []
    assert of(events, "storm_started")[0]["started_at"] == iso(T0 + MIN)


# --------------------------------------------------------------------------- 2. silence




def test_rain_revealed_after_a_silence_stays_in_the_storm(tmp_path: Path) -> None:
    events = run(config(), silent_gauge(40), tmp_path)
    back = iso(T0 + 11 * H)
    assert len(of(events, "storm_started")) == 1  # not two storms of 0.30 and 0.40 in
    (q,) = of(events, "storm_qualified")
    assert own(q) == {
        "type": "storm_qualified", "site": SITE, "at": back, "gauge": "rg1",
        "event_id": "rg1-20260501T000100Z", "started_at": iso(T0 + MIN), "qualified_at": back,
        "total_in": 0.7, "max_24h_in": 0.7, "due": iso(T0 + 35 * H), "uncertain_in": 0.4,
        "gauges": ["rg1"], "threshold_in": 0.5, "mode": "event_total",
        "clock_id": "storm-rg1-20260501T000100Z",
        # The 0.40 in fell somewhere in 01:00..11:00, so the storm may
        # have qualified as early as 01:00, and the inspection been due at 01:00 + 24 h.
        "qualified_not_before": iso(T0 + 60 * MIN), "due_not_before": iso(T0 + 25 * H)}
    (end,) = of(events, "storm_ended")
    assert own(end) == {
        "type": "storm_ended", "site": SITE, "at": back, "gauge": "rg1",
        "event_id": "rg1-20260501T000100Z", "started_at": iso(T0 + MIN), "ended_at": back,
        "total_in": 0.7, "max_24h_in": 0.7, "qualified": True, "uncertain_in": 0.4}
    # The silence itself is reported too.
    (stale,) = of(events, "sensor_stale", sensor="rg1")
    assert (stale["at"], stale["last_seen"]) == (iso(T0 + 75 * MIN), iso(T0 + 60 * MIN))


def test_a_counter_that_did_not_move_means_the_silence_was_dry(tmp_path: Path) -> None:
    events = run(config(), silent_gauge(0), tmp_path)
    (end,) = of(events, "storm_ended")
    assert (end["ended_at"], end["total_in"], end["uncertain_in"]) == (
        iso(T0 + 30 * MIN), 0.3, 0.0)
    assert of(events, "storm_qualified") == []


def test_an_end_concluded_during_the_silence_is_revised() -> None:
    """The daemon's view: ticks pass during the silence and conclude the storm's end
    (provisionally); the revealing reading retracts it."""
    eng = Engine(config())
    for t, sensor, tips in silent_gauge(40)[:61]:
        eng.apply(Reading(SITE, sensor, "rain", t, tips_total=tips))
    ended = [e for e in eng.tick(T0 + 10 * H) if e.type == "storm_ended"]
    assert [(e.revision, e.retracted) for e in ended] == [(0, False)]
    out = eng.apply(Reading(SITE, "rg1", "rain", T0 + 11 * H, tips_total=70))
    out += eng.tick(T0 + 11 * H)
    assert [(e.type, e.revision, e.retracted) for e in out if e.type == "storm_ended"] == [
        ("storm_ended", 1, True)]
    assert [e.type for e in out if e.type == "storm_qualified"] == ["storm_qualified"]


# --------------------------------------------------------------------------- 3. never heard


def two_gauges(mode: str = "any", **site: Any) -> Config:
    return config([{"id": "rg1", "kind": "rain", "in_per_tip": 0.01},
                   {"id": "rg2", "kind": "rain", "in_per_tip": 0.01}],
                  rain={"gauges": mode}, **site)


def test_a_sensor_that_never_reports_is_stale_from_the_start(tmp_path: Path) -> None:
    events = run(two_gauges(), every_minute("rg1", T0, 60, lambda m: 0), tmp_path)
    (stale,) = of(events, "sensor_stale")
    assert own(stale) == {"type": "sensor_stale", "site": SITE, "at": iso(T0 + 15 * MIN),
                          "sensor": "rg2", "last_seen": None, "stale_after_minutes": 15.0}
    assert of(events, "sensor_recovered") == []


def test_monitoring_starts_at_the_later_of_active_since_and_the_first_message(
        tmp_path: Path) -> None:
    # active_since 2026-05-01 in New York is 04:00Z: after the first message (00:00Z).
    events = run(two_gauges(active_since="2026-05-01"),
                 every_minute("rg1", T0, 6 * 60, lambda m: 0), tmp_path)
    (stale,) = of(events, "sensor_stale", sensor="rg2")
    assert (stale["at"], stale["last_seen"]) == (iso(T0 + 4 * H + 15 * MIN), None)


def test_a_late_first_message_ends_the_silence(tmp_path: Path) -> None:
    rows = every_minute("rg1", T0, 120, lambda m: 0) + every_minute(
        "rg2", T0 + H, 60, lambda m: 0)
    events = run(two_gauges(), sorted(rows), tmp_path)
    (stale,) = of(events, "sensor_stale", sensor="rg2")
    (back,) = of(events, "sensor_recovered", sensor="rg2")
    assert (stale["at"], stale["last_seen"]) == (iso(T0 + 15 * MIN), None)
    assert own(back) == {"type": "sensor_recovered", "site": SITE, "at": iso(T0 + H),
                         "sensor": "rg2", "last_seen": iso(T0 + H),
                         "stale_since": iso(T0 + 15 * MIN)}


# --------------------------------------------------------------------------- 4. dead gauge


def rg1_storm() -> list[tuple[int, str, int]]:
    """rg1 dry for an hour, then 80 tips (0.80 in) one a minute, then dry for 7 hours."""
    return every_minute("rg1", T0, 9 * 60 + 20, lambda m: max(0, min(80, m - 60)))


@pytest.mark.parametrize("mode", ["all", "mean"])
def test_a_dead_gauge_does_not_suppress_qualification(mode: str, tmp_path: Path) -> None:
    events = run(two_gauges(mode), rg1_storm(), tmp_path)
    (q,) = of(events, "storm_qualified")
    # rg2 was never heard from: stale since 00:15, so rg1 decides alone at its 50th tip.
    assert (q["qualified_at"], q["total_in"], q["gauges"], q["gauge"]) == (
        iso(T0 + 110 * MIN), 0.5, ["rg1"], "rg1" if mode == "all" else "mean")


def test_a_gauge_that_died_mid_season_is_left_out_while_stale(tmp_path: Path) -> None:
    # rg2 reports (dry) for the first 20 minutes, then dies: stale from 00:34.
    rows = rg1_storm() + every_minute("rg2", T0, 20, lambda m: 0)
    events = run(two_gauges("all"), sorted(rows), tmp_path)
    (q,) = of(events, "storm_qualified")
    assert (q["qualified_at"], q["gauges"]) == (iso(T0 + 110 * MIN), ["rg1"])


def test_all_still_waits_for_a_live_gauge(tmp_path: Path) -> None:
    # rg2 reports all along and sees only 0.30 in: "all" does not qualify.
    rows = rg1_storm() + every_minute("rg2", T0, 9 * 60 + 20, lambda m: max(0, min(30, m - 60)))
    events = run(two_gauges("all"), sorted(rows), tmp_path)
    assert of(events, "storm_qualified") == []
    assert of(events, "sensor_stale") == []


def test_the_mean_of_two_live_gauges_is_unchanged(tmp_path: Path) -> None:
    rows = rg1_storm() + every_minute("rg2", T0, 9 * 60 + 20, lambda m: max(0, min(30, m - 60)))
    events = run(two_gauges("mean"), sorted(rows), tmp_path)
    (q,) = of(events, "storm_qualified")
    # (0.80 + 0.30) / 2 = 0.55; 0.50 is reached when rg1 has 70 and rg2 30 tips.
    assert (q["qualified_at"], q["total_in"], q["gauges"]) == (
        iso(T0 + 130 * MIN), 0.5, ["rg1", "rg2"])


# --------------------------------------------------------------------------- 5. wraps


def test_a_16_bit_counter_wrap_is_rain_not_a_reset(tmp_path: Path) -> None:
    values = [65_530 + i for i in range(6)] + list(range(45))  # ..65535, 0..44
    rows = [(T0 + i * MIN, "rg1", v) for i, v in enumerate(values)]
    rows += every_minute("rg1", T0 + len(values) * MIN, 7 * 60, lambda m: 44)
    events = run(config(), rows, tmp_path)
    assert of(events, "counter_reset") == []
    (end,) = of(events, "storm_ended")
    assert end["total_in"] == 0.5  # 5 + 1 + 44 tips
    (q,) = of(events, "storm_qualified")
    assert q["qualified_at"] == iso(T0 + 50 * MIN)  # the reading of 44


def test_counter_bits_names_the_width_of_the_register(tmp_path: Path) -> None:
    gauges = [{"id": "rg1", "kind": "rain", "in_per_tip": 0.01, "counter_bits": 12}]
    values = [4090 + i for i in range(6)] + list(range(45))  # 4095 then 0
    rows = [(T0 + i * MIN, "rg1", v) for i, v in enumerate(values)]
    events = run(config(gauges), rows, tmp_path)
    assert of(events, "counter_reset") == []
    assert of(events, "storm_qualified")[0]["total_in"] == 0.5
    # The same drop is a reset at the default widths (16 and 32 bits).
    events = run(config(), rows, tmp_path)
    (reset,) = of(events, "counter_reset")
    assert (reset["tips_before"], reset["tips_after"]) == (4095, 0)


def test_any_other_decrease_is_still_a_reset(tmp_path: Path) -> None:
    rows = [(T0, "rg1", 30_000), (T0 + MIN, "rg1", 30_001), (T0 + 2 * MIN, "rg1", 5)]
    events = run(config(), rows, tmp_path)
    (reset,) = of(events, "counter_reset")
    assert own(reset) == {"type": "counter_reset", "site": SITE, "at": iso(T0 + 2 * MIN),
                          "sensor": "rg1", "tips_before": 30_001, "tips_after": 5}


# --------------------------------------------------------------------------- 10. calendar


def test_routine_deadlines_are_calendar_days_in_the_site_time_zone() -> None:
    # Daylight saving time begins in New York on Sunday 2026-03-08.
    cfg = config(active_since="2026-03-05")
    eng = Engine(cfg)
    eng.apply(Reading(SITE, "rg1", "rain", parse_iso("2026-03-05T06:00:00Z"), tips_total=0))
    eng.tick(parse_iso("2026-03-05T06:00:00Z"))
    (routine,) = [c for c in eng.clocks(SITE) if c.clock == "routine"]
    # Started Thursday 00:00 EST (05:00Z), due at the end of the next Thursday, 23:59:59.999
    # EDT (03-13 03:59:59.999Z), not an hour later as 8 x 24 hours would put it.
    assert (iso(routine.start or 0), iso(routine.due or 0)) == (
        "2026-03-05T05:00:00Z", "2026-03-13T03:59:59.999Z")

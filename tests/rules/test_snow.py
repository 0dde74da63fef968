"""The snow family (``monitor/rules/snow/``): 3.25 in of snow within 24 hours is one
``snow_event`` (EPA CGP 2022 Part 4.2), in the fold and through ``replay``."""

from __future__ import annotations

import io

from monitor.config.file import parse_config
from monitor.contract.events import Fact
from monitor.contract.inputs import Reading
from monitor.contract.snow_events import SnowEvent
from monitor.contract.times import MS_PER_HOUR, iso, parse_iso
from monitor.rules.snow.snow import SnowFold
from monitor.views.replay import replay

T0 = parse_iso("2026-01-10T00:00:00Z")


def fold(falls: list[tuple[float, float]]) -> list[Fact]:
    """The facts of ``SnowFold`` over (hours after T0, inches) readings, in order."""
    rule = SnowFold("site-a", "sn1")
    state, out = rule.initial(), list[Fact]()
    for seq, (hours, inches) in enumerate(falls):
        ts = T0 + round(hours * MS_PER_HOUR)
        rule.step(state, Reading("site-a", "sn1", "snow", ts, seq=seq, snow_in=inches), out)
    # A dump and load in between changes nothing (snapshots restore the state).
    assert rule.dump(rule.load(rule.dump(state))) == rule.dump(state)
    return out


def test_exactly_the_threshold_within_24_hours_is_one_event() -> None:
    out = fold([(0, 1.0), (5, 1.0), (23, 1.25), (23.5, 2.0)])
    assert len(out) == 1
    body = out[0].body
    assert isinstance(body, SnowEvent)
    assert (body.sensor, body.started_at, body.qualified_at) == (
        "sn1", iso(T0), iso(T0 + 23 * MS_PER_HOUR))
    assert (body.total_in, body.threshold_in, body.window_hours) == (3.25, 3.25, 24.0)


def test_snow_spread_over_more_than_24_hours_is_no_event() -> None:
    # 3.25 in, but the first inch falls out of the window before the last quarter.
    assert fold([(0, 1.0), (20, 2.0), (25, 0.25)]) == []
    assert fold([(0, 3.24), (0.5, 0.0)]) == []


def test_two_snow_events_a_day_apart_are_two_events() -> None:
    out = fold([(0, 2.0), (1, 1.5), (3, 4.0), (30, 3.5), (31, 0.1)])
    assert [f.body.qualified_at for f in out if isinstance(f.body, SnowEvent)] == [
        iso(T0 + MS_PER_HOUR), iso(T0 + 30 * MS_PER_HOUR)]
    assert len({f.id for f in out}) == 2


def test_replay_of_a_csv_with_snow_in_gives_the_event() -> None:
    config = parse_config({"state_dir": "/tmp/stormwatch-test", "sites": [{
        "id": "site-a", "timezone": "UTC", "sensors": [
            {"id": "rg1", "kind": "rain"}, {"id": "sn1", "kind": "snow"}]}]}, env={})
    rows = ["ts,site,sensor,tips_total,snow_in,seq"]
    for h in range(12):
        rows.append(f"{iso(T0 + h * MS_PER_HOUR)},site-a,sn1,,0.5,{h}")
    played = replay(config, io.StringIO("\n".join(rows) + "\n"))
    assert played.rejected == {}
    snow = [e for e in played.events() if e.type == "snow_event"]
    assert [e.to_json()["qualified_at"] for e in snow] == [iso(T0 + 6 * MS_PER_HOUR)]
    assert snow[0].to_json()["total_in"] == 3.5

"""The exporter's pure parts: line protocol, points of journal rows, events and engine state.

No server here: what InfluxDB does with these lines is in test_export_session.py.
Expected values are worked out by hand from monitor/README.md, "The rules" (trap geometry, the
wa-173-201a limit, inches per tip), not read back from the code under test.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from monitor.config import Config
from monitor.contract.events import Event, Fact, StormQualified, StormStarted
from monitor.contract.inputs import Inspection, Reading
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE, compact, iso
from monitor.engine import Engine
from monitor.host.rows import journal_in
from monitor.sinks.influx.derive import Replica, event_points, minute_points, raw_points
from monitor.sinks.influx.lineprotocol import Int, Point, format_value, series_key
from monitor.sinks.influx.writers import Rejected, Unavailable, classify
from monitor.store import JournalRow, Store

from ..support.util import SITE, counter_series, event, site_config, tips

T0 = 1_777_636_800_000  # 2026-05-01T12:00:00Z


# --------------------------------------------------------------------------- line protocol


def test_escaping_follows_the_line_protocol_reference() -> None:
    p = Point.make("my meas,x", {"b tag": "v,1=2 x", "a": "plain", "empty": ""},
                   {"f=1": 'say "hi" \\ now\nplease', "n": 2.5}, 1000)
    assert p.encode() == (r'my\ meas\,x,a=plain,b\ tag=v\,1\=2\ x '
                          r'f\=1="say \"hi\" \\ now please",n=2.5 1000')
    assert p.measurement == "my meas,x"


def test_numbers_keep_one_type_per_field() -> None:
    # A whole NTU value must stay a float, or the field would flip to integer.
    assert format_value(5) == "5.0"
    assert format_value(5.0) == "5.0"
    assert format_value(Int(5)) == "5i"
    assert format_value(True) == "true"
    assert format_value(1e-7) == "1e-07"
    assert format_value(float("nan")) is None
    assert format_value(float("inf")) is None
    assert Point.make("m", {}, {"x": float("nan")}, 1).encode() is None
    assert Point.make("m", {}, {"x": None, "y": 1.0}, 1).encode() == "m y=1.0 1"


def test_series_key_sorts_tags_so_one_series_has_one_spelling() -> None:
    assert series_key("m", {"z": "1", "a": "2"}) == series_key("m", {"a": "2", "z": "1"}) \
        == "m,a=2,z=1"


# --------------------------------------------------------------------------- raw rows


def row(seq: int, item: Reading | Inspection, received_ms: int | None = None) -> JournalRow:
    j = journal_in(item, topic=None, received_ms=received_ms)
    return JournalRow(seq, j.kind, j.body, j.received_ms)


def test_readings_keep_their_payload_fields_and_types() -> None:
    r = Reading(SITE, "rg1", "rain", T0, tips_total=12, battery_v=3.9, seq=7)
    (p,) = raw_points(row(1, r, received_ms=T0 + 1500))
    assert p.encode() == (f"rain,sensor=rg1,site={SITE} tips_total=12i,seq=7i,battery_v=3.9,"
                          f"delay_s=1.5 {T0}")
    s = Reading(SITE, "tb-up", "status", T0, battery_v=3.7, rssi_dbm=-70.0, buffered=3)
    (q,) = raw_points(row(2, s))
    assert q.series == f"sensor_status,sensor=tb-up,site={SITE}"
    assert q.fields == {"battery_v": 3.7, "buffered": 3, "rssi_dbm": -70.0}
    assert isinstance(q.fields["buffered"], Int)


def test_inspections_are_points_and_ticks_are_not() -> None:
    i = Inspection(SITE, "J. Rivera, CPESC", T0, "storm", notes="silt fence\nintact")
    (p,) = raw_points(row(1, i))
    assert p.encode() == (rf'inspection,inspector=J.\ Rivera\,\ CPESC,kind=storm,site={SITE} '
                          f'recorded=true,notes="silt fence intact" {T0}')
    assert raw_points(JournalRow(2, "tick", {"now_ms": T0}, T0)) == []


# --------------------------------------------------------------------------- events


def test_event_revisions_replace_their_point_and_retire_a_moved_one() -> None:
    # A site without inspection clocks: no clock_id, so the subject is the gauge alone.
    storm = StormQualified(gauge="rg1", event_id="rg1-1", started_at=iso(T0 - 3_600_000),
                           qualified_at=iso(T0), total_in=0.5, max_24h_in=0.5, due=None,
                           uncertain_in=0.0, gauges=("rg1",),
                           threshold_in=0.5, mode="event_24h", informational=True)
    first = Event(Fact(SITE, T0, "abc", storm))
    (p0,) = event_points(first)
    assert p0.series == f"event,gauge=rg1,site={SITE},type=storm_qualified"
    assert p0.fields["current"] is True and p0.fields["revision"] == 0
    assert p0.fields["id"] == "abc"
    assert p0.fields["title"] == "storm qualified (rg1)"
    # A late reading made the storm qualify 10 minutes earlier: revision 1 at a new time.
    moved = Event(Fact(SITE, T0 - 10 * MS_PER_MINUTE, "abc", storm), revision=1)
    p1, old = event_points(moved, [first, moved])
    assert p1.ts_ms == T0 - 10 * MS_PER_MINUTE and p1.fields["current"] is True
    assert old.identity == p0.identity
    assert old.fields == {"current": False, "superseded_by": 1}
    retracted = Event(moved.fact, revision=2, retracted=True)
    (p2, old2) = event_points(retracted, [first, moved, retracted])
    assert p2.fields["current"] is False and p2.fields["retracted"] is True
    assert old2.ts_ms == T0


# --------------------------------------------------------------------------- write errors


@pytest.mark.parametrize(("status", "body", "kind"), [
    (204, "", None),
    (400, '{"error":"partial write: field type conflict: input field \\"x\\" dropped=1"}',
     Rejected),
    (400, '{"error":"unable to parse \'m x\': invalid field format"}', Rejected),
    (400, '{"code":"invalid","message":"failed to parse line protocol: bad"}', Rejected),
    (422, '{"code":"unprocessable entity","message":"points beyond retention policy"}',
     Rejected),
    (413, '{"error":"Request Entity Too Large"}', Rejected),
    # A 400 that blames the request, not the points: never dead-letter on it.
    (400, '{"error":"invalid precision \\"xs\\""}', Unavailable),
    (401, '{"code":"unauthorized","message":"unauthorized access"}', Unavailable),
    (404, '{"error":"database not found: \\"x\\""}', Unavailable),
    (500, "engine: cache maximum memory size exceeded", Unavailable),
    (503, "", Unavailable),
])
def test_write_answers_are_told_apart(status: int, body: str, kind: type | None) -> None:
    error = classify(status, body)
    assert (None if error is None else type(error)) is kind


# --------------------------------------------------------------------------- derived points


def replay(config: Config, items: list[Reading | Inspection]) -> tuple[Replica, list[Point]]:
    replica = Replica(config, Engine(config))
    points: list[Point] = []
    for seq, item in enumerate(items, 1):
        points += replica.apply(row(seq, item))
    return replica, points


def final(points: list[Point], measurement: str) -> dict[int, dict[str, Any]]:
    """What InfluxDB holds after the points are written in order: the last write wins."""
    out: dict[int, dict[str, Any]] = {}
    for p in points:
        if p.measurement == measurement:
            out.setdefault(p.ts_ms, {}).update(p.fields)
    return out


def test_storm_points_follow_the_event_tip_by_tip() -> None:
    config = site_config()
    # One tip (0.01 in) a minute in minutes 10-69, then 8 dry hours.
    readings = counter_series(T0, 10 * 60, {m: 1 for m in range(10, 70)})
    _, points = replay(config, list(readings))
    storm = final(points, "storm")
    assert len(storm) == len(readings)
    at = {m: storm[T0 + m * MS_PER_MINUTE] for m in range(600)}
    assert at[5] == {"depth_in": 0.0, "total_in": 0.0, "event_24h_in": 0.0, "max_24h_in": 0.0,
                     "in_event": False, "qualified": False, "event_id": "",
                     "threshold_in": 0.5}
    event_id = f"rg1-{compact(T0 + 10 * MS_PER_MINUTE)}"
    assert at[10]["depth_in"] == 0.01 and at[10]["total_in"] == 0.01
    assert at[10]["event_id"] == event_id and at[10]["in_event"] is True
    # The 49th tip falls in minute 58, the 50th (0.50 in) in minute 59: it qualifies there.
    assert at[58]["total_in"] == 0.49 and at[58]["qualified"] is False
    assert at[59]["total_in"] == 0.5 and at[59]["qualified"] is True
    assert at[69]["total_in"] == 0.6 and at[69]["event_24h_in"] == 0.6
    # Dry minutes keep the event's totals (depth 0) until 6 dry hours close it.
    assert at[70]["depth_in"] == 0.0 and at[70]["total_in"] == 0.6
    assert at[69 + 359]["in_event"] is True
    assert at[69 + 360]["in_event"] is False and at[69 + 360]["total_in"] == 0.0
    assert sum(s["depth_in"] for s in storm.values()) == pytest.approx(0.6)


def test_trap_points_are_the_smoothed_fill_of_design_volume() -> None:
    config = site_config()
    depths = [20.0, 20.0, 20.0, 20.0, 20.0, 99.0, 20.0]  # one bad echo
    items = [Reading(SITE, "trap1-depth", "sediment", T0 + i * 600_000, depth_in=d)
             for i, d in enumerate(depths)]
    _, points = replay(config, list(items))
    trap = final(points, "trap")

    # Trapezoidal trap, bottom 20 x 10 ft, side slope 2:1, design depth 4 ft:
    # V(h) = L W h + (L + W) z h^2 + 4/3 z^2 h^3.
    def volume(h: float) -> float:
        return 20 * 10 * h + 30 * 2 * h**2 + 4 / 3 * 4 * h**3

    expected = volume(20 / 12) / volume(4.0)  # 524.69 / 2101.33 = 0.2497
    for i in range(len(depths)):
        p = trap[T0 + i * 600_000]
        # The median of the last five readings ignores the single 99 in echo.
        assert p["depth_in"] == 20.0
        assert (p["warn_fraction"], p["cleanout_fraction"]) == (0.4, 0.5)
        if i < 4:
            # Fewer than median_of readings: no fill yet, as no trap event.
            assert math.isnan(p["fill_fraction"]) and p["state"] == "unknown"
            continue
        assert p["fill_fraction"] == pytest.approx(expected, abs=1e-6)
        # 99 in is above 1.5 x 48 in, a sensor fault: that point holds the
        # last valid fill and says so.
        assert (p["state"], p.get("fault")) == (
            ("fault", "above_max_fill") if i == 5 else ("ok", None))


def test_contrast_points_compare_each_downstream_reading_with_its_background() -> None:
    config = site_config()
    items: list[Reading | Inspection] = []
    for m in range(0, 40, 2):
        items.append(Reading(SITE, "tb-up", "turbidity", T0 + m * MS_PER_MINUTE, ntu=10.0))
        items.append(Reading(SITE, "tb-down", "turbidity", T0 + m * MS_PER_MINUTE + 30_000,
                             ntu=40.0 if 10 <= m < 30 else 11.0))
    _, points = replay(config, items)
    contrast = final(points, "contrast")
    assert len(contrast) == 20  # one per downstream reading
    quiet = contrast[T0 + 30_000]
    # wa-173-201a: background 10 NTU <= 50, so the limit is 5 NTU over it.
    assert quiet == {"downstream_ntu": 11.0, "upstream_ntu": 10.0, "delta_ntu": 1.0,
                     "limit_ntu": 5.0, "allowed_ntu": 15.0, "exceeding": False,
                     "background": True, "state": "ok", "basis": "background"}
    start = contrast[T0 + 10 * MS_PER_MINUTE + 30_000]
    assert (start["delta_ntu"], start["exceeding"], start["state"]) == (30.0, True, "pending")
    # Sustained 10 minutes (sustain_minutes): exceeded from minute 20 on.
    assert contrast[T0 + 18 * MS_PER_MINUTE + 30_000]["state"] == "pending"
    assert contrast[T0 + 20 * MS_PER_MINUTE + 30_000]["state"] == "exceeded"
    assert contrast[T0 + 30 * MS_PER_MINUTE + 30_000]["state"] == "clearing"


def _site_mix(seed: int) -> list[Reading | Inspection]:
    rng = random.Random(seed)
    items: list[Reading | Inspection] = []
    total = 0
    for m in range(0, 240):
        t = T0 + m * MS_PER_MINUTE
        total += 1 if 30 <= m < 100 and rng.random() < 0.8 else 0
        items.append(tips("rg1", t, total))
        if m % 3 == 0:
            items.append(Reading(SITE, "tb-up", "turbidity", t + 5_000,
                                 ntu=round(rng.uniform(8, 12), 1)))
            items.append(Reading(SITE, "tb-down", "turbidity", t + 50_000,
                                 ntu=round(rng.uniform(8, 30), 1)))
        if m % 15 == 0:
            items.append(Reading(SITE, "trap1-depth", "sediment", t,
                                 depth_in=round(rng.uniform(10, 30), 1)))
    return items


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_late_readings_rewrite_the_points_they_change(seed: int) -> None:
    """Arrival order does not change what InfluxDB ends up holding (event time, monitor/README.md,
    "Architecture").

    The readings arrive shuffled within 30 minutes (a node flushing its buffer,
    two probes on different links). Every late reading re-derives the points
    after it; the last write of every point must equal the in-order run's.
    Contrast points of the last ``max_skew`` minutes are provisional in both
    runs (no reading has settled them yet) and may differ, so they are left out.
    """
    config = site_config()
    ordered = _site_mix(seed)
    rng = random.Random(seed)
    shuffled = sorted(ordered, key=lambda r: r.ts_ms + rng.uniform(0, 30 * MS_PER_MINUTE))
    assert shuffled != ordered
    _, a = replay(config, ordered)
    _, b = replay(config, shuffled)
    for measurement in ("storm", "trap"):
        assert final(a, measurement) == final(b, measurement), measurement
    settled = max(r.ts_ms for r in ordered) - 10 * MS_PER_MINUTE
    ca = {t: f for t, f in final(a, "contrast").items() if t < settled}
    cb = {t: f for t, f in final(b, "contrast").items() if t < settled}
    assert ca == cb and len(ca) > 50


def test_mean_gauge_sums_readings_that_share_a_timestamp() -> None:
    config = site_config(sensors=[{"id": "rg1", "kind": "rain"}, {"id": "rg2", "kind": "rain"}],
                         turbidity_pairs=[], traps=[], rain={"gauges": "mean"})
    items: list[Reading | Inspection] = []
    for m in range(30):
        t = T0 + m * MS_PER_MINUTE
        # rg2 arrives first at each instant, so rg1 is a late insert every time.
        items += [tips("rg2", t, 2 * m), tips("rg1", t, m)]
    _, points = replay(config, items)
    by_gauge: dict[str, dict[int, dict[str, Any]]] = {}
    for p in points:
        if p.measurement == "storm":
            gauge = p.series.split("gauge=")[1].split(",")[0]
            by_gauge.setdefault(gauge, {}).setdefault(p.ts_ms, {}).update(p.fields)
    assert {g: len(v) for g, v in by_gauge.items()} == {"rg1": 30, "rg2": 30, "mean": 30}
    # Minute 5: rg1 tipped once (0.01 in), rg2 twice (0.02 in): the mean is 0.015 in.
    assert by_gauge["mean"][T0 + 5 * MS_PER_MINUTE]["depth_in"] == 0.015
    assert by_gauge["mean"][T0 + 29 * MS_PER_MINUTE]["total_in"] == pytest.approx(29 * 0.015)
    assert by_gauge["rg2"][T0 + 5 * MS_PER_MINUTE]["depth_in"] == 0.02


def test_minute_points_describe_clocks_sensors_and_the_site() -> None:
    config = site_config(sensors=[{"id": "rg1", "kind": "rain", "stale_after_minutes": 15},
                                  {"id": "tb-up", "kind": "turbidity"},
                                  {"id": "tb-down", "kind": "turbidity"},
                                  {"id": "trap1-depth", "kind": "sediment"}])
    readings = counter_series(T0, 120, {m: 1 for m in range(10, 70)})
    replica, _ = replay(config, list(readings))
    now = T0 + 119 * MS_PER_MINUTE + 20_000
    points = minute_points(replica.engine, config, now)
    assert {p.ts_ms for p in points} == {T0 + 119 * MS_PER_MINUTE}
    clocks = [p for p in points if p.measurement == "clock"]
    storm = next(p for p in clocks if ",clock=storm," in p.series)
    # Qualified at minute 59; due 24 h later.
    assert storm.fields["due"] == iso(T0 + 59 * MS_PER_MINUTE + 24 * MS_PER_HOUR)
    assert storm.fields["hours_left"] == pytest.approx(
        (59 * MS_PER_MINUTE + 24 * MS_PER_HOUR - 119 * MS_PER_MINUTE - 20_000) / MS_PER_HOUR,
        abs=0.01)
    (site,) = [p for p in points if p.measurement == "site"]
    assert site.fields["open_storm_clocks"] == 1
    # Three sensors never reported: stale.
    assert site.fields["stale_sensors"] == 3
    health = {p.series.split("sensor=")[1].split(",")[0]: p.fields
              for p in points if p.measurement == "health"}
    assert health["rg1"]["stale"] is False and health["tb-up"]["stale"] is True


def test_clock_points_of_a_site_with_permits_carry_the_permit() -> None:
    """Two permits, two storm clocks of one storm, told apart by their ``permit`` tag
    (config/README.md, "Permits")."""
    config = site_config(sensors=[{"id": "rg1", "kind": "rain", "stale_after_minutes": 15}],
                         turbidity_pairs=[], traps=[],
                         permits=["village-branch-134",
                                  {"profile": "epa-cgp-2022", "frequency": "biweekly_storm"}])
    readings = counter_series(T0, 120, {m: 1 for m in range(10, 70)})
    replica, _ = replay(config, list(readings))
    points = minute_points(replica.engine, config, T0 + 119 * MS_PER_MINUTE)
    storms = sorted(p.series for p in points
                    if p.measurement == "clock" and ",clock=storm," in p.series)
    assert len(storms) == 2
    assert "permit=epa-cgp-2022" in storms[0] and "permit=village-branch-134" in storms[1]


def test_a_clock_just_past_due_is_overdue_in_the_export_as_in_the_alert() -> None:
    """Ten seconds past due the engine has raised ``inspection_overdue`` (at due) and
    ``status`` says overdue; ``hours_left`` rounds to -0.0 there, which must not make the
    export say "not overdue" (its clock point, and the site's count of overdue clocks)."""
    config = site_config()
    readings = counter_series(T0, 120, {m: 1 for m in range(10, 70)})
    replica, _ = replay(config, list(readings))
    due = T0 + 59 * MS_PER_MINUTE + 24 * MS_PER_HOUR  # qualified at minute 59
    # A second before due: not yet (an inspection at due still meets the clock).
    (site,) = [p for p in minute_points(replica.engine, config, due - 1000)
               if p.measurement == "site"]
    assert site.fields["overdue_clocks"] == Int(0)
    replica.engine.tick(due + 10_000)
    (alert,) = [e for e in replica.engine.current_events() if e.type == "inspection_overdue"]
    assert alert.at_ms == due
    points = minute_points(replica.engine, config, due + 10_000)
    storm = next(p for p in points if p.measurement == "clock" and ",clock=storm," in p.series)
    assert (storm.fields["hours_left"], storm.fields["overdue"]) == (-0.0, True)
    (site,) = [p for p in points if p.measurement == "site"]
    assert site.fields["overdue_clocks"] == Int(1)


# --------------------------------------------------------------------------- store additions


def test_store_methods_the_exporter_reads_with(tmp_path: Any) -> None:
    from monitor.store import JournalIn

    with Store(tmp_path / "s.db") as store:
        assert store.journal.backlog(0) == (0, None)
        store.journal.commit([JournalIn("reading", SITE, "rg1", T0 + i, {"ts_ms": T0 + i, "i": i},
                                      None, T0 + i + 7) for i in range(5)])
        assert store.journal.backlog(2) == (3, T0 + 2 + 7)
        body = StormStarted(gauge="rg1", event_id="rg1-1", started_at=iso(T0))
        ev = Event(Fact(SITE, T0, "e1", body))
        store.events.record([ev, Event(Fact(SITE, T0 + 1000, "e1", body), revision=1)], 5,
                            recorded_ms=T0)
        store.events.record([Event(Fact(SITE, T0, "e2", body))], 5, recorded_ms=T0)
        got = store.events.after(0)
        assert [(r.seq, r.event.id, r.event.revision) for r in got] == [
            (1, "e1", 0), (2, "e1", 1), (3, "e2", 0)]
        assert store.events.after(2) == got[2:]
        assert store.events.max_seq() == 3 and store.events.count_after(1) == 2
        assert [e.revision for e in store.events.revisions("e1")] == [0, 1]
        store.state.set_cursors({"a": 4, "b": 2}, {"x.y": "z"})
        state = store.state
        assert (state.cursor("a"), state.cursor("b"), state.meta_get("x.y")) == (4, 2, "z")
        with pytest.raises(ValueError):
            store.state.set_cursors({"a": 5}, {"applied_seq": 1})
        assert store.state.cursor("a") == 4  # refused before anything was written


def test_event_points_carry_the_fields_dashboards_filter_on() -> None:
    storm = event_points(event("storm_qualified", "q", T0, uncertain_in=0.4))[0]
    assert storm.fields["uncertain_in"] == 0.4
    contrast = event_points(event("turbidity_contrast", "c", T0, basis="absolute",
                                  upstream_ntu=None, delta_ntu=None, upstream_at=None,
                                  downstream_ntu=800.0, limit_ntu=250.0))[0]
    assert contrast.fields["basis"] == "absolute"
    demand = event_points(event("trap_cleanout_required", "t", T0, repeat=3))[0]
    assert demand.fields["repeat"] == Int(3) and "repeat=3i" in (demand.encode() or "")
    fill = event_points(event("trap_fill", "f", T0))[0]
    assert not {"uncertain_in", "basis", "repeat"} & set(fill.fields)


def test_unmonitored_turbidity_points_carry_the_pair_and_the_reason() -> None:
    # A dashboard lists the times § 134-8C could not be checked, and why.
    for kind in ("turbidity_unmonitored", "turbidity_monitored"):
        (point,) = event_points(event(kind, "u", T0, reason="downstream_stale"))
        assert point.fields["reason"] == "downstream_stale"
        assert f"type={kind}" in point.series and "pair=outfall-1" in point.series


def test_weather_event_points_carry_their_depths() -> None:
    forecast = event_points(event("storm_forecast", "f", T0))[0]
    assert forecast.fields["forecast_in"] == 0.79 and "type=storm_forecast" in forecast.series
    disagree = event_points(event("gauge_disagrees", "g", T0))[0]
    assert (disagree.fields["gauge_in"], disagree.fields["reference_in"]) == (0.08, 0.79)
    assert "gauge=rg1" in disagree.series

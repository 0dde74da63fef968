"""Gauges that report only when the bucket tips (monitor/README.md, "The rules").

An event logger writes a row only when its bucket tips. Read with the
``interval`` rule, every dry spell longer than ``stale_after_minutes`` is a
silence, the rain after it has unknown timing, the first storm never ends and
each dry spell is a ``sensor_stale``/``sensor_recovered`` pair: on ten months
of five real loggers, 5 of 64 storms and ~7 900 health events. With
``reporting: on_tip`` a silence is dry weather, and liveness comes from
``heartbeat_minutes``; without them the gauge's health is ``unknown``.

Every expectation is worked by hand from the rows, field by field, with the
events that must *not* appear.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from monitor.config import Config
from monitor.config.file import ConfigError, parse_config
from monitor.config.plausible import warnings
from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_HOUR, iso
from monitor.engine import Engine, site_status
from monitor.host.engine import EngineHost
from monitor.host.rows import journal_in
from monitor.sinks.influx.derive import minute_points
from monitor.store.opening import open_store
from monitor.views.replay import replay
from monitor.views.status import build_status, format_status

from ..support.ontip import DAY, MIN, SITE, T0, config, gauge, two_storms

H = MS_PER_HOUR
HEALTH = ("sensor_stale", "sensor_recovered")






def of(events: list[dict[str, Any]], kind: str, **match: Any) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind
            and all(e.get(k) == v for k, v in match.items())]


def own(event: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in event.items() if k not in ("id", "revision")}


def run(cfg: Config, rows: list[tuple[int, int]], tmp_path: Path) -> list[dict[str, Any]]:
    """``(ts_ms, tips_total)`` rows of rg1 through ``replay``: the final events."""
    csv = tmp_path / "logger.csv"
    csv.write_text("ts,site,sensor,tips_total\n" + "".join(
        f"{iso(t)},{SITE},rg1,{tips}\n" for t, tips in rows), encoding="utf-8")
    result = replay(cfg, csv)
    assert sum(result.rejected.values()) == 0, result.first_rejects
    return [e.to_json() for e in result.events()]




def test_an_on_tip_gauge_finds_each_storm_after_a_dry_spell(tmp_path: Path) -> None:
    events = run(config(gauge(reporting="on_tip")), two_storms(), tmp_path)
    # Storm 1: the first counter is the baseline (no rain); tips at 00:02 .. 01:58 are
    # 59 x 0.01 in, the 50th of them (0.50 in) at 00:02 + 49 x 2 min = 01:40.
    # Storm 2: its first row carries the tip since the last one (61 - 60) at its own
    # time, 3 days later; 0.50 in at its 50th row (+98 min), 0.60 in by +118 min.
    s1, s2 = iso(T0 + 2 * MIN), iso(T0 + 3 * DAY)
    q1, q2 = iso(T0 + 100 * MIN), iso(T0 + 3 * DAY + 98 * MIN)
    assert [own(e) for e in of(events, "storm_qualified")] == [
        {"type": "storm_qualified", "site": SITE, "at": q1, "gauge": "rg1",
         "event_id": "rg1-20260501T000200Z", "started_at": s1, "qualified_at": q1,
         "total_in": 0.5, "max_24h_in": 0.5, "due": iso(T0 + 100 * MIN + 24 * H),
         "uncertain_in": 0.0, "gauges": ["rg1"], "threshold_in": 0.5, "mode": "event_total",
         "clock_id": "storm-rg1-20260501T000200Z",
         "qualified_not_before": None, "due_not_before": None},
        {"type": "storm_qualified", "site": SITE, "at": q2, "gauge": "rg1",
         "event_id": "rg1-20260504T000000Z", "started_at": s2, "qualified_at": q2,
         "total_in": 0.5, "max_24h_in": 0.5, "due": iso(T0 + 3 * DAY + 98 * MIN + 24 * H),
         "uncertain_in": 0.0, "gauges": ["rg1"], "threshold_in": 0.5, "mode": "event_total",
         "clock_id": "storm-rg1-20260504T000000Z",
         "qualified_not_before": None, "due_not_before": None}]
    # The first storm ends at its last tip: three dry days are dry weather. (The
    # second is still open when the record ends: its six dry hours have not passed.)
    assert [own(e) for e in of(events, "storm_ended")] == [
        {"type": "storm_ended", "site": SITE, "at": iso(T0 + 118 * MIN), "gauge": "rg1",
         "event_id": "rg1-20260501T000200Z", "started_at": s1,
         "ended_at": iso(T0 + 118 * MIN), "total_in": 0.59, "max_24h_in": 0.59,
         "qualified": True, "uncertain_in": 0.0}]
    assert [e["started_at"] for e in of(events, "storm_started")] == [s1, s2]
    # No silence: three dry days are no news of the gauge's health (it has no
    # heartbeats here: ``unknown``, see below), and certainly no stale flapping.
    assert [e for e in events if e["type"] in HEALTH] == []


def test_the_same_rows_read_as_interval_are_one_storm_of_unknown_timing(tmp_path: Path) -> None:
    """The default is unchanged (``interval``): the symptom of the issue, kept for gauges
    that do publish every interval."""
    events = run(config(gauge()), two_storms(), tmp_path)
    (started,) = of(events, "storm_started")  # the second storm is swallowed
    (q,) = of(events, "storm_qualified")
    assert (q["qualified_at"], q["uncertain_in"]) == (iso(T0 + 100 * MIN), 0.0)
    assert of(events, "storm_ended") == []  # the first storm never ends
    # Every pause between tips longer than 15 minutes is a silence: here one.
    assert len(of(events, "sensor_stale")) == 1 and len(of(events, "sensor_recovered")) == 1


def test_an_on_tip_gauge_without_heartbeats_is_unknown_never_ok_and_never_stale() -> None:
    cfg = config(gauge(reporting="on_tip"), gauge("rg2"))
    eng = Engine(cfg)
    # rg2 (interval) reports for an hour; rg1 never says a word for two days.
    out = [e for m in range(60) for e in eng.apply(
        Reading(SITE, "rg2", "rain", T0 + m * MIN, tips_total=0))]
    out += eng.tick(T0 + 2 * DAY)
    events = [e.to_json() for e in eng.current_events()]
    assert of(events, "sensor_stale", sensor="rg1") == []  # not even "never heard"
    assert of(events, "sensor_recovered") == []
    (rg2,) = of(events, "sensor_stale", sensor="rg2")  # the control: interval goes stale
    assert (rg2["at"], rg2["last_seen"]) == (iso(T0 + 74 * MIN), iso(T0 + 59 * MIN))
    sensors = site_status(eng, SITE, T0 + 2 * DAY)["sensors"]
    assert (sensors["rg1"]["health"], sensors["rg1"]["stale"]) == ("unknown", None)
    assert (sensors["rg2"]["health"], sensors["rg2"]["stale"]) == ("stale", True)
    # A tip does not make it "ok" either: a dry gauge and a dead one still look alike.
    eng.apply(Reading(SITE, "rg1", "rain", T0 + 2 * DAY, tips_total=5))
    assert site_status(eng, SITE, T0 + 2 * DAY)["sensors"]["rg1"]["health"] == "unknown"
    assert warnings(cfg) == [
        "sites.branch-meadows.sensors.rg1.heartbeat_minutes: not set for an on_tip gauge: a "
        "dead gauge "
        "cannot be told from a dry one, so its health shows unknown and it never goes stale "
        "(set it to how often the gauge or its node sends a status, with some margin, e.g. "
        "90 for an hourly heartbeat)",
        "notify.targets: no notification target: alerts are kept in the log book but reach "
        "nobody (add one, e.g. a mailto:// URL, or console:// to try)"]


def node_config() -> Config:
    return config(gauge(reporting="on_tip", heartbeat_minutes=60, node="pi-1"),
                  {"id": "tb-up", "kind": "turbidity", "node": "pi-1",
                   "stale_after_minutes": 45},
                  {"id": "tb-down", "kind": "turbidity", "node": "pi-2"})


def status(sensor: str, at_ms: int) -> Reading:
    return Reading(SITE, sensor, "status", at_ms, battery_v=3.9)


def test_a_status_of_the_gauge_s_node_is_its_heartbeat() -> None:
    eng = Engine(node_config())
    eng.apply(Reading(SITE, "rg1", "rain", T0, tips_total=0))
    # Ten dry hours: the node's status comes on tb-up's topic every 30 minutes.
    for m in range(30, 10 * 60 + 1, 30):
        eng.apply(status("tb-up", T0 + m * MIN))
        # Another node's status is nobody's heartbeat but its own sensor's.
        eng.apply(status("tb-down", T0 + m * MIN + 5 * MIN))
    eng.tick(T0 + 10 * H + 30 * MIN)
    events = [e.to_json() for e in eng.current_events()]
    assert of(events, "sensor_stale", sensor="rg1") == []
    assert site_status(eng, SITE, T0 + 10 * H + 30 * MIN)["sensors"]["rg1"]["health"] == "ok"
    # pi-1 falls silent after 10:00 (pi-2 goes on): rg1 is stale at 11:00, and back at
    # its next tip at 14:00.
    for m in range(10 * 60 + 30, 14 * 60, 30):
        eng.apply(status("tb-down", T0 + m * MIN + 5 * MIN))
    eng.apply(Reading(SITE, "rg1", "rain", T0 + 14 * H, tips_total=1))
    eng.tick(T0 + 14 * H)
    events = [e.to_json() for e in eng.current_events()]
    (stale,) = of(events, "sensor_stale", sensor="rg1")
    assert own(stale) == {"type": "sensor_stale", "site": SITE, "at": iso(T0 + 11 * H),
                          "sensor": "rg1", "last_seen": iso(T0 + 10 * H),
                          "stale_after_minutes": 60.0}
    (back,) = of(events, "sensor_recovered", sensor="rg1")
    assert own(back) == {"type": "sensor_recovered", "site": SITE, "at": iso(T0 + 14 * H),
                         "sensor": "rg1", "last_seen": iso(T0 + 14 * H),
                         "stale_since": iso(T0 + 11 * H)}
    # The status of tb-up is still tb-up's own (its staleness, its battery).
    assert [e["last_seen"] for e in of(events, "sensor_stale", sensor="tb-up")] == [
        iso(T0 + 10 * H)]
    assert site_status(eng, SITE, T0 + 14 * H)["sensors"]["rg1"]["battery_v"] is None


def mean_config(**rg2: Any) -> Config:
    return config(gauge(), gauge("rg2", reporting="on_tip", **rg2), rain={"gauges": "mean"})


def rg1_storm(eng: Engine) -> None:
    """rg1 reports every 5 minutes for 10 hours; 80 tips from 01:00, one a minute."""
    for m in range(0, 10 * 60, 5):
        eng.apply(Reading(SITE, "rg1", "rain", T0 + m * MIN,
                          tips_total=max(0, min(80, m - 60))))
    eng.tick(T0 + 10 * H)


def test_a_dry_on_tip_gauge_counts_in_the_mean_a_dead_one_does_not() -> None:
    # rg2 without heartbeats never went stale: its silence is dry, the mean is
    # (0.80 + 0) / 2 = 0.40 in: no storm clock.
    quiet = Engine(mean_config())
    rg1_storm(quiet)
    events = [e.to_json() for e in quiet.current_events()]
    assert of(events, "storm_qualified") == []
    (end,) = of(events, "storm_ended", gauge="mean")
    assert end["total_in"] == 0.4
    # With heartbeats every 30 minutes rg2 is alive and dry: the same.
    alive = Engine(mean_config(heartbeat_minutes=60))
    for m in range(0, 10 * 60, 30):
        alive.apply(status("rg2", T0 + m * MIN))
    rg1_storm(alive)
    assert of([e.to_json() for e in alive.current_events()], "storm_qualified") == []
    # Heartbeats that stop at 00:30 leave rg2 stale after 01:30: up to the reading
    # of 01:30 rg1's 30 tips count half (0.15 in), after it rg1 counts alone, 5 tips
    # a reading: the mean reaches 0.50 in with the 7th of those, at 02:05.
    dead = Engine(mean_config(heartbeat_minutes=60))
    dead.apply(status("rg2", T0))
    dead.apply(status("rg2", T0 + 30 * MIN))
    rg1_storm(dead)
    (q,) = of([e.to_json() for e in dead.current_events()], "storm_qualified")
    assert (q["gauge"], q["qualified_at"], q["total_in"], q["gauges"]) == (
        "mean", iso(T0 + 125 * MIN), 0.5, ["rg1"])


def reference_storms(tip_ms: list[int], gap_ms: int, threshold: int) -> list[tuple[int, int, int]]:
    """Storm events of a per-tip record, the plain way: runs of tips separated by at
    least ``gap_ms``; (start, end, tips) of those with ``threshold`` tips or more."""
    runs: list[list[int]] = []
    for t in tip_ms:
        if runs and t - runs[-1][-1] < gap_ms:
            runs[-1].append(t)
        else:
            runs.append([t])
    return [(r[0], r[-1], len(r)) for r in runs if len(r) >= threshold]


def test_a_season_of_per_tip_rows_finds_every_storm_and_no_stale_flapping(
        tmp_path: Path) -> None:
    """Sixty days of a logger that writes a row per tip (storms of random depth and
    length, days apart): every storm of the plain per-tip reading, and no health event
    at all from the dry spells."""
    rng = random.Random(18)
    tips: list[int] = []
    t = T0 + H
    while t < T0 + 60 * DAY:
        for _ in range(rng.randrange(5, 120)):  # 0.05 .. 1.19 in
            t += rng.randrange(30, 20 * 60) * 1000
            tips.append(t)
        t += rng.randrange(7 * 3600, 5 * 86400) * 1000  # more than the 6-hour dry gap
    # The counter's first row is its baseline; the reference counts from the second.
    rows = [(tt, i) for i, tt in enumerate(tips)]
    expected = reference_storms(tips[1:], 6 * H, 50)
    assert len(expected) >= 10
    events = run(config(gauge(reporting="on_tip", heartbeat_minutes=10 * DAY // MIN)),
                 rows, tmp_path)
    qualified = of(events, "storm_qualified")
    assert [(q["started_at"], q["uncertain_in"], q["qualified_not_before"])
            for q in qualified] == [(iso(s), 0.0, None) for s, _, _ in expected]
    # Each ends at its last tip (the last one of the record may still be open).
    ended = [(e["started_at"], e["ended_at"], e["total_in"])
             for e in of(events, "storm_ended", qualified=True)]
    assert ended == [(iso(s), iso(e), n / 100) for s, e, n in expected][:len(ended)]
    assert len(ended) >= len(expected) - 1
    assert [e for e in events if e["type"] in HEALTH] == []


def test_reporting_and_its_fields_belong_to_rain_gauges() -> None:
    with pytest.raises(ConfigError) as err:
        config(gauge(), {"id": "tb-up", "kind": "turbidity", "reporting": "on_tip",
                         "heartbeat_minutes": 60, "debounce_s": 2})
    assert str(err.value).splitlines() == [
        "sites.branch-meadows.sensors.tb-up.heartbeat_minutes: applies to rain sensors only, "
        "not to a "
        "turbidity sensor",
        "sites.branch-meadows.sensors.tb-up.reporting: applies to rain sensors only, not to a "
        "turbidity sensor",
        "sites.branch-meadows.sensors.tb-up.debounce_s: applies to rain sensors only, not to a "
        "turbidity sensor"]
    with pytest.raises(ConfigError) as err:
        config(gauge(reporting="per_tip"))
    assert "sites.branch-meadows.sensors.rg1.reporting" in str(err.value)
    # The defaults of a non-rain sensor written out (a dumped configuration) are fine,
    # and an interval gauge's heartbeat is a warning, not an error.
    cfg = config(gauge(heartbeat_minutes=60),
                 {"id": "tb-up", "kind": "turbidity", "reporting": "interval", "debounce_s": 1.0})
    assert warnings(cfg)[0] == (
        "sites.branch-meadows.sensors.rg1.heartbeat_minutes: applies to reporting: on_tip "
        "only; this gauge "
        "reports every interval and is stale after stale_after_minutes (15)")


def test_status_says_unknown_in_text_and_json(tmp_path: Path) -> None:
    """``stormwatch status`` reads the state the daemon recorded: the on_tip gauge
    without heartbeats is ``unknown`` there too, never ``ok`` and never STALE."""
    cfg = parse_config({"state_dir": str(tmp_path), "sites": [{
        "id": SITE, "timezone": "UTC", "condition": "B",
        "sensors": [gauge(reporting="on_tip"), gauge("rg2")]}]}, env={})
    now = T0 + 2 * DAY
    with open_store(cfg) as store:
        host = EngineHost.restore(cfg, store, clock=lambda: now / 1000)
        readings = [Reading(SITE, "rg1", "rain", T0, tips_total=3),
                    Reading(SITE, "rg2", "rain", now - MIN, tips_total=0)]
        store.journal.commit([journal_in(r, topic=None, received_ms=now) for r in readings])
        host.catch_up()
        host.tick()
        status = build_status(cfg, store, now)
    sensors = status["sites"][SITE]["sensors"]
    assert {k: sensors["rg1"][k] for k in ("health", "stale", "last_seen")} == {
        "health": "unknown", "stale": None, "last_seen": iso(T0)}
    assert (sensors["rg2"]["health"], sensors["rg2"]["stale"]) == ("ok", False)
    lines = format_status(cfg, status).splitlines()
    assert "  sensor rg1: health unknown (reporting: on_tip without heartbeat_minutes: a dry " \
        "gauge and a dead one look alike), last seen 2026-05-01 00:00 UTC" in lines
    assert "  sensor rg2: ok, last seen 2026-05-02 23:59 UTC" in lines


def test_the_dashboard_s_health_points_say_unknown() -> None:
    """The Grafana site dashboard's sensor table reads the ``health`` field of the
    ``health`` measurement (deploy/grafana/dashboards/site.json)."""
    cfg = config(gauge(reporting="on_tip"), gauge("rg2"))
    eng = Engine(cfg)
    eng.apply(Reading(SITE, "rg2", "rain", T0, tips_total=0))
    points = [p for p in minute_points(eng, cfg, T0 + H) if p.measurement == "health"]
    fields = {p.series.split("sensor=")[1].split(",")[0]: p.fields for p in points}
    assert (fields["rg1"]["health"], fields["rg1"]["stale"]) == ("unknown", False)
    assert (fields["rg2"]["health"], fields["rg2"]["stale"]) == ("stale", True)
    (site,) = [p for p in minute_points(eng, cfg, T0 + H) if p.measurement == "site"]
    assert site.fields["stale_sensors"] == 1  # the unknown one is not counted stale
    dashboard = (Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "dashboards"
                 / "site.json").read_text(encoding="utf-8")
    assert '\\"health\\" FROM \\"health\\"' in dashboard and '"unknown": {' in dashboard

"""``stormwatch simulate``: the design storm, the simulated sensors, and
the last "Done when" — the simulation drives the real daemon through a real Mosquitto,
and a 1.0 in / 24 h type II storm qualifies when a hand computation of the hyetograph
reaches 0.5 in, within one publishing interval.

Expectations are computed by hand from the TR-55 ordinates written out below, never
by calling the module under test. No hardware here: the sensors are simulated.
"""

from __future__ import annotations

import dataclasses
import math
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from monitor.cli import main as cli_main
from monitor.config.file import load_config as load_daemon_config
from monitor.contract.times import parse_iso
from monitor.sources.simulate import build_parser, make_plan, node_config, sensor_entries
from monitor.store import Store
from sensors.config import SimSensor
from sensors.drivers import Hardware
from sensors.drivers.sim import DesignStorm, SimClock, SimulatedSensor, fraction_24h
from sensors.node import Node

from ..conftest import MakeMosquitto
from ..support.daemonkit import Daemons, events_of, wait_until, write_config
from ..support.nodekit import FakeLink, accepted

ROOT = Path(__file__).resolve().parents[2]
HOUR_S = 3600.0

#: SCS type II, TR-55 (1986) Appendix B: (hour, fraction of the 24-hour depth).
TR55_TYPE_II = [(6.0, 0.080), (9.0, 0.147), (10.0, 0.181), (11.0, 0.235), (11.5, 0.283),
                (11.75, 0.357), (12.0, 0.663), (12.5, 0.735), (13.0, 0.772), (14.0, 0.820),
                (16.0, 0.880)]


def _half_depth_hour_type_ii() -> float:
    """When type II reaches half its depth: linear between 0.357 at 11.75 h and 0.663 at 12 h."""
    return 11.75 + 0.25 * (0.5 - 0.357) / (0.663 - 0.357)  # 11.8668 h, 11:52:00.6


# --------------------------------------------------------------------------- the hyetograph


def test_type_ii_matches_tr55_and_passes_half_its_depth_between_11_75_and_12_hours() -> None:
    for hour, fraction in TR55_TYPE_II:
        assert fraction_24h(hour, "II") == pytest.approx(fraction, abs=1e-9), hour
    assert fraction_24h(11.75, "II") < 0.5 < fraction_24h(12.0, "II")
    assert fraction_24h(11.875, "II") == pytest.approx((0.357 + 0.663) / 2)  # linear between
    assert fraction_24h(_half_depth_hour_type_ii(), "II") == pytest.approx(0.5)
    assert fraction_24h(12.0, "III") == pytest.approx(0.5)  # type III: half at noon exactly
    for storm_type in ("II", "III"):
        assert fraction_24h(0.0, storm_type) == 0.0 and fraction_24h(-3.0, storm_type) == 0.0
        assert fraction_24h(24.0, storm_type) == 1.0 and fraction_24h(30.0, storm_type) == 1.0
        minutes = [fraction_24h(m / 60, storm_type) for m in range(24 * 60 + 1)]
        assert all(b >= a for a, b in zip(minutes, minutes[1:], strict=False)), storm_type


def test_tips_are_the_depth_in_whole_tips_and_fall_with_the_curve() -> None:
    for depth_in, in_per_tip in [(1.0, 0.01), (0.37, 0.01), (0.5, 0.01), (2.5, 0.2 / 25.4),
                                 (3.3, 0.04), (0.07, 0.01)]:
        storm = DesignStorm(depth_in, 24.0, "II", start_s=0.0)
        assert storm.tips_at(24 * HOUR_S, in_per_tip) == round(depth_in / in_per_tip)
        tips = [storm.tips_at(m * 60.0, in_per_tip) for m in range(24 * 60 + 1)]
        assert tips[0] == 0 and all(b >= a for a, b in zip(tips, tips[1:], strict=False))
    storm = DesignStorm(1.0, 24.0, "II", start_s=1000.0)
    # 100 tips of 0.01 in: floor(100 × fraction) at the tabulated hours.
    assert storm.tips_at(1000 + 11.75 * HOUR_S, 0.01) == 35
    assert storm.tips_at(1000 + 12.0 * HOUR_S, 0.01) == 66
    half_s = 1000 + _half_depth_hour_type_ii() * HOUR_S
    assert storm.tips_at(half_s - 1, 0.01) == 49 and storm.tips_at(half_s + 1, 0.01) == 50
    # A 6-hour storm is the 24-hour curve squeezed: half its depth at a quarter of the hour.
    short = DesignStorm(1.0, 6.0, "II", start_s=0.0)
    assert short.depth_in_at(_half_depth_hour_type_ii() / 4 * HOUR_S) == pytest.approx(0.5)


# --------------------------------------------------------------------------- the sensors


def _plan_args(cfg: Path, *extra: str) -> Any:
    return build_parser().parse_args(["--config", str(cfg), *extra])


def test_the_nodes_publish_what_the_daemon_accepts_on_a_grid_of_readings(
        tmp_path: Path) -> None:
    """In process: the real node with the simulated sensors and a fake link; every payload
    passes the daemon's parser, a dry gauge still sends its counter every minute, the
    downstream probe rises over the upstream one with the storm, the trap fills."""
    cfg = write_config(tmp_path, 1883)
    config = load_daemon_config(cfg)
    now_s = time.time()
    plan = make_plan(_plan_args(cfg, "--speed", "1000", "--hours", "20", "--storm-at", "1",
                                "--storm-hours", "12"), config, now_s)
    node_cfg = node_config(plan.sites[0], plan, config, tmp_path, None)
    clock = [plan.start_s]
    link = FakeLink(node_cfg.buffer.path)
    node = Node(node_cfg, link=link, hardware=Hardware(monotonic=lambda: clock[0]),
                wall=lambda: clock[0], monotonic=lambda: clock[0])
    try:
        node.start()
        while clock[0] < plan.end_s + 120:
            node.step()
            link.ack()
            link.confirm_sent()  # as the daemon would once they are journaled
            clock[0] += 337.0  # wakes late on purpose: the readings it owes are caught up
        node.step()
    finally:
        node.close(drain_s=0)
    bodies: dict[str, list[dict[str, Any]]] = {}
    for topic, payload in link.readings():
        reading = accepted(config, topic, payload, ref_ms=round(plan.end_s * 1000))
        bodies.setdefault(reading.sensor, []).append(
            {"ts_s": reading.ts_ms / 1000, "tips_total": reading.tips_total,
             "ntu": reading.ntu, "depth_in": reading.depth_in})
    minutes = 20 * 60
    assert {s: len(b) for s, b in bodies.items()} == {
        "rg1": minutes + 1, "tb-up": minutes + 1, "tb-down": minutes + 1,
        "trap1-depth": minutes + 1}
    rain = bodies["rg1"]
    assert [b["ts_s"] for b in rain] == [plan.start_s + 60 * k for k in range(minutes + 1)]
    assert rain[0]["tips_total"] == 0 and rain[30]["tips_total"] == 0  # dry heartbeats
    assert rain[-1]["tips_total"] == 100  # the whole 1.0 in, in 0.01 in tips
    peak = 60 + round(_half_depth_hour_type_ii() / 2 * 60)  # the 12-hour storm's burst
    up, down = bodies["tb-up"][peak]["ntu"], bodies["tb-down"][peak]["ntu"]
    assert down - up > 50, (up, down)
    assert abs(bodies["tb-down"][30]["ntu"] - bodies["tb-up"][30]["ntu"]) < 5  # dry: alike
    trap = bodies["trap1-depth"]
    # 0.15 × the 48 in design depth, then 3 in of sediment per inch of runoff above 0.2 in.
    assert trap[0]["depth_in"] == pytest.approx(7.2, abs=0.3)
    assert trap[-1]["depth_in"] == pytest.approx(7.2 + 3 * 0.8, abs=0.3)


def test_a_simulated_sensor_reads_nothing_before_its_grid_and_stops_at_the_end() -> None:
    now = [1_796_000_000.0]
    sensor = SimSensor(id="rg1", kind="rain", driver="sim", every_s=60.0,
                       start_s=now[0], end_s=now[0] + 600.0)
    driver = SimulatedSensor(sensor, lambda: now[0])
    assert len(driver.read()) == 1 and driver.wait_s() == 60.0
    now[0] += 59.0
    assert driver.read() == [] and driver.wait_s() == pytest.approx(1.0)
    now[0] += 10_000.0
    assert len(driver.read()) == 10 and driver.finished and driver.read() == []


def test_a_sediment_sensor_with_a_height_reports_the_distance_to_the_sediment() -> None:
    t0 = 1_796_000_000.0
    storm = {"depth_in": 2.0, "hours": 24.0, "type": "III", "start_s": t0}
    sensor = SimSensor(id="trap1-depth", kind="sediment", driver="sim", start_s=t0,
                       end_s=t0 + 24 * HOUR_S, every_s=24 * HOUR_S, storm=storm,
                       sensor_height_in=60.0, sediment_start_in=10.0, noise_in=0.0)
    first, last = SimulatedSensor(sensor, lambda: t0 + 48 * HOUR_S).read()
    # 10 in before; after, 3 in of sediment per inch of runoff: 2.0 in of rain less 0.2 in.
    assert first.fields == {"distance_in": pytest.approx(50.0)}
    assert last.fields == {"distance_in": pytest.approx(60.0 - (10.0 + 3.0 * 1.8))}


def test_the_simulated_clock_runs_at_speed_until_the_end_then_at_real_pace() -> None:
    real = [100.0]
    clock = SimClock(1_796_000_000.0, 1_796_000_000.0 + 3600.0, 1800.0, real=lambda: real[0])
    assert clock() == 1_796_000_000.0 and clock.rate() == 1800.0
    real[0] += 1.0
    assert clock() == 1_796_001_800.0
    real[0] += 2.0  # the end came after 2 real seconds; one more at real pace
    assert clock() == 1_796_003_601.0 and clock.rate() == 1.0


# --------------------------------------------------------------------------- the command


def test_bad_usage_is_one_line_and_exit_2(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    cfg = write_config(tmp_path, 1883)
    cases = {
        "nowhere.yaml": ["--config", str(tmp_path / "nowhere.yaml")],
        "--speed": ["--config", str(cfg), "--speed", "0"],
        "lateness_days": ["--config", str(cfg), "--hours", "200", "--speed", "1e6"],
        "ahead of the real one": ["--config", str(cfg), "--speed", "100", "--hours", "10",
                                  "--start", time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                           time.gmtime(time.time() - 3600))],
        "build date": ["--config", str(cfg), "--start", "2026-10-01T00:00:00Z"],
        "--site": ["--config", str(cfg), "--site", "elsewhere"],
    }
    for needle, argv in cases.items():
        assert cli_main(['simulate', *argv]) == 2, needle
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], (needle, err)


def test_by_default_the_simulation_ends_at_the_real_now(tmp_path: Path) -> None:
    config = load_daemon_config(write_config(tmp_path, 1883))
    now_s = 1_796_000_000.0
    plan = make_plan(_plan_args(tmp_path / "stormwatch.yaml", "--speed", "2000"), config, now_s)
    span_s = (1.0 + 24.0 + 6.0 + 0.25) * HOUR_S  # storm-at + storm + dry gap + a quarter
    assert plan.end_s - plan.start_s == span_s
    # It ends when the real clock, having run span / speed, reaches the simulated end.
    assert plan.end_s == pytest.approx(now_s + span_s / 2000, abs=1.0)
    live = make_plan(_plan_args(tmp_path / "stormwatch.yaml"), config, now_s)
    assert live.start_s == now_s  # speed 1: a live site


def test_a_pair_shares_its_stream_and_the_trap_starts_part_full(tmp_path: Path) -> None:
    config = load_daemon_config(write_config(tmp_path, 1883))
    plan = make_plan(_plan_args(tmp_path / "stormwatch.yaml", "--speed", "600"), config,
                     1_796_000_000.0)
    entries = {e["id"]: e for e in sensor_entries(plan.sites[0], plan)}
    assert entries["tb-up"]["background_ntu"] == entries["tb-down"]["background_ntu"]
    assert entries["tb-down"]["ntu_per_in_per_h"] == 120.0
    assert "ntu_per_in_per_h" not in entries["tb-up"]  # the stream's own, small response
    assert entries["rg1"]["in_per_tip"] == 0.01
    assert entries["trap1-depth"]["sediment_start_in"] == pytest.approx(0.15 * 4 * 12)
    tuned = dataclasses.replace(plan, overrides={"trap1-depth": {"sediment_start_in": 20.0}})
    assert {e["id"]: e for e in sensor_entries(plan.sites[0], tuned)}[
        "trap1-depth"]["sediment_start_in"] == 20.0


def test_a_snow_sensor_is_left_out_of_the_simulation_not_a_crash(tmp_path: Path) -> None:
    """The simulator makes rain and what rain drives: a site's snow sensor is left
    silent (its health says so), and the node configuration of the rest still loads."""
    config = load_daemon_config(write_config(tmp_path, 1883))
    site = config.sites[0]
    snowy = site.model_copy(update={"sensors": [*site.sensors, site.sensors[0].model_copy(
        update={"id": "snow1", "kind": "snow"})]})
    plan = make_plan(_plan_args(tmp_path / "stormwatch.yaml", "--speed", "600"), config,
                     1_796_000_000.0)
    entries = [e["id"] for e in sensor_entries(snowy, plan)]
    assert "snow1" not in entries and entries == [s.id for s in site.sensors]


# --------------------------------------------------------------------------- end to end

SPEED = 3000
SPAN_H = 30
STORM_AT_H = 2
EVERY_S = 60


@pytest.mark.integration
def test_a_simulated_type_ii_storm_qualifies_in_the_daemon_when_it_reaches_half_an_inch(
        tmp_path: Path, make_mosquitto: MakeMosquitto) -> None:
    broker = make_mosquitto()
    cfg = write_config(tmp_path, broker.port)
    span_s = SPAN_H * 3600
    # The simulation ends a minute before the real clock gets there (never in the future).
    start_s = int(time.time()) - span_s + span_s // SPEED - 60
    log_path = tmp_path / "simulate.log"
    with Daemons() as daemons, open(log_path, "wb") as log:
        daemon = daemons.start(cfg)
        proc = subprocess.Popen(
            [sys.executable, "-m", "monitor.cli", "simulate", "--config", str(cfg),
             "--speed", str(SPEED), "--hours", str(SPAN_H), "--storm-in", "1.0",
             "--storm-hours", "24", "--storm-type", "II", "--storm-at", str(STORM_AT_H),
             "--every-s", str(EVERY_S), "--seed", "7", "--buffer-dir", str(tmp_path / "buf"),
             "--start", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start_s))],
            stdout=log, stderr=log, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        try:
            qualified = wait_until(lambda: events_of(cfg, "storm_qualified"), 60,
                                   "storm_qualified from the simulated storm", interval_s=0.5)
            assert proc.wait(60) == 0, log_path.read_text()[-3000:]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        assert daemon.stop() == 0
        daemon_log = daemon.log_text()

    # By hand: the storm starts STORM_AT_H after the start and reaches 0.5 in
    # _half_depth_hour_type_ii() hours later; the gauge reports on the minute grid.
    half_s = start_s + STORM_AT_H * 3600 + _half_depth_hour_type_ii() * 3600
    at_s = parse_iso(qualified[0]["qualified_at"]) / 1000
    assert half_s <= at_s < half_s + EVERY_S, (qualified[0], half_s)
    assert at_s == start_s + math.ceil((half_s - start_s) / EVERY_S) * EVERY_S
    # Its total: the tips fallen by then, 100 × the TR-55 fraction at that hour, floored.
    hour = (at_s - start_s) / 3600 - STORM_AT_H
    assert 11.75 <= hour <= 12.0
    tips = math.floor(100 * (0.357 + (hour - 11.75) / 0.25 * (0.663 - 0.357)) + 1e-9)
    assert qualified[0]["total_in"] == pytest.approx(tips * 0.01)

    with Store(cfg.parent / "state" / "stormwatch.db", readonly=True) as store:
        rejects = store.journal.reject_counts()
        rows = store.journal.after(0, limit=100_000)
    assert rejects == {}, f"the daemon rejected simulated messages: {rejects}"
    readings = Counter(r.body["sensor"] for r in rows
                       if r.kind == "reading" and r.body.get("kind") != "status")
    per_sensor = SPAN_H * 60 + 1
    assert readings == {"rg1": per_sensor, "tb-up": per_sensor, "tb-down": per_sensor,
                        "trap1-depth": per_sensor}
    contrast = events_of(cfg, "turbidity_contrast")
    assert any(e["state"] == "exceeded" for e in contrast), contrast
    assert "Traceback" not in daemon_log, daemon_log[-3000:]
    assert "Traceback" not in log_path.read_text(), log_path.read_text()[-3000:]

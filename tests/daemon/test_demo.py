"""``stormwatch demo`` end to end: embedded broker, real daemon, simulated node runtime."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from monitor.daemon.demo import DEMO_HOURS, SITE, DemoClock, demo_config, demo_plan, run_demo
from monitor.rules.traps.traps import fill_fraction
from monitor.sources.simulate import sensor_entries
from monitor.store import Store
from sensors.config import SimSensor
from sensors.drivers.base import Sample
from sensors.drivers.sim import DesignStorm, SimulatedSensor


def test_demo_clock_rate_is_its_speed_until_frozen() -> None:
    clock = DemoClock(1_800_000_000, 1800.0)
    assert clock.rate() == 1800.0
    clock.freeze()
    at = clock()
    assert clock.rate() == 0.0 and clock() == at


def test_demo_storm_qualifies_in_about_an_hour_and_fills_the_trap(tmp_path: Path) -> None:
    """What the README and the module docstring say of the demo's simulated site."""
    config = demo_config(1883, tmp_path)
    start_s = 1_800_000_000
    plan = demo_plan(config, start_s, 1800.0)
    assert plan.end_s - plan.start_s == DEMO_HOURS * 3600 and plan.storm is not None
    storm = DesignStorm.of(plan.storm)
    crossed_s = next(m * 60 for m in range(240)
                     if storm.depth_in_at(plan.storm.start_s + m * 60) >= 0.5)
    assert 55 * 60 <= crossed_s <= 65 * 60
    site = config.site(SITE)
    assert site is not None
    entry = next(e for e in sensor_entries(site, plan) if e["id"] == "trap1-depth")
    sensor = SimulatedSensor(SimSensor.model_validate(entry), lambda: plan.end_s)
    samples: list[Sample] = []
    while not sensor.finished:
        samples.extend(sensor.read())
    fills = [fill_fraction(site.traps[0], s.fields["depth_in"]) for s in samples]
    assert fills[0] < 0.4 and fills[-1] > 0.5
    assert samples[0].ts_ms == start_s * 1000


@pytest.mark.integration
def test_demo_tells_the_whole_story(tmp_path: Path) -> None:
    out = io.StringIO()
    rc = run_demo(out, speed=3600, state_dir=tmp_path)
    text = out.getvalue()
    assert rc == 0, text  # what the demo said, the simulated site's reasons included
    for expected in ("storm_started", "turbidity_contrast       outfall-1 exceeded",
                     "trap_fill                trap-1 at 40%",
                     "trap_cleanout_required", "inspection_due_soon",
                     "inspection_recorded      by J. Rivera", "storm clock met",
                     "storm_ended              0.80 in in all"):
        assert expected in text, text
    # The type II storm's peak minute carries it from about 0.19 in past 0.5 at once.
    qualified = re.search(r"storm_qualified +(\d\.\d\d) in: inspect by", text)
    assert qualified is not None and 0.5 <= float(qualified[1]) < 0.6, text
    for absent in ("OVERDUE", "sensor_stale", "battery_low", "simulated site:"):
        assert absent not in text, text
    assert (tmp_path / "stormwatch.db").exists()
    # The node's confirmation clocks wait in real time for the daemon: on the demo's
    # clock every reading was sent again (thousands of duplicates at the daemon), and
    # under load the floods left readings undelivered and the demo exited 1.
    with Store(tmp_path / "stormwatch.db", readonly=True) as store:
        assert store.journal.counter("duplicates") == 0

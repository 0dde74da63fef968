"""Clock jumps: the daemon host's wall clock stepped by hours, and a
node whose own clock is hours off.

The real daemon runs under libfaketime (its wall clock only: the monotonic clock
runs true, as on a real machine, where NTP steps the one and never the other).

* Stepped forward by six hours while the nodes go on sending their (true) time:
  a tick taking the wall clock would find every sensor silent for six hours and
  fire a ``sensor_stale`` for each; the ticks keep to the monotonic clock instead,
  and ``status`` reports the step.
* Set right again: the step is gone from ``status``.
* A node three hours ahead: its readings are refused as ``future_timestamp``
  (sensors/README.md, "MQTT contract"), counted, and ``status`` names the sensor and its node.
* Stepped back by six hours: the ticks neither rewind nor stop.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from monitor.store import Store

from ..conftest import MakeMosquitto
from ..support.daemonkit import (
    DaemonProcess,
    Daemons,
    FakeClock,
    Publisher,
    cli,
    events_of,
    journal_count,
    last_tick_ms,
    ticked_after_input,
    wait_until,
)
from ..support.scenarios import ScenarioCounts
from ..support.util import ts

T0 = ts("2026-06-01T12:00:00Z")
HOUR_MS = 3_600_000
SITE = "branch-meadows"
SENSORS = ("rg1", "tb-up", "tb-down", "trap1-depth")
CONFIG = """\
broker: {{host: 127.0.0.1, port: {port}, client_id: clock-jumps}}
state_dir: {state}
sites:
  - id: branch-meadows
    timezone: America/New_York
    condition: B
    sensors:
      - {{id: rg1, kind: rain, in_per_tip: 0.01, stale_after_minutes: 60, node: pi-north}}
      - {{id: tb-up, kind: turbidity, stale_after_minutes: 60}}
      - {{id: tb-down, kind: turbidity, stale_after_minutes: 60}}
      - {{id: trap1-depth, kind: sediment, stale_after_minutes: 60}}
    turbidity_pairs: [{{id: outfall-1, upstream: tb-up, downstream: tb-down}}]
    traps:
      - {{id: trap-1, sensor: trap1-depth, shape: trapezoidal, bottom_length_ft: 20,
         bottom_width_ft: 10, side_slope: 2, design_depth_ft: 4}}
"""


def _messages(ts_ms: int, sensors: tuple[str, ...] = SENSORS
              ) -> list[tuple[str, dict[str, Any]]]:
    values: dict[str, dict[str, Any]] = {
        "rg1": {"tips_total": 0}, "tb-up": {"ntu": 8.0}, "tb-down": {"ntu": 8.4},
        "trap1-depth": {"depth_in": 4.0}}
    return [(f"stormwatch/v1/{SITE}/{s}/reading", {"ts": ts_ms / 1000, **values[s]})
            for s in sensors]


def _meta(cfg: Path, key: str) -> int | str | None:
    with Store(cfg.parent / "state" / "stormwatch.db", readonly=True) as store:
        return store.state.meta_get(key)


def _status(cfg: Path) -> dict[str, Any]:
    out = cli("status", "--config", str(cfg), "--json")
    assert out.returncode == 0, out.stderr
    status: dict[str, Any] = json.loads(out.stdout)
    return status


def _tick_after(cfg: Path, after_ms: int) -> int:
    """Wait for a tick of the daemon after its newest input, at or after ``after_ms``
    of tick time (the monotonic clock's: readings do not move it); return its time."""
    def ticked() -> int | None:
        tick = last_tick_ms(cfg)
        ok = tick is not None and tick >= after_ms and ticked_after_input(cfg)
        return tick if ok else None
    found: int = wait_until(ticked, 60, f"a tick at or after {after_ms}")
    return found


@pytest.mark.integration
@pytest.mark.skipif(FakeClock.library() is None, reason="libfaketime not installed (Debian"
                    " package faketime; `make test` installs it as root)")
def test_wall_clock_steps_and_a_node_clock_ahead(tmp_path: Path, make_mosquitto: MakeMosquitto,
                                                 counts: ScenarioCounts) -> None:
    broker = make_mosquitto()
    cfg = tmp_path / "stormwatch.yaml"
    cfg.write_text(CONFIG.format(port=broker.port, state=tmp_path / "state"))
    clock = FakeClock(tmp_path / "faketime", T0)
    published = 0
    with Daemons() as daemons:
        daemon = DaemonProcess(cfg, env=clock.env())
        daemons.append(daemon)
        daemon.start()
        pub = Publisher(broker.port)

        def send(messages: list[tuple[str, dict[str, Any]]]) -> None:
            nonlocal published
            pub.send_many(messages)
            published += len(messages)

        for m in range(50, -10, -10):
            send(_messages(T0 - m * 60_000))
        wait_until(lambda: journal_count(cfg) == published, 30, "the first readings")
        first = _tick_after(cfg, T0)

        # Six hours forward; the nodes go on with the true time (now "six hours late").
        clock.set(T0 + 6 * HOUR_MS)
        send(_messages(T0 + 60_000))
        wait_until(lambda: journal_count(cfg) == published, 30, "readings after the step")
        wait_until(lambda: int(_meta(cfg, "wall_step_ms") or 0) > 5 * HOUR_MS, 60,
                   "the daemon to see the step")
        tick = _tick_after(cfg, first + 1)
        assert tick < T0 + HOUR_MS, "the tick followed the wall clock's step"
        assert events_of(cfg, "sensor_stale") == []
        status = _status(cfg)
        assert 6 * 3600 - 60 <= status["daemon"]["wall_clock_step_s"] <= 6 * 3600 + 60
        text = cli("status", "--config", str(cfg)).stdout
        assert "wall clock stepped 6.0 h forward" in text, text

        # Set right again (the monotonic clock has run on meanwhile: within a minute).
        clock.set(T0 + 2 * 60_000)
        wait_until(lambda: _meta(cfg, "wall_step_ms") == 0, 60, "the step to be gone")
        assert _status(cfg)["daemon"]["wall_clock_step_s"] is None

        # A node three hours ahead: refused, counted, named.
        send(_messages(T0 + 3 * HOUR_MS, ("rg1",)))
        send(_messages(T0 + 3 * 60_000, ("tb-up", "tb-down", "trap1-depth")))
        wait_until(lambda: journal_count(cfg) == published - 1, 30, "the readings on time")
        _tick_after(cfg, tick + 1)
        status = _status(cfg)
        assert status["ingest"]["rejected"].get("future_timestamp") == 1
        note = status["sites"][SITE]["sensors"]["rg1"]["clock"]
        assert note["reason"] == "future_timestamp" and note["ahead"]
        assert 3 * 3600 - 300 <= note["offset_s"] <= 3 * 3600
        assert status["sites"][SITE]["sensors"]["tb-up"]["clock"] is None
        text = cli("status", "--config", str(cfg)).stdout
        assert "sensor rg1 (node pi-north)" in text and "check the node's clock" in text, text

        # Six hours back: the ticks go on from where they were.
        before = last_tick_ms(cfg) or 0
        clock.set(T0 - 6 * HOUR_MS)
        wait_until(lambda: int(_meta(cfg, "wall_step_ms") or 0) < -5 * HOUR_MS, 60,
                   "the daemon to see the step back")
        later = _tick_after(cfg, before + 1)
        assert later > before
        assert events_of(cfg, "sensor_stale") == []
        assert daemon.stop() == 0
        pub.close()
        log = daemon.log_text()
    assert "Traceback" not in log
    assert log.count("the wall clock stepped by") >= 2  # forward, back: each logged
    journaled = journal_count(cfg)
    assert journaled == published - 1
    # The node ahead's reading is refused by design (a counted dead letter): the rest
    # is what must be journaled, each once.
    counts.published = published - 1
    counts.journaled = journaled

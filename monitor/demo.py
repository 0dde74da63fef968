"""``stormwatch demo``: a whole site in one terminal, no external service needed.

An embedded MQTT broker (amqtt, MQTT 3.1.1, in this process), the real daemon
(journal, engine, outbox, log book in a temporary state directory), and a
simulated site (``sensors.simulator``) publishing through the broker exactly as
nodes would. Time runs ``speed`` times faster than the wall clock (the daemon
takes its clock by injection), so a storm, its 24-hour inspection clock, the
reminders and the inspection that closes it pass in about a minute.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import socket
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO
from zoneinfo import ZoneInfo

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from sensors.simulator import Scenario

from .config import Config
from .configfile import parse_config
from .daemon import Daemon
from .engine.events import (
    BatteryLow,
    ClockClosed,
    Event,
    InspectionDueSoon,
    InspectionOverdue,
    InspectionRecorded,
    SensorRecovered,
    SensorStale,
    StormEnded,
    StormQualified,
    StormStarted,
    TrapCleanoutRequired,
    TrapFill,
    TurbidityContrast,
)
from .engine.times import parse_iso
from .host import open_store

SITE = "demo-meadows"
ZONE = "America/New_York"
log = logging.getLogger("stormwatch.demo")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EmbeddedBroker:
    """amqtt in a thread of its own with its own event loop."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="demo-broker", daemon=True)

    def start(self) -> EmbeddedBroker:
        self._thread.start()
        if not self._ready.wait(15):
            raise RuntimeError("the embedded MQTT broker did not start within 15 s")
        if self._error is not None:
            raise RuntimeError(f"the embedded MQTT broker failed: {self._error}")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10)

    def _run(self) -> None:
        from amqtt.broker import Broker

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            broker = Broker({
                "listeners": {"default": {"type": "tcp", "bind": f"127.0.0.1:{self.port}"}},
                "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin":
                            {"allow_anonymous": True}},
            })
            await broker.start()
            self._ready.set()
            await self._stop.wait()
            await broker.shutdown()

        try:
            asyncio.run(main())
        except BaseException as exc:  # reported to start()
            self._error = exc
            self._ready.set()


@dataclass
class DemoClock:
    """Simulated time: starts at ``start_s`` and runs ``speed`` times faster."""

    start_s: float
    speed: float
    _m0: float = 0.0

    def __post_init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        """Start over at ``start_s`` from this moment."""
        self._m0 = time.monotonic()

    def freeze(self) -> None:
        """Stop simulated time where it is (the demo is over; nothing goes silent)."""
        self.start_s, self.speed, self._m0 = self(), 0.0, time.monotonic()

    def __call__(self) -> float:
        return self.start_s + (time.monotonic() - self._m0) * self.speed

    def sleep_until(self, sim_s: float) -> None:
        real = (sim_s - self()) / self.speed
        if real > 0:
            time.sleep(real)


def demo_config(port: int, state_dir: Path) -> Config:
    return parse_config({
        "broker": {"host": "127.0.0.1", "port": port, "client_id": "stormwatch-demo"},
        "state_dir": str(state_dir),
        "notify": {"targets": [{"url": "console://", "tags": ["qp", "officer", "ops"]}]},
        "sites": [{
            "id": SITE, "name": "Demo Meadows Subdivision", "address": "1 Demo Lane",
            "timezone": ZONE, "condition": "B",
            "sensors": [
                {"id": "rg1", "kind": "rain", "in_per_tip": 0.01},
                {"id": "tb-up", "kind": "turbidity"},
                {"id": "tb-down", "kind": "turbidity"},
                {"id": "trap1-depth", "kind": "sediment", "stale_after_minutes": 30},
            ],
            "turbidity_pairs": [{"id": "outfall-1", "upstream": "tb-up",
                                 "downstream": "tb-down"}],
            "traps": [{"id": "trap-1", "sensor": "trap1-depth", "shape": "trapezoidal",
                       "bottom_length_ft": 20, "bottom_width_ft": 10, "side_slope": 2,
                       "design_depth_ft": 4}],
        }],
    }, env={})


def describe(event: Event, zone: ZoneInfo) -> str:
    """One line of the demo's timeline for an event."""
    def local(when: str | int | None) -> str:
        if when is None:
            return "-"
        ms = when if isinstance(when, int) else parse_iso(when)
        return datetime.fromtimestamp(ms / 1000, tz=zone).strftime("%a %H:%M")

    details = ""
    match event.body:
        case StormStarted(gauge=gauge):
            details = f"rain on {gauge}"
        case StormQualified(total_in=total, due=due):
            details = f"{total:.2f} in: inspect by {local(due)} (§ 134-9A(2))"
        case StormEnded(total_in=total):
            details = f"{total:.2f} in in all"
        case TurbidityContrast() as e:
            details = (f"{e.pair} {e.state}: +{e.delta_ntu:g} NTU (limit {e.limit_ntu:g}) "
                       "(§ 134-8C)")
        case TrapFill(trap=trap, fill_fraction=fill):
            details = f"{trap} at {fill:.0%} of design volume"
        case TrapCleanoutRequired(trap=trap, fill_fraction=fill):
            details = f"{trap} at {fill:.0%}: clean out (§ 134-9A(1))"
        case InspectionDueSoon(clock=clock, due=due, hours_left=left):
            details = f"{clock} inspection due {local(due)}, {left:g} h left"
        case InspectionOverdue(clock=clock, due=due):
            details = f"{clock} inspection OVERDUE since {local(due)}"
        case InspectionRecorded(inspector=inspector):
            details = f"by {inspector}"
        case SensorStale(sensor=sensor, last_seen=seen):
            details = f"{sensor} silent since {local(seen)}"
        case SensorRecovered(sensor=sensor):
            details = f"{sensor} reporting again"
        case BatteryLow(sensor=sensor, battery_v=volts):
            details = f"{sensor} at {volts} V"
        case ClockClosed(clock=clock, outcome=outcome):
            details = f"{clock} clock {outcome}"
    rev = f" (revision {event.revision})" if event.revision else ""
    return f"  [{local(event.at_ms)}] {event.type:<24} {details}{rev}"


def run_demo(out: IO[str] = sys.stdout, *, speed: float = 1800.0, keep: bool = False,
             state_dir: Path | None = None) -> int:
    """Run the demo to the end (about a minute at the default speed)."""
    for name in ("amqtt", "transitions", "asyncio", "stormwatch.ingest"):
        logging.getLogger(name).setLevel(logging.ERROR)
    zone = ZoneInfo(ZONE)
    owned = state_dir is None
    state = Path(tempfile.mkdtemp(prefix="stormwatch-demo-")) if state_dir is None else state_dir
    port = free_port()
    broker = EmbeddedBroker(port).start()
    start_s = (int(time.time()) // 3600 - 2) * 3600  # whole hour, two hours ago
    clock = DemoClock(start_s, speed)
    config = demo_config(port, state)
    daemon = Daemon(config, clock=clock, tick_every_s=0.3, mqtt_protocol=mqtt.MQTTv311)
    worker = threading.Thread(target=daemon.run, name="demo-daemon", daemon=True)
    print(f"stormwatch demo: site {SITE}, time x{speed:g}, broker 127.0.0.1:{port}, "
          f"state in {state}", file=out)
    worker.start()
    if not daemon.connected.wait(20):
        raise RuntimeError("the daemon did not connect to the embedded broker")
    clock.restart()  # simulated time starts once the daemon listens
    scenario = Scenario(SITE, start_s)
    printed = 0
    try:
        pub = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv311)
        pub.connect("127.0.0.1", port)
        pub.loop_start()
        inspected = False
        minute = 0
        end_minute = 30 * 60  # thirty simulated hours
        while minute < end_minute:
            clock.sleep_until(start_s + minute * 60)
            for topic, payload in scenario.messages(minute):
                pub.publish(topic, payload, qos=1)
            if not inspected:
                due = _storm_due(state)
                if due is not None and clock() >= due - 2 * 3600:
                    ts = datetime.fromtimestamp(clock(), tz=zone).isoformat(timespec="seconds")
                    pub.publish(f"stormwatch/v1/{SITE}/inspection",
                                ('{"inspector": "J. Rivera, CPESC", "kind": "storm", '
                                 f'"ts": "{ts}", "notes": "silt fence repaired"}}').encode(),
                                qos=1)
                    inspected = True
            printed = _print_new(state, printed, zone, out)
            minute += 1
        clock.freeze()
        time.sleep(1.0)  # the last readings reach the journal, the last alerts their targets
        printed = _print_new(state, printed, zone, out)
        pub.loop_stop()
        pub.disconnect()
    finally:
        daemon.request_stop()
        worker.join(timeout=20)
        broker.stop()
        if owned and not keep:
            shutil.rmtree(state, ignore_errors=True)
    print(f"stormwatch demo: done, {printed} events."
          + (f" State kept in {state}." if keep or not owned else ""), file=out)
    return 0


def _storm_due(state: Path) -> float | None:
    if not (state / "stormwatch.db").exists():
        return None
    cfg_state = state
    with open_store(_state_only(cfg_state), readonly=True) as store:
        for e in store.events.current(SITE):
            if isinstance(e.body, StormQualified) and e.body.due:
                return parse_iso(e.body.due) / 1000
    return None


def _print_new(state: Path, printed: int, zone: ZoneInfo, out: IO[str]) -> int:
    if not (state / "stormwatch.db").exists():
        return printed
    with open_store(_state_only(state), readonly=True) as store:
        events = store.events.all()
    for e in events[printed:]:
        if e.retracted:
            continue
        print(describe(e, zone), file=out, flush=True)
    return len(events)


def _state_only(state: Path) -> Config:
    return parse_config({"state_dir": str(state), "sites": [{"id": SITE}]}, env={})

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
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any
from zoneinfo import ZoneInfo

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from sensors.simulator import Scenario

from .config import Config
from .configfile import parse_config
from .daemon import Daemon
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


def describe(event: dict[str, Any], zone: ZoneInfo) -> str:
    """One line of the demo's timeline for an event."""
    def local(text: str | None) -> str:
        if not text:
            return "-"
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(zone).strftime(
            "%a %H:%M")

    kind = event["type"]
    formats: dict[str, Callable[[dict[str, Any]], str]] = {
        "storm_started": lambda e: f"rain on {e['gauge']}",
        "storm_qualified": lambda e: f"{e['total_in']:.2f} in: inspect by {local(e['due'])} "
                                     "(§ 134-9A(2))",
        "storm_ended": lambda e: f"{e['total_in']:.2f} in in all",
        "turbidity_contrast": lambda e: f"{e['pair']} {e['state']}: +{e['delta_ntu']:g} NTU "
                                        f"(limit {e['limit_ntu']:g}) (§ 134-8C)",
        "trap_fill": lambda e: f"{e['trap']} at {e['fill_fraction']:.0%} of design volume",
        "trap_cleanout_required": lambda e: f"{e['trap']} at {e['fill_fraction']:.0%}: "
                                            "clean out (§ 134-9A(1))",
        "inspection_due_soon": lambda e: f"{e['clock']} inspection due {local(e['due'])}, "
                                         f"{e['hours_left']:g} h left",
        "inspection_overdue": lambda e: f"{e['clock']} inspection OVERDUE since "
                                        f"{local(e['due'])}",
        "inspection_recorded": lambda e: f"by {e['inspector']}",
        "sensor_stale": lambda e: f"{e['sensor']} silent since {local(e['last_seen'])}",
        "sensor_recovered": lambda e: f"{e['sensor']} reporting again",
        "battery_low": lambda e: f"{e['sensor']} at {e.get('battery_v', '?')} V",
        "clock_closed": lambda e: f"{e['clock']} clock {e['outcome']}",
    }
    details = formats.get(kind, _no_details)
    rev = f" (revision {event['revision']})" if event.get("revision") else ""
    return f"  [{local(event['at'])}] {kind:<24} {details(event)}{rev}"


def _no_details(event: dict[str, Any]) -> str:
    return ""


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
            if e["type"] == "storm_qualified" and e.get("due"):
                return datetime.fromisoformat(e["due"].replace("Z", "+00:00")).timestamp()
    return None


def _print_new(state: Path, printed: int, zone: ZoneInfo, out: IO[str]) -> int:
    if not (state / "stormwatch.db").exists():
        return printed
    with open_store(_state_only(state), readonly=True) as store:
        events = store.events.all()
    for e in events[printed:]:
        if e.get("retracted"):
            continue
        print(describe(e, zone), file=out, flush=True)
    return len(events)


def _state_only(state: Path) -> Config:
    return parse_config({"state_dir": str(state), "sites": [{"id": SITE}]}, env={})

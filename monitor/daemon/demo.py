"""``stormwatch demo``: a whole site in one terminal, no external service needed.

An embedded MQTT broker (amqtt, MQTT 3.1.1, in this process), the real daemon (journal,
engine, outbox, log book in a temporary state directory), and a simulated site run by
``stormwatch simulate`` (``sources/simulate.py``): the real node runtime (buffer,
``seq``, tip counter, ``status``, MQTT link) with simulated sensors
(``sensors/drivers/sim.py``), so the daemon receives what nodes would send. Time runs
``speed`` times faster than the wall clock (the daemon and the node take the same clock
by injection), so a storm, its 24-hour inspection clock, the reminders and the
inspection that closes it pass in about a minute. The demo replays the ``DEMO_HOURS``
that end as it starts (``demo_start_s``): what it records lies in the past of the wall
clock, so the commands and the field app run afterwards on the kept state see a
finished story (``demokept.py``). Its timeline prints in event-time order, each event
with the alerts it sent (``demotimeline.py``).

The storm is an SCS type II storm of 0.80 in over two hours, 30 minutes in: it crosses
0.50 in (§ 134-9A(2)) about an hour after it starts, muddies the outfall's downstream
probe while it is intense (§ 134-8C), and washes enough sediment into the trap to pass
50 % of its design volume (§ 134-9A(1)). A simulated qualified professional inspects
two hours before the deadline.

A configuration file is written beside the database (``stormwatch-demo.yaml``: the
commands in the alerts name it). With ``--keep`` or ``--state-dir`` the state directory
stays, with the field app's ``web:`` and people, and the demo ends with the commands
that explore it (``demokept.explore``).
"""

from __future__ import annotations

import asyncio
import logging
import math
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
import yaml
from paho.mqtt.enums import CallbackAPIVersion

from monitor.sources.simulate import Plan, Simulation
from sensors.config import SimStorm

from ..config import Config, SiteConfig
from ..config.file import parse_config
from ..contract.events import InspectionRecorded, StormQualified
from ..contract.times import parse_iso
from ..errors import EXIT_OK, UserError
from ..store.opening import open_store
from ..store.statedir import state_dir_problem
from .demokept import QP_NAME, QP_ROSTER, add_people, explore
from .demotimeline import SCHEME, Timeline, trail_s
from .demoweb import DemoWeb, wait_for_you, web_settings
from .loop import Daemon

SITE = "demo-meadows"
ZONE = "America/New_York"
#: The configuration written beside a kept database.
CONFIG_NAME = "stormwatch-demo.yaml"
#: Simulated hours the demo runs: the storm, its 24-hour clock, the inspection.
DEMO_HOURS = 30
#: How long the daemon may take to connect to the embedded broker (real seconds).
CONNECT_TIMEOUT_S = 20.0
#: The storm: depth (in), duration (h) and start (simulated seconds after the start).
STORM_IN, STORM_HOURS, STORM_AT_S = 0.80, 2.0, 30 * 60
#: Seconds between readings of each simulated sensor.
READ_EVERY_S = 60.0
#: Inches of sediment per inch of runoff in the trap: the sim driver's default (3)
#: barely moves a trap in one storm; 48 takes it from 15 % of its design depth
#: (7.2 in, 7 % of its volume) to 36 in (61 %), past the clean-out threshold.
TRAP_IN_PER_RUNOFF_IN = 48.0
#: Real seconds the simulated site may take to deliver its last readings.
DRAIN_S = 10.0
#: Real seconds between looks at the journal (at most; a simulated minute when shorter).
POLL_S = 0.25
log = logging.getLogger("stormwatch.demo")

#: The range of ``speed`` (simulated seconds per real second), from what the demo
#: is made of. The simulated node reads every sensor every simulated minute, and a
#: gauge or probe goes stale after 15 silent simulated minutes (the sediment
#: sensor after 30), so each reading must reach the engine within about 14
#: simulated minutes: 840 / speed real seconds (0.23 s at 3600), through the node's
#: buffer (a commit per read), the broker, the daemon's batch and its fsync'd
#: journal commit. The node's loop also has to take a simulated minute's readings
#: within the 60 / speed s that minute lasts (17 ms at 3600), or it falls further
#: behind (it catches up, never skips, but late readings look stale). The earlier
#: demo, publishing from a loop of its own, was measured on a shared 2-core
#: machine: clean at 14 400; at 20 000 the loop fell behind and over 100 false
#: ``sensor_stale`` followed; at 1e9 every reading was ``too_old`` (one
#: millisecond of delivery is then more than the 7-day lateness bound). 3600 (a
#: day in 24 s) keeps a margin for a busy or small machine such as a Raspberry
#: Pi. Below 1 the demo would run slower than real time (at 1 it already takes
#: its 30 hours).
MIN_SPEED, MAX_SPEED = 1.0, 3600.0
#: Even so, the demo runs the broker, the daemon, the node and the alerts' console
#: in one process: a quarter of a second of it busy elsewhere (a burst of alerts,
#: a snapshot) made every sensor stale at 3600 on a 2-core machine, and with
#: another process using a core the node falls behind by seconds before it
#: catches up. What the demo would then report as stale is the host's
#: scheduling, not the sensors. So its sensors go stale only after this many
#: real seconds of silence at any speed (``stale_after_minutes``): 15 minutes
#: up to a speed of 168, 301 minutes at 3600.
STALE_MARGIN_S = 5.0


class DemoError(UserError):
    """The demo cannot run as asked (a bad speed, an unusable state directory)."""


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

    def resume(self, speed: float) -> None:
        """Let frozen time run on at ``speed``."""
        self.start_s, self.speed, self._m0 = self(), speed, time.monotonic()

    def rate(self) -> float:
        """Simulated seconds per real second (0 once frozen): the node's loop sleeps by it."""
        return self.speed


def stale_after_minutes(speed: float) -> int:
    """The demo's ``stale_after_minutes`` of its gauge and probes at ``speed``: the
    usual 15, or more at high speeds, so that a reading may reach the engine up to
    ``STALE_MARGIN_S`` real seconds late without reading as a silence (the sediment
    sensor, read less often, gets twice as long)."""
    return max(15, math.ceil(STALE_MARGIN_S * speed / 60.0) + 1)


def demo_start_s(now_s: float, speed: float) -> int:
    """Where the demo's clock starts: ``DEMO_HOURS`` (and the poll's overshoot) before
    ``now_s``, on a quarter hour, so that it ends before the wall clock."""
    overshoot_s = POLL_S * speed + 15 * 60
    return int((now_s - DEMO_HOURS * 3600 - overshoot_s) // 900 * 900)


def demo_settings(port: int, state_dir: Path, speed: float = 1800.0,
                  web_port: int | None = None) -> dict[str, object]:
    """The demo's configuration as the YAML document it keeps (with the field app's
    ``web:`` when ``web_port`` is given, on the wall clock's durations)."""
    stale = stale_after_minutes(speed)
    web = {} if web_port is None else {"web": web_settings(state_dir, web_port)}
    return {**web,
        "broker": {"host": "127.0.0.1", "port": port, "client_id": "stormwatch-demo"},
        "state_dir": str(state_dir),
        "notify": {"targets": [{"url": "console://", "tags": ["qp", "officer", "ops"]}]},
        "sites": [{
            "id": SITE, "name": "Demo Meadows Subdivision", "address": "1 Demo Lane",
            "timezone": ZONE, "condition": "B", "qualified_professionals": [QP_ROSTER],
            "sensors": [
                {"id": "rg1", "kind": "rain", "in_per_tip": 0.01,
                 "stale_after_minutes": stale},
                {"id": "tb-up", "kind": "turbidity", "stale_after_minutes": stale},
                {"id": "tb-down", "kind": "turbidity", "stale_after_minutes": stale},
                {"id": "trap1-depth", "kind": "sediment", "stale_after_minutes": 2 * stale},
            ],
            "turbidity_pairs": [{"id": "outfall-1", "upstream": "tb-up",
                                 "downstream": "tb-down"}],
            "traps": [{"id": "trap-1", "sensor": "trap1-depth", "shape": "trapezoidal",
                       "bottom_length_ft": 20, "bottom_width_ft": 10, "side_slope": 2,
                       "design_depth_ft": 4}],
        }],
    }


def demo_config(port: int, state_dir: Path, speed: float = 1800.0,
                web_port: int | None = None) -> Config:
    """The configuration the demo runs: the kept one, but its alerts go to the timeline
    and the field app's links and sessions last as the demo's clock runs."""
    settings = demo_settings(port, state_dir, speed, web_port)
    settings["notify"] = {"targets": [{"url": f"{SCHEME}://", "tags": ["qp", "officer", "ops"]}]}
    web = settings.get("web")
    if isinstance(web, dict):
        web.update(link_hours=72 * speed, session_days=speed)
    return parse_config(settings, env={})


def write_demo_config(port: int, state_dir: Path, speed: float = 1800.0,
                      web_port: int | None = None) -> Path:
    """Write the demo's configuration beside its database, for the commands that read it."""
    path = state_dir / CONFIG_NAME
    header = ("# The configuration of a `stormwatch demo` run, written beside its database so\n"
              "# that status, logbook, report, user and web can read what it recorded. The\n"
              "# broker was the demo's own (gone with it); its clock replayed past hours.\n")
    try:
        path.write_text(header + yaml.safe_dump(
            demo_settings(port, state_dir.resolve(), speed, web_port), sort_keys=False),
            encoding="utf-8")
    except OSError as exc:
        raise DemoError(f"--state-dir: cannot write {path}: {exc.strerror or exc}") from None
    return path


def demo_plan(config: Config, start_s: int, speed: float) -> Plan:
    """The simulated site: ``DEMO_HOURS`` from ``start_s``, the storm, the demo's trap."""
    site = config.site(SITE)
    assert site is not None  # demo_settings has it
    storm = SimStorm(depth_in=STORM_IN, hours=STORM_HOURS, type="II", start_s=start_s + STORM_AT_S)
    return Plan(float(start_s), float(start_s + DEMO_HOURS * 3600), speed, READ_EVERY_S,
                storm=storm, sites=(site,), seed=0,
                overrides={"trap1-depth": {"sediment_in_per_runoff_in": TRAP_IN_PER_RUNOFF_IN}})


def check_demo(speed: float, state_dir: Path | None) -> None:
    """Refuse a speed outside ``MIN_SPEED``..``MAX_SPEED`` or an unusable state directory
    before anything starts (``DemoError``, one line)."""
    if not MIN_SPEED <= speed <= MAX_SPEED:  # NaN too
        why = ("faster, the simulated readings reach the daemon after their sensors count "
               "as stale (false sensor_stale) or too old (too_old)" if speed > MAX_SPEED
               else "slower, the demo would run slower than real time" if speed < MIN_SPEED
               else "it is not a number")
        raise DemoError(f"--speed: {speed:g} is outside {MIN_SPEED:g} to {MAX_SPEED:g}: {why}")
    if state_dir is not None:
        problem = state_dir_problem(state_dir, write=True, create=True)
        if problem is not None:
            raise DemoError(f"--state-dir: {problem}")


def run_demo(out: IO[str] = sys.stdout, *, speed: float = 1800.0, keep: bool = False,
             state_dir: Path | None = None, inspect_yourself: bool = False) -> int:
    """Run the demo to the end (about a minute at the default speed): 0, or 1 when the
    simulated site could not deliver its readings; ``DemoError`` before anything
    starts when it cannot run as asked. The field app runs too (``demoweb.py``);
    with ``inspect_yourself`` the storm inspection is yours, from its form."""
    check_demo(speed, state_dir)
    for name in ("amqtt", "transitions", "asyncio", "stormwatch.ingest", "sensors"):
        logging.getLogger(name).setLevel(logging.ERROR)
    owned = state_dir is None
    state = Path(tempfile.mkdtemp(prefix="stormwatch-demo-")) if state_dir is None else state_dir
    port, web_port = free_port(), free_port()
    written = write_demo_config(port, state, speed, web_port)  # the alerts' commands name it
    add_people(state, SITE)
    broker = EmbeddedBroker(port).start()
    start_s = demo_start_s(time.time(), speed)
    clock = DemoClock(start_s, speed)
    config = demo_config(port, state, speed, web_port=web_port)
    web = DemoWeb(config, clock)
    daemon = Daemon(config, clock=clock, tick_every_s=0.3, mqtt_protocol=mqtt.MQTTv311,
                    config_path=written)
    failure: list[BaseException] = []
    worker = threading.Thread(target=_run_daemon, args=(daemon, failure), name="demo-daemon",
                              daemon=True)
    plan = demo_plan(config, start_s, speed)
    said: list[str] = []  # what the simulation has to say: shown only when it failed
    site = Simulation(plan, config, clock=clock, drain_s=DRAIN_S, say=said.append,
                      mqtt_protocol=mqtt.MQTTv311)
    site_rc: list[int] = []
    nodes = threading.Thread(target=lambda: site_rc.append(site.run()), name="demo-site",
                             daemon=True)
    _introduce(out, plan, speed, port, state, config.sites[0])
    printed = 0
    try:
        worker.start()
        _wait_connected(daemon, worker, failure)
        print(f"stormwatch demo: the field app is at {web.url}; sign in with {web.start()}",
              file=out, flush=True)
        clock.restart()  # simulated time starts once the daemon listens
        nodes.start()
        printed = _follow(out, clock, plan, nodes, state, port, config.sites[0], speed,
                          inspect_yourself)
    finally:
        site.stop.set()
        if nodes.ident is not None:  # started
            nodes.join(timeout=20)
        web.stop()
        daemon.request_stop()
        worker.join(timeout=20)
        broker.stop()
        if owned and not keep:
            shutil.rmtree(state, ignore_errors=True)
    rc = site_rc[0] if site_rc else 1
    _done(out, rc, said, printed)
    if keep or not owned:
        print(explore(config, written, SITE, (start_s, int(plan.end_s)), ZoneInfo(ZONE)),
              file=out)
    return 0 if rc == EXIT_OK else 1


def _done(out: IO[str], rc: int, said: list[str], printed: int) -> None:
    """The last line, after what the simulated site had to say when it failed."""
    if rc != EXIT_OK:
        for line in said:
            if not line.startswith(("at ", "delivering, at ")):
                print(f"stormwatch demo: simulated site: {line}", file=out)
    print(f"stormwatch demo: done, {printed} events.", file=out)


def _introduce(out: IO[str], plan: Plan, speed: float, port: int, state: Path,
               site: SiteConfig) -> None:
    """The demo's first lines: the site, the hours it replays, the storm to come, and
    why the timeline trails the simulation (``demotimeline.py``)."""
    def local(at_s: float, fmt: str = "%a %H:%M") -> str:
        return datetime.fromtimestamp(at_s, tz=site.zone).strftime(fmt)

    storm_s = plan.start_s + STORM_AT_S
    print(f"stormwatch demo: site {SITE} ({site.name}), its node (the real runtime, "
          f"simulated sensors) reading {len(site.sensors)} sensors each minute; embedded "
          f"broker 127.0.0.1:{port}, state in {state}", file=out)
    print(f"stormwatch demo: replays {local(plan.start_s)} to {local(plan.end_s)} "
          f"({DEMO_HOURS} h) at {speed:g} times real time; a {STORM_IN:.2f} in storm "
          f"{local(storm_s)}-{local(storm_s + STORM_HOURS * 3600, '%H:%M')}", file=out)
    trail_h = trail_s(site, STALE_MARGIN_S * speed) / 3600
    print(f"stormwatch demo: each event prints in time order, with the alerts it sent, "
          f"{trail_h:.1f} simulated hours after it happened (a storm has ended only "
          f"after {site.rain.dry_gap_hours:g} dry hours)", file=out, flush=True)


def _follow(out: IO[str], clock: DemoClock, plan: Plan, nodes: threading.Thread,
            state: Path, port: int, site: SiteConfig, speed: float,
            inspect_yourself: bool = False) -> int:
    """Print the timeline about once a simulated minute until the plan ends; the
    qualified professional inspects two hours before the storm's due (or,
    ``inspect_yourself``, the clock waits there for you). The events printed."""
    timeline = Timeline(out, site)
    trail_ms = trail_s(site, STALE_MARGIN_S * speed) * 1000
    pub = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv311)
    pub.connect("127.0.0.1", port)
    pub.loop_start()
    inspected = False
    while clock() < plan.end_s and nodes.is_alive():
        time.sleep(min(60.0 / speed, POLL_S))  # about a simulated minute
        if not inspected:
            due = _storm_due(state)
            if due is not None and clock() >= due - 2 * 3600 and inspect_yourself:
                _show(timeline, state, clock() * 1000 - trail_ms)
                inspected = wait_for_you(clock, lambda: _inspected(state), lambda line: print(
                    line, file=out, flush=True), f"the form of {SITE}")
            elif due is not None and clock() >= due - 2 * 3600:
                ts = datetime.fromtimestamp(clock(), tz=site.zone).isoformat(timespec="seconds")
                pub.publish(f"stormwatch/v1/{SITE}/inspection",
                            (f'{{"inspector": "{QP_NAME}", "kind": "storm", '
                             f'"ts": "{ts}", "notes": "silt fence repaired"}}').encode(),
                            qos=1)
                inspected = True
        _show(timeline, state, clock() * 1000 - trail_ms)
    clock.freeze()
    nodes.join(DRAIN_S + 15)  # the site delivers its last readings, then stops
    time.sleep(1.0)  # they reach the journal, the last alerts their targets
    _show(timeline, state, math.inf)
    timeline.late_alerts()
    pub.loop_stop()
    pub.disconnect()
    return len(timeline.printed)


def _run_daemon(daemon: Daemon, failure: list[BaseException]) -> None:
    """The daemon's thread: what stops it early is kept for the demo to report in one
    line (a thread's exception would print a traceback, and the demo would wait on)."""
    try:
        if daemon.run() != 0:
            failure.append(RuntimeError("the daemon stopped (see the message above)"))
    except Exception as exc:  # reported by _wait_connected
        failure.append(exc)


def _wait_connected(daemon: Daemon, worker: threading.Thread,
                    failure: list[BaseException]) -> None:
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while not daemon.connected.wait(0.1):
        if not worker.is_alive():
            why = failure[0] if failure else RuntimeError("it stopped")
            raise DemoError(f"the daemon did not start: {why}")
        if time.monotonic() > deadline:
            raise DemoError(f"the daemon did not connect to the embedded broker within "
                            f"{CONNECT_TIMEOUT_S:.0f} s")


def _inspected(state: Path) -> bool:
    with open_store(_state_only(state), readonly=True) as store:
        return any(isinstance(e.body, InspectionRecorded) for e in store.events.current(SITE))


def _storm_due(state: Path) -> float | None:
    if not (state / "stormwatch.db").exists():
        return None
    cfg_state = state
    with open_store(_state_only(cfg_state), readonly=True) as store:
        for e in store.events.current(SITE):
            if isinstance(e.body, StormQualified) and e.body.due:
                return parse_iso(e.body.due) / 1000
    return None


def _show(timeline: Timeline, state: Path, until_ms: float) -> None:
    if (state / "stormwatch.db").exists():
        with open_store(_state_only(state), readonly=True) as store:
            timeline.show(store.events.all(), until_ms)


def _state_only(state: Path) -> Config:
    return parse_config({"state_dir": str(state), "sites": [{"id": SITE}]}, env={})

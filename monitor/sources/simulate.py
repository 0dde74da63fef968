"""``stormwatch simulate``: a daemon configuration's sites as simulated sensor nodes.

    stormwatch simulate --config stormwatch.yaml [--speed 600] [--storm-in 1.0]
        [--storm-hours 24] [--storm-type II] [--storm-at 1] [--hours H] [--every-s 60]
        [--start ISO] [--seed 0] [--site ID] [--buffer-dir DIR]

Each site of the daemon's configuration becomes one real node (``node.py``):
its sensors are simulated (``drivers/sim.py``: a design storm's tips, turbidity
rising with intensity, sediment growing with runoff), and everything after
them is the runtime a Raspberry Pi runs: the on-disk buffer, ``seq``, the rain
counter, ``status``, the MQTT link to the daemon's broker. So what the daemon
receives is what a node would send, and a broker that is down is handled as a
node handles it: readings stay in the buffer and go out when it is back.

Time. The simulated clock runs ``--speed`` times faster than the real one; the
node takes it as both its wall and its monotonic clock. The daemon refuses a
reading more than 5 minutes ahead of its own clock, or older than the site's
``lateness_days``, so by default the simulation starts in the past and ends at
the real now: it starts at now − span × (1 − 1/speed), which is now − span for a
fast run and now itself at ``--speed 1`` (a live site). A span that would make
the first readings too old is refused, as is a ``--start`` that would carry the
simulated clock past the real one. After the last reading the clock goes on at
real pace while the buffer drains.

Exit codes: 0 every reading delivered (PUBACK), 1 some were not (they are kept
in the buffer directory, which is then not removed), 2 bad usage or a bad
configuration (one line per problem).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import math
import random
import shutil
import signal
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from monitor.config import Config, SiteConfig
from monitor.config.file import load_config
from monitor.errors import EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE, UserError
from sensors.clock import BUILD_DATE, BUILD_EPOCH_S, iso_z
from sensors.config import NodeConfig, SimSensor, SimStorm
from sensors.drivers import Hardware
from sensors.drivers.csvfile import parse_ts_ms
from sensors.drivers.sim import SimClock, SimulatedClock, readings_between

from .simnodes import Totals, drive, totals

if TYPE_CHECKING:  # imported for a run only (``Simulation.run``): paho is not for --help
    from sensors.node import Node

#: Some readings were not acknowledged (the buffer directory is kept and named).
EXIT_UNDELIVERED: Final = EXIT_CHECK_FAILED

#: The daemon refuses readings this far ahead of its clock (sensors/README.md, "MQTT contract").
FUTURE_S: Final = 300.0
#: Age the first readings may reach below the site's lateness bound (delivery takes time).
LATENESS_MARGIN_S: Final = 600.0
#: Added to the default span after the storm's dry gap, so the storm's end is seen.
TAIL_H: Final = 0.25
#: Real seconds between progress lines, and before an unreachable broker is reported.
PROGRESS_S: Final = 5.0
UNREACHABLE_S: Final = 10.0
#: A probe below a site's discharge: NTU per in/h of recent intensity (muddy runoff);
#: an upstream one keeps ``SimSensor``'s small default (the stream's own response).
DOWNSTREAM_NTU_PER_IN_PER_H: Final = 120.0
#: Background turbidity of a stream, NTU: drawn per pair from this range.
BACKGROUND_NTU_RANGE: Final = (4.0, 15.0)
#: A trap's sediment before the storm, as a fraction of its design depth.
START_FILL_FRACTION: Final = 0.15
#: The simulated node's battery, volts (healthy; ``battery_low`` is below 3.5 V).
BATTERY_V: Final = 3.95
#: Readings per second when the backlog drains at real pace after the end.
DRAIN_RATE_PER_S: Final = 1000.0

log = logging.getLogger(__name__)


class SimulateError(UserError):
    """The simulation cannot run as asked; each arg is one line for the user."""


#: The numeric flags: name, type, default, help (see ``add_arguments`` for the rest).
FLAGS: Final[tuple[tuple[str, type, object, str], ...]] = (
    ("--speed", float, 1.0, "simulated seconds per real second (default 1: real time)"),
    ("--storm-in", float, 1.0, "depth of the design storm, inches (default 1.0; 0: dry)"),
    ("--storm-hours", float, 24.0, "its duration, hours (default 24)"),
    ("--storm-at", float, 1.0, "hours after the start when it begins (default 1)"),
    ("--hours", float, None, "simulated span, hours (default: storm-at + storm-hours + the "
                             "sites' longest dry_gap_hours + 0.25: the storm ends)"),
    ("--every-s", float, 60.0, "seconds between readings of each sensor (default 60)"),
    ("--seed", int, 0, "seeds the noise (default 0)"),
    ("--drain-s", float, 30.0, "real seconds to wait for deliveries after the end (default 30)"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``simulate``, and ``func`` to run it (``monitor/cli.py`` convention)."""
    parser.add_argument("--config", required=True, help="the daemon's YAML configuration")
    for name, kind, default, text in FLAGS:
        parser.add_argument(name, type=kind, default=default, help=text)
    parser.add_argument("--storm-type", choices=("II", "III"), default="II",
                        help="SCS 24-hour distribution (default II)")
    parser.add_argument("--start", help="simulated start, ISO 8601 with offset "
                        "(default: so that the simulation ends at the real now)")
    parser.add_argument("--site", action="append", help="only this site (repeatable)")
    parser.add_argument("--buffer-dir", help="the nodes' buffers (default: a temporary "
                        "directory, removed when everything was delivered)")
    parser.add_argument("--username", help="broker account of the nodes (default: anonymous)")
    parser.add_argument("--password-file", help="its password, in a file")
    parser.add_argument("--log-level", default="warning",
                        choices=("debug", "info", "warning", "error"))
    parser.set_defaults(func=run_args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stormwatch simulate",
        description="publish simulated readings for a daemon configuration's sites")
    add_arguments(parser)
    return parser


def _say(line: str) -> None:
    print(f"stormwatch simulate: {line}", file=sys.stderr, flush=True)


def run_args(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # A ConfigError or SimulateError goes to ``cli.main``, which prints it (exit 2).
    config = load_config(args.config)
    plan = make_plan(args, config, time.time())
    password = _password(args.password_file)
    return Simulation(plan, config, buffer_dir=args.buffer_dir, drain_s=args.drain_s,
                      username=args.username, password=password).run()


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Plan:
    """What to simulate: simulated Unix seconds ``start_s``..``end_s`` at ``speed``."""

    start_s: float
    end_s: float
    speed: float
    every_s: float
    storm: SimStorm | None
    sites: tuple[SiteConfig, ...]
    seed: int
    #: Sensor id → ``SimSensor`` fields that replace the derived ones (the demo's trap).
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def _positive(name: str, value: float, zero_ok: bool = False) -> None:
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
        raise SimulateError(f"{name}: must be a number {'≥' if zero_ok else '>'} 0, "
                            f"got {value:g}")


def make_plan(args: argparse.Namespace, config: Config, now_s: float) -> Plan:
    """Check the flags against the configuration and the clock (module docstring: Time)."""
    _positive("--speed", args.speed)
    _positive("--every-s", args.every_s)
    _positive("--storm-in", args.storm_in, zero_ok=True)
    _positive("--storm-hours", args.storm_hours)
    _positive("--storm-at", args.storm_at, zero_ok=True)
    _positive("--drain-s", args.drain_s, zero_ok=True)
    wanted = args.site or [s.id for s in config.sites]
    unknown = [s for s in wanted if config.site(s) is None]
    if unknown:
        raise SimulateError(f"--site: {', '.join(unknown)} not in {args.config}")
    sites = tuple(s for s in config.sites if s.id in wanted and s.sensors)
    if not sites:
        raise SimulateError(f"{args.config}: no site with sensors to simulate")
    if args.hours is None:
        gap_h = max(s.rain.dry_gap_hours for s in sites)
        hours = args.storm_at + args.storm_hours + gap_h + TAIL_H
    else:
        hours = args.hours
        _positive("--hours", hours)
    span_s = hours * 3600.0
    if args.start is None:
        start_s = math.floor(now_s - span_s * max(0.0, 1.0 - 1.0 / args.speed))
    else:
        start_ms = parse_ts_ms(args.start)
        if start_ms is None:
            raise SimulateError(f"--start: {args.start!r} is not ISO 8601 with an offset")
        start_s = start_ms / 1000
    end_s = start_s + span_s
    if start_s < BUILD_EPOCH_S:
        raise SimulateError(f"--start: {iso_z(round(start_s * 1000))} is before the node "
                            f"runtime's build date {BUILD_DATE}, whose clock check would "
                            "refuse the readings")
    # The simulated clock is furthest ahead of the real one at the end (speed ≥ 1)
    # or at the start (speed < 1).
    ahead_s = max(start_s - now_s, end_s - (now_s + span_s / args.speed))
    if ahead_s > FUTURE_S:
        latest = now_s - span_s * max(0.0, 1.0 - 1.0 / args.speed)
        raise SimulateError(f"--start: at speed {args.speed:g} the simulated clock would run "
                            f"{ahead_s / 60:.0f} min ahead of the real one, and the daemon "
                            "rejects readings from the future: start at "
                            f"{iso_z(math.floor(latest) * 1000)} or earlier")
    for site in sites:
        bound_s = site.lateness_days * 86400.0
        if now_s - start_s > bound_s - LATENESS_MARGIN_S:
            flag = f"--start {args.start}" if args.start else f"--hours {hours:g}"
            raise SimulateError(
                f"{flag}: the first readings would be {(now_s - start_s) / 3600:.1f}"
                f" h old, past site {site.id}'s lateness_days ({site.lateness_days:g}); the "
                "daemon would reject them as too old: simulate a shorter span or start later")
    storm = None if args.storm_in == 0 else SimStorm(
        depth_in=args.storm_in, hours=args.storm_hours, type=args.storm_type,
        start_s=start_s + args.storm_at * 3600.0)
    return Plan(start_s, end_s, args.speed, args.every_s, storm, sites, args.seed)


def _password(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        return Path(path).read_text(encoding="utf-8").rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise SimulateError(f"--password-file: cannot read {path}: "
                            f"{getattr(exc, 'strerror', None) or exc}") from None


def _seed(*parts: object) -> int:
    """A stable 63-bit seed of ``parts`` (not ``hash``: that changes between runs)."""
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def sensor_entries(site: SiteConfig, plan: Plan) -> list[dict[str, Any]]:
    """The simulated sensors of one site's node, from the daemon's view of the site."""
    downstream = {p.downstream for p in site.turbidity_pairs}
    background: dict[str, float] = {}
    for pair in site.turbidity_pairs:  # both probes of a pair see the same stream
        ntu = random.Random(_seed(plan.seed, site.id, pair.id)).uniform(*BACKGROUND_NTU_RANGE)
        background.setdefault(pair.upstream, ntu)
        background[pair.downstream] = background[pair.upstream]
    trap_depth_in = {t.sensor: t.design_depth_ft * 12.0 for t in site.traps}
    out: list[dict[str, Any]] = []
    for sensor in site.sensors:
        if sensor.kind not in SimSensor.KINDS:
            continue  # the simulator makes rain and what rain drives, no snow: left silent
        entry: dict[str, Any] = {
            "id": sensor.id, "kind": sensor.kind, "driver": "sim", "every_s": plan.every_s,
            "start_s": plan.start_s, "end_s": plan.end_s,
            "storm": plan.storm.model_dump() if plan.storm else None,
            "seed": _seed(plan.seed, site.id, sensor.id)}
        if sensor.kind == "rain":
            entry["in_per_tip"] = sensor.in_per_tip_value
        elif sensor.kind == "turbidity":
            entry["background_ntu"] = background.get(sensor.id) or random.Random(
                _seed(plan.seed, site.id, sensor.id)).uniform(*BACKGROUND_NTU_RANGE)
            entry["max_ntu"] = sensor.max_ntu_value
            if sensor.id in downstream:
                entry["ntu_per_in_per_h"] = DOWNSTREAM_NTU_PER_IN_PER_H
        else:
            entry["sensor_height_in"] = sensor.sensor_height_in
            if sensor.id in trap_depth_in:
                entry["sediment_start_in"] = START_FILL_FRACTION * trap_depth_in[sensor.id]
        out.append({**entry, **plan.overrides.get(sensor.id, {})})
    return out


def node_config(site: SiteConfig, plan: Plan, config: Config, buffer_dir: Path,
                username: str | None) -> NodeConfig:
    """The node of one site: the daemon's broker, a buffer in ``buffer_dir``, its sensors."""
    broker = config.broker
    tls = None
    if broker.tls is not None:
        if broker.tls.ca_file is None:
            raise SimulateError("broker.tls: the node runtime needs ca_file")
        tls = {"ca_file": broker.tls.ca_file}
    return NodeConfig.model_validate({
        "broker": {"host": broker.host, "port": broker.port, "tls": tls,
                   "client_id": f"stormwatch-simulate-{site.id}", "username": username,
                   # A simulated hour may pass in a second: retry a lost broker often.
                   "topic_prefix": broker.topic_prefix, "reconnect_max_s": 5},
        "site": site.id,
        "buffer": {"path": buffer_dir / f"{site.id}.db", "max_rate_per_s": DRAIN_RATE_PER_S,
                   "max_inflight": 100},
        "sensors": sensor_entries(site, plan),
    })


# --------------------------------------------------------------------------- the run


class Simulation:
    """The nodes of ``plan`` in threads, watched from the calling thread until delivered.

    ``clock`` (default ``SimClock`` of the plan) is simulated Unix seconds with a
    ``rate()``; ``stop.set()`` ends ``run`` early from another thread. ``say`` takes
    each line for the user (default: stderr); ``mqtt_protocol`` is the nodes' MQTT
    version (default v5; ``stormwatch demo``'s embedded amqtt speaks 3.1.1 only).
    """

    def __init__(self, plan: Plan, config: Config, *, buffer_dir: str | Path | None = None,
                 drain_s: float = 30.0, username: str | None = None,
                 password: str | None = None, clock: SimulatedClock | None = None,
                 say: Callable[[str], None] = _say, mqtt_protocol: int | None = None) -> None:
        self.plan, self.config = plan, config
        self.buffer_dir = Path(buffer_dir) if buffer_dir is not None else None
        self.drain_s, self.username, self.password = drain_s, username, password
        self.clock: SimulatedClock = clock or SimClock(plan.start_s, plan.end_s, plan.speed)
        self.say, self.mqtt_protocol = say, mqtt_protocol
        self.stop = threading.Event()
        self.errors: list[BaseException] = []

    def run(self) -> int:
        """Run every site's node until its readings are taken and delivered, a stop or a
        failure: ``EXIT_OK``, ``EXIT_USAGE`` (cannot start) or ``EXIT_UNDELIVERED``."""
        from sensors.node import MAX_SLEEP_S

        temporary = self.buffer_dir is None
        buffer_dir = self.buffer_dir or Path(tempfile.mkdtemp(prefix="stormwatch-sim-"))
        plan, clock = self.plan, self.clock
        try:
            nodes = self._nodes(buffer_dir)
        except (SimulateError, OSError, sqlite3.Error) as exc:
            self.say(f"cannot start: {exc}")
            return EXIT_USAGE
        dbs = [n.config.buffer.path for n in nodes]
        before = totals(dbs)
        expected = sum(readings_between(plan.start_s, plan.end_s, plan.every_s)
                       * len(n.config.sensors) for n in nodes)
        self._header(buffer_dir, expected)
        threads = [threading.Thread(target=drive, name=f"node-{n.config.site}", daemon=True,
                                    args=(n, clock, MAX_SLEEP_S, self.stop, self.errors))
                   for n in nodes]
        for thread in threads:
            thread.start()
        saved: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():  # SIGINT, SIGTERM: stop
            saved = {n: signal.signal(n, lambda *_: self.stop.set())
                     for n in (signal.SIGINT, signal.SIGTERM)}
        try:
            self._watch(nodes, dbs, before.taken + expected)
        finally:
            for signum, handler in saved.items():
                signal.signal(signum, handler)
        self.stop.set()
        for thread in threads:
            thread.join(10)
        return self._finish(nodes, dbs, buffer_dir, temporary)

    def _nodes(self, buffer_dir: Path) -> list[Node]:
        """A node runtime per site, its buffer in ``buffer_dir``; on a failure the nodes
        made so far are closed and the error raised."""
        from sensors.link import MqttLink  # paho only for a run, not for --help
        from sensors.node import Node

        plan, clock = self.plan, self.clock
        nodes: list[Node] = []
        try:
            buffer_dir.mkdir(parents=True, exist_ok=True)
            for site in plan.sites:
                cfg = node_config(site, plan, self.config, buffer_dir, self.username)
                link = None if self.mqtt_protocol is None else MqttLink(
                    cfg, self.password, cfg.buffer.max_inflight,
                    extra_queue=2 * len(cfg.sensors), protocol=self.mqtt_protocol)
                # The readings run on the simulated clock; the confirmations wait for the
                # daemon, which answers in real seconds: on the simulated clock (3600 times
                # faster in the demo) a reading unconfirmed for 33 ms was sent again and
                # half a second without one fell back to PUBACK, over and over, and on a
                # loaded machine the floods left readings undelivered.
                nodes.append(Node(cfg, password=self.password, link=link,
                                  hardware=Hardware(monotonic=clock), wall=clock,
                                  monotonic=clock, battery_v=lambda: BATTERY_V,
                                  confirm_clock=time.monotonic))
        except (SimulateError, OSError, sqlite3.Error):
            for node in nodes:
                node.close(drain_s=0)
            raise
        return nodes

    def _finish(self, nodes: Sequence[Node], dbs: Sequence[Path], buffer_dir: Path,
                temporary: bool) -> int:
        """Close the nodes and say how it went: what was not delivered, and why."""
        connected = all(n.link.connected for n in nodes)
        refused = sum(n.forwarder.refused for n in nodes)
        for node in nodes:
            node.close(drain_s=1.0)
        last = totals(dbs)
        for failure in self.errors[:1]:
            log.debug("a node failed", exc_info=failure)
            self.say(f"a node failed: {type(failure).__name__}: {failure}")
        self._progress(last, final=True)
        if last.buffered or self.errors:
            why = (f"the broker refused {refused}: its ACL? (--username of a node account that "
                   "may publish every sensor of the site)" if refused else
                   "stopped early" if connected else "the broker was unreachable")
            self.say(f"{last.buffered} readings not delivered ({why}); they are kept in "
                     f"{buffer_dir}")
            return EXIT_UNDELIVERED
        if temporary:
            shutil.rmtree(buffer_dir, ignore_errors=True)
        return EXIT_OK

    def _header(self, buffer_dir: Path, expected: int) -> None:
        plan, broker = self.plan, self.config.broker
        span_h = (plan.end_s - plan.start_s) / 3600
        storm = ("dry" if plan.storm is None else
                 f"a {plan.storm.depth_in:g} in type {plan.storm.type} storm over "
                 f"{plan.storm.hours:g} h from {iso_z(round(plan.storm.start_s * 1000))}")
        self.say(f"{', '.join(s.id for s in plan.sites)}: {span_h:g} h from "
             f"{iso_z(round(plan.start_s * 1000))} to {iso_z(round(plan.end_s * 1000))} at "
             f"speed {plan.speed:g} ({span_h * 3600 / plan.speed:.0f} s), {storm}; "
             f"{expected} readings to {broker.host}:{broker.port}; buffers in {buffer_dir}")

    def _progress(self, now: Totals, final: bool = False) -> None:
        plan, clock = self.plan, self.clock
        sim_s = min(clock(), plan.end_s)
        dropped = f", {now.dropped} dropped" if now.dropped else ""
        state = "done" if final else "at" if clock() < plan.end_s else "delivering, at"
        self.say(f"{state} {iso_z(math.floor(sim_s) * 1000)} "
             f"({(sim_s - plan.start_s) / 3600:.1f} of {(plan.end_s - plan.start_s) / 3600:g} h):"
             f" {now.taken} readings taken, {now.delivered} delivered, {now.buffered} buffered"
             f"{dropped}")

    def _watch(self, nodes: Sequence[Node], dbs: Sequence[Path], goal_taken: int) -> None:
        """Until every reading is taken and acknowledged, a stop, a node's failure, or
        ``--drain-s`` without a delivery after the end."""
        real = time.monotonic
        progress_at = moved_at = real()
        down_since: float | None = None
        said_down_at = -math.inf
        now = totals(dbs)
        while not self.stop.wait(0.1) and not self.errors:
            was, now = now, totals(dbs)
            if now.delivered != was.delivered:
                moved_at = real()
            if now.taken >= goal_taken:
                if now.buffered == 0:
                    break
                if real() - moved_at > self.drain_s:
                    break
            else:
                moved_at = real()  # the drain timeout counts from the last reading taken
            if all(n.link.connected for n in nodes):
                down_since = None
            elif down_since is None:
                down_since = real()
            elif real() - down_since >= UNREACHABLE_S and real() - said_down_at >= 60:
                said_down_at = real()
                self.say(f"broker {self.config.broker.host}:{self.config.broker.port} unreachable "
                     f"for {real() - down_since:.0f} s: the readings wait in the buffers "
                     f"({now.buffered} now) and go out when it is back")
            if real() - progress_at >= PROGRESS_S:
                progress_at = real()
                self._progress(now)


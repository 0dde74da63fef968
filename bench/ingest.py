#!/usr/bin/env python3
"""Benchmark "drain": how fast the daemon empties a backlog of readings held by the broker.

The situation is the one monitor/README.md, "Architecture" is built for: the daemon was down (an
upgrade, a reboot) while the sensor nodes went on publishing, and Mosquitto
kept every QoS 1 message in the daemon's persistent session. When the daemon
comes back, how long until every one of those readings is in the journal
*and* applied by the engine?

Each trial, on a fresh Mosquitto (the shipped deployment's limits: unlimited
queue guarded by ``max_queued_bytes``, 1000 in flight, persistence) and a
fresh state directory:

1. ``stormwatch run`` starts once, so the broker has its persistent session
   and subscriptions, and is stopped with SIGTERM; the two bare paho
   subscribers (the baselines, below) make their own persistent sessions;
2. ``--readings`` readings (default 200 000) from ``--sites`` × ``--sensors-per-site``
   sensors (default 100 × 10: per site 2 rain gauges publishing ``tips_total``,
   6 turbidity probes in 3 upstream/downstream pairs, 2 sediment sensors over
   2 traps) are published once at QoS 1, every PUBACK awaited; the broker
   queues them for every session. The readings are one a minute per sensor,
   ending a minute before the first trial starts (so a few hours in the past,
   well within the 7-day lateness bound); a quarter of the gauges see a storm
   that qualifies and a fifth of the turbidity pairs an exceedance, so the
   engine has real work. Publishing is not part of any timing below; its
   duration is printed once, for reference;
3. the three drains run one after the other (their order rotates between
   trials, ``ORDERS``):

   * **daemon**: ``stormwatch run`` starts again; this script polls the
     daemon's database read-only every 50 ms until every reading is
     journaled (``journal`` rows of kind ``reading``, plus rejects in
     ``dead_letters``, which must be none) and applied (``meta.applied_seq``
     at or past the last of them). The time is reported from the process
     start (interpreter start-up, imports, engine restore and connection
     included) and from the daemon's "connected to" log line;
   * **bare**: a paho-mqtt 2.x client that does what the daemon's MQTT side
     does and nothing else: MQTT v5, clean start off with a session expiry,
     QoS 1 subscriptions to ``stormwatch/v1/+/+/reading`` and ``.../status``,
     ``manual_ack=True``, max inflight 1000, each message acknowledged as
     it arrives. Its time runs from its CONNACK to the last message;
   * **bare 3.1.1**: the fastest a paho consumer goes: MQTT 3.1.1,
     ``clean_session=False`` (the 3.1.1 flag that keeps the session and its
     backlog), the same QoS 1 subscriptions, paho's default automatic
     acknowledgements, nothing done with the message. Timed the same way.

Then "where the time goes": ``stages.py`` runs the same messages through the
daemon's own loop (``Daemon._turn``) in this process, with timers on its
stages, once after each trial's drains (median per stage); and during the daemon's
drain this script samples the CPU time of the daemon's process, its MQTT
process and the broker (``/proc``), so the part the in-process loop does not
explain is measured too.

Reading the output: one row per trial with the three drain times and rates, and
``daemon/v5`` and ``daemon/3.1.1``, the daemon's rate (from "connected to") as a fraction of
each bare client's rate (from CONNACK) *in the same trial*, then the medians.
Absolute rates move with the load on the (shared) machine; the ratio mostly
does not, and it is the number to compare over time. ``x v5`` (``x 3.1.1``) is the same
ratio the other way round: how many times longer the daemon took; both
against the v5 client and against the 3.1.1 one, whose rate is the ceiling
for a Python paho consumer on this machine. See ``bench/README.md``.

    .venv/bin/python bench/ingest.py                  # 200 000 readings, 3 trials
    .venv/bin/python bench/ingest.py --readings 20000 --trials 1 --keep
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import harness
import paho.mqtt.client as mqtt
import stages
from harness import (
    PREFIX,
    DaemonError,
    DaemonProcess,
    JournalProbe,
    Publisher,
    Workspace,
    log_time,
    median,
    mqtt_client,
    progress,
    wait_for_subscription,
)
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

DAEMON_CLIENT_ID = "stormwatch-bench"
BARE_CLIENT_ID = "bare-bench"
BARE_V311_CLIENT_ID = "bare-v311-bench"
SESSION_EXPIRY_S = 168 * 3600  # the daemon's default broker.session_expiry_hours
POLL_S = 0.05
STALL_S = 120.0  # no progress for this long: something is wrong, give up
APPLIED_GRACE_S = 30.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

#: Sensor kinds of a site, repeated for more than ten: 2 gauges, 6 probes, 2 sediment.
KIND_CYCLE = ("rain", "turbidity", "turbidity", "sediment", "turbidity",
              "rain", "turbidity", "turbidity", "sediment", "turbidity")
PREFIX_OF = {"rain": "rg", "turbidity": "tb", "sediment": "sd"}


# ----------------------------------------------------------------------------- the sites


@dataclass(frozen=True)
class Sensor:
    site: str
    id: str
    kind: str

    @property
    def topic(self) -> str:
        return f"{PREFIX}/{self.site}/{self.id}/reading"


@dataclass
class Site:
    id: str
    sensors: list[Sensor] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[Sensor]:
        return [s for s in self.sensors if s.kind == kind]

    def pairs(self) -> list[tuple[Sensor, Sensor]]:
        probes = self.of_kind("turbidity")
        return [(probes[i], probes[i + 1]) for i in range(0, len(probes) - 1, 2)]


def make_sites(n_sites: int, per_site: int) -> list[Site]:
    sites = []
    for i in range(n_sites):
        site = Site(f"site-{i:04d}")
        counts: dict[str, int] = {}
        for j in range(per_site):
            kind = KIND_CYCLE[j % len(KIND_CYCLE)]
            counts[kind] = counts.get(kind, 0) + 1
            site.sensors.append(Sensor(site.id, f"{PREFIX_OF[kind]}{counts[kind]}", kind))
        sites.append(site)
    return sites


def write_config(path: Path, port: int, state_dir: Path, sites: list[Site]) -> None:
    """The daemon's configuration: every site and sensor, nothing stale, no notify, no influx.

    JSON is YAML, and needs no YAML writer.
    """
    stale = 30 * 24 * 60  # minutes: nothing goes stale during a trial
    config: dict[str, Any] = {
        "broker": {"host": "127.0.0.1", "port": port, "client_id": DAEMON_CLIENT_ID},
        "state_dir": str(state_dir),
        "log_format": "json",
        "sites": [],
    }
    for site in sites:
        sensors: list[dict[str, Any]] = []
        for s in site.sensors:
            entry: dict[str, Any] = {"id": s.id, "kind": s.kind, "stale_after_minutes": stale}
            if s.kind == "rain":
                entry["in_per_tip"] = 0.01
            sensors.append(entry)
        config["sites"].append({
            "id": site.id,
            "timezone": "America/New_York",
            "condition": "B",
            "rain": {"threshold_in": 0.5, "mode": "event_total"},
            "sensors": sensors,
            "turbidity_pairs": [{"id": f"pair{k + 1}", "upstream": up.id, "downstream": down.id}
                                for k, (up, down) in enumerate(site.pairs())],
            "traps": [{"id": f"trap{k + 1}", "sensor": s.id, "shape": "trapezoidal",
                       "bottom_length_ft": 20, "bottom_width_ft": 10, "side_slope": 2,
                       "design_depth_ft": 4}
                      for k, s in enumerate(site.of_kind("sediment"))],
        })
    path.write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")


# ----------------------------------------------------------------------------- the readings


def make_readings(sites: list[Site], total: int, end_s: int, seed: int = 2026
                  ) -> list[tuple[str, bytes]]:
    """``total`` readings, one a minute per sensor up to ``end_s``, in time order.

    Gauges publish their counter every minute (dry ones too, sensors/README.md, "MQTT contract");
    a quarter of them get a storm of 0.6 to 1.5 in that qualifies. Probes
    read 6 to 10 NTU, the downstream one a little more; a fifth of the pairs
    exceed the contrast limit for half an hour. Sediment creeps upward with
    noise. Every reading carries ``seq``; every tenth a ``battery_v``.
    """
    rng = random.Random(seed)
    sensors = [s for site in sites for s in site.sensors]
    per, extra = divmod(total, len(sensors))
    out: list[tuple[int, str, bytes]] = []
    downstream = {down.id: up.id for site in sites for up, down in site.pairs()}
    for index, sensor in enumerate(sensors):
        count = per + (1 if index < extra else 0)
        if count == 0:
            continue
        offset = index % 60  # sensors of a site do not all publish in the same second
        first = end_s - (count - 1) * 60 - offset
        storm = sensor.kind == "rain" and rng.random() < 0.25
        exceed = sensor.id in downstream and rng.random() < 0.2
        storm_from, storm_len = rng.randrange(max(1, count // 2)), rng.randint(60, 120)
        tips = rng.randrange(5000)
        background = rng.uniform(6, 10)
        depth = rng.uniform(6, 14)
        for k in range(count):
            body: dict[str, Any] = {"ts": first + k * 60, "seq": k + 1}
            if sensor.kind == "rain":
                if storm and storm_from <= k < storm_from + storm_len:
                    tips += rng.choice((0, 1, 1, 1, 2))
                body["tips_total"] = tips
            elif sensor.kind == "turbidity":
                ntu = background + rng.gauss(0, 0.4)
                if sensor.id in downstream:
                    ntu += 1.0 + (25.0 if exceed and count // 3 <= k < count // 3 + 30 else 0)
                body["ntu"] = round(max(ntu, 0.0), 2)
            else:
                body["depth_in"] = round(max(depth + k * 0.002 + rng.gauss(0, 0.2), 0.0), 2)
            if k % 10 == 0:
                body["battery_v"] = 3.9
            out.append((body["ts"], sensor.topic, json.dumps(body, separators=(",", ":"))
                        .encode()))
    out.sort(key=lambda m: m[0])
    return [(topic, payload) for _, topic, payload in out]


# ----------------------------------------------------------------------------- the baseline


class BareSubscriber:
    """The daemon's MQTT side and nothing else (see the module docstring)."""

    def __init__(self, port: int, client_id: str) -> None:
        self.port = port
        self.client_id = client_id
        self.count = 0
        self.expected = 0
        self.connack_s = 0.0
        self.done_s = 0.0
        self.session_present: bool | None = None
        self.last_message_s = 0.0
        self._subscribed = threading.Event()
        self._connected = threading.Event()
        self._done = threading.Event()

    def _client(self) -> Any:
        client = self._new_client()
        client.max_inflight_messages_set(1000)
        client.on_connect = self._on_connect
        client.on_subscribe = self._on_subscribe
        client.on_message = self._on_message
        return client

    def _new_client(self) -> Any:
        return mqtt_client(self.client_id, manual_ack=True)

    def _connect(self, client: Any) -> None:
        props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        props.SessionExpiryInterval = SESSION_EXPIRY_S
        client.connect("127.0.0.1", self.port, keepalive=60, clean_start=False,
                       properties=props)

    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason: Any,
                    properties: Any) -> None:
        self.connack_s = time.time()
        self.session_present = bool(getattr(flags, "session_present", False))
        self._connected.set()

    def _on_subscribe(self, client: Any, userdata: Any, mid: int, reasons: Any,
                      properties: Any) -> None:
        self._subscribed.set()

    def _on_message(self, client: Any, userdata: Any, msg: Any) -> None:
        client.ack(msg.mid, msg.qos)
        self.count += 1
        self.last_message_s = time.time()
        if self.count >= self.expected and not self._done.is_set():
            self.done_s = self.last_message_s
            self._done.set()

    def create_session(self) -> None:
        """Connect, subscribe (SUBACK awaited), disconnect: the broker now queues for us."""
        client = self._client()
        self.expected = 1 << 62
        self._connect(client)
        client.loop_start()
        try:
            if not self._connected.wait(10):
                raise TimeoutError("bare subscriber: no CONNACK")
            client.subscribe([(f"{PREFIX}/+/+/reading", 1), (f"{PREFIX}/+/+/status", 1)])
            if not self._subscribed.wait(10):
                raise TimeoutError("bare subscriber: no SUBACK")
        finally:
            client.disconnect()
            client.loop_stop()

    def drain(self, expected: int) -> tuple[float, float, float]:
        """(connect call, CONNACK, last message) as epoch seconds."""
        self.count, self.expected = 0, expected
        self._connected.clear()
        self._done.clear()
        client = self._client()
        start = time.time()
        self._connect(client)
        client.loop_start()
        try:
            if not self._connected.wait(10):
                raise TimeoutError("bare subscriber: no CONNACK")
            if not self.session_present:
                raise RuntimeError("bare subscriber: the broker lost its session")
            self.last_message_s = time.time()
            while not self._done.wait(1.0):
                if time.time() - self.last_message_s > 30:
                    raise TimeoutError(f"bare subscriber: {self.count:,} of {expected:,} "
                                       "messages, then nothing for 30 s (dropped by the broker?)")
        finally:
            client.disconnect()
            client.loop_stop()
        return start, self.connack_s, self.done_s


class BareV311Subscriber(BareSubscriber):
    """The fastest paho consumer: MQTT 3.1.1, paho's automatic acknowledgements.

    ``manual_ack`` off (paho's default: the PUBACK is written as the message
    is handled, before ``on_message`` returns), no v5 properties to decode.
    ``clean_session=False``: on 3.1.1 that flag is what keeps the session, and
    its backlog, while the client is away (a clean session would find nothing
    queued). Same subscriptions at QoS 1 and the same queued messages.
    """

    def _new_client(self) -> Any:
        return mqtt.Client(CallbackAPIVersion.VERSION2, client_id=self.client_id,
                           protocol=mqtt.MQTTv311, clean_session=False)

    def _connect(self, client: Any) -> None:
        client.connect("127.0.0.1", self.port, keepalive=60)

    def _on_message(self, client: Any, userdata: Any, msg: Any) -> None:
        self.count += 1
        self.last_message_s = time.time()
        if self.count >= self.expected and not self._done.is_set():
            self.done_s = self.last_message_s
            self._done.set()


# ----------------------------------------------------------------------------- the daemon


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (``/proc/PID/task/*/children``)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            continue
        for kid in kids:
            out += [kid, *children(kid)]
    return out


@dataclass(frozen=True)
class CpuSample:
    """At ``at`` (epoch s): CPU seconds of the daemon's own process, its children (the
    MQTT process), and the broker."""

    at: float
    loop: float
    child: float
    broker: float


def cpu_sample(daemon_pid: int, broker_pid: int | None) -> CpuSample:
    return CpuSample(time.time(), cpu_s(daemon_pid),
                     sum(cpu_s(k) for k in children(daemon_pid)),
                     cpu_s(broker_pid) if broker_pid is not None else 0.0)


@dataclass
class DaemonDrain:
    started_s: float
    connected_s: float
    restored_s: float
    journaled_s: float
    #: When ``meta.applied_seq`` reached the last reading; None if it did not within
    #: ``APPLIED_GRACE_S`` of the journal being complete (see ``done_s``).
    applied_s: float | None
    rejected: int
    #: CPU seconds (loop process, MQTT child, broker) and, as ``at``, wall seconds from
    #: the first sample after "connected to" to the end of the drain.
    cpu: CpuSample | None = None

    @property
    def done_s(self) -> float:
        return self.applied_s if self.applied_s is not None else self.journaled_s

    @property
    def from_start(self) -> float:
        return self.done_s - self.started_s

    @property
    def from_connected(self) -> float:
        return self.done_s - self.connected_s


def daemon_drain(config_path: Path, log_path: Path, db_path: Path, expected: int,
                 log_level: str, broker_pid: int | None = None) -> DaemonDrain:
    """Start the daemon and poll its database until every reading is journaled and applied.

    "Applied" is read from ``meta.applied_seq``, which the daemon writes with
    what it records; should it stay behind the last reading for
    ``APPLIED_GRACE_S`` after the journal is complete, the trial is reported
    with the journal time and flagged (the engine applies a batch right after
    committing it, but the position may not be persisted yet).
    """
    probe = JournalProbe(db_path)
    base = probe.max_seq()
    daemon = DaemonProcess(config_path, log_path, log_level).start()
    journaled: float | None = None
    applied: float | None = None
    assert daemon.proc is not None
    pid = daemon.proc.pid  # setpriv execs the interpreter: the same pid
    samples: list[CpuSample] = []
    try:
        last_change, last_seen = time.monotonic(), (-1, -1)
        last = 0
        while True:
            time.sleep(POLL_S)
            daemon.check_alive()
            samples.append(cpu_sample(pid, broker_pid))
            top, applied_seq = probe.max_seq(), probe.applied_seq()
            if journaled is None:
                if (top, applied_seq) != last_seen:
                    last_change, last_seen = time.monotonic(), (top, applied_seq)
                elif time.monotonic() - last_change > STALL_S:
                    n, _ = probe.readings(base)
                    raise DaemonError(
                        f"no progress for {STALL_S:g} s at {n:,} of {expected:,} readings "
                        f"(journal max seq {top}, applied_seq {applied_seq}); log tail:\n"
                        f"{daemon.log_tail()}")
                if top - base + probe.dead_letters() < expected:
                    continue  # cheap: journal seqs can have gaps, never too few
                n, last = probe.readings(base)
                if n + probe.dead_letters() < expected:
                    continue
                journaled = time.time()
                applied_seq = probe.applied_seq()  # read again: it was read before the count
            if applied_seq >= last:
                applied = time.time()
                break
            if time.time() - journaled > APPLIED_GRACE_S:
                progress(f"meta.applied_seq stayed at {applied_seq} < {last} (the last "
                         f"reading) for {APPLIED_GRACE_S:g} s after the journal was complete")
                break
        connected = daemon.find_log("connected to")
        restored = daemon.find_log("engine restored")
        if connected is None or restored is None:
            raise DaemonError("no 'connected to' / 'engine restored' line in the daemon's log")
        if "session resumed" not in str(connected.get("msg")):
            raise DaemonError(f"the daemon's session was not resumed: {connected.get('msg')}")
        samples.append(cpu_sample(pid, broker_pid))
        since = [c for c in samples if c.at >= log_time(connected)]
        cpu = None
        if len(since) >= 2:
            a, b = since[0], since[-1]
            cpu = CpuSample(b.at - a.at, b.loop - a.loop, b.child - a.child, b.broker - a.broker)
        return DaemonDrain(daemon.started_s, log_time(connected), log_time(restored), journaled,
                           applied, probe.dead_letters(), cpu)
    finally:
        daemon.stop()
        probe.close()


# ----------------------------------------------------------------------------- one trial


@dataclass
class Trial:
    order: str
    preload_s: float
    daemon: DaemonDrain
    bare_connect_s: float
    bare_s: float
    #: The MQTT 3.1.1 auto-ack client: connect call -> CONNACK, CONNACK -> last message.
    v311_connect_s: float
    v311_s: float


#: Which drain goes first, second, third: rotated between trials, so none is always
#: the one that meets a broker warm from the one before.
ORDERS = (("bare", "v311", "daemon"), ("daemon", "v311", "bare"), ("v311", "daemon", "bare"))


def run_trial(number: int, workspace: Workspace, sites: list[Site],
              messages: list[tuple[str, bytes]], queued_bytes: int,
              order: tuple[str, ...], log_level: str) -> Trial:
    tdir = workspace.path / f"trial-{number}"
    tdir.mkdir()
    progress(f"trial {number}: starting Mosquitto")
    mosquitto = harness.broker(workspace, f"trial-{number}/mosquitto", queued_bytes)
    state = tdir / "state"
    config_path, log_path = tdir / "stormwatch.yaml", tdir / "daemon.log"
    write_config(config_path, mosquitto.port, state, sites)

    progress(f"trial {number}: first `stormwatch run` (creates the persistent session)")
    first = DaemonProcess(config_path, log_path, log_level).start()
    try:
        first.wait_log("connected to", timeout_s=60)
        wait_for_subscription(mosquitto, DAEMON_CLIENT_ID, f"{PREFIX}/+/inspection")
    finally:
        rc = first.stop()
    if rc != 0:
        raise DaemonError(f"`stormwatch run` exited {rc} on SIGTERM; log:\n{first.log_tail()}")
    bare = BareSubscriber(mosquitto.port, BARE_CLIENT_ID)
    bare.create_session()
    v311 = BareV311Subscriber(mosquitto.port, BARE_V311_CLIENT_ID)
    v311.create_session()

    progress(f"trial {number}: publishing {len(messages):,} readings at QoS 1")
    publisher = Publisher(mosquitto.port, "bench-publisher")
    try:
        start = time.perf_counter()
        publisher.publish_all(messages)
        publisher.wait_acked(timeout_s=300)
        preload_s = time.perf_counter() - start
    finally:
        publisher.close()
    progress(f"trial {number}: preloaded in {preload_s:.1f} s "
             f"({len(messages) / preload_s:,.0f} msg/s)")

    def run_bare() -> tuple[float, float]:
        progress(f"trial {number}: bare subscriber draining")
        call, connack, done = bare.drain(len(messages))
        return connack - call, done - connack

    def run_v311() -> tuple[float, float]:
        progress(f"trial {number}: bare 3.1.1 auto-ack subscriber draining")
        call, connack, done = v311.drain(len(messages))
        return connack - call, done - connack

    def run_daemon() -> DaemonDrain:
        progress(f"trial {number}: daemon draining")
        return daemon_drain(config_path, log_path, state / "stormwatch.db", len(messages),
                            log_level, mosquitto.pid)

    results: dict[str, Any] = {}
    for name in order:
        results[name] = {"bare": run_bare, "v311": run_v311, "daemon": run_daemon}[name]()
    drain = results["daemon"]
    bare_connect, bare_s = results["bare"]
    v311_connect, v311_s = results["v311"]
    progress(f"trial {number}: daemon {drain.from_connected:.2f} s from connected, "
             f"bare v5 {bare_s:.2f} s, bare 3.1.1 {v311_s:.2f} s")
    mosquitto.stop()
    return Trial(order[0], preload_s, drain, bare_connect, bare_s, v311_connect, v311_s)


# ----------------------------------------------------------------------------- report


def report(trials: list[Trial], n: int, breakdown: stages.Breakdown | None) -> None:
    def rate(seconds: float) -> float:
        return n / seconds if seconds > 0 else float("nan")

    head = (f"{'trial':<6}{'first':<8}{'daemon s':>9}{'from conn':>10}{'msg/s':>9}"
            f"{'v5 s':>8}{'msg/s':>9}{'3.1.1 s':>8}{'msg/s':>9}"
            f"{'daemon/v5':>10}{'x v5':>6}{'daemon/3.1.1':>13}{'x 3.1.1':>8}")
    print(head)
    ratios, ratios311 = [], []
    for i, t in enumerate(trials, 1):
        d_rate, b_rate, v_rate = (rate(t.daemon.from_connected), rate(t.bare_s),
                                  rate(t.v311_s))
        ratios.append(d_rate / b_rate)
        ratios311.append(d_rate / v_rate)
        print(f"{i:<6}{t.order:<8}{t.daemon.from_start:>9.2f}"
              f"{t.daemon.from_connected:>10.2f}{d_rate:>9,.0f}{t.bare_s:>8.2f}{b_rate:>9,.0f}"
              f"{t.v311_s:>8.2f}{v_rate:>9,.0f}"
              f"{ratios[-1]:>10.3f}{1 / ratios[-1]:>6.1f}{ratios311[-1]:>13.3f}"
              f"{1 / ratios311[-1]:>8.1f}")
    d_med = median([t.daemon.from_connected for t in trials])
    b_med = median([t.bare_s for t in trials])
    v_med = median([t.v311_s for t in trials])
    r_med, r311_med = median(ratios), median(ratios311)
    print(f"{'median':<14}{median([t.daemon.from_start for t in trials]):>9.2f}{d_med:>10.2f}"
          f"{rate(d_med):>9,.0f}{b_med:>8.2f}{rate(b_med):>9,.0f}{v_med:>8.2f}"
          f"{rate(v_med):>9,.0f}{r_med:>10.3f}{1 / r_med:>6.1f}{r311_med:>13.3f}"
          f"{1 / r311_med:>8.1f}")
    ratio = (f"ratio: drain of {n:,} readings: the daemon {r_med:.3f} of the bare paho client's "
             f"rate (v5, manual ack; daemon {rate(d_med):,.0f} msg/s from connected), "
             f"median of {len(trials)} trial(s)")
    ratio311 = (f"ratio: drain of {n:,} readings: the daemon {r311_med:.3f} of a bare paho "
                f"3.1.1 auto-ack client's rate ({rate(v_med):,.0f} msg/s), median of "
                f"{len(trials)} trial(s)")
    startup = median([t.daemon.connected_s - t.daemon.started_s for t in trials])
    restore = median([t.daemon.restored_s - t.daemon.started_s for t in trials])
    print(f"\ndaemon start-up (median): process start -> 'engine restored' {restore:.2f} s, "
          f"-> 'connected to' {startup:.2f} s; bare connect -> CONNACK v5 "
          f"{median([t.bare_connect_s for t in trials]) * 1000:.0f} ms, 3.1.1 "
          f"{median([t.v311_connect_s for t in trials]) * 1000:.0f} ms")
    lag = [t.daemon.applied_s - t.daemon.journaled_s for t in trials
           if t.daemon.applied_s is not None]
    if lag:
        print(f"journal complete -> applied_seq caught up (median): {median(lag) * 1000:.0f} ms "
              f"(the poll interval is {POLL_S * 1000:.0f} ms)")
    unseen = [i for i, t in enumerate(trials, 1) if t.daemon.applied_s is None]
    if unseen:
        print(f"WARNING: trial(s) {', '.join(map(str, unseen))}: meta.applied_seq did not reach "
              f"the last reading within {APPLIED_GRACE_S:g} s of the journal being complete; "
              "their daemon times are to the complete journal")
    rejected = sum(t.daemon.rejected for t in trials)
    if rejected:
        print(f"WARNING: the daemon rejected {rejected} reading(s) (dead letters); "
              "the benchmark's readings should all be valid")
    shares: tuple[float, float, float] | None = None
    cpus = [t.daemon.cpu for t in trials if t.daemon.cpu is not None and t.daemon.cpu.at > 0]
    if cpus:
        wall = median([c.at for c in cpus])
        loop, child, brk = (median([getattr(c, k) / c.at for c in cpus])
                            for k in ("loop", "child", "broker"))
        print(f"CPU during the daemon's drain (from connected; median share of one core, "
              f"{os.cpu_count()} cores): the daemon's loop process {loop:.0%}, its MQTT "
              f"process {child:.0%}, the broker {brk:.0%} (over {wall:.1f} s)")
        shares = (loop, child, brk)
    if breakdown is not None:
        where_it_goes(breakdown, d_med / n * 1e6, b_med / n * 1e6, v_med / n * 1e6, shares)
    print(ratio)
    print(ratio311)


def where_it_goes(b: stages.Breakdown, daemon_us: float, v5_us: float, v311_us: float,
                  shares: tuple[float, float, float] | None) -> None:
    """The daemon's time per message (median drain) split by stage: the main loop's
    stages measured in process (``stages.py``), the rest what that leaves."""
    print(f"\nwhere the time goes: the daemon's {daemon_us:.1f} us/msg (median drain, from "
          f"connected) against the bare 3.1.1 client's {v311_us:.1f}; the loop's stages "
          f"timed in process on the same {b.messages:,} messages (stages.py: Daemon._turn "
          f"with timers, one pass after each trial's drains, median of {b.runs}, "
          f"{b.wall_s:.1f} s each)")
    print(f"{'stage':<40}{'us/msg':>8}{'share':>8}")
    for stage in stages.STAGES:
        print(f"{'  ' + stage:<40}{b.us(stage):>8.1f}{b.us(stage) / daemon_us:>8.0%}")
    loop = b.total_us
    print(f"{'the loop in process (sum)':<40}{loop:>8.1f}{loop / daemon_us:>8.0%}")
    rest = daemon_us - loop
    print(f"{'not in the loop in process':<40}{rest:>8.1f}{rest / daemon_us:>8.0%}"
          "  (the MQTT child and the broker on the same 2 cores, waiting for input)")
    print(f"{'  for reference: bare v5 manual ack':<40}{v5_us:>8.1f}{v5_us / daemon_us:>8.0%}"
          "  (the MQTT child's floor, runs beside the loop)")
    print(f"{'  for reference: bare 3.1.1 auto-ack':<40}{v311_us:>8.1f}"
          f"{v311_us / daemon_us:>8.0%}")
    print(f"{'  snapshot write (writer thread)':<40}{b.writer_s / b.messages * 1e6:>8.1f}"
          f"{b.writer_s / b.messages * 1e6 / daemon_us:>8.0%}  (beside the loop)")
    if shares is None:
        return
    loop_cpu, child_cpu, broker_cpu = (share * daemon_us for share in shares)
    for label, us in (("CPU: the loop process", loop_cpu), ("CPU: the MQTT process", child_cpu),
                      ("CPU: the broker", broker_cpu)):
        print(f"{'  ' + label:<40}{us:>8.1f}{us / daemon_us:>8.0%}  (measured in the drain)")
    busiest = "the MQTT process" if child_cpu >= loop_cpu else "the loop process"
    print(f"bound by: {busiest} ({max(shares[:2]):.0%} of a core during the drain); the MQTT "
          f"process spends {child_cpu:.1f} us/msg, the bare v5 manual-ack client "
          f"{v5_us:.1f}, the bare 3.1.1 auto-ack one {v311_us:.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--readings", type=int, default=200_000)
    parser.add_argument("--sites", type=int, default=100)
    parser.add_argument("--sensors-per-site", type=int, default=10)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--keep", action="store_true",
                        help="keep the temp dirs (configs, daemon logs, databases)")
    parser.add_argument("--no-breakdown", dest="breakdown", action="store_false",
                        help="skip timing the daemon's stages in process (stages.py)")
    parser.add_argument("--log-level", default="info",
                        help="the daemon's --log-level (default info)")
    args = parser.parse_args(argv)
    if min(args.readings, args.sites, args.sensors_per_site, args.trials) < 1:
        parser.error("--readings, --sites, --sensors-per-site and --trials must be positive")

    harness.install_sigterm()
    sites = make_sites(args.sites, args.sensors_per_site)
    n_sensors = sum(len(s.sensors) for s in sites)
    progress(f"generating {args.readings:,} readings")
    messages = make_readings(sites, args.readings, int(time.time()) - 60)
    payload_bytes = sum(len(p) + len(t) for t, p in messages)
    # All three sessions hold every message until they drain; leave room beyond that.
    queued_bytes = max(harness.BROKER_QUEUED_BYTES, 6 * payload_bytes)

    per_sensor = args.readings / n_sensors
    print(f"drain: {args.readings:,} QoS 1 readings from {n_sensors:,} sensors at "
          f"{args.sites:,} sites ({per_sensor:.0f} per sensor, one a minute, the last "
          f"{per_sensor / 60:.1f} h), preloaded into persistent sessions on "
          f"{harness.broker_version()}; {args.trials} trial(s)")
    if queued_bytes != harness.BROKER_QUEUED_BYTES:
        print(f"max_queued_bytes raised to {queued_bytes:,} for this backlog")
    sys.stdout.flush()

    trials: list[Trial] = []
    passes: list[stages.Breakdown] = []
    with Workspace("stormwatch-bench-ingest-", args.keep) as workspace:
        try:
            for i in range(args.trials):
                trials.append(run_trial(i + 1, workspace, sites, messages, queued_bytes,
                                        order=ORDERS[i % len(ORDERS)],
                                        log_level=args.log_level))
                if args.breakdown:
                    # Right after the trial's drains: the machine's load as they had it.
                    progress(f"trial {i + 1}: timing the daemon's stages in process on the "
                             f"same {len(messages):,} messages")
                    tdir = workspace.path / f"trial-{i + 1}"
                    passes.append(stages.measure(tdir / "stormwatch.yaml", messages,
                                                 tdir / "stages-state"))
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
        except (DaemonError, TimeoutError, RuntimeError) as exc:
            workspace.keep = True  # the logs and databases say what went wrong
            print(f"error: {exc}", file=sys.stderr)
            return 1
    preload = [t.preload_s for t in trials]
    print(f"preloading (publish at QoS 1 from one paho client, every PUBACK awaited, queued "
          f"for all three sessions): median {median(preload):.1f} s "
          f"({args.readings / median(preload):,.0f} msg/s); runs "
          + " ".join(f"{s:.1f}" for s in preload) + "\n")
    breakdown = stages.median_of(passes) if passes else None
    if breakdown is not None and breakdown.journaled < len(messages):
        print(f"WARNING: the in-process run journaled {breakdown.journaled:,} of "
              f"{len(messages):,} messages")
    report(trials, args.readings, breakdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Running the real daemon in tests: a subprocess, a bulk publisher, database probes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from monitor.store import Store

ROOT = Path(__file__).resolve().parents[2]
SITE = "branch-meadows"
PREFIX = "stormwatch/v1"

CONFIG = """\
broker: {{host: 127.0.0.1, port: {port}, client_id: {client_id}}}
state_dir: {state}
{sections}sites:
  - id: branch-meadows
    name: {name}
{address}    timezone: America/New_York
    condition: B
    sensors:
      - {{id: rg1, kind: rain, in_per_tip: 0.01, stale_after_minutes: 600}}
      - {{id: tb-up, kind: turbidity, stale_after_minutes: 600}}
      - {{id: tb-down, kind: turbidity, stale_after_minutes: 600}}
      - {{id: trap1-depth, kind: sediment, stale_after_minutes: 600}}
    turbidity_pairs: [{{id: outfall-1, upstream: tb-up, downstream: tb-down}}]
    traps:
      - {{id: trap-1, sensor: trap1-depth, shape: trapezoidal, bottom_length_ft: 20,
         bottom_width_ft: 10, side_slope: 2, design_depth_ft: 4}}
"""


def write_config(tmp_path: Path, port: int, client_id: str = "stormwatch-test", *,
                 sections: str = "", address: str | None = None,
                 name: str = "Branch Meadows Subdivision") -> Path:
    """``stormwatch.yaml`` in ``tmp_path`` for the daemon: the broker on ``port``, state in
    ``tmp_path/state``, the one site (with ``address`` if given).

    ``sections`` is more top-level YAML (``notify:``, ``influx:``), whole lines.
    """
    path = tmp_path / "stormwatch.yaml"
    path.write_text(CONFIG.format(port=port, client_id=client_id, state=tmp_path / "state",
                                  sections=sections, name=name,
                                  address="" if address is None else f"    address: {address}\n"))
    return path


def wait_until(condition: Callable[[], Any], timeout_s: float = 30.0, what: str = "condition",
               interval_s: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(interval_s)


class DaemonProcess:
    """``stormwatch run`` as a child process, with its log in a file."""

    def __init__(self, config_path: Path, env: dict[str, str] | None = None) -> None:
        self.config_path = config_path
        self.log_path = config_path.parent / "daemon.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.env = env or {}

    def start(self, *, wait_connected: bool = True, new_session: bool = False
              ) -> DaemonProcess:
        """Start it; unless ``wait_connected`` is False (a broker that is down or comes
        late), wait until it has connected. ``new_session``: in a session (and process
        group) of its own, as a terminal's foreground job is, for ``killpg``."""
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "monitor.cli", "run", "--config", str(self.config_path),
             "--log-level", "debug"], stdout=log, stderr=log, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), **self.env},
            start_new_session=new_session)
        log.close()
        if not wait_connected:
            return self
        offset = self.log_path.stat().st_size
        wait_until(lambda: "connected to" in self.log_text()[offset - 200 if offset > 200 else 0:]
                   or self.proc is None or self.proc.poll() is not None, 20,
                   "the daemon to connect")
        assert self.proc.poll() is None, self.log_text()
        return self

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(30)
        self.proc = None
        return rc

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.proc = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None


class FakeClock:
    """The wall clock of a daemon run under libfaketime: its real code, with the time
    the test sets (``set``), which then runs on at real speed.

    Only the wall clock is faked (``FAKETIME_DONT_FAKE_MONOTONIC``): Python's
    timed waits are measured on the monotonic clock and would hang on a faked
    one. libfaketime 0.9.10 then fails ``time.sleep`` (EINVAL); the daemon's
    own path never sleeps (paho does only while reconnecting).
    """

    LIBRARIES = ("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                 "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
                 "/usr/lib/faketime/libfaketimeMT.so.1")

    def __init__(self, path: Path, start_ms: int) -> None:
        self.path = path
        self.set(start_ms)

    @classmethod
    def library(cls) -> str | None:
        return next((lib for lib in cls.LIBRARIES if os.path.exists(lib)), None)

    def set(self, ts_ms: int) -> None:
        """From now on the daemon's ``time.time()`` reads ``ts_ms`` and runs on from there."""
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts_ms // 1000))
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(f"@{stamp}\n")
        tmp.replace(self.path)  # never a half-written file for the daemon to read

    def env(self) -> dict[str, str]:
        lib = self.library()
        assert lib is not None, "libfaketime is not installed (Debian package faketime)"
        return {"LD_PRELOAD": lib, "FAKETIME_TIMESTAMP_FILE": str(self.path),
                "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1", "TZ": "UTC"}


class Daemons(list[DaemonProcess]):
    """The daemons a test started; ``close()`` (or leaving the ``with``) closes them all."""

    def start(self, config_path: Path) -> DaemonProcess:
        daemon = DaemonProcess(config_path).start()
        self.append(daemon)
        return daemon

    def close(self) -> None:
        for daemon in self:
            daemon.close()

    def __enter__(self) -> Daemons:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Publisher:
    """One QoS 1 MQTT v5 connection publishing many messages."""

    def __init__(self, port: int) -> None:
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
        self.client.max_inflight_messages_set(200)
        self.client.connect("127.0.0.1", port, keepalive=30)
        self.client.loop_start()

    def send(self, topic: str, payload: Mapping[str, Any] | bytes) -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(dict(payload)).encode()
        info = self.client.publish(topic, body, qos=1)
        info.wait_for_publish(timeout=30)
        assert info.is_published(), f"not acknowledged: {topic}"

    def send_many(self, messages: Sequence[tuple[str, Mapping[str, Any] | bytes]]) -> None:
        infos = []
        for topic, payload in messages:
            body = payload if isinstance(payload, bytes) else json.dumps(dict(payload)).encode()
            infos.append(self.client.publish(topic, body, qos=1))
        for info in infos:
            info.wait_for_publish(timeout=60)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def reading_topic(sensor: str) -> str:
    return f"{PREFIX}/{SITE}/{sensor}/reading"


def counter_storm(start_s: int, minutes: int, storm_from: int, storm_tips: int
                  ) -> list[tuple[str, dict[str, Any]]]:
    """The gauge's counter every minute; one tip a minute from ``storm_from`` on."""
    out: list[tuple[str, dict[str, Any]]] = []
    total = 0
    for m in range(minutes):
        if storm_from <= m < storm_from + storm_tips:
            total += 1
        out.append((reading_topic("rg1"), {"ts": start_s + m * 60, "tips_total": total}))
    return out


def store_of(config_path: Path) -> Store:
    return Store(config_path.parent / "state" / "stormwatch.db", readonly=True)


def journal_count(config_path: Path) -> int:
    db = config_path.parent / "state" / "stormwatch.db"
    if not db.exists():
        return 0
    with Store(db, readonly=True) as store:
        return store.journal.count()


def ticked_after_input(config_path: Path) -> bool:
    """Whether the daemon's engine has ticked since it applied the newest journaled
    reading or inspection (what the daemon records at each tick: ``tick_applied_seq``)."""
    db = config_path.parent / "state" / "stormwatch.db"
    if not db.exists():
        return False
    with Store(db, readonly=True) as store:
        ticked = store.state.meta_get("tick_applied_seq")
        (newest,) = store.db.conn.execute(
            "SELECT max(seq) FROM journal WHERE kind != 'tick'").fetchone()
    return ticked is not None and newest is not None and int(ticked) >= newest


def events_of(config_path: Path, kind: str) -> list[dict[str, Any]]:
    db = config_path.parent / "state" / "stormwatch.db"
    if not db.exists():
        return []
    with Store(db, readonly=True) as store:
        return [e.to_json() for e in store.events.current() if e.type == kind]


def cli(*args: str, timeout_s: float = 60, env: Mapping[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "monitor.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=timeout_s,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def frozen_clock(ts_ms: int) -> dict[str, str]:
    """The environment of a command whose wall clock stands still at ``ts_ms`` (libfaketime):
    for outputs that say "now" (a report's "at the time of this report", ``status``), so
    two runs minutes apart on a loaded machine can be compared."""
    lib = FakeClock.library()
    assert lib is not None, "libfaketime is not installed (Debian package faketime)"
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts_ms // 1000))
    return {"LD_PRELOAD": lib, "FAKETIME": stamp, "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "TZ": "UTC"}


class Background(threading.Thread):
    """Run a callable in a thread and re-raise its exception on ``join``."""

    def __init__(self, fn: Callable[[], None]) -> None:
        super().__init__(daemon=True)
        self.fn = fn
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.fn()
        except BaseException as exc:  # reported by join_checked
            self.error = exc

    def join_checked(self, timeout_s: float = 120) -> None:
        self.join(timeout_s)
        if self.error is not None:
            raise self.error


def last_tick_ms(config_path: Path) -> int | None:
    """When the daemon's engine last ticked (meta ``tick_ms``); None before its first tick."""
    db = config_path.parent / "state" / "stormwatch.db"
    if not db.exists():
        return None
    with Store(db, readonly=True) as store:
        ticked = store.state.meta_get("tick_ms")
    return None if ticked is None else int(ticked)


def ticked_after_input_since(config_path: Path, tick_before: int | None) -> bool:
    """``ticked_after_input`` by a tick other than ``tick_before`` (``last_tick_ms`` read
    before the daemon was started): a tick of this run, not one an earlier run recorded.

    The engine ticks only after its start-up replay, and records a tick's events
    (with their outbox rows) before the tick itself, so once this holds, this run
    has applied every journaled input and recorded the events it and the tick caused.
    """
    ticked = last_tick_ms(config_path)
    return ticked is not None and ticked != tick_before and ticked_after_input(config_path)


def outbox_settled(config_path: Path) -> bool:
    """No alert is left to send: no recorded event waits for its outbox rows (a
    backlog's deferral, ``EventLog.deferred_count``) and no outbox row is pending.

    Recorded events only: wait for ``ticked_after_input_since`` first, so that the
    events the journal can still cause are recorded.
    """
    db = config_path.parent / "state" / "stormwatch.db"
    if not db.exists():
        return False
    with Store(db, readonly=True) as store:
        return store.events.deferred_count() == 0 and store.outbox.summary().pending == 0

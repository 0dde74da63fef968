"""Shared plumbing of ``bench/ingest.py`` and ``bench/latency.py`` (not a benchmark itself).

The benchmarks treat the daemon as a black box, because its internals are
being changed: they talk to it only through its command line (``python -m
monitor.cli run --config FILE``), its configuration file, MQTT, its log (JSON
lines, for millisecond timestamps) and read-only SQL on its database
(``state_dir/stormwatch.db``, tables ``journal``, ``dead_letters`` and
``meta``). Everything they start lives in one temp dir and is stopped and
removed on exit, on an exception, on Ctrl-C and on SIGTERM.

What is here:

* ``Workspace``: the temp dir, and the list of things to stop;
* ``broker``: a ``tests.support.services.Mosquitto`` with the shipped deployment's
  limits (``deploy/mosquitto/stormwatch.conf``: unlimited queue guarded by
  ``max_queued_bytes``, 1000 in flight, persistence with a 60 s autosave);
* ``DaemonProcess``: ``stormwatch run`` as a child in its own session, killed
  with us (``setpriv --pdeathsig``) even if this script is SIGKILLed;
* ``JournalProbe``: the cheap read-only queries used to poll progress;
* ``Publisher``: a paho client that keeps at most ``window`` QoS 1 messages
  unacknowledged (see its docstring for why not paho's own inflight limit);
* a few statistics helpers (median, nearest-rank percentile).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the test suite's services and receivers
    sys.path.insert(0, str(ROOT))

import paho.mqtt.client as mqtt  # noqa: E402
from paho.mqtt.enums import CallbackAPIVersion  # noqa: E402

from tests.support.services import MOSQUITTO, Mosquitto  # noqa: E402

PREFIX = "stormwatch/v1"
#: The shipped Mosquitto configuration's limits (deploy/mosquitto/stormwatch.conf).
BROKER_INFLIGHT = 1000
BROKER_AUTOSAVE_S = 60
BROKER_QUEUED_BYTES = 100 * 1024 * 1024


def progress(message: str) -> None:
    """A progress line on stderr (stdout carries only the results)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def install_sigterm() -> None:
    """SIGTERM (and SIGHUP) unwinds like Ctrl-C, so every ``finally`` cleans up."""
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGHUP, _raise_interrupt)


class Workspace:
    """A temp dir and the things started in it; ``close()`` stops them (newest first)
    and removes the dir unless ``keep``."""

    def __init__(self, prefix: str, keep: bool) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=prefix))
        self.keep = keep
        self._closers: list[Callable[[], None]] = []

    def on_close(self, closer: Callable[[], None]) -> None:
        self._closers.append(closer)

    def close(self) -> None:
        while self._closers:
            closer = self._closers.pop()
            try:
                closer()
            except Exception as exc:  # keep cleaning up
                progress(f"cleanup: {type(exc).__name__}: {exc}")
        if self.keep:
            progress(f"kept {self.path}")
        else:
            shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def broker(workspace: Workspace, name: str, queued_bytes: int = BROKER_QUEUED_BYTES
           ) -> Mosquitto:
    """A started Mosquitto in ``workspace/name``, stopped by ``workspace.close()``."""
    mosquitto = Mosquitto(workspace.path / name, autosave_interval_s=BROKER_AUTOSAVE_S,
                          max_queued_messages=0, max_queued_bytes=queued_bytes,
                          max_inflight_messages=BROKER_INFLIGHT)
    workspace.on_close(mosquitto.close)
    return mosquitto.start()


def broker_version() -> str:
    out = subprocess.run([MOSQUITTO, "-h"], capture_output=True, text=True)
    first = (out.stdout or out.stderr).splitlines()
    return first[0].strip() if first else "mosquitto"


def wait_for_subscription(mosquitto: Mosquitto, client_id: str, topic: str,
                          timeout_s: float = 20.0) -> None:
    """Until the broker logged ``client_id``'s subscription to ``topic`` (its SUBACK is sent)."""
    needle = f"{client_id} 1 {topic}"
    wait_until(lambda: needle in mosquitto.log_text(), timeout_s,
               f"the broker to log the subscription {needle!r}")


def wait_until(condition: Callable[[], Any], timeout_s: float, what: str,
               interval_s: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(interval_s)


# --------------------------------------------------------------------------- the daemon


class DaemonError(RuntimeError):
    """The daemon exited or did not do what it had to."""


class DaemonProcess:
    """``python -m monitor.cli run --config FILE`` with its log (JSON lines) in a file.

    The configuration must set ``log_format: json``: the log's millisecond
    timestamps place the daemon's own steps ("connected to", events,
    deliveries) on the same wall clock as this script's measurements.
    """

    def __init__(self, config_path: Path, log_path: Path, log_level: str = "info") -> None:
        self.config_path = config_path
        self.log_path = log_path
        self.log_level = log_level
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_s = 0.0
        self.log_offset = 0

    def start(self) -> DaemonProcess:
        argv = [sys.executable, "-m", "monitor.cli", "run", "--config", str(self.config_path),
                "--log-level", self.log_level]
        setpriv = shutil.which("setpriv")
        if setpriv is not None and threading.current_thread() is threading.main_thread():
            argv = [setpriv, "--pdeathsig", "KILL", "--", *argv]
        self.log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            self.started_s = time.time()
            # Own session: a Ctrl-C at the terminal reaches this script only, which
            # then stops the daemon itself (SIGTERM, the way systemd does).
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         cwd=ROOT, start_new_session=True,
                                         env={**os.environ, "PYTHONPATH": str(ROOT)})
        return self

    def check_alive(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            rc = None if self.proc is None else self.proc.returncode
            raise DaemonError(f"the daemon exited ({rc}); log tail:\n{self.log_tail()}")

    def log_lines(self) -> list[dict[str, Any]]:
        """This start's log lines, parsed (anything that is not JSON is skipped)."""
        if not self.log_path.exists():
            return []
        with self.log_path.open("rb") as f:
            f.seek(self.log_offset)
            text = f.read().decode("utf-8", errors="replace")
        lines = []
        for raw in text.splitlines():
            with contextlib.suppress(ValueError):
                entry = json.loads(raw)
                if isinstance(entry, dict):
                    lines.append(entry)
        return lines

    def log_tail(self, lines: int = 30) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def find_log(self, needle: str) -> dict[str, Any] | None:
        """The first log line of this start whose message contains ``needle``."""
        for entry in self.log_lines():
            if needle in str(entry.get("msg", "")):
                return entry
        return None

    def wait_log(self, needle: str, timeout_s: float = 30.0) -> dict[str, Any]:
        def seen() -> dict[str, Any] | None:
            self.check_alive()
            return self.find_log(needle)
        found: dict[str, Any] = wait_until(seen, timeout_s, f"the daemon to log {needle!r}")
        return found

    def stop(self, timeout_s: float = 120.0) -> int | None:
        """SIGTERM (drain, snapshot, exit 0) and wait; SIGKILL after ``timeout_s``."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                return proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                progress(f"the daemon did not exit within {timeout_s:g} s of SIGTERM; killed")
                proc.kill()
        return proc.wait()

    def close(self) -> None:
        """For cleanup paths: a short SIGTERM grace, then SIGKILL."""
        self.stop(timeout_s=10.0)


def log_time(entry: dict[str, Any]) -> float:
    """Epoch seconds of a JSON log line's ``ts`` (``2026-05-09T07:35:25.123Z``)."""
    return datetime.fromisoformat(str(entry["ts"]).replace("Z", "+00:00")).timestamp()


class JournalProbe:
    """Read-only SQL on the daemon's database, cheap enough to run every 50 ms.

    Only ``max(seq)`` (the rowid, O(1)) and ``meta.applied_seq`` are read on
    every poll; the counts, which scan, only once the cheap numbers say the
    end may have come.
    """

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self._conn: sqlite3.Connection | None = None

    def _connection(self) -> sqlite3.Connection | None:
        if self._conn is None:
            if not self.db_path.exists():
                return None
            self._conn = sqlite3.connect(f"{self.db_path.resolve().as_uri()}?mode=ro", uri=True,
                                         isolation_level=None, timeout=5.0)
            self._conn.execute("PRAGMA query_only = ON")
        return self._conn

    def _one(self, sql: str, params: Sequence[Any] = ()) -> int:
        conn = self._connection()
        if conn is None:
            return 0
        row = conn.execute(sql, tuple(params)).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def max_seq(self) -> int:
        return self._one("SELECT max(seq) FROM journal")

    def applied_seq(self) -> int:
        return self._one("SELECT value FROM meta WHERE key = 'applied_seq'")

    def readings(self, after_seq: int = 0) -> tuple[int, int]:
        """(number, highest seq) of the journaled readings after ``after_seq``."""
        conn = self._connection()
        if conn is None:
            return 0, 0
        n, top = conn.execute("SELECT count(*), max(seq) FROM journal WHERE seq > ? AND"
                              " kind = 'reading'", (after_seq,)).fetchone()
        return int(n), int(top or 0)

    def readings_of(self, sensor: str) -> int:
        return self._one("SELECT count(*) FROM journal WHERE kind = 'reading' AND sensor = ?",
                         (sensor,))

    def dead_letters(self) -> int:
        return self._one("SELECT count(*) FROM dead_letters")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


# --------------------------------------------------------------------------- MQTT clients


def mqtt_client(client_id: str, **kwargs: Any) -> mqtt.Client:
    return mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5,
                       **kwargs)


class Publisher:
    """One MQTT v5 connection publishing at QoS 1 with at most ``window`` messages unacked.

    paho's own inflight limit (``max_inflight_messages_set``) walks every
    message it holds on each PUBACK, which makes a 200 000-message burst
    quadratic; so paho's limit is off (0) and this class keeps the window
    itself, blocking ``publish`` while it is full. The window must not
    exceed the broker's Receive Maximum (its ``max_inflight_messages``).
    """

    def __init__(self, port: int, client_id: str, window: int = BROKER_INFLIGHT) -> None:
        self.client = mqtt_client(client_id)
        self.client.max_inflight_messages_set(0)
        self.client.max_queued_messages_set(0)
        self._slots = threading.Semaphore(window)
        self._acked = 0
        self._failed = 0
        self._sent = 0
        self._cond = threading.Condition()
        self._connected = threading.Event()
        self.client.on_connect = self._on_connect
        self.client.on_publish = self._on_publish
        self.client.connect("127.0.0.1", port, keepalive=60)
        self.client.loop_start()
        if not self._connected.wait(10):
            self.close()
            raise TimeoutError(f"publisher {client_id}: no CONNACK within 10 s")

    def _on_connect(self, c: mqtt.Client, userdata: Any, flags: Any, reason: Any,
                    properties: Any) -> None:
        if not reason.is_failure:
            self._connected.set()

    def _on_publish(self, c: mqtt.Client, userdata: Any, mid: int, reason: Any,
                    properties: Any) -> None:
        self._slots.release()
        with self._cond:
            self._acked += 1
            if getattr(reason, "is_failure", False):
                self._failed += 1
            self._cond.notify_all()

    def publish(self, topic: str, payload: bytes, timeout_s: float = 60.0) -> None:
        if not self._slots.acquire(timeout=timeout_s):
            raise TimeoutError(f"no PUBACK for {timeout_s:g} s with the window full")
        info = self.client.publish(topic, payload, qos=1)
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            self._slots.release()
            raise ConnectionError(f"paho could not publish to {topic}: {info.rc}")
        self._sent += 1

    def publish_all(self, messages: Iterable[tuple[str, bytes]]) -> int:
        n = 0
        for topic, payload in messages:
            self.publish(topic, payload)
            n += 1
        return n

    def wait_acked(self, timeout_s: float = 120.0) -> None:
        """Until every message published so far has its PUBACK; raise on a refusal."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._acked >= self._sent, timeout_s):
                raise TimeoutError(f"{self._sent - self._acked} PUBACKs missing after "
                                   f"{timeout_s:g} s")
            if self._failed:
                raise RuntimeError(f"the broker refused {self._failed} message(s)")

    @property
    def acked(self) -> int:
        with self._cond:
            return self._acked

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.disconnect()
        self.client.loop_stop()


# --------------------------------------------------------------------------- statistics


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return math.nan
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile: the smallest value with at least ``q`` % at or below it.

    Conservative on purpose: of 30 values, p99 is the largest, not an
    interpolation below it.
    """
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]

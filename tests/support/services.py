"""Real services for the integration tests: a Mosquitto broker and small MQTT clients.

``Mosquitto`` runs the Debian broker (``/usr/sbin/mosquitto``) in the
foreground on a free port of 127.0.0.1, with its configuration, persistence
database and log in its own directory. Its defaults are those of the shipped
``deploy/mosquitto/stormwatch.conf`` that matter for "nothing lost"
(monitor/README.md, "Architecture"): an unlimited per-client queue guarded by ``max_queued_bytes``,
1000
messages in flight, persistence on.

Things about Mosquitto 2.0 that this module handles:

* Started as root it switches to the ``mosquitto`` user (or ``nobody``),
  which cannot read a 0700 temp dir; the config names the invoking user
  (``user root`` under root; the option is ignored for other users).
* The persistence database is written only at ``autosave_interval`` and at a
  clean shutdown (SIGTERM). ``kill()`` (SIGKILL) loses whatever came after
  the last autosave, as a power cut would; ``stop()`` loses nothing.
* A taken port makes it exit with "Error: Address already in use". The free
  port is found by binding port 0, so another process can take it before the
  broker binds; the first start then retries on a new port. ``restart()``
  keeps the port (the listener sets SO_REUSEADDR, so TIME_WAIT is no problem).
* A subscription is granted even where the ACL denies reading: access is
  checked per message on delivery, so a denied subscriber simply gets nothing.

No broker outlives the test session: fixtures stop theirs, ``stop_all()``
runs at session end and at interpreter exit, and when ``setpriv`` exists the
broker gets SIGKILL if the thread that started it dies (PR_SET_PDEATHSIG), so
even a SIGKILLed pytest leaves nothing behind. (That ties the broker to the
starting *thread*: start brokers from the main thread, as fixtures do.) The
process lifecycle is ``tests.support.childproc.ChildService``'s, shared with ``Influxd``.
"""

from __future__ import annotations

import os
import pwd
import re
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.reasoncodes import ReasonCode

from tests.support import childproc
from tests.support.childproc import ChildService, ChildServiceError, free_port

MOSQUITTO = "/usr/sbin/mosquitto"
MOSQUITTO_PASSWD = "/usr/bin/mosquitto_passwd"
MISSING_REASON = ("mosquitto not installed (Debian package mosquitto; `make test` installs it "
                  "as root)")

_RUNNING_LINE = re.compile(r"mosquitto version \S+ running")

class MosquittoError(ChildServiceError):
    """The broker did not start, or did not stop, as asked."""


class BrokerRefused(ConnectionError):
    """The broker refused the connection (CONNACK ≥ 0x80) or closed it in answer to a packet."""


def mosquitto_available() -> bool:
    return os.access(MOSQUITTO, os.X_OK)


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


class Mosquitto(ChildService):
    """One Mosquitto broker in its own directory; see the module docstring.

    ``workdir`` holds ``mosquitto.conf``, ``mosquitto.log`` and ``data/`` (the
    persistence database); without one a temp dir is made and removed by
    ``close()``. ``password_file`` and ``acl_file`` are used as given.
    ``extra_config`` lines are appended to the generated configuration.
    ``stop()`` sends SIGTERM (the broker saves its persistence database);
    ``kill()`` is SIGKILL, like a power cut: changes since the last autosave
    are lost.
    """

    name = "mosquitto"
    error = MosquittoError
    ready_means = "accept connections"
    poll_interval_s = 0.02

    def __init__(self, workdir: str | Path | None = None, *, host: str = "127.0.0.1",
                 port: int | None = None, allow_anonymous: bool = True,
                 password_file: str | Path | None = None, acl_file: str | Path | None = None,
                 persistence: bool = True, autosave_interval_s: int = 1,
                 max_queued_messages: int = 0, max_queued_bytes: int = 100 * 1024 * 1024,
                 max_inflight_messages: int = 1000, verbose: bool = False,
                 extra_config: Sequence[str] = (), start_timeout_s: float = 10.0,
                 executable: str = MOSQUITTO) -> None:
        super().__init__(workdir, host=host, start_timeout_s=start_timeout_s,
                         executable=executable)
        self._port = port
        self.allow_anonymous = allow_anonymous
        self.password_file = Path(password_file) if password_file is not None else None
        self.acl_file = Path(acl_file) if acl_file is not None else None
        self.persistence = persistence
        self.autosave_interval_s = autosave_interval_s
        self.max_queued_messages = max_queued_messages
        self.max_queued_bytes = max_queued_bytes
        self.max_inflight_messages = max_inflight_messages
        self.verbose = verbose
        self.extra_config = list(extra_config)
        self.conf_path = self.workdir / "mosquitto.conf"
        self.persistence_dir = self.workdir / "data"

    # ------------------------------------------------------------------ state

    @property
    def port(self) -> int:
        if self._port is None:
            raise MosquittoError("the broker has no port until it is started")
        return self._port

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self._port}"

    @property
    def persistence_file(self) -> Path:
        return self.persistence_dir / "mosquitto.db"

    def config_text(self) -> str:
        user = pwd.getpwuid(os.geteuid()).pw_name
        lines = [
            "# written by tests/support/services.py",
            # Root would drop to `mosquitto`, which cannot read this directory;
            # for any other user Mosquitto ignores the option.
            f"user {user}",
            f"listener {self.port} {self.host}",
            f"allow_anonymous {'true' if self.allow_anonymous else 'false'}",
            f"persistence {'true' if self.persistence else 'false'}",
            # Mosquitto 2.0 adds the separator itself (1.x wanted a trailing slash).
            f"persistence_location {self.persistence_dir}",
            f"autosave_interval {self.autosave_interval_s}",
            f"max_queued_messages {self.max_queued_messages}",
            f"max_queued_bytes {self.max_queued_bytes}",
            f"max_inflight_messages {self.max_inflight_messages}",
            "set_tcp_nodelay true",
            "log_dest stderr",
            "log_timestamp_format %H:%M:%S",
        ]
        log_types = (["all"] if self.verbose else
                     ["error", "warning", "notice", "information", "subscribe", "unsubscribe"])
        lines += [f"log_type {t}" for t in log_types]
        if self.password_file is not None:
            lines.append(f"password_file {self.password_file}")
        if self.acl_file is not None:
            lines.append(f"acl_file {self.acl_file}")
        return "\n".join(lines + self.extra_config) + "\n"

    # ------------------------------------------------------------------ lifecycle (ChildService)

    def _has_ports(self) -> bool:
        return self._port is not None

    def _pick_ports(self) -> None:
        self._port = free_port(self.host)

    def _prepare(self) -> list[str]:
        self.persistence_dir.mkdir(parents=True, exist_ok=True)
        self.conf_path.write_text(self.config_text(), encoding="utf-8")
        return [self.executable, "-c", str(self.conf_path)]

    def _ready(self, log_offset: int) -> bool:
        # "running" is logged after every listener is open: together with an
        # accepted connection it proves the port is ours, not another process's.
        return bool(_RUNNING_LINE.search(self._log_since(log_offset))
                    and _accepts(self.host, self.port))


def stop_all() -> None:
    """Stop every broker still running (at session end; a fixture normally did it)."""
    childproc.stop_all(Mosquitto)


def make_password_file(path: str | Path, users: dict[str, str]) -> Path:
    """A Mosquitto password file for ``{username: password}``, made with ``mosquitto_passwd``."""
    p = Path(path)
    p.unlink(missing_ok=True)
    for i, (user, password) in enumerate(sorted(users.items())):
        flags = ["-b", "-c"] if i == 0 else ["-b"]
        subprocess.run([MOSQUITTO_PASSWD, *flags, str(p), user, password], check=True,
                       capture_output=True, timeout=30)
    return p


# --------------------------------------------------------------------------- clients


def _client(username: str | None, password: str | None,
            client_id: str | None = None) -> mqtt.Client:
    client = mqtt.Client(CallbackAPIVersion.VERSION2,
                         client_id=client_id or f"test-{uuid.uuid4().hex[:12]}",
                         protocol=mqtt.MQTTv5)
    if username is not None:
        client.username_pw_set(username, password)
    return client


def _value(reason: Any) -> int:
    return int(reason.value) if isinstance(reason, ReasonCode) else int(reason)


def _loop_until(client: mqtt.Client, done: Callable[[], bool], timeout_s: float,
                what: str) -> None:
    """Run the client's network loop in this thread until ``done()``.

    The one-shot helpers drive paho themselves rather than with
    ``loop_start()``: a background thread that has seen the broker close the
    connection sits in paho's reconnect wait, and ``loop_stop()`` then takes
    up to a second to join it.
    """
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} within {timeout_s:g} s")
        if client.loop(timeout=0.02) != mqtt.MQTT_ERR_SUCCESS and not done():
            raise BrokerRefused(f"the broker closed the connection before the {what}")


class _OneShot:
    """A client for one exchange: CONNECT, perhaps one PUBLISH, DISCONNECT."""

    def __init__(self, host: str, port: int, username: str | None, password: str | None,
                 timeout_s: float) -> None:
        self.client = _client(username, password)
        self.timeout_s = timeout_s
        self.connack: int | None = None
        self.puback: int | None = None
        self.client.on_connect = self._on_connect
        self.client.on_publish = self._on_publish
        self.client.connect(host, port, keepalive=30)
        try:
            _loop_until(self.client, lambda: self.connack is not None, timeout_s,
                        f"CONNACK from {host}:{port}")
        except BaseException:
            self.close()
            raise

    def _on_connect(self, c: mqtt.Client, userdata: Any, flags: Any, reason: ReasonCode,
                    properties: Any) -> None:
        self.connack = _value(reason)

    def _on_publish(self, c: mqtt.Client, userdata: Any, mid: int, reason: ReasonCode,
                    properties: Any) -> None:
        self.puback = _value(reason)

    def publish(self, topic: str, payload: bytes, qos: int, retain: bool) -> int:
        """The PUBACK reason code (0 at QoS 0, once the message is written)."""
        info = self.client.publish(topic, payload, qos=qos, retain=retain)
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            raise ConnectionError(f"paho could not send the message: {info.rc}")
        _loop_until(self.client, lambda: self.puback is not None, self.timeout_s,
                    f"PUBACK for {topic}")
        assert self.puback is not None
        return self.puback

    def close(self) -> None:
        """DISCONNECT, or read the broker's close after a refusal, so the socket is closed."""
        self.client.disconnect()
        deadline = time.monotonic() + 1.0
        while self.client.socket() is not None and time.monotonic() < deadline:
            self.client.loop(timeout=0.02)


def connect_reason(host: str, port: int, *, username: str | None = None,
                   password: str | None = None, timeout_s: float = 5.0) -> int:
    """The CONNACK reason code for these credentials: 0 accepted, ≥ 0x80 refused.

    Mosquitto 2.0.11 answers 0x87 "Not authorized" to an anonymous client when
    anonymity is off, and also to a wrong password or an unknown user (not
    0x86 "Bad user name or password").
    """
    one = _OneShot(host, port, username, password, timeout_s)
    try:
        assert one.connack is not None
        return one.connack
    finally:
        one.close()


def publish_reason(host: str, port: int, topic: str, payload: bytes, *, qos: int = 1,
                   username: str | None = None, password: str | None = None,
                   retain: bool = False, timeout_s: float = 5.0) -> int:
    """Publish once with MQTT v5; the broker's PUBACK reason code (0 at QoS 0).

    Mosquitto answers 0 (success), 0x10 "No matching subscribers" (accepted,
    nobody subscribed) or ≥ 0x80 (refused; 0x87 "Not authorized" for an ACL
    denial). Raises ``BrokerRefused`` when the broker refuses the connection,
    or drops it instead of answering (a packet over ``max_packet_size``).
    """
    one = _OneShot(host, port, username, password, timeout_s)
    try:
        if one.connack != 0:
            raise BrokerRefused(f"the broker refused the connection (reason {one.connack:#x})")
        return one.publish(topic, payload, qos, retain)
    finally:
        one.close()


def publish(host: str, port: int, topic: str, payload: bytes, *, qos: int = 1,
            username: str | None = None, password: str | None = None, retain: bool = False,
            timeout_s: float = 5.0) -> bool:
    """Publish once with MQTT v5; whether the broker accepted the message.

    False when the broker refuses the connection or the message: at QoS 1 or
    2 a reason code ≥ 0x80 (Mosquitto 2: 0x87 "Not authorized" for an ACL
    denial; over 3.1.1 it would PUBACK and drop the message, hence v5), or a
    disconnect in answer (oversize packet). At QoS 0 the broker does not
    answer, so True means only "sent". An unreachable broker raises.
    """
    try:
        return publish_reason(host, port, topic, payload, qos=qos, username=username,
                              password=password, retain=retain, timeout_s=timeout_s) < 0x80
    except BrokerRefused:
        return False


@dataclass(frozen=True, slots=True)
class Received:
    topic: str
    payload: bytes
    qos: int
    retain: bool


class Collector:
    """Subscribes to a topic filter and records what arrives (MQTT v5, clean start).

    ``granted`` holds the SUBACK reason codes (the granted QoS, or ≥ 0x80 when
    refused). Use as a context manager, or ``start()``/``stop()``.
    """

    def __init__(self, host: str, port: int, topic_filter: str, *, qos: int = 1,
                 username: str | None = None, password: str | None = None,
                 client_id: str | None = None, timeout_s: float = 5.0) -> None:
        self.host, self.port, self.topic_filter, self.qos = host, port, topic_filter, qos
        self.timeout_s = timeout_s
        self.granted: list[int] = []
        self._messages: list[Received] = []
        self._cond = threading.Condition()
        self._client = _client(username, password, client_id)
        self._client.on_connect = self._on_connect
        self._client.on_subscribe = self._on_subscribe
        self._client.on_message = self._on_message
        self._connack: int | None = None
        self._ready = threading.Event()

    def _on_connect(self, c: mqtt.Client, userdata: Any, flags: Any, reason: ReasonCode,
                    properties: Any) -> None:
        self._connack = _value(reason)
        if self._connack >= 0x80:
            self._ready.set()
            return
        c.subscribe(self.topic_filter, qos=self.qos)

    def _on_subscribe(self, c: mqtt.Client, userdata: Any, mid: int, reasons: list[ReasonCode],
                      properties: Any) -> None:
        self.granted = [_value(r) for r in reasons]
        self._ready.set()

    def _on_message(self, c: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        with self._cond:
            self._messages.append(Received(msg.topic, bytes(msg.payload), msg.qos,
                                           bool(msg.retain)))
            self._cond.notify_all()

    def start(self) -> Collector:
        """Connect, subscribe and wait for the SUBACK; raise if the connection is refused."""
        self._client.connect(self.host, self.port, keepalive=30)
        self._client.loop_start()
        if not self._ready.wait(self.timeout_s):
            self.stop()
            raise TimeoutError(f"no SUBACK for {self.topic_filter} within {self.timeout_s:g} s")
        if self._connack is not None and self._connack >= 0x80:
            self.stop()
            raise BrokerRefused(f"the broker refused the connection (reason "
                                f"{self._connack:#x})")
        return self

    def stop(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()

    @property
    def messages(self) -> list[Received]:
        with self._cond:
            return list(self._messages)

    def topics(self) -> list[str]:
        return [m.topic for m in self.messages]

    def wait_for(self, predicate: Callable[[list[Received]], bool],
                 timeout_s: float | None = None) -> bool:
        """Wait until ``predicate(messages)`` holds; whether it did within the timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: predicate(list(self._messages)),
                                       timeout_s if timeout_s is not None else self.timeout_s)

    def wait_for_topic(self, topic: str, timeout_s: float | None = None) -> bool:
        return self.wait_for(lambda ms: any(m.topic == topic for m in ms), timeout_s)

    def __enter__(self) -> Collector:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

"""MQTT ingest: subscribe, hand over; acknowledge only after the journal commit.

paho-mqtt 2.x with MQTT v5 (falling back to 3.1.1 when the broker refuses
v5), QoS 1, a persistent session (clean start off, session expiry
configurable) so the broker keeps messages while the daemon is down, and
``manual_ack`` so a message is acknowledged only once its reading is committed
to the journal (DESIGN § 2 "The journal is the spool").

The network thread only enqueues (parsing happens with the batch in the
engine thread, next to the journal commit). The queue is bounded: when the
engine thread falls behind, ``put`` blocks the network thread, paho stops
reading the socket and the broker holds the rest (back-pressure, not loss).

Acknowledgements carry the connection *generation* they belong to: packet ids
are per connection, so a message received before a reconnect must not be
acknowledged on the new connection (that would acknowledge some other
message); the broker redelivers it and the journal ignores the duplicate.

What the daemon subscribes to is ``broker.subscribe``. With ``all`` (the
default) it is one wildcard filter per topic kind, so a message for a site
this daemon does not know reaches it and is dead-lettered as
``unknown_site``: a misaddressed node shows at once. With ``sites`` it is
three filters per configured site, so several daemons with disjoint site
lists can share one broker and each session queues only its own sites'
messages while its daemon is down; a message for a site nobody configured
then reaches no daemon at all (an MQTT v5 publisher sees PUBACK 0x10 "no
matching subscribers"). Subscriptions live in the persistent session, so a
session resumed after switching from ``all`` to ``sites`` still holds the
wildcards; they are unsubscribed once the site filters are in place.
"""

from __future__ import annotations

import logging
import queue
import socket
import ssl
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from .config import BrokerConfig
from .configfile import read_secret
from .engine.times import WallClock

log = logging.getLogger("stormwatch.ingest")

#: Seconds to wait for the broker's answer to a v5 CONNECT before trying 3.1.1.
CONNACK_TIMEOUT_S = 5.0


def wildcard_filters(prefix: str) -> list[str]:
    """Every site's readings, statuses and inspections (``subscribe: all``)."""
    return [f"{prefix}/+/+/reading", f"{prefix}/+/+/status", f"{prefix}/+/inspection"]


def site_filters(prefix: str, sites: Iterable[str]) -> list[str]:
    """The same topics of the named sites only (``subscribe: sites``).

    Site ids cannot contain ``+``, ``#`` or ``/`` (``config.ID_PATTERN``), so
    each filter matches exactly its own site.
    """
    return [topic for site in sites
            for topic in (f"{prefix}/{site}/+/reading", f"{prefix}/{site}/+/status",
                          f"{prefix}/{site}/inspection")]


@dataclass(frozen=True, slots=True)
class Received:
    """One received MQTT message, as the engine thread needs it."""

    topic: str
    payload: bytes
    mid: int
    qos: int
    generation: int
    received_ms: int


class Ingest:
    """The MQTT side of the daemon: a paho client feeding a bounded queue.

    ``sites`` are the configured site ids; ``broker.subscribe: sites`` needs them.
    """

    def __init__(self, broker: BrokerConfig, out: queue.Queue[Received], *,
                 sites: Sequence[str] = (), clock: WallClock = time.time,
                 protocol: int | None = None,
                 connected: threading.Event | None = None) -> None:
        self.broker = broker
        self.out = out
        self.clock = clock
        self.prefix = broker.topic_prefix.rstrip("/")
        if broker.subscribe == "sites":
            if not sites:
                # Subscribing to nothing would let the broker drop every message.
                raise ValueError("broker.subscribe: sites needs the configured site ids")
            self.filters = site_filters(self.prefix, sites)
            self.stale_filters = wildcard_filters(self.prefix)
        else:
            self.filters = wildcard_filters(self.prefix)
            self.stale_filters = []
        self.generation = 0
        self.connected = connected if connected is not None else threading.Event()
        self.stopping = False
        self._protocol = protocol if protocol is not None else mqtt.MQTTv5
        self._connected_once = False
        self._swapping = False
        self._lock = threading.Lock()
        self.client = self._make_client()

    # ------------------------------------------------------------------ setup

    def _make_client(self) -> mqtt.Client:
        b = self.broker
        if self._protocol == mqtt.MQTTv5:
            client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=b.client_id,
                                 protocol=mqtt.MQTTv5, manual_ack=True)
        else:
            client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=b.client_id,
                                 clean_session=False, protocol=mqtt.MQTTv311, manual_ack=True)
        if b.username:
            client.username_pw_set(b.username, read_secret(b.password_file))
        if b.tls is not None:
            client.tls_set(ca_certs=b.tls.ca_file, certfile=b.tls.cert_file,
                           keyfile=b.tls.key_file, cert_reqs=ssl.CERT_REQUIRED)
            client.tls_insecure_set(b.tls.insecure)
        # Manual acks of a whole batch: let many messages be in flight at once.
        client.max_inflight_messages_set(1000)
        client.reconnect_delay_set(min_delay=1, max_delay=60)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_message = self._on_message
        return client

    def start(self) -> None:
        """Connect (asynchronously; paho reconnects with capped backoff) and start the loop."""
        b = self.broker
        props = None
        kwargs: dict[str, Any] = {}
        if self._protocol == mqtt.MQTTv5:
            props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
            props.SessionExpiryInterval = int(b.session_expiry_hours * 3600)
            kwargs = {"clean_start": False, "properties": props}
        self.client.connect_async(b.host, b.port, keepalive=b.keepalive_s, **kwargs)
        self.client.loop_start()
        if self._protocol == mqtt.MQTTv5:
            # A 3.1.1-only broker may neither answer a v5 CONNECT nor close the socket.
            timer = threading.Timer(CONNACK_TIMEOUT_S, self._check_connack)
            timer.daemon = True
            timer.start()

    def _check_connack(self) -> None:
        if not self._connected_once and self._protocol == mqtt.MQTTv5 and self._reachable():
            self._fallback_v311()

    def _reachable(self) -> bool:
        try:
            with socket.create_connection((self.broker.host, self.broker.port), timeout=2):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        self.stopping = True
        try:
            self.client.disconnect()
        finally:
            self.client.loop_stop()

    # ------------------------------------------------------------------ acks

    def ack(self, messages: list[Received]) -> int:
        """Acknowledge messages of the current connection; return how many were sent."""
        return self.ack_ids([(m.mid, m.qos, m.generation) for m in messages])

    def ack_ids(self, acks: list[tuple[int, int, int]]) -> int:
        """``ack`` by (mid, qos, generation): what ``mqttproc`` sends across its pipe."""
        sent = 0
        with self._lock:
            generation = self.generation
            for mid, qos, gen in acks:
                if qos > 0 and gen == generation:
                    self.client.ack(mid, qos)
                    sent += 1
        return sent

    # ------------------------------------------------------------------ callbacks

    def _on_connect(self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any,
                    properties: Any) -> None:
        if reason.is_failure:
            if (self._protocol == mqtt.MQTTv5 and
                    getattr(reason, "value", None) in (1, 0x84)):  # unacceptable protocol version
                self._fallback_v311()
                return
            log.error("broker refused the connection: %s", reason)
            return
        self._connected_once = True
        with self._lock:
            self.generation += 1
        client.subscribe([(topic, 1) for topic in self.filters])
        session = getattr(flags, "session_present", False)
        if session and self.stale_filters:
            # Wildcards left from `subscribe: all`. After the SUBSCRIBE, never before: a
            # message published in between that matched neither would be dropped.
            client.unsubscribe(self.stale_filters)
        log.info("connected to %s:%s (MQTT %s, session %s, %d subscriptions, subscribe: %s)",
                 self.broker.host, self.broker.port,
                 "5" if self._protocol == mqtt.MQTTv5 else "3.1.1",
                 "resumed" if session else "new", len(self.filters), self.broker.subscribe)
        self.connected.set()

    def _fallback_v311(self) -> None:
        if self._swapping or self.stopping:
            return
        self._swapping = True
        log.info("broker does not speak MQTT v5; using 3.1.1")

        def swap() -> None:
            self.client.loop_stop()
            self._protocol = mqtt.MQTTv311
            self.client = self._make_client()
            self.start()
            self._swapping = False
        threading.Thread(target=swap, daemon=True).start()

    def _on_disconnect(self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any,
                       properties: Any) -> None:
        self.connected.clear()
        if not self._connected_once and self._protocol == mqtt.MQTTv5:
            # Some 3.1.1-only brokers (amqtt) close the socket on a v5 CONNECT
            # instead of answering "unsupported protocol version".
            self._fallback_v311()
            return
        if not self.stopping:
            log.warning("disconnected from broker (%s); reconnecting", reason)

    def _on_message(self, client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        message = Received(msg.topic, bytes(msg.payload), msg.mid, msg.qos, self.generation,
                          round(self.clock() * 1000))
        # Blocking put: when the engine thread is behind, stop reading the socket.
        while True:
            try:
                self.out.put(message, timeout=1.0)
                return
            except queue.Full:
                if self.stopping:
                    return

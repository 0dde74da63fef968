"""MQTT ingest: subscribe, hand over; acknowledge only after the journal commit.

paho-mqtt 2.x with MQTT v5 (falling back to 3.1.1 when the broker refuses
v5), QoS 1, a persistent session (clean start off, session expiry
configurable) so the broker keeps messages while the daemon is down, and
``manual_ack`` so a message is acknowledged only once its reading is committed
to the journal (monitor/README.md, "Architecture" "The journal is the spool").

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

An unreachable broker is never silent: the first failed connection is an
ERROR at once, naming host:port and the reason (refused, no route, name not
known, TLS, a CONNACK refusal), and while it lasts it is repeated at growing
intervals capped at ``CONNECT_LOG_MAX_S``, with how long and how many
attempts (paho itself retries with a backoff capped at 60 s). A connection
that should have resumed a persistent session (``expect_session``: this
daemon had one before, or this is a reconnect) but finds none is a WARNING:
whatever the broker had queued for the old session is gone (it expired, the
broker lost its database, or another client took the client id).

The daemon also publishes, on the same connection: the retained end-to-end
confirmations (``publish``; sensors/README.md, "MQTT contract", ``daemon/confirmer.py``). A broker
that
refuses them (an ACL generated before they existed) answers MQTT v5 with PUBACK
0x87; that is an ERROR, repeated at most every ``REFUSED_LOG_S``: the nodes
then get no confirmations and fall back to deleting on PUBACK.

Stopping is two steps, so that a stop ends under any traffic: ``pause()``
first, and the client takes nothing new (a message that arrives is neither
queued nor acknowledged: the broker keeps it in the persistent session and
sends it again at the next connection); the daemon journals and acknowledges
what it had taken; then ``stop()`` disconnects, after the acknowledgements
(paho's loop writes what is queued before it ends). Without the pause the
daemon drained a queue the network thread kept filling, for as long as
readings came.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import socket
import ssl
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from ..config import BrokerConfig
from ..config.file import read_secret
from ..contract.times import WallClock

log = logging.getLogger("stormwatch.ingest")

#: Seconds to wait for the broker's answer to a v5 CONNECT before trying 3.1.1.
CONNACK_TIMEOUT_S = 5.0
#: While the broker cannot be reached, the ERROR is repeated after this many
#: seconds, then twice as long each time, up to ``CONNECT_LOG_MAX_S``.
CONNECT_LOG_FIRST_S = 10.0
CONNECT_LOG_MAX_S = 300.0
#: A refused confirmation is logged at once, then at most this often.
REFUSED_LOG_S = 600.0


#: Meta key (``store.state``) under which the daemon notes the broker session it
#: had, so that its next start knows to expect it back (``expect_session``).
SESSION_META = "broker_session"


def session_key(broker: BrokerConfig) -> str | None:
    """What names the broker session a client keeps (client id @ host:port); None when
    it keeps none (``session_expiry_hours: 0``)."""
    b = broker
    return f"{b.client_id}@{b.host}:{b.port}" if b.session_expiry_hours > 0 else None


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
    #: The broker's retain flag: a copy the broker kept and sends every new
    #: subscription (an inspection never becomes a record this way: sensors/README.md, "MQTT
    #: contract").
    retain: bool = False


class Ingest:
    """The MQTT side of the daemon: a paho client feeding a bounded queue.

    ``sites`` are the configured site ids; ``broker.subscribe: sites`` needs them.
    """

    def __init__(self, broker: BrokerConfig, out: queue.Queue[Received], *,
                 sites: Sequence[str] = (), clock: WallClock = time.time,
                 protocol: int | None = None,
                 connected: threading.Event | None = None,
                 expect_session: bool = False) -> None:
        """``expect_session``: the broker should hold a session for this client id
        already (the daemon had one); finding none is then a WARNING."""
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
        #: Set by ``pause()``: nothing more is handed over (see the module docstring).
        self.paused = threading.Event()
        self._protocol = protocol if protocol is not None else mqtt.MQTTv5
        self._connected_once = False
        self._answered = False
        self._expect_session = expect_session and broker.session_expiry_hours > 0
        # The broker out of reach: since when (monotonic), attempts, when to log next.
        self._down_since: float | None = None
        self._attempts = 0
        self._log_at = 0.0
        self._log_every = CONNECT_LOG_FIRST_S
        self._swapping = False
        self._lock = threading.Lock()
        self._refused = 0
        self._refused_log_at = -REFUSED_LOG_S
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
        client.on_connect_fail = self._on_connect_fail
        client.on_disconnect = self._on_disconnect
        client.on_message = self._on_message
        client.on_publish = self._on_publish
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

    def pause(self) -> None:
        """Take no new messages: the broker keeps them, unacknowledged, for the next start.

        ``paused`` is set at once: every message handed over before this call is
        in the queue already (one caught in the middle of its hand-over may still
        land; it is acknowledged only if the daemon journals it).
        """
        self.paused.set()

    def stop(self) -> None:
        self.stopping = True
        self.paused.set()
        try:
            self.client.disconnect()
        finally:
            stop_loop(self.client)

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

    def publish(self, messages: Sequence[tuple[str, bytes]]) -> None:
        """Publish retained QoS 1 messages (the confirmations) on this connection."""
        for topic, payload in messages:
            self.client.publish(topic, payload, qos=1, retain=True)

    # ------------------------------------------------------------------ callbacks

    def _on_publish(self, client: mqtt.Client, userdata: Any, mid: int, reason: Any,
                    properties: Any) -> None:
        if not getattr(reason, "is_failure", False):
            return
        self._refused += 1
        now = time.monotonic()
        if now - self._refused_log_at >= REFUSED_LOG_S:
            self._refused_log_at = now
            log.error("the broker refused %d confirmation(s) (journaled topics): %s. The nodes"
                      " get none and fall back to deleting readings on PUBACK: let this account"
                      " write {prefix}/+/+/journaled (regenerate the ACL with `stormwatch acl`)",
                      self._refused, reason)
            self._refused = 0

    def _on_connect(self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any,
                    properties: Any) -> None:
        if reason.is_failure:
            if (self._protocol == mqtt.MQTTv5 and
                    getattr(reason, "value", None) in (1, 0x84)):  # unacceptable protocol version
                self._fallback_v311()
                return
            self._answered = True  # it speaks v5: a refusal is no reason to fall back
            self._unreachable(f"the broker refused the connection: {reason}")
            return
        expected = self._expect_session or (
            self._connected_once and self.broker.session_expiry_hours > 0)
        self._connected_once = True
        with self._lock:
            self.generation += 1
        client.subscribe([(topic, 1) for topic in self.filters])
        session = bool(getattr(flags, "session_present", False))
        if self._down_since is not None and self._attempts:
            log.info("reached the broker at %s:%s again after %.0f s and %d failed attempt(s)",
                     self.broker.host, self.broker.port, time.monotonic() - self._down_since,
                     self._attempts)
        self._down_since, self._attempts, self._log_every = None, 0, CONNECT_LOG_FIRST_S
        if expected and not session:
            log.warning("the broker at %s:%s has NO session for client id %r although this"
                        " daemon had one: readings it queued for the daemon while it was"
                        " disconnected may be lost (the session expired after"
                        " broker.session_expiry_hours = %g, the broker lost its persistence"
                        " database, or another client connected with this client id)",
                        self.broker.host, self.broker.port, self.broker.client_id,
                        self.broker.session_expiry_hours)
        self._expect_session = True
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
            stop_loop(self.client)
            self._protocol = mqtt.MQTTv311
            self.client = self._make_client()
            self.start()
            self._swapping = False
        threading.Thread(target=swap, daemon=True).start()

    def _on_disconnect(self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any,
                       properties: Any) -> None:
        was_up = self.connected.is_set()
        self.connected.clear()
        if not self._connected_once and not self._answered and self._protocol == mqtt.MQTTv5:
            # Some 3.1.1-only brokers (amqtt) close the socket on a v5 CONNECT
            # instead of answering "unsupported protocol version".
            self._fallback_v311()
            return
        if not self.stopping and was_up:
            # (An attempt the broker refused ends here too; _unreachable logged it.)
            log.warning("disconnected from broker (%s); reconnecting", reason)
            self._down_since, self._attempts = time.monotonic(), 0

    def _on_connect_fail(self, client: mqtt.Client, userdata: Any) -> None:
        # paho calls this from inside its ``except OSError``: the error is at hand.
        exc = sys.exc_info()[1]
        self._unreachable(f"{type(exc).__name__}: {exc}" if exc is not None else "no answer")

    def _unreachable(self, reason: str) -> None:
        """A connection attempt failed: log it at once, then at growing intervals."""
        now = time.monotonic()
        if self._down_since is None:
            self._down_since = now
        self._attempts += 1
        where = f"{self.broker.host}:{self.broker.port}"
        if self._attempts == 1:
            log.error("cannot connect to the broker at %s: %s. Retrying with backoff (60 s at"
                      " most); nothing is received until then (the nodes' readings wait in"
                      " the broker, if it is up)", where, reason)
        elif now >= self._log_at:
            log.error("still cannot connect to the broker at %s after %.0f s (%d attempts): %s",
                      where, now - self._down_since, self._attempts, reason)
            self._log_every = min(self._log_every * 2, CONNECT_LOG_MAX_S)
        else:
            log.debug("connection attempt %d to %s failed: %s", self._attempts, where, reason)
            return
        self._log_at = now + self._log_every

    def _on_message(self, client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        if self.paused.is_set():
            return  # not acknowledged: the broker sends it again at the next connection
        message = Received(msg.topic, bytes(msg.payload), msg.mid, msg.qos, self.generation,
                          round(self.clock() * 1000), bool(msg.retain))
        # Blocking put: when the engine thread is behind, stop reading the socket.
        while True:
            try:
                self.out.put(message, timeout=1.0)
                return
            except queue.Full:
                if self.paused.is_set():
                    return


def stop_loop(client: mqtt.Client) -> None:
    """``client.loop_stop()``, safe against paho 2.x's own race: its network thread
    clears ``_thread`` as it exits, between ``loop_stop``'s check and its join, and
    ``loop_stop`` then raises AttributeError (seen when a disconnect ends the
    thread first). The thread has ended either way."""
    with contextlib.suppress(AttributeError):
        client.loop_stop()

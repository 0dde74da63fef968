"""The MQTT connection: paho-mqtt 2.x in its own network thread, acks through a queue.

What can go wrong, and why the code is shaped this way:

* **paho's offline queue lives in memory** and is lost at a restart. The node
  never relies on it: the buffer holds every reading, and the forwarder hands
  paho at most ``max_inflight`` of them at a time (paho's own queue is capped
  a little above that), so paho holds a window, never a backlog.
* **A publish while the link drops** is still queued by paho (rc
  ``MQTT_ERR_NO_CONN``) and sent again, with DUP, after the reconnect; only
  ``MQTT_ERR_QUEUE_SIZE`` means "not taken". ``publish`` returns the message id
  in every other case, so the forwarder counts it as in flight.
* **PUBACKs arrive on paho's thread**, which holds paho's message lock while it
  calls ``on_publish``. Taking a lock of ours there could deadlock with a
  publish from the main thread, so the callback only puts ``(mid, refused)``
  on a queue; the main thread, which also does every publish, takes it from
  there. A PUBACK can then never be matched before its publish returned.
* **MQTT v5**, so an ACL refusal comes back as PUBACK reason 0x87 instead of a
  silent drop (Mosquitto answers a 3.1.1 client with a normal PUBACK). A
  broker that speaks 3.1.1 only (amqtt, the embedded broker of ``stormwatch
  demo``) refuses a v5 CONNECT: ``MqttLink(protocol=mqtt.MQTTv311)`` is for it,
  at the price of that silent drop (``stormwatch-node`` itself always uses v5).
* Reconnects are paho's (``loop_start``; backoff 1 s doubling up to
  ``broker.reconnect_max_s``), also when the first connection fails.
* **Confirmations** (``{prefix}/{site}/{sensor}/journaled``, the daemon's word
  that a reading is journaled, ``confirm.py``) are subscribed to at QoS 1 at
  every connection (the broker hands over the retained one at once); the
  callback only checks them and puts ``(sensor, seq, retained)`` on a queue
  for the main thread, like the PUBACKs. One that is not ``{"seq": int}`` on
  a topic of ours is logged once and ignored: deleting on it could lose data.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
from typing import Any, Protocol

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode, MQTTProtocolVersion
from paho.mqtt.reasoncodes import ReasonCode

from .config import NodeConfig

log = logging.getLogger(__name__)

#: (message id, refused by the broker, reason text)
Ack = tuple[int, bool, str]
#: (sensor id, the confirmed seq, delivered as the retained message of a subscription)
Confirmation = tuple[str, int, bool]


class Link(Protocol):
    """What the node needs of a broker connection (``MqttLink``; tests may fake it)."""

    acks: queue.Queue[Ack]
    confirmations: queue.Queue[Confirmation]

    @property
    def connected(self) -> bool: ...

    def start(self) -> None: ...

    def publish(self, topic: str, payload: bytes) -> int | None: ...

    def close(self) -> None: ...


def _refused(reason: Any) -> tuple[bool, str]:
    if isinstance(reason, ReasonCode):
        return reason.is_failure, str(reason)
    return int(reason) >= 0x80, str(reason)


class MqttLink:
    """One paho client; see the module docstring. ``window`` caps paho's queue."""

    def __init__(self, config: NodeConfig, password: str | None, window: int,
                 extra_queue: int = 0, reconnect_max_s: int | None = None,
                 protocol: int = mqtt.MQTTv5) -> None:
        self.host, self.port = config.broker.host, config.broker.port
        self.keepalive_s = config.broker.keepalive_s
        self.acks: queue.Queue[Ack] = queue.Queue()
        self.confirmations: queue.Queue[Confirmation] = queue.Queue()
        prefix = config.broker.topic_prefix.rstrip("/")
        #: Each sensor's confirmation topic, and the sensor of each.
        self.journaled = {f"{prefix}/{config.site}/{s.id}/journaled": s.id
                          for s in config.sensors}
        self._bad_logged = False
        self._connected = threading.Event()
        self._closing = False
        client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=config.client_id,
                             protocol=MQTTProtocolVersion(protocol))
        if config.broker.username is not None:
            client.username_pw_set(config.broker.username, password)
        if config.broker.tls is not None:
            client.tls_set(ca_certs=str(config.broker.tls.ca_file))
        client.max_inflight_messages_set(window)
        # Room for the window and a status message per sensor; anything more is a bug.
        client.max_queued_messages_set(window + extra_queue)
        client.reconnect_delay_set(1, reconnect_max_s or config.broker.reconnect_max_s)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_publish = self._on_publish
        client.on_message = self._on_message
        self._client = client

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def start(self) -> None:
        self._client.connect_async(self.host, self.port, keepalive=self.keepalive_s)
        self._client.loop_start()

    def publish(self, topic: str, payload: bytes) -> int | None:
        """Hand one QoS 1 message to paho: its message id, or None when paho refused it."""
        info = self._client.publish(topic, payload, qos=1)
        if info.rc == MQTTErrorCode.MQTT_ERR_QUEUE_SIZE:
            return None
        return int(info.mid)

    def close(self) -> None:
        self._closing = True  # the disconnect that follows is ours, not a lost link
        self._client.disconnect()
        # paho 2.x's race: its network thread clears ``_thread`` as it exits,
        # between loop_stop's check and its join; it has ended either way.
        with contextlib.suppress(AttributeError):
            self._client.loop_stop()

    # ------------------------------------------------------------------ paho's thread

    def _on_connect(self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any,
                    properties: Any) -> None:
        refused, text = _refused(reason)
        if refused:
            log.error("broker %s:%s refused the connection: %s", self.host, self.port, text)
            return
        log.info("connected to %s:%s", self.host, self.port)
        if self.journaled:
            client.subscribe([(topic, 1) for topic in sorted(self.journaled)])
        self._connected.set()

    def _on_disconnect(self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any,
                       properties: Any) -> None:
        if self._closing:
            log.info("disconnected from %s:%s", self.host, self.port)
        elif self._connected.is_set():
            log.warning("disconnected from %s:%s (%s); readings stay in the buffer",
                        self.host, self.port, reason)
        self._connected.clear()

    def _on_publish(self, client: mqtt.Client, userdata: Any, mid: int, reason: Any,
                    properties: Any) -> None:
        refused, text = _refused(reason)
        self.acks.put((mid, refused, text))

    def _on_message(self, client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        sensor = self.journaled.get(msg.topic)
        seq = _confirmed_seq(bytes(msg.payload))
        if sensor is None or seq is None:
            if not self._bad_logged:
                self._bad_logged = True
                log.warning("ignoring a confirmation that is not {\"seq\": N} on a topic of "
                            "this node: %r on %s", bytes(msg.payload)[:80], msg.topic)
            return
        self.confirmations.put((sensor, seq, bool(msg.retain)))


def _confirmed_seq(payload: bytes) -> int | None:
    """The ``seq`` of a confirmation's payload; None when it is not the contract's."""
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    seq = data.get("seq") if isinstance(data, dict) else None
    if isinstance(seq, int) and not isinstance(seq, bool) and 0 <= seq < 2**63:
        return seq
    return None

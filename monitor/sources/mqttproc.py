"""The daemon's MQTT client in a process of its own.

Why a process: paho-mqtt does its per-message work (reading the packet a few
bytes at a time, decoding MQTT v5 properties, matching topics, building the
acknowledgement) in Python, about as much as the daemon's own parse, journal
commit and engine step together. In one process the two share one interpreter
lock, so a backlog drained at about 0.45 of what a bare paho client manages
(``bench/ingest.py``); in two processes they run side by side.

Shape: ``IngestProcess`` has the interface of ``ingest.Ingest`` that the
daemon uses (``start``, ``stop``, ``ack``, ``connected``, messages into the
daemon's queue). The child runs the very ``Ingest`` class (same sessions, v5
with 3.1.1 fallback, TLS, subscriptions, logging) and talks to the parent over
one pipe:

child -> parent  ``("msgs", [(topic, payload, mid, qos, generation), ...])``,
                 ``("up", generation)`` / ``("down",)`` when the connection
                 comes and goes;
                 ``("paused",)`` once it takes nothing more after a pause;
parent -> child  ``("ack", [(mid, qos, generation), ...])`` after the journal
                 commit, ``("publish", [(topic, payload), ...])`` (the
                 confirmations, after the commit too), ``("pause",)``, ``("stop",)``.

Stopping (see ``ingest.py``): the parent sends ``pause``; the child's client
takes nothing new, and what it received but had not sent across yet it drops
unacknowledged (the broker sends it again at the next start); then it sends
``paused``. Everything the parent reads before that marker is what the daemon
took, and it journals and acknowledges it; anything after the marker it drops.
Then ``stop``: the child stops sending, lets paho write the acknowledgements,
disconnects, and only then closes the pipe. (The pipe closed while another
thread of the child was writing to it was the traceback "Exception in thread
mqtt-forward" at a clean stop.)

Signals: the child ignores SIGINT and SIGTERM. Ctrl-C in a terminal reaches
the whole process group, and systemd's stop the whole control group; the
parent stops the child in its own time, after the drain. A child whose
parent died sees the pipe close and exits.

Nothing is acknowledged before the parent has committed (monitor/README.md, "Architecture"): the
child acknowledges only what the parent names, and only on the connection
(generation) it came on. If the child dies, the parent logs it and starts
another; the broker redelivers what was not acknowledged, on a connection of
a new generation (the child starts numbering after the last one seen), and
the journal recognises what it has already. If the parent dies, the child
sees the pipe close and exits. Receipt times are the parent's clock, stamped
as a batch arrives.

The pipe is the back-pressure: when the daemon's queue is full the parent
stops reading, the child's sender blocks, its queue fills, paho stops reading
the socket and the broker holds the rest.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import queue
import signal
import threading
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

from ..config import BrokerConfig
from ..contract.times import WallClock
from ..logs import configure
from .mqtt import Ingest, Received

log = logging.getLogger("stormwatch.ingest")

#: The child sends what it has at least this often, and at most this many at once.
SEND_EVERY_S = 0.002
SEND_MAX = 500
#: How long the child may keep received messages before the parent reads them.
CHILD_QUEUE = 10_000
RESTART_AFTER_S = 1.0
#: How long ``stop()`` waits for the child to disconnect and exit.
STOP_WAIT_S = 5.0


class IngestProcess:
    """``Ingest`` in a child process; see the module docstring."""

    def __init__(self, broker: BrokerConfig, out: queue.Queue[Received], *,
                 sites: Sequence[str] = (), clock: WallClock = time.time,
                 protocol: int | None = None, connected: threading.Event | None = None,
                 log_format: str = "text", log_level: int = logging.INFO,
                 expect_session: bool = False) -> None:
        self.broker = broker
        #: Passed to the child's ``Ingest``; true for every child after one connected.
        self.expect_session = expect_session
        self.out = out
        self.sites = list(sites)
        self.clock = clock
        self.protocol = protocol
        self.connected = connected if connected is not None else threading.Event()
        self.log_format, self.log_level = log_format, log_level
        self.stopping = False
        self._halted = False
        #: Set once the child has taken its last message after ``pause()`` (or is gone).
        self.paused = threading.Event()
        self._generation = 0
        self._ctx = multiprocessing.get_context("spawn")
        self._conn: Connection | None = None
        self._proc: Any = None
        self._send_lock = threading.Lock()
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._conn = parent
        self._proc = self._ctx.Process(
            target=_child, name="stormwatch-mqtt", daemon=True,
            args=(self.broker.model_dump(mode="json"), self.sites, self.protocol,
                  self._generation, self.log_format, self.log_level, self.expect_session,
                  child))
        self._proc.start()
        child.close()
        self._reader = threading.Thread(target=self._read, args=(parent,), name="mqtt-pipe",
                                        daemon=True)
        self._reader.start()

    def pause(self) -> None:
        """Take no new messages; ``paused`` is set when the child has said so."""
        self.stopping = True  # a child that ends now is not started again
        self._send(("pause",))
        if self._proc is None or not self._proc.is_alive():
            self.paused.set()

    def stop(self) -> None:
        self.stopping = self._halted = True
        self._send(("stop",))
        if self._proc is not None:
            self._proc.join(timeout=STOP_WAIT_S)
            if self._proc.is_alive():
                # It ignores SIGTERM (module docstring).
                log.warning("the MQTT process did not stop within %g s; killing it",
                            STOP_WAIT_S)
                self._proc.kill()
                self._proc.join(timeout=5)
        if self._reader is not None:
            self._reader.join(timeout=5)

    def ack(self, messages: list[Received]) -> int:
        """Acknowledge messages the journal holds now; the child sends the PUBACKs."""
        acks = [(m.mid, m.qos, m.generation) for m in messages if m.qos > 0]
        if acks:
            self._send(("ack", acks))
        return len(acks)

    def publish(self, messages: Sequence[tuple[str, bytes]]) -> None:
        """Publish retained QoS 1 messages through the child's connection."""
        if messages:
            self._send(("publish", list(messages)))

    def _send(self, command: tuple[Any, ...]) -> None:
        conn = self._conn
        if conn is None:
            return
        # A child that is gone cannot ack: the broker redelivers what it did not.
        with self._send_lock, contextlib.suppress(OSError, ValueError):
            conn.send(command)

    def _read(self, conn: Connection) -> None:
        while True:
            try:
                kind, *rest = conn.recv()
            except (EOFError, OSError):
                break
            if kind == "msgs":
                if self.paused.is_set():
                    continue  # after the marker: not taken, not acknowledged
                received = round(self.clock() * 1000)
                for topic, payload, mid, qos, generation, retain in rest[0]:
                    message = Received(topic, payload, mid, qos, generation, received, retain)
                    while True:
                        try:
                            self.out.put(message, timeout=1.0)
                            break
                        except queue.Full:
                            if self._halted:
                                return
            elif kind == "up":
                self._generation = max(self._generation, int(rest[0]))
                self.expect_session = True
                self.connected.set()
            elif kind == "down":
                self.connected.clear()
            elif kind == "paused":
                self.paused.set()
        self.connected.clear()
        conn.close()
        if self.stopping:
            self.paused.set()  # a child that is gone hands over nothing more
            return
        code = self._proc.exitcode if self._proc is not None else None
        log.error("the MQTT process ended (exit code %s); starting another in %g s (what it"
                  " had not acknowledged, the broker sends again)", code, RESTART_AFTER_S)
        time.sleep(RESTART_AFTER_S)
        if not self.stopping:
            self._generation += 1
            self.start()


def _child(broker_data: dict[str, Any], sites: list[str], protocol: int | None,
           generation: int, log_format: str, log_level: int, expect_session: bool,
           conn: Connection) -> None:
    """The child's main: signals ignored (module docstring), logging, then ``ChildSide``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    configure(log_format, log_level)
    broker = BrokerConfig.model_validate(broker_data)
    ChildSide(broker, sites, protocol, generation, expect_session, conn).run()


class ChildSide:
    """The child: ``Ingest`` feeding the pipe (thread ``mqtt-forward``), commands from
    the pipe (thread ``mqtt-commands``), and ``run`` waiting for the stop."""

    def __init__(self, broker: BrokerConfig, sites: list[str], protocol: int | None,
                 generation: int, expect_session: bool, conn: Connection) -> None:
        self.conn = conn
        self.inbox: queue.Queue[Received] = queue.Queue(maxsize=CHILD_QUEUE)
        self.ingest = Ingest(broker, self.inbox, sites=sites, protocol=protocol,
                             expect_session=expect_session)
        self.ingest.generation = generation
        self._lock = threading.Lock()
        self._closed = False
        self.stop = threading.Event()
        self.pausing = threading.Event()
        self._forwarder = threading.Thread(target=self._forward, name="mqtt-forward",
                                           daemon=True)

    def run(self) -> None:
        self._forwarder.start()
        threading.Thread(target=self._commands, name="mqtt-commands", daemon=True).start()
        self.ingest.start()
        self.stop.wait()
        # The order matters (module docstring): nothing is sent across once the pipe
        # may close, and the acknowledgements are written before the disconnect.
        self.pausing.set()
        self._forwarder.join()
        self.ingest.stop()
        with self._lock:
            self._closed = True
            self.conn.close()

    def send(self, item: tuple[Any, ...]) -> bool:
        with self._lock:
            if self._closed:
                return False
            try:
                self.conn.send(item)
                return True
            except (OSError, ValueError):
                self.stop.set()
                return False

    def _forward(self) -> None:
        up = False
        while not self.pausing.is_set():
            batch: list[tuple[str, bytes, int, int, int, bool]] = []
            try:
                m = self.inbox.get(timeout=SEND_EVERY_S * 10)
                batch.append((m.topic, m.payload, m.mid, m.qos, m.generation, m.retain))
                while len(batch) < SEND_MAX:
                    m = self.inbox.get_nowait()
                    batch.append((m.topic, m.payload, m.mid, m.qos, m.generation, m.retain))
            except queue.Empty:
                pass
            now_up = self.ingest.connected.is_set()
            if now_up != up:
                # Before the messages of a new connection, after those of the old.
                up = now_up
                if not self.send(("up", self.ingest.generation) if up else ("down",)):
                    return
            if batch and not self.send(("msgs", batch)):
                return
        # Paused: what is still here was never handed over; the broker sends it again.
        while True:
            try:
                self.inbox.get_nowait()
            except queue.Empty:
                break
        self.send(("paused",))

    def _commands(self) -> None:
        while True:
            try:
                kind, *rest = self.conn.recv()
            except (EOFError, OSError):
                break  # the parent is gone
            if kind == "ack":
                self.ingest.ack_ids(rest[0])
            elif kind == "publish":
                self.ingest.publish(rest[0])
            elif kind == "pause":
                self.ingest.pause()
                self.pausing.set()
            elif kind == "stop":
                break
        self.stop.set()

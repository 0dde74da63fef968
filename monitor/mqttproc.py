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
parent -> child  ``("ack", [(mid, qos, generation), ...])`` after the journal
                 commit, ``("stop",)``.

Nothing is acknowledged before the parent has committed (DESIGN § 2): the
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
import threading
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

from .config import BrokerConfig
from .engine.times import WallClock
from .ingest import Ingest, Received
from .logs import configure

log = logging.getLogger("stormwatch.ingest")

#: The child sends what it has at least this often, and at most this many at once.
SEND_EVERY_S = 0.002
SEND_MAX = 500
#: How long the child may keep received messages before the parent reads them.
CHILD_QUEUE = 10_000
RESTART_AFTER_S = 1.0


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

    def stop(self) -> None:
        self.stopping = True
        self._send(("stop",))
        if self._proc is not None:
            self._proc.join(timeout=15)
            if self._proc.is_alive():
                log.warning("the MQTT process did not stop within 15 s; terminating it")
                self._proc.terminate()
                self._proc.join(timeout=5)
        if self._reader is not None:
            self._reader.join(timeout=5)

    def ack(self, messages: list[Received]) -> int:
        """Acknowledge messages the journal holds now; the child sends the PUBACKs."""
        acks = [(m.mid, m.qos, m.generation) for m in messages if m.qos > 0]
        if acks:
            self._send(("ack", acks))
        return len(acks)

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
                received = round(self.clock() * 1000)
                for topic, payload, mid, qos, generation in rest[0]:
                    message = Received(topic, payload, mid, qos, generation, received)
                    while True:
                        try:
                            self.out.put(message, timeout=1.0)
                            break
                        except queue.Full:
                            if self.stopping:
                                return
            elif kind == "up":
                self._generation = max(self._generation, int(rest[0]))
                self.expect_session = True
                self.connected.set()
            elif kind == "down":
                self.connected.clear()
        self.connected.clear()
        conn.close()
        if self.stopping:
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
    """The child's main: ``Ingest`` feeding the pipe, commands from the pipe."""
    configure(log_format, log_level)
    broker = BrokerConfig.model_validate(broker_data)
    inbox: queue.Queue[Received] = queue.Queue(maxsize=CHILD_QUEUE)
    ingest = Ingest(broker, inbox, sites=sites, protocol=protocol,
                    expect_session=expect_session)
    ingest.generation = generation
    lock = threading.Lock()
    stop = threading.Event()

    def send(item: tuple[Any, ...]) -> bool:
        with lock:
            try:
                conn.send(item)
                return True
            except (OSError, ValueError):
                stop.set()
                return False

    def forward() -> None:
        up = False
        while not stop.is_set():
            batch: list[tuple[str, bytes, int, int, int]] = []
            try:
                m = inbox.get(timeout=SEND_EVERY_S * 10)
                batch.append((m.topic, m.payload, m.mid, m.qos, m.generation))
                while len(batch) < SEND_MAX:
                    m = inbox.get_nowait()
                    batch.append((m.topic, m.payload, m.mid, m.qos, m.generation))
            except queue.Empty:
                pass
            now_up = ingest.connected.is_set()
            if now_up != up:
                # Before the messages of a new connection, after those of the old.
                up = now_up
                if not send(("up", ingest.generation) if up else ("down",)):
                    return
            if batch and not send(("msgs", batch)):
                return

    def commands() -> None:
        while True:
            try:
                kind, *rest = conn.recv()
            except (EOFError, OSError):
                break  # the parent is gone
            if kind == "ack":
                ingest.ack_ids(rest[0])
            elif kind == "stop":
                break
        stop.set()

    threading.Thread(target=forward, name="mqtt-forward", daemon=True).start()
    reader = threading.Thread(target=commands, name="mqtt-commands", daemon=True)
    reader.start()
    ingest.start()
    stop.wait()
    ingest.stop()
    conn.close()

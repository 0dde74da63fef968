"""The simulated nodes while they run (``simulate.py``): each node's loop, and their buffers.

``drive`` runs one node's loop (``Node.run``) in a thread in simulated time: it
sleeps in real seconds (simulated seconds ÷ the clock's rate), never longer
than ``POLL_S`` so a stop is seen soon, and wakes early on a PUBACK. ``totals``
counts what the nodes' buffers hold, read as another process would: readings
taken, waiting for a PUBACK, dropped past the buffer bound.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from sensors.drivers.sim import SimulatedClock

if TYPE_CHECKING:  # imported for a run only (``Simulation.run``): paho is not for --help
    from sensors.node import Node

#: Longest real wait of a node's loop, so a stop is seen soon.
POLL_S: Final = 0.2


@dataclass(frozen=True)
class Totals:
    taken: int  # readings committed to the buffers, ever
    buffered: int  # waiting for a PUBACK
    dropped: int  # dropped past the buffer bound, ever

    @property
    def delivered(self) -> int:
        return self.taken - self.buffered - self.dropped


def totals(dbs: Sequence[Path]) -> Totals:
    """The buffers' counts, read as another process would (the nodes write from their threads)."""
    taken = buffered = dropped = 0
    for db in dbs:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            n, d = conn.execute(
                "SELECT ifnull(sum(readings), 0), ifnull(sum(dropped), 0) FROM sensors").fetchone()
            buffered += conn.execute("SELECT count(*) FROM readings").fetchone()[0]
            taken, dropped = taken + n, dropped + d
        finally:
            conn.close()
    return Totals(taken, buffered, dropped)


def drive(node: Node, clock: SimulatedClock, max_sleep_s: float, stop: threading.Event,
           errors: list[BaseException]) -> None:
    """One node's loop (``Node.run``, with sleeps in real seconds: simulated ÷ rate)."""
    try:
        node.start()
        while not stop.is_set():
            delay_s = node.step()
            if delay_s >= max_sleep_s:
                # The node caps its sleep at max_sleep_s of its clock, a blink at high
                # speed: sleep until the next reading instead (a status may wait for it).
                delay_s = max(delay_s, min(s.due_s for s in node.slots.values()) - clock())
            rate = clock.rate()
            wait_s = min(max(delay_s, 0.0) / rate, POLL_S) if rate > 0 else POLL_S
            if wait_s > 0:
                node.forwarder.drain_acks(wait_s=wait_s)  # wakes early on a PUBACK
    except BaseException as exc:  # reported by the watcher, in the main thread
        errors.append(exc)

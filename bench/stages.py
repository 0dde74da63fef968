"""Where the daemon's time per message goes: its own loop, in process, stage by stage.

Part of ``bench/ingest.py`` (not a benchmark of its own). The drains there
treat the daemon as a black box; this module is the one place of that
benchmark that imports the daemon's code, on purpose: to time its stages it
runs them, not a copy of them. A real ``Daemon`` (no workers) with a fresh
store of the same configuration takes the very messages the drains took, a
batch of ``BATCH_MAX`` at a time, through ``Daemon._turn`` (the loop's own
turn: ``_take_batch``, ``ingest_batch`` = ``batch.py``'s parse, journal
commit, acknowledgement, confirmations and engine; then the status record or
tick when due and the snapshot hand-over to the real ``SnapshotWriter``
thread). Thin timers are put around the functions that turn calls
(module attributes and instance attributes, nothing else changed):

* **hand-over**: what the parent does per message of the MQTT child's pipe
  (``mqttproc.IngestProcess._read``): unpickle a chunk of ``SEND_MAX``
  tuples, build the ``Received`` and ``put`` it on the daemon's queue;
* **parse + validate**: ``sources.parse.parse_message``;
* **journal rows**: ``host.rows.journal_in``;
* **journal commit**: ``Journal.commit`` (SQLite, ``synchronous=FULL``);
* **ack**: what ``IngestProcess.ack`` does in the parent (the list of
  (mid, qos, generation), pickled for the pipe; the PUBACKs themselves are
  written by the child);
* **confirmations**: ``Confirmer.committed``;
* **engine**: ``EngineHost.apply_committed`` less the ``record`` inside it;
* **record events + status**: ``EngineHost.record`` (events, outbox, log
  book and site status rows, one transaction), wherever it is called from;
* **snapshot (take)**: ``EngineHost.take_snapshot`` on the loop's thread;
  the writer thread's ``Snapshots.write`` is timed too and shown apart (it
  runs beside the loop);
* **rest of the turn**: what ``_turn`` and ``BatchPath.ingest`` spend
  outside the timed calls (their loops, the node clocks, the queue take).

What this does not contain: the MQTT child process (paho's v5 packet
handling and manual acks, ``bench/ingest.py``'s bare v5 client is its
floor), the broker, and the cost of sharing two cores between them and the
loop. ``bench/ingest.py`` prints the in-process sum beside the daemon's
measured time per message; the difference is that.
"""

from __future__ import annotations

import json
import pickle
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import harness  # noqa: F401 - puts the checkout on sys.path

import monitor.daemon.batch as batch_module
from monitor.config.file import parse_config
from monitor.daemon.heap import keep_heap
from monitor.daemon.loop import BATCH_MAX, Daemon, _Running
from monitor.daemon.snapshotwriter import SnapshotWriter
from monitor.host.engine import EngineHost
from monitor.sources.mqtt import Received
from monitor.sources.mqttproc import SEND_MAX
from monitor.store.opening import open_store

#: The rows of the table, in the order of a message's way through the daemon.
STAGES = ("hand-over", "parse + validate", "journal rows", "journal commit", "ack",
          "confirmations", "engine", "record events + status", "snapshot (take)",
          "rest of the turn")
WRITER = "snapshot write (writer thread)"


@dataclass
class Breakdown:
    messages: int
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    writer_s: float = 0.0
    wall_s: float = 0.0
    journaled: int = 0
    runs: int = 1

    def us(self, stage: str) -> float:
        return self.seconds[stage] / self.messages * 1e6

    @property
    def total_us(self) -> float:
        return sum(self.seconds.values()) / self.messages * 1e6


def median_of(runs: Sequence[Breakdown]) -> Breakdown:
    """Per stage, the median of several passes (the machine is shared and noisy)."""
    out = Breakdown(runs[0].messages, {s: statistics.median(r.seconds[s] for r in runs)
                                       for s in STAGES},
                    statistics.median(r.writer_s for r in runs),
                    statistics.median(r.wall_s for r in runs),
                    min(r.journaled for r in runs), len(runs))
    return out


class _Timers:
    """Accumulated seconds per stage, and wrappers that add to them."""

    def __init__(self, out: Breakdown) -> None:
        self.out = out
        self.lock = threading.Lock()

    def wrap(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        seconds = self.out.seconds

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                seconds[stage] += time.perf_counter() - t0
        return timed


class _PipeAcker:
    """The parent's side of ``IngestProcess``: ``ack`` pickles what would cross the pipe."""

    def __init__(self) -> None:
        self.connected = threading.Event()
        self.connected.set()
        self.paused = threading.Event()
        self.sent = 0

    def ack(self, messages: list[Received]) -> int:
        acks = [(m.mid, m.qos, m.generation) for m in messages if m.qos > 0]
        if acks:
            self.sent += len(pickle.dumps(("ack", acks), protocol=pickle.HIGHEST_PROTOCOL))
        return len(acks)

    def publish(self, messages: Sequence[tuple[str, bytes]]) -> None:
        pass


def measure(config_path: Path, messages: Sequence[tuple[str, bytes]], state_dir: Path
            ) -> Breakdown:
    """Run ``messages`` through a fresh daemon of ``config_path``'s configuration (its
    state in ``state_dir``), one ``Daemon._turn`` per batch, and time the stages."""
    data: dict[str, Any] = json.loads(config_path.read_text(encoding="utf-8"))
    data["state_dir"] = str(state_dir)
    data["log_format"] = "text"
    config = parse_config(data, env={})
    daemon = Daemon(config, workers=[])
    out = Breakdown(len(messages))
    timers = _Timers(out)
    acker = _PipeAcker()
    # The pipe's chunks as the child sends them: (topic, payload, mid, qos, generation).
    chunks = [pickle.dumps(("msgs", [(t, p, (i + k) % 65535 + 1, 1, 1)
                                     for k, (t, p) in enumerate(messages[i:i + SEND_MAX])]),
                           protocol=pickle.HIGHEST_PROTOCOL)
              for i in range(0, len(messages), SEND_MAX)]
    per_batch = max(1, BATCH_MAX // SEND_MAX)
    # batch.py's own names for the functions it calls: timed where batch.py looks them up.
    patched = {"parse_message": "parse + validate", "journal_in": "journal rows"}
    saved = {name: vars(batch_module)[name] for name in patched}
    for name, stage in patched.items():
        setattr(batch_module, name, timers.wrap(stage, saved[name]))
    try:
        with open_store(config) as store:
            store.journal.max_dead_bytes = config.dead_letters.max_bytes
            daemon.health.open()
            host = EngineHost.restore(config, store, clock=daemon.clock, routes=daemon.routes)
            host.coalesce = True
            host.tick_clock = daemon.tick_clock
            host.record_status()
            daemon.tick_clock.start(host.engine.tick_ms)
            keep_heap(full=True)
            _instrument(timers, daemon, store, host, acker)
            writer = SnapshotWriter(config, host.snapshots, daemon.clock)
            writer.start()
            run = _Running(host, writer, acker, threading.Event(), [],  # type: ignore[arg-type]
                           time.monotonic())
            turn_s = 0.0
            started = time.perf_counter()
            for i in range(0, len(chunks), per_batch):
                t0 = time.perf_counter()
                for chunk in chunks[i:i + per_batch]:
                    received = round(time.time() * 1000)
                    _, items = pickle.loads(chunk)
                    for topic, payload, mid, qos, generation in items:
                        daemon.queue.put(Received(topic, payload, mid, qos, generation,
                                                  received))
                t1 = time.perf_counter()
                out.seconds["hand-over"] += t1 - t0
                daemon._turn(store, run)  # noqa: SLF001 - the loop's own turn, timed
                turn_s += time.perf_counter() - t1
            out.wall_s = time.perf_counter() - started
            writer.stop()
            out.journaled = store.journal.max_seq()
            daemon.health.close()
    finally:
        for name, fn in saved.items():
            setattr(batch_module, name, fn)
    inner = sum(v for k, v in out.seconds.items() if k not in ("hand-over", "rest of the turn"))
    out.seconds["rest of the turn"] = max(0.0, turn_s - inner)
    out.writer_s = _writer_seconds[0]
    return out


_writer_seconds = [0.0]


def _instrument(timers: _Timers, daemon: Daemon, store: Any, host: EngineHost,
                acker: _PipeAcker) -> None:
    """Timers on the instances ``_turn`` calls through (attributes, nothing else)."""
    seconds = timers.out.seconds
    store.journal.commit = timers.wrap("journal commit", store.journal.commit)
    acker.ack = timers.wrap("ack", acker.ack)  # type: ignore[method-assign]
    daemon.confirmer.committed = timers.wrap(  # type: ignore[method-assign]
        "confirmations", daemon.confirmer.committed)
    record = host.record
    apply_committed = host.apply_committed
    take_snapshot = host.take_snapshot
    write = host.snapshots.write

    def timed_record(*args: Any, **kwargs: Any) -> int:
        t0 = time.perf_counter()
        try:
            return record(*args, **kwargs)
        finally:
            seconds["record events + status"] += time.perf_counter() - t0

    def timed_apply(*args: Any, **kwargs: Any) -> None:
        before = seconds["record events + status"]
        t0 = time.perf_counter()
        try:
            apply_committed(*args, **kwargs)
        finally:
            seconds["engine"] += time.perf_counter() - t0 - (
                seconds["record events + status"] - before)

    def timed_take() -> Any:
        t0 = time.perf_counter()
        try:
            return take_snapshot()
        finally:
            seconds["snapshot (take)"] += time.perf_counter() - t0

    def timed_write(*args: Any, **kwargs: Any) -> None:
        t0 = time.perf_counter()
        try:
            write(*args, **kwargs)
        finally:
            _writer_seconds[0] += time.perf_counter() - t0

    _writer_seconds[0] = 0.0
    host.record = timed_record  # type: ignore[method-assign]
    host.apply_committed = timed_apply  # type: ignore[method-assign]
    host.take_snapshot = timed_take  # type: ignore[method-assign]
    host.snapshots.write = timed_write  # type: ignore[method-assign]

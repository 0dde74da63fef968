"""The node runtime: sensors → buffer → broker, one loop in the main thread.

Theory of operation
-------------------
Each turn of ``Node.step``:

1. PUBACKs that arrived are applied: their rows are marked published
   (``forward.py``), and deleted at once only for sensors in the PUBACK
   fallback. Confirmations that arrived delete what they cover
   (``Buffer.confirm``); then what ``confirm.py`` says is due: publishing a
   sensor's unconfirmed readings again, or its fallback. Its clocks run on
   online time: the seconds the link was up.
2. Sensors that are due are read: a periodic driver every ``every_s``, a
   self-paced one (``csv``) when its ``wait_s`` says. All samples of one read
   are committed in one transaction with the sensor's state (``_record``):
   ``seq``, the rain counter, the driver's state, the status counts.
3. The forwarder publishes committed rows, in order, within its window and
   rate. New readings are committed whatever the link does; while it is down
   they simply wait in the buffer.
4. ``status`` is published every ``status_every_s`` while connected (a status
   is about now: it is not buffered); it carries each sensor's ``oldest_seq``
   and ``confirm`` mode, which the daemon's confirmations depend on.
5. The loop sleeps until the next sensor is due, the rate allows another
   publish, or a PUBACK arrives, whichever is first (at most ``MAX_SLEEP_S``:
   a confirmation is applied within that).

The wall clock is read only for timestamps and checked against the build date
(``clock.py``): while it is wrong, periodic readings are not taken (a rain
gauge keeps counting tips, published with the first reading after) and
status says ``clock_invalid``.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from .buffer import Buffer, SensorState
from .clock import BUILD_EPOCH_S, clock_valid
from .config import NodeConfig, SensorBase
from .confirm import Confirmations, Mode, fallback_message
from .counter import tips_between
from .drivers import BOARD, Driver, Hardware, Sample, make_driver
from .fields import FIELDS_BY_KIND, REQUIRED_ANY
from .forward import Forwarder
from .link import Link, MqttLink
from .payloads import reading_payload, reading_topic, status_payload, status_topic

log = logging.getLogger(__name__)

#: Bytes in the MB of ``buffer.max_mb``.
BYTES_PER_MB = 1024 * 1024
#: At most one log line per this many seconds for a repeated condition.
LOG_EVERY_S = 60.0
#: Longest sleep of the loop, so a stop request is seen soon.
MAX_SLEEP_S = 1.0


@dataclass
class _Slot:
    """One sensor's driver and schedule."""

    config: SensorBase
    driver: Driver
    due_s: float
    errors: int = 0
    logged_s: float = -math.inf


def first_seq(wall_s: float) -> int:
    """Where a sensor new to the buffer starts its ``seq``: the clock in ms × 1000.

    A node whose buffer is lost (a new SD card) starts again above every
    ``seq`` it ever sent, as long as it sent fewer than 1000 readings per
    millisecond, so the daemon never sees an old ``seq`` with a new body.
    """
    return int(max(wall_s, BUILD_EPOCH_S) * 1000) * 1000


class Node:
    """The runtime of one node. ``run(stop)`` until ``stop`` is set; ``close()`` after."""

    def __init__(self, config: NodeConfig, *, password: str | None = None,
                 hardware: Hardware = BOARD, link: Link | None = None,
                 wall: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic,
                 battery_v: Callable[[], float | None] | None = None,
                 rssi_dbm: Callable[[], float | None] | None = None,
                 confirm_clock: Callable[[], float] | None = None) -> None:
        """``confirm_clock`` runs the confirmation clocks (default ``monotonic``; a
        simulation whose ``monotonic`` races ahead passes real time: the daemon's
        answers take real seconds)."""
        self.config = config
        self.prefix = config.broker.topic_prefix
        self._wall = wall
        self._monotonic = monotonic
        self.started_s = monotonic()
        self.buffer = Buffer(config.buffer.path, round(config.buffer.max_mb * BYTES_PER_MB),
                             first_seq=lambda: first_seq(self._wall()))
        self.link: Link = link or MqttLink(config, password, config.buffer.max_inflight,
                                           extra_queue=2 * len(config.sensors))
        self.forwarder = Forwarder(self.buffer, self.link, config.buffer.max_inflight,
                                   config.buffer.max_rate_per_s, monotonic)
        self._battery_v = battery_v or _file_reader(config.health.battery_v_file,
                                                    config.health.battery_v_scale)
        self._rssi_dbm = rssi_dbm or _file_reader(config.health.rssi_dbm_file, 1.0)
        self.slots: dict[str, _Slot] = {}
        try:
            for sensor in config.sensors:
                driver = make_driver(sensor, hardware, config.site)
                self.slots[sensor.id] = _Slot(sensor, driver, self.started_s)
                state = self.buffer.state(sensor.id)
                driver.restore(state.driver_state if state else None)
        except BaseException:
            self.close()
            raise
        self.clock_ok = True
        self._status_due_s = self.started_s
        self._dropped_logged_s = -math.inf
        self._confirm_clock = confirm_clock or monotonic
        self._online_s = 0.0
        self._online_at = self._confirm_clock()
        modes: dict[str, Mode] = {}
        for sensor_id in self.slots:
            state = self.buffer.state(sensor_id)
            modes[sensor_id] = "puback" if state is not None and state.confirm == "puback" \
                else "journaled"
        fallback = config.confirm_fallback_minutes
        self.confirmations = Confirmations(config.confirm_after_s,
                                           None if fallback is None else fallback * 60, modes)
        waiting = self.buffer.waiting()
        for sensor_id in self.confirmations.puback() & set(waiting):
            self.buffer.set_mode(sensor_id, "puback")  # published before the restart: go now
        self.confirmations.published([s for s in waiting if s in self.slots], 0.0)

    # ------------------------------------------------------------------ the loop

    def start(self) -> None:
        self.link.start()
        self._check_clock()

    def run(self, stop: threading.Event) -> None:
        self.start()
        while not stop.is_set():
            self.step(wait=True)

    def step(self, wait: bool = False) -> float:
        """One turn of the loop (module docstring); seconds until the next thing to do.

        With ``wait`` it sleeps that long first, waking early on a PUBACK.
        """
        self.wait_for_acks(0.0)
        self._apply_confirmations()
        now_s = self._monotonic()
        self._check_clock()
        for slot in self.slots.values():
            if slot.due_s <= now_s:
                self._read(slot, now_s)
        send_in = self.forwarder.pump()
        if self.link.connected and now_s >= self._status_due_s:
            self.publish_status()
            self._status_due_s = now_s + self.config.status_every_s
        self._log_dropped(now_s)
        # While offline a status cannot go out: its due time must not wake the loop
        # (the reconnect is noticed within MAX_SLEEP_S).
        status_in = self._status_due_s - now_s if self.link.connected else math.inf
        next_s = min([send_in, status_in, *(slot.due_s - now_s for slot in self.slots.values())])
        delay = min(max(next_s, 0.0), MAX_SLEEP_S)
        if wait and delay > 0:
            self.wait_for_acks(delay)
        return delay

    # ------------------------------------------------------------------ confirmations

    def online_s(self) -> float:
        """Seconds the link has been up since the start (the confirmation clocks' time)."""
        now = self._confirm_clock()
        if self.link.connected:
            self._online_s += now - self._online_at
        self._online_at = now
        return self._online_s

    def wait_for_acks(self, wait_s: float) -> None:
        """Apply the PUBACKs that arrive within ``wait_s`` (none: those waiting)."""
        sensors = self.forwarder.drain_acks(wait_s=wait_s,
                                            release=self.confirmations.puback())
        if sensors:
            self.confirmations.published(sensors, self.online_s())

    def _apply_confirmations(self) -> None:
        """Delete what the confirmations that arrived cover, then do what is due
        (``confirm.py``): send a sensor's unconfirmed readings again, or fall back."""
        newest: dict[str, tuple[int, bool]] = {}
        while True:
            try:
                sensor, seq, retained = self.link.confirmations.get_nowait()
            except queue.Empty:
                break
            seq0, live0 = newest.get(sensor, (-1, False))
            newest[sensor] = (max(seq, seq0), live0 or not retained)
        now_s = self.online_s()
        applied: dict[str, tuple[bool, bool]] = {}
        for sensor, (seq, live) in newest.items():
            state = self.buffer.state(sensor)
            if sensor not in self.slots or state is None:
                continue
            if seq >= state.next_seq:
                log.warning("%s: the daemon confirms seq %d, but this node has numbered only "
                            "up to %d: ignored (a confirmation retained from another buffer?)",
                            sensor, seq, state.next_seq - 1)
                continue
            self.buffer.confirm(sensor, seq)
            applied[sensor] = (state.confirmed_seq is None or seq > state.confirmed_seq, live)
        waiting = self.buffer.waiting() if applied else Counter()
        for sensor, (moved, live) in applied.items():
            if self.confirmations.confirmed(sensor, moved=moved, live=live,
                                            waiting=waiting[sensor] > 0,
                                            now_s=now_s) == "journaled":
                self.buffer.set_mode(sensor, "journaled")
                log.info("%s: confirmations from the daemon again: keeping each reading until "
                         "it is journaled (confirm: journaled)", sensor)
        for action, sensor in self.confirmations.due(now_s):
            if action == "resend":
                n = self.buffer.unpublish(sensor)
                self.forwarder.rewind()
                log.info("%s: %d reading(s) not confirmed by the daemon %g s or more after "
                         "their PUBACK: publishing them again", sensor, n,
                         self.config.confirm_after_s)
            else:
                self.buffer.set_mode(sensor, "puback")
                log.warning(fallback_message(sensor, self.config.confirm_fallback_minutes or 0))

    def _check_clock(self) -> None:
        ok = clock_valid(self._wall())
        if ok != self.clock_ok:
            if ok:
                log.info("system clock set (%s): taking readings again",
                         time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._wall())))
            else:
                log.error("system clock reads %s, before this runtime's build date: not "
                          "taking timestamped readings until it is set (NTP, RTC)",
                          time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._wall())))
        self.clock_ok = ok

    def _read(self, slot: _Slot, now_s: float) -> None:
        cfg, driver = slot.config, slot.driver
        if driver.own_timestamps or self.clock_ok:
            try:
                samples = driver.read()
            except Exception as exc:  # a sensor failing must not stop the others
                slot.errors += 1
                if now_s - slot.logged_s >= LOG_EVERY_S:
                    slot.logged_s = now_s
                    log.warning("%s: read failed (%d so far): %s: %s", cfg.id, slot.errors,
                                type(exc).__name__, exc)
                samples = []
            if samples:
                self._record(cfg, samples)
        wait = driver.wait_s()
        if wait is None:
            # Keep the phase: a slow read does not make every later one late.
            slot.due_s = max(slot.due_s + cfg.every_s, now_s)
        else:
            slot.due_s = now_s + wait

    # ------------------------------------------------------------------ commit

    def _record(self, cfg: SensorBase, samples: Sequence[Sample]) -> None:
        """Commit one read's samples, with everything they change, in one transaction."""
        topic = reading_topic(self.prefix, self.config.site, cfg.id)
        now_ms = round(self._wall() * 1000)
        with self.buffer.transaction() as tx:
            state = tx.sensor(cfg.id)
            for sample in samples:
                state.out_of_range += sample.out_of_range
                state.discarded += sample.discarded
                if sample.state is not None:
                    state.driver_state = sample.state
                fields = self._fields(cfg, state, sample)
                if fields is None:
                    continue
                ts_ms = sample.ts_ms if sample.ts_ms is not None else now_ms
                tx.add(state, ts_ms, topic, partial(reading_payload, ts_ms, fields=fields))

    def _fields(self, cfg: SensorBase, state: SensorState,
                sample: Sample) -> dict[str, float] | None:
        """The payload fields of a sample, the rain counter advanced; None: nothing to publish."""
        if not sample.publishes:
            return None
        allowed = FIELDS_BY_KIND[cfg.kind]
        fields = {k: v for k, v in sample.fields.items() if k in allowed}
        if cfg.kind == "rain":
            if sample.tips is not None:
                state.tips_total = (state.tips_total or 0) + sample.tips
            if sample.counter is not None:
                if state.tips_total is None:
                    state.tips_total = sample.counter  # a fresh node shows the logger's count
                else:
                    state.tips_total += tips_between(state.last_counter, sample.counter,
                                                     sample.counter_bits)
                state.last_counter = sample.counter
            if state.tips_total is not None and "precip_in" not in fields:
                fields["tips_total"] = state.tips_total
        if not fields.keys() & REQUIRED_ANY[cfg.kind]:
            state.discarded += 1
            return None
        return fields

    # ------------------------------------------------------------------ status

    def status_fields(self) -> dict[str, dict[str, object]]:
        """Each sensor's status body (without ``ts``); see ``payloads.py``."""
        common: dict[str, object] = {}
        for name, read in (("battery_v", self._battery_v), ("rssi_dbm", self._rssi_dbm)):
            value = read()
            if value is not None:
                common[name] = round(value, 3)
        common["uptime_s"] = round(self._monotonic() - self.started_s, 1)
        buffered = self.buffer.buffered()
        out: dict[str, dict[str, object]] = {}
        for sensor_id, slot in self.slots.items():
            state = self.buffer.state(sensor_id)
            oldest = self.buffer.oldest_seq(sensor_id)
            out[sensor_id] = {
                **common,
                "buffered": buffered.get(sensor_id, 0),
                "dropped": state.dropped if state else 0,
                **({"oldest_seq": oldest} if oldest is not None else {}),
                "confirm": self.confirmations.mode(sensor_id),
                "out_of_range": state.out_of_range if state else 0,
                "discarded": state.discarded if state else 0,
                "read_errors": slot.errors,
                "clock_invalid": not self.clock_ok,
            }
        return out

    def publish_status(self) -> None:
        """One status message per sensor (QoS 1, not buffered)."""
        ts_ms = round(self._wall() * 1000)
        for sensor_id, body in self.status_fields().items():
            self.link.publish(status_topic(self.prefix, self.config.site, sensor_id),
                              status_payload(ts_ms, body))

    def _log_dropped(self, now_s: float) -> None:
        dropped = self.buffer.dropped_since
        if dropped and now_s - self._dropped_logged_s >= LOG_EVERY_S:
            self._dropped_logged_s = now_s
            log.warning("buffer full (max_mb %g): dropped the %d oldest readings (%s)",
                        self.config.buffer.max_mb, sum(dropped.values()),
                        ", ".join(f"{s} {n}" for s, n in sorted(dropped.items())))
            dropped.clear()

    # ------------------------------------------------------------------ shutdown

    def close(self, drain_s: float = 2.0) -> None:
        """Stop the sensors, wait up to ``drain_s`` for PUBACKs in flight, disconnect."""
        for slot in self.slots.values():
            try:
                slot.driver.close()
            except Exception as exc:  # closing the rest matters more
                log.warning("%s: close failed: %s", slot.config.id, exc)
        deadline = self._monotonic() + drain_s
        while self.forwarder.inflight and self._monotonic() < deadline and self.link.connected:
            self.wait_for_acks(0.05)
        self.link.close()
        self.buffer.close()


def _file_reader(path: Path | None, scale: float) -> Callable[[], float | None]:
    """A reader of one number from ``path`` (× ``scale``); None when absent or unreadable."""

    def read() -> float | None:
        if path is None:
            return None
        try:
            value = float(path.read_text().split()[0]) * scale
        except (OSError, ValueError, IndexError):
            return None
        return value if math.isfinite(value) else None

    return read

"""A node draining a backlog: health judged in the readings' event time (item 9; monitor/README.md,
"Sensor health").

The node was offline for days and buffered a reading a minute. Back online, it
publishes its ``status`` stamped now (``buffered``: what it still holds) and
sends the backlog in order with the readings' own timestamps. Before, each old
reading landed before the status in event time and revised the silence that
ended there: 5 000 readings made 15 000 health events (``sensor_recovered``
revision 4 998), each exported and logged. Now the status that holds a backlog
proves nothing about the time before it, and the daemon logs one line per
backlog.

Real SQLite store and the daemon's ``EngineHost`` with a fake wall clock, fed
as the daemon's run loop does (``Journal.commit`` then
``EngineHost.apply_committed``, a tick after each batch: the daemon ticks every
second while the backlog arrives at the node's 50 readings a second).
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from monitor.config.file import parse_config
from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_MINUTE, iso, parse_iso
from monitor.host.engine import BACKFILL_SETTLE_MS, EngineHost
from monitor.host.rows import journal_in
from monitor.store.opening import open_store

SITE = "branch-meadows"
T0 = parse_iso("2026-05-01T00:00:00Z")
MIN = MS_PER_MINUTE
BACKLOG = 5000
HEALTH = ("sensor_stale", "sensor_recovered", "battery_low")
LIVE = 120  # minutes of live readings before the node goes offline


class Clock:
    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> float:
        return self.ms / 1000


def drain(tmp_path: Path, *, dead_minutes: int = 0) -> dict[str, Any]:
    """Two hours live, then the node offline for ``BACKLOG`` minutes, of which the first
    ``dead_minutes`` it had no power (nothing measured); back online it sends its status
    (stamped now, ``buffered``) and its backlog, 50 readings a second."""
    config = parse_config({"state_dir": str(tmp_path), "sites": [{
        "id": SITE, "condition": "B",
        "sensors": [{"id": "rg1", "kind": "rain", "node": "pi-1"}]}]}, env={})
    clock = Clock(T0)
    with open_store(config) as store:
        host = EngineHost.restore(config, store, clock=clock, routes=lambda e: ["qp"])
        host.coalesce = True  # as the daemon runs it

        def send(items: list[Reading]) -> None:
            seqs = store.journal.commit([journal_in(r, topic=None, received_ms=clock.ms)
                                         for r in items])
            host.apply_committed([(seq, r, clock.ms) for seq, r in zip(seqs, items, strict=True)
                                  if seq is not None])

        def reading(at_ms: int) -> Reading:
            return Reading(SITE, "rg1", "rain", at_ms, tips_total=0, battery_v=3.9)

        def status(buffered: int) -> Reading:
            return Reading(SITE, "rg1", "status", clock.ms, buffered=buffered, battery_v=3.9)

        for m in range(LIVE):
            clock.ms = T0 + m * MIN
            send([reading(clock.ms), status(0)])
            host.tick()
        gone = T0 + (LIVE - 1) * MIN
        for m in range(1, BACKLOG + 1, 10):  # the daemon ticks on while nobody talks
            clock.ms = gone + m * MIN
            host.tick()
        clock.ms = gone + BACKLOG * MIN
        backlog = [reading(gone + k * MIN) for k in range(1 + dead_minutes, BACKLOG + 1)]
        left, last_status = len(backlog), None
        for i in range(0, len(backlog), 50):
            batch = backlog[i:i + 50]
            if last_status is None or clock.ms - last_status >= MIN:
                send([status(left)])  # every minute, while it still holds readings
                last_status = clock.ms
            send(batch)
            left -= len(batch)
            host.tick()
            clock.ms += 1000
        for _ in range(5):  # live again: a reading and an empty buffer every minute
            clock.ms += MIN
            send([reading(clock.ms), status(0)])
            host.tick()
        clock.ms += BACKFILL_SETTLE_MS
        host.tick()
        rows = store.events.all(SITE)
        health = [e for e in rows if e.type in HEALTH]
        return {
            "health": Counter((e.type, e.revision, e.retracted) for e in health),
            "current": sorted((e.type, e.to_json().get("last_seen"), iso(e.at_ms))
                              for e in store.events.current(SITE) if e.type in HEALTH),
            "back": gone + BACKLOG * MIN,
        }


def test_a_backlog_of_5000_readings_gives_a_handful_of_health_events(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="stormwatch.daemon")
    result = drain(tmp_path)
    # The daemon concluded the silence while the node was away (the daemon cannot know
    # better then); the backlog shows the node measured all along: the silence is
    # withdrawn, once. Nothing else: no revision per reading, no recovery.
    assert result["health"] == Counter({("sensor_stale", 0, False): 1,
                                        ("sensor_stale", 1, True): 1})
    assert result["current"] == []
    # One log line for the backlog, not one per revision; the live part logged as before.
    lines = [r.getMessage() for r in caplog.records]
    (summary,) = [line for line in lines if line.startswith("backlog of site")]
    # Rows more than an hour late are the backlog: reading k (at ``gone + k`` minutes)
    # arrives with batch (k - 1) // 50, a second after the one before.
    gone = T0 + (LIVE - 1) * MIN
    late = [k for k in range(1, BACKLOG + 1)
            if result["back"] + (k - 1) // 50 * 1000 - (gone + k * MIN) > 60 * MIN]
    assert summary == (
        f"backlog of site {SITE}: {len(late)} late row(s) from {iso(gone + MIN)} to "
        f"{iso(gone + late[-1] * MIN)} applied; 1 event(s) recorded (1 of them revisions: "
        "sensor_stale 1); the log book and the alerts have the latest revision of each")
    assert [line for line in lines if line.startswith("event ")] == [
        f"event sensor_stale site={SITE} at={iso(T0 + (LIVE - 1 + 15) * MIN)} rev=0 "
        f'{{"sensor":"rg1","last_seen":"{iso(T0 + (LIVE - 1) * MIN)}",'
        '"stale_after_minutes":15.0}']


def test_a_backlog_that_leaves_a_real_gap_says_so_once(tmp_path: Path) -> None:
    """The node had no power for its first 600 minutes offline: its backlog starts
    after them, and that gap is a silence in event time, reported once."""
    result = drain(tmp_path, dead_minutes=600)
    gone = T0 + (LIVE - 1) * MIN
    assert result["current"] == [
        ("sensor_recovered", iso(gone + 601 * MIN), iso(gone + 601 * MIN)),
        ("sensor_stale", iso(gone), iso(gone + 15 * MIN))]
    assert sum(result["health"].values()) <= 10
    assert not any(rev > 1 for _, rev, _ in result["health"])

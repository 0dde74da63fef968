"""A node replaying its buffer: the log book and the outbox get the settled revisions, while the
events themselves, and replay, are unchanged.

Real SQLite store and the daemon's ``EngineHost`` with a fake wall clock; the
readings are committed to the journal and applied exactly as the daemon's run
loop does (``Journal.commit`` then ``EngineHost.apply_committed``), with a tick
between batches as the loop makes when it is caught up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monitor.config.file import parse_config
from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE, parse_iso
from monitor.host.engine import BACKFILL_SETTLE_MS, EngineHost
from monitor.host.rows import journal_in
from monitor.store.opening import open_store

SITE = "branch-meadows"
T0 = parse_iso("2026-05-01T00:00:00Z")
NOW = T0 + 20 * MS_PER_HOUR  # when the node comes back online


class Clock:
    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> float:
        return self.ms / 1000


def storm_readings() -> list[Reading]:
    """599 counter readings a minute apart: dry, a 0.9 in storm, dry again."""
    def tips(m: int) -> int:
        return max(0, min(90, (m - 100) // 2))
    return [Reading(SITE, "rg1", "rain", T0 + m * MS_PER_MINUTE, tips_total=tips(m))
            for m in range(599)]


def backfill(tmp_path: Path, coalesce: bool) -> dict[str, Any]:
    config = parse_config({"state_dir": str(tmp_path / ("on" if coalesce else "off")),
                           "sites": [{"id": SITE, "condition": "B",
                                      "sensors": [{"id": "rg1", "kind": "rain"}]}]}, env={})
    clock = Clock(NOW)
    with open_store(config) as store:
        host = EngineHost.restore(config, store, clock=clock, routes=lambda e: ["qp"])
        host.coalesce = coalesce
        readings = storm_readings()
        for i in range(0, len(readings), 20):  # the node sends 20 a second
            batch = readings[i:i + 20]
            seqs = store.journal.commit([journal_in(r, topic=None, received_ms=clock.ms)
                                         for r in batch])
            host.apply_committed([(seq, r, clock.ms) for seq, r in zip(seqs, batch, strict=True)
                                  if seq is not None])
            host.tick()
            clock.ms += 1000
        waiting = store.events.deferred_count()
        clock.ms += BACKFILL_SETTLE_MS
        host.tick()
        logbook = store.events.logbook(SITE)
        return {
            "waiting": waiting,
            "left": store.events.deferred_count(),
            "logbook": [(r.type, r.revision, bool(r.body.get("retracted"))) for r in logbook],
            "current": sorted((e.id, e.type) for e in store.events.current(SITE)),
            "final": {e.id: {k: v for k, v in e.to_json().items() if k != "revision"}
                      for e in store.events.current(SITE)},
            "outbox": [(o.alert_id.split(":")[0], o.tag) for o in store.outbox.rows()],
            "stored": len(store.events.all(SITE)),
        }


def test_a_backfill_logs_only_the_settled_revisions(tmp_path: Path) -> None:
    noisy = backfill(tmp_path, coalesce=False)
    quiet = backfill(tmp_path, coalesce=True)
    # The noise the issue saw: intermediate revisions and retractions in the log book.
    assert len(noisy["logbook"]) > 2 * len(noisy["current"])
    assert any(retracted for _, _, retracted in noisy["logbook"])
    # Coalesced: the events held back while the backlog flowed, then one log book
    # row per fact that holds, and no retraction of a fact nobody was told about.
    assert quiet["waiting"] > 0 and quiet["left"] == 0
    assert len(quiet["logbook"]) == len(quiet["current"])
    assert not any(retracted for _, _, retracted in quiet["logbook"])
    # The facts themselves are the same (revision numbers aside), and every one of
    # them that is routed got its alert once.
    assert quiet["final"] == noisy["final"]
    assert sorted(quiet["outbox"]) == sorted((eid, "qp") for eid, _ in quiet["current"])
    # Every revision is still in the events table (the exporter reads it).
    assert quiet["stored"] == noisy["stored"]


def test_live_data_is_not_held_back(tmp_path: Path) -> None:
    config = parse_config({"state_dir": str(tmp_path),
                           "sites": [{"id": SITE, "sensors": [{"id": "rg1", "kind": "rain"}]}]},
                          env={})
    clock = Clock(T0 + MS_PER_MINUTE)
    with open_store(config) as store:
        host = EngineHost.restore(config, store, clock=clock)
        host.coalesce = True
        reading = Reading(SITE, "rg1", "rain", T0, tips_total=0)
        (seq,) = store.journal.commit([journal_in(reading, topic=None, received_ms=clock.ms)])
        assert seq is not None
        host.apply_committed([(seq, reading, clock.ms)])
        assert host.backfill == {}
        assert store.events.deferred_count() == 0

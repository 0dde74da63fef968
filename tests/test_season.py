"""A construction season, not minutes: the engine and the daemon over weeks of event time.

Issue 8: once a timeline compacted (more than ``lateness_days`` + 1 day of
history), every snapshot failed on a ``-inf`` in the health timeline's base
key, the failure killed the daemon's main loop, and each restart replayed the
whole journal only to fail again.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from monitor.engine import Engine
from monitor.engine.inputs import Inspection, Reading
from monitor.engine.times import MS_PER_DAY, MS_PER_MINUTE
from monitor.store import Store

from .conftest import MakeMosquitto
from .daemonkit import (
    Daemons,
    Publisher,
    counter_storm,
    events_of,
    journal_count,
    wait_until,
    write_config,
)
from .util import SITE, site_config, ts

START = ts("2026-05-01T00:00:00Z")
CONFIG = site_config(sensors=[
    {"id": "rg1", "kind": "rain", "in_per_tip": 0.01},
    {"id": "tb-up", "kind": "turbidity"},
    {"id": "tb-down", "kind": "turbidity"},
    {"id": "trap1-depth", "kind": "sediment"},
])


def season(days: int, every_min: int = 5, seed: int = 8) -> list[Reading | Inspection]:
    """Readings of every sensor every ``every_min`` minutes, a storm every few days,
    status messages with battery and signal, and a weekly inspection."""
    rng = random.Random(seed)
    items: list[Reading | Inspection] = []
    tips = 0
    for m in range(0, days * 24 * 60, every_min):
        t = START + m * MS_PER_MINUTE
        day = m // (24 * 60)
        raining = day % 4 == 1 and (m // 60) % 24 in range(6, 14)
        tips += rng.choice([0, 1, 2]) if raining else 0
        items.append(Reading(SITE, "rg1", "rain", t, tips_total=tips, battery_v=3.9))
        up = 8 + rng.random() * 2
        items.append(Reading(SITE, "tb-up", "turbidity", t, ntu=round(up, 2)))
        down = up + (rng.random() * 15 if raining else rng.random())
        items.append(Reading(SITE, "tb-down", "turbidity", t + 30_000, ntu=round(down, 2)))
        items.append(Reading(SITE, "trap1-depth", "sediment", t,
                             depth_in=round(5 + day * 0.4 + rng.random(), 2)))
        if m % 60 == 0:
            items.append(Reading(SITE, "rg1", "status", t, battery_v=3.9, rssi_dbm=-71.0,
                                 uptime_s=float(m * 60)))
        if m % (7 * 24 * 60) == 3 * 24 * 60:
            items.append(Inspection(SITE, "J. Rivera", t, "routine"))
    return items


def test_a_snapshot_after_compaction_is_plain_json_and_restores_the_same_engine() -> None:
    items = season(30)
    assert items[-1].ts_ms - items[0].ts_ms > (7 + 1 + 20) * MS_PER_DAY  # compaction ran
    half = len(items) // 2
    whole = Engine(CONFIG)
    for item in items[:half]:
        whole.apply(item)
    assert whole.site_engine(SITE).compacted_ms is not None

    text = json.dumps(whole.dump(), allow_nan=False)  # raised ValueError before the fix
    resumed = Engine.restore(CONFIG, json.loads(text))

    rest: list[dict[str, Any]] = []
    rest_resumed: list[dict[str, Any]] = []
    for item in items[half:]:
        rest += [e.to_json() for e in whole.apply(item)]
        rest_resumed += [e.to_json() for e in resumed.apply(item)]
    assert rest_resumed == rest
    assert [e.to_json() for e in resumed.current_events()] == [
        e.to_json() for e in whole.current_events()]
    json.dumps(resumed.dump(), allow_nan=False)


# --------------------------------------------------------------------------- the daemon


@pytest.mark.integration
def test_a_failing_snapshot_is_logged_and_retried_while_ingest_goes_on(
        tmp_path: Path, make_mosquitto: MakeMosquitto) -> None:
    broker = make_mosquitto()
    cfg = write_config(tmp_path, broker.port, sections=(
        "daemon: {snapshot_every_s: 0.3, snapshot_retry_s: 0.5}\n"))
    with Daemons() as daemons:
        daemon = daemons.start(cfg)
        db = cfg.parent / "state" / "stormwatch.db"
        # A real failure of the real store, not a mock: SQLite itself refuses the
        # snapshot row, as it would on a full disk or a damaged table.
        with sqlite3.connect(db) as conn:
            conn.execute("CREATE TRIGGER refuse_snapshots BEFORE INSERT ON snapshots"
                         " BEGIN SELECT RAISE(ABORT, 'snapshot refused by the test'); END")
        start = int(time.time()) // 60 * 60 - 5 * 3600
        first = counter_storm(start, 120, storm_from=10, storm_tips=60)
        pub = Publisher(broker.port)
        pub.send_many(first)
        wait_until(lambda: journal_count(cfg) == len(first), 30, "the first readings")
        wait_until(lambda: daemon.log_text().count("FAILED") >= 2, 30,
                   "two failed snapshot attempts in the log")
        assert "snapshot refused by the test" in daemon.log_text()  # with the cause
        assert daemon.running

        # Ingest and the engine went on meanwhile.
        second = counter_storm(start + 120 * 60, 60, storm_from=0, storm_tips=0)
        pub.send_many(second)
        pub.close()
        wait_until(lambda: journal_count(cfg) == len(first) + len(second), 30, "more readings")
        wait_until(lambda: events_of(cfg, "storm_qualified"), 30, "the storm to qualify")

        with sqlite3.connect(db) as conn:
            conn.execute("DROP TRIGGER refuse_snapshots")
        with Store(db, readonly=True) as store:
            wait_until(lambda: store.latest_snapshot() is not None, 30,
                       "a snapshot once the store accepts it again")
        assert daemon.stop() == 0

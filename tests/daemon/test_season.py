"""A construction season, not minutes: the engine and the daemon over weeks of event time.

Once a timeline compacted (more than ``lateness_days`` + 1 day of
history), every snapshot failed on a ``-inf`` in the health timeline's base
key, the failure killed the daemon's main loop, and each restart replayed the
whole journal only to fail again.
"""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor.config.file import load_config
from monitor.contract.inputs import Inspection, Reading
from monitor.contract.times import MS_PER_DAY, MS_PER_MINUTE, iso
from monitor.engine import Engine, MemoryWindow
from monitor.host.engine import EngineHost
from monitor.host.rows import journal_in
from monitor.store import Store
from monitor.store.opening import open_store
from monitor.views.replay import replay
from monitor.views.status import build_status

from ..conftest import MakeMosquitto
from ..support.daemonkit import (
    DaemonProcess,
    Daemons,
    FakeClock,
    Publisher,
    counter_storm,
    events_of,
    journal_count,
    ticked_after_input,
    wait_until,
    write_config,
)
from ..support.util import SITE, site_config, ts

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


def _latest(config: Any, items: list[Reading | Inspection], ticks: set[int]) -> list[Any]:
    """The latest revision of every fact, settled or not, when the engine ticks before
    the items at ``ticks`` at the end of that item's day (a daemon whose wall clock
    is ahead of a backlog it drains), and once at the end."""
    engine = Engine(config, MemoryWindow())
    latest: dict[str, dict[str, Any]] = {}
    for i, item in enumerate(items):
        events = engine.tick(item.ts_ms - item.ts_ms % MS_PER_DAY + MS_PER_DAY - 60_000) \
            if i in ticks else []
        for event in events + engine.apply(item):
            latest[event.id] = _plain(event.to_json()) | {"retracted": event.retracted}
    for event in engine.tick(max(item.ts_ms for item in items)):
        latest[event.id] = _plain(event.to_json()) | {"retracted": event.retracted}
    return sorted((e for e in latest.values() if not e["retracted"]), key=_order)


SHORT_LATENESS = site_config(sensors=CONFIG.sites[0].model_dump()["sensors"], lateness_days=1)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tick_seed=st.integers(0, 2**32), share=st.floats(0.0005, 0.01))
def test_ticks_ahead_of_the_readings_do_not_change_the_events(tick_seed: int,
                                                              share: float) -> None:
    """A tick ahead of the readings concludes a storm's end from the tail; the readings
    that follow conclude it again, later. When compaction then settled the readings'
    end while the stale tail still held it, the next tick dropped the storm's end
    altogether (found by the 30-day daemon test on a loaded CI machine)."""
    items = season(8, every_min=10)
    rnd = random.Random(tick_seed)
    ticks = {i for i in range(len(items)) if rnd.random() < share}
    assert _latest(SHORT_LATENESS, items, ticks) == _latest(SHORT_LATENESS, items, set())


def test_a_second_tick_at_the_same_wall_time_is_journaled_too(tmp_path: Path) -> None:
    """A frozen or stepped wall clock ticks at the same ``now`` again after more readings.
    The journal identifies rows by their content, so that second tick was taken for a
    duplicate and left out: a restart replayed stale-sensor notices the running daemon
    had retracted (found by the 30-day daemon test on a loaded CI machine)."""
    cfg = tmp_path / "stormwatch.yaml"
    cfg.write_text(SEASON_CONFIG.format(port=1883, state=tmp_path / "state"))
    config = load_config(cfg)
    site = "branch-meadows"
    t0 = ts("2026-05-01T04:00:00Z")
    now_ms = t0 + 6 * 3_600_000
    readings = [r for m in range(36) for r in (
        Reading(site, "rg1", "rain", t0 + m * 600_000, tips_total=0),
        Reading(site, "tb-up", "turbidity", t0 + m * 600_000, ntu=8.0),
        Reading(site, "tb-down", "turbidity", t0 + m * 600_000, ntu=8.5),
        Reading(site, "trap1-depth", "sediment", t0 + m * 600_000, depth_in=4.0))]
    with open_store(config) as store:
        host = EngineHost.restore(config, store, clock=lambda: now_ms / 1000)

        def feed(batch: list[Reading]) -> None:
            store.journal.commit([journal_in(r, topic=None, received_ms=now_ms) for r in batch])
            host.catch_up()

        feed(readings[:40])  # the first 100 minutes
        # Silent for hours at the tick: stale, and the turbidity contrast
        # unknown long enough to be said; the rest of the readings retract both.
        assert {e.type for e in host.tick()} == {"sensor_stale", "turbidity_unmonitored"}
        feed(readings[40:])
        assert {(e.type, e.retracted) for e in host.tick()} == {
            ("sensor_stale", True), ("turbidity_unmonitored", True)}
        live = [e.to_json() for e in host.engine.current_events()]
        restarted = EngineHost.restore(config, store, clock=lambda: now_ms / 1000)
        restarted.catch_up(record=False)
        assert [e.to_json() for e in restarted.engine.current_events()] == live
        assert build_status(config, store, now_ms)["daemon"]["ticked_at"] == iso(now_ms)
    assert "sensor_stale" not in {e["type"] for e in live}


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
            wait_until(lambda: store.state.latest_snapshot() is not None, 30,
                       "a snapshot once the store accepts it again")
        assert daemon.stop() == 0


SEASON_CONFIG = """\
broker: {{host: 127.0.0.1, port: {port}, client_id: season}}
state_dir: {state}
daemon: {{snapshot_every_s: 2, snapshot_every_rows: 1500}}
sites:
  - id: branch-meadows
    timezone: America/New_York
    condition: B
    lateness_days: 2
    rain: {{mode: event_total}}
    sensors:
      - {{id: rg1, kind: rain, in_per_tip: 0.01, stale_after_minutes: 60}}
      - {{id: tb-up, kind: turbidity, stale_after_minutes: 60}}
      - {{id: tb-down, kind: turbidity, stale_after_minutes: 60}}
      - {{id: trap1-depth, kind: sediment, stale_after_minutes: 60}}
    turbidity_pairs: [{{id: outfall-1, upstream: tb-up, downstream: tb-down}}]
    traps:
      - {{id: trap-1, sensor: trap1-depth, shape: trapezoidal, bottom_length_ft: 20,
         bottom_width_ft: 10, side_slope: 2, design_depth_ft: 4}}
"""
PREFIX = "stormwatch/v1/branch-meadows"
DAY_S = 86_400
#: Days on which tb-up's node is offline 06:00-12:00 and sends that backlog at the
#: end of the day: hours late for the turbidity pair (refolded from the journal).
OFFLINE_DAYS = (5, 17)


def _season_days(start_s: int, days: int) -> list[tuple[list[dict[str, Any]],
                                                        list[dict[str, Any]]]]:
    """Per day: the messages in the order they are published, and the late backlog.

    Each message is a dict with ``sensor`` (or ``inspection``) and its payload;
    one reading per sensor every 10 minutes, a storm every five days, routine
    inspections in the first three weeks only and one storm never inspected, so
    overdue notices pile up and settle.
    """
    rng = random.Random(30)
    tips = 0
    out = []
    for d in range(days):
        now_list: list[dict[str, Any]] = []
        late: list[dict[str, Any]] = []
        for m in range(0, 24 * 60, 10):
            t = start_s + d * DAY_S + m * 60
            raining = d % 5 == 2 and 8 * 60 <= m < 14 * 60
            tips += rng.choice([1, 2, 3]) if raining else 0
            now_list.append({"sensor": "rg1", "ts": t, "tips_total": tips})
            up_ntu = round(8 + rng.random() * 2, 2)
            up = {"sensor": "tb-up", "ts": t, "ntu": up_ntu}
            if d in OFFLINE_DAYS and 6 * 60 <= m < 12 * 60:
                late.append(up)
            else:
                now_list.append(up)
            down = up_ntu + (rng.random() * 20 if raining else rng.random())
            now_list.append({"sensor": "tb-down", "ts": t + 30, "ntu": round(down, 2)})
            if m % 30 == 0:
                now_list.append({"sensor": "trap1-depth", "ts": t,
                                 "depth_in": round(4 + d * 1.3 + rng.random(), 2)})
        if d in (3, 10, 17):
            now_list.append({"sensor": "inspection", "ts": start_s + d * DAY_S + 15 * 3600,
                             "inspector": "J. Rivera", "kind": "routine"})
        if d == 3:  # the storm of day 2, inspected the next day
            now_list.append({"sensor": "inspection", "ts": start_s + d * DAY_S + 9 * 3600,
                             "inspector": "J. Rivera", "kind": "storm"})
        out.append((now_list, late))
    return out


def _topic_payload(message: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    body = {k: v for k, v in message.items() if k != "sensor"}
    if message["sensor"] == "inspection":
        return f"{PREFIX}/inspection", body
    return f"{PREFIX}/{message['sensor']}/reading", body


def _replay_csv(path: Path, messages: list[dict[str, Any]]) -> None:
    columns = ["ts", "site", "sensor", "tips_total", "ntu", "depth_in", "inspector", "kind"]
    lines = [",".join(columns)]
    for msg in messages:
        row = {**msg, "site": "branch-meadows"}
        lines.append(",".join("" if row.get(c) is None else str(row[c]) for c in columns))
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.integration
@pytest.mark.skipif(FakeClock.library() is None, reason="libfaketime not installed (Debian"
                    " package faketime; `make test` installs it as root)")
def test_thirty_days_of_the_real_daemon_with_restarts_match_replay(
        tmp_path: Path, make_mosquitto: MakeMosquitto) -> None:
    """The real daemon, its wall clock moved through 30 days by libfaketime, with a
    clean restart and a SIGKILL on the way, ends with the very events ``replay``
    finds in the same readings: across compactions (lateness 2 days), snapshots
    every couple of seconds, hours-late readings refolded from the journal, and an
    uninspected clock whose overdue notices settle."""
    broker = make_mosquitto()
    cfg = tmp_path / "stormwatch.yaml"
    cfg.write_text(SEASON_CONFIG.format(port=broker.port, state=tmp_path / "state"))
    start_s = ts("2026-05-01T04:00:00Z") // 1000  # local midnight in New York
    days = _season_days(start_s, 30)
    clock = FakeClock(tmp_path / "faketime", start_s * 1000)
    sent: list[dict[str, Any]] = []
    with Daemons() as daemons:
        daemon = DaemonProcess(cfg, env=clock.env())
        daemons.append(daemon)
        daemon.start()
        pub = Publisher(broker.port)
        for d, (messages, late) in enumerate(days):
            clock.set((start_s + (d + 1) * DAY_S - 60) * 1000)  # the day's last minute
            for batch in (messages, late):
                pub.send_many([_topic_payload(m) for m in batch])
                sent += batch
                want = len(sent)
                wait_until(lambda want=want: journal_count(cfg) == want, 60,  # type: ignore[misc]
                           f"day {d} journaled")
            if d == 12:
                assert daemon.stop() == 0
                daemon.start()
            if d == 21:
                daemon.kill()
                daemon.start()
        # A tick after the last reading, as replay ends with one (the clock stands at
        # the last day's end, past every reading).
        wait_until(lambda: ticked_after_input(cfg), 60, "a tick after the last reading")
        assert daemon.stop() == 0
        pub.close()
        log = daemon.log_text()
    assert "Traceback" not in log, log[-3000:]
    assert log.count("engine restored from the snapshot at journal") == 3
    assert "FAILED" not in log

    csv = tmp_path / "season.csv"
    _replay_csv(csv, sent)
    config = load_config(cfg)
    expected = [_plain(e.to_json()) for e in replay(config, csv).events()]
    with Store(tmp_path / "state" / "stormwatch.db", readonly=True) as store:
        got = [_plain(e.to_json()) for e in store.events.current()]
        snapshot_rows = store.state.snapshot_size()
    assert snapshot_rows > 0
    kinds = {e["type"] for e in expected}
    # The season reached every part of the engine this test is about.
    assert {"storm_qualified", "storm_ended", "inspection_overdue", "clock_closed",
            "trap_cleanout_required", "turbidity_contrast"} <= kinds
    assert sorted(got, key=_order) == sorted(expected, key=_order)



def _plain(event: dict[str, Any]) -> dict[str, Any]:
    # ``entered_at`` is when an inspection reached the daemon; a replay CSV without an
    # ``entered_at`` column cannot know it (``backdated`` is still compared). ``via``
    # says how the inspection came in: ``mqtt`` to the daemon, ``replay`` from the CSV.
    return {k: v for k, v in event.items() if k not in ("revision", "entered_at", "via")}


def _order(event: dict[str, Any]) -> tuple[str, str, str]:
    return (event["at"], event["type"], event["id"])


def test_status_reads_the_recorded_state_not_the_journal(tmp_path: Path) -> None:
    """``status`` answers from what the daemon recorded: it took 14 s
    at a million journal rows when it rebuilt the engine. Rows the engine cannot even
    read prove it no longer does; they are counted as not applied yet."""
    cfg = write_config(tmp_path, 1883)
    config = load_config(cfg)
    with open_store(config) as store:
        host = EngineHost.restore(config, store)
        t0 = (int(time.time()) // 60 - 120) * 60_000
        readings = [Reading(SITE, "trap1-depth", "sediment", t0 + i * 60_000, depth_in=20.0)
                    for i in range(5)]
        store.journal.commit([journal_in(r, topic=None, received_ms=r.ts_ms) for r in readings])
        host.catch_up()
        host.record_status()
    with sqlite3.connect(tmp_path / "state" / "stormwatch.db") as conn:
        conn.executemany(
            "INSERT INTO journal (kind, site, sensor, ts_ms, ident, body)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [("reading", SITE, "rg1", t0 + i, i.to_bytes(16, "big"), "not json")
             for i in range(20_000)])
    out = subprocess.run([sys.executable, "-m", "monitor.cli", "status", "--config", str(cfg),
                          "--json"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    status = json.loads(out.stdout)
    site = status["sites"][SITE]
    assert site["traps"]["trap-1"]["depth_in"] == 20.0 and site["recorded_at"] is not None
    assert site["sensors"]["trap1-depth"]["readings"] == 5
    assert status["ingest"]["journal_seq"] - status["ingest"]["applied_seq"] == 20_000
    text = subprocess.run([sys.executable, "-m", "monitor.cli", "status", "--config", str(cfg)],
                          capture_output=True, text=True, timeout=60)
    assert "20000 journal row(s) not applied yet" in text.stdout


def test_status_without_a_database_says_so(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, 1883)
    out = subprocess.run([sys.executable, "-m", "monitor.cli", "status", "--config", str(cfg)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2  # Refused like bad usage, naming the path
    assert "no database" in out.stderr and "Traceback" not in out.stderr
    assert "no open inspection clocks" not in out.stdout

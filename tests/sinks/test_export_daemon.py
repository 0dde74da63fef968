"""``stormwatch run`` with ``influx: {api: v1}`` against a real Mosquitto and a real InfluxDB 1.6.

Readings go in over MQTT and come back out of InfluxDB with InfluxQL: every
journal row exactly once, the derived measurements with hand-computed values
(monitor/README.md, "The rules"), and an InfluxDB outage in the middle of a burst that delays the
export but neither loses a point nor holds back an alert.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from monitor.contract.times import iso, parse_iso
from monitor.host.engine import BACKFILL_MAX_DEFER_MS
from monitor.store import LogbookRow, Store
from monitor.store.exportstate import CURSOR

from ..conftest import MakeMosquitto
from ..support.daemonkit import (
    SITE,
    Background,
    Daemons,
    Publisher,
    cli,
    counter_storm,
    events_of,
    journal_count,
    reading_topic,
    ticked_after_input,
    wait_until,
    write_config,
)
from ..support.influxd import Influxd

pytest_plugins = ("tests.support.conftest_influx",)
pytestmark = pytest.mark.integration


def influx_config(tmp_path: Path, broker_port: int, server: Influxd, db: str) -> Path:
    return write_config(tmp_path, broker_port,
                        sections=f"influx: {{url: '{server.url}', api: v1, database: {db}}}\n")


def status(cfg: Path) -> dict[str, Any]:
    out = cli("status", "--config", str(cfg), "--json")
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def exported(cfg: Path) -> bool:
    """Nothing left to export, once the engine has ticked after the last input (before
    that, events the readings cause may not be in the events table yet: see
    ``tests.support.scenarios.export_caught_up``)."""
    if not ticked_after_input(cfg):
        return False
    export = status(cfg)["export"]
    return bool(export["behind_rows"] == 0 and export["behind_events"] == 0)


def journal_by_kind(cfg: Path) -> dict[str, int]:
    with Store(cfg.parent / "state" / "stormwatch.db", readonly=True) as store:
        rows = store.journal.after(0, limit=1_000_000)
    out: dict[str, int] = {}
    for r in rows:
        kind = r.body["kind"] if r.kind == "reading" else r.kind
        out[kind] = out.get(kind, 0) + 1
    return out


def count(server: Influxd, db: str, measurement: str, field: str, where: str = "") -> int:
    return server.count(f'SELECT count("{field}") FROM "{measurement}"'
                        + (f" WHERE {where}" if where else ""), db)


def check_events(server: Influxd, db: str, cfg: Path) -> None:
    """Every event id is in InfluxDB, and the current points are the authoritative set."""
    with Store(cfg.parent / "state" / "stormwatch.db", readonly=True) as store:
        ids = {r.event.id for r in store.events.after(0, limit=100_000)}
        current = store.events.current()
    assert server.count('SELECT count(distinct("id")) FROM "event"', db) == len(ids)
    assert count(server, db, "event", "revision", '"current" = true') == len(current)


def _now_s() -> int:
    return int(time.time()) // 60 * 60


def test_storm_trap_and_turbidity_arrive_in_influxdb_once_with_derived_values(
        tmp_path: Path, make_mosquitto: MakeMosquitto, influx_server: Influxd, influx_db: str,
        daemons: Daemons) -> None:
    broker = make_mosquitto()
    cfg = influx_config(tmp_path, broker.port, influx_server, influx_db)
    daemon = daemons.start(cfg)
    start = _now_s() - 10 * 3600
    messages: list[tuple[str, Any]] = counter_storm(start, 300, storm_from=30, storm_tips=60)
    for m in range(0, 300, 2):
        t = start + m * 60
        messages.append((reading_topic("tb-up"), {"ts": t, "ntu": 10.0}))
        messages.append((reading_topic("tb-down"),
                         {"ts": t + 30, "ntu": 40.0 if 100 <= m < 140 else 11.0}))
    for m in range(0, 300, 10):
        messages.append((reading_topic("trap1-depth"), {"ts": start + m * 60, "depth_in": 20.0}))
    messages.append((f"stormwatch/v1/{SITE}/rg1/status", {"ts": start + 299 * 60,
                                                          "battery_v": 3.71, "rssi_dbm": -67}))
    pub = Publisher(broker.port)
    pub.send_many(messages)
    pub.close()
    wait_until(lambda: journal_count(cfg) == len(messages), 30, "every reading journaled")
    wait_until(lambda: events_of(cfg, "storm_qualified"), 20, "storm_qualified")
    insp = cli("inspect", "--config", str(cfg), "--site", SITE, "--inspector", "J. Rivera",
               "--kind", "storm")
    assert insp.returncode == 0, insp.stderr
    wait_until(lambda: events_of(cfg, "clock_closed"), 20, "the storm clock to close")
    wait_until(lambda: exported(cfg), 30, "the export to catch up")
    assert daemon.stop() == 0

    db, server = influx_db, influx_server
    kinds = journal_by_kind(cfg)
    # Every journal row, exactly once.
    assert count(server, db, "rain", "tips_total") == kinds["rain"] == 300
    assert count(server, db, "turbidity", "ntu") == kinds["turbidity"] == 300
    assert count(server, db, "sediment", "depth_in") == kinds["sediment"] == 30
    assert count(server, db, "sensor_status", "battery_v") == kinds["status"] == 1
    assert count(server, db, "inspection", "recorded") == kinds["inspection"] == 1
    check_events(server, db, cfg)

    # storm: one tip (0.01 in) a minute from minute 30 for 60 minutes; the 50th tip,
    # in minute 79, reaches 0.50 in and qualifies the event.
    storm = server.rows('SELECT "total_in", "qualified", "depth_in" FROM "storm" '
                        "WHERE gauge = 'rg1'", db)
    assert len(storm) == 300
    by_minute = {(r["time"] // 1000 - start) // 60: r for r in storm}
    assert by_minute[78]["total_in"] == 0.49 and by_minute[78]["qualified"] is False
    assert by_minute[79]["total_in"] == 0.5 and by_minute[79]["qualified"] is True
    assert by_minute[89]["total_in"] == 0.6
    assert sum(r["depth_in"] for r in storm) == pytest.approx(0.6)
    (q,) = events_of(cfg, "storm_qualified")
    assert q["qualified_at"] == iso((start + 79 * 60) * 1000)

    # trap: 20 in of sediment in the 20 x 10 ft trapezoidal trap, slopes 2:1, 4 ft deep:
    # V(20 in) / V(4 ft) = 524.69 / 2101.33 cubic feet.
    def volume(h: float) -> float:
        return 200 * h + 60 * h**2 + 16 / 3 * h**3

    trap = server.rows('SELECT "fill_fraction", "state" FROM "trap"', db)
    assert len(trap) == 30
    # The first four readings are the median's warm-up: no fill yet.
    warm, filled = trap[:4], trap[4:]
    assert all(r["fill_fraction"] is None and r["state"] == "unknown" for r in warm)
    assert {round(r["fill_fraction"], 6) for r in filled} == {
        round(volume(20 / 12) / volume(4), 6)}

    # contrast: 40 NTU below a 10 NTU background is 30 over a 5 NTU limit.
    contrast = server.rows('SELECT "delta_ntu", "limit_ntu", "allowed_ntu", "state" '
                           'FROM "contrast"', db)
    assert len(contrast) == 150
    by_minute = {(r["time"] // 1000 - start - 30) // 60: r for r in contrast}
    assert (by_minute[100]["delta_ntu"], by_minute[100]["limit_ntu"]) == (30.0, 5.0)
    assert by_minute[100]["allowed_ntu"] == 15.0 and by_minute[100]["state"] == "pending"
    assert by_minute[110]["state"] == "exceeded"
    assert by_minute[98]["delta_ntu"] == 1.0 and by_minute[98]["state"] == "ok"

    # events for annotations, the latest revision current.
    events = server.rows('SELECT "title", "current", "revision" FROM "event" '
                         "WHERE \"type\" = 'storm_qualified'", db)
    assert [e["current"] for e in events] == [True]
    assert events[0]["time"] == parse_iso(q["at"])
    # The daemon's own metrics and the wall-clock site summary (written at start-up).
    assert count(server, db, "daemon", "accepted") >= 1
    assert count(server, db, "site", "open_clocks") >= 1


def test_influxdb_outage_mid_burst_delays_the_export_but_no_alert_and_loses_nothing(
        tmp_path: Path, make_mosquitto: MakeMosquitto, make_influxd: Any,
        daemons: Daemons) -> None:
    broker = make_mosquitto()
    server: Influxd = make_influxd()
    server.create_database("sw")
    cfg = influx_config(tmp_path, broker.port, server, "sw")
    daemon = daemons.start(cfg)

    start = _now_s() - 60 * 3600
    # 3000 minutes of gauge counter, a storm whose 50th tip falls at minute 2049,
    # and a turbidity pair every other minute: 6000 readings.
    messages: list[tuple[str, Any]] = []
    for topic, body in counter_storm(start, 3000, storm_from=2000, storm_tips=80):
        messages.append((topic, body))
        m = (body["ts"] - start) // 60
        if m % 2 == 0:
            messages.append((reading_topic("tb-up"), {"ts": body["ts"], "ntu": 10.0}))
            messages.append((reading_topic("tb-down"), {"ts": body["ts"] + 30, "ntu": 11.0}))
    pub = Publisher(broker.port)
    paced = Background(lambda: _send_paced(pub, messages, chunk=300, pause_s=0.25))
    paced.start()
    wait_until(lambda: export_cursor(cfg) > 1000, 60, "a first part to be exported",
               interval_s=0.05)
    server.stop()
    assert journal_count(cfg) < len(messages) * 2 // 3, "the outage should come mid-burst"
    stopped_ms = time.time() * 1000
    # While InfluxDB is down the storm qualifies and is recorded (alerted) at once.
    (q,) = wait_until(lambda: events_of(cfg, "storm_qualified"), 60, "storm_qualified")
    paced.join_checked(120)
    pub.close()
    wait_until(lambda: journal_count(cfg) == len(messages), 60, "every reading journaled")

    def logged() -> list[LogbookRow]:
        with Store(cfg.parent / "state" / "stormwatch.db", readonly=True) as store:
            return [b for b in store.events.logbook() if b.type == "storm_qualified"]

    # A backfill's events reach the log book once its backlog settles.
    (book,) = wait_until(logged, 30, "the storm in the log book")
    with Store(cfg.parent / "state" / "stormwatch.db", readonly=True) as store:
        qualifying = [r for r in store.journal.after(0, limit=100_000)
                      if r.kind == "reading" and r.body["sensor"] == "rg1"
                      and r.body["ts_ms"] == parse_iso(q["qualified_at"])]
    recorded_ms = parse_iso(book.recorded_at)
    assert recorded_ms > stopped_ms  # it happened during the outage ...
    (reading,) = qualifying
    assert reading.received_ms is not None
    # ... and was recorded (and queued for alerting) soon after its reading was
    # journaled: the engine does not wait for the exporter. These readings are 60
    # hours old (a backfill), so their events reach the log book once the backlog
    # has settled, and never later than BACKFILL_MAX_DEFER_MS.
    assert recorded_ms - reading.received_ms < BACKFILL_MAX_DEFER_MS + 5000, (
        recorded_ms, reading.received_ms)

    lag = status(cfg)["export"]
    assert lag["behind_rows"] > 1000 and lag["behind_s"] > 0 and lag["cursor"] > 1000
    assert "refused" in lag["error"].lower(), lag["error"]
    assert "export paused" in daemon.log_text() and "journal row(s) behind" in daemon.log_text()
    assert daemon.running

    server.start()
    wait_until(lambda: exported(cfg), 90, "the backlog to drain", interval_s=0.5)
    assert "reachable again" in daemon.log_text()
    assert daemon.stop() == 0

    kinds = journal_by_kind(cfg)
    assert count(server, "sw", "rain", "tips_total") == kinds["rain"] == 3000
    assert count(server, "sw", "turbidity", "ntu") == kinds["turbidity"] == 3000
    assert count(server, "sw", "storm", "total_in") == 3000
    assert count(server, "sw", "contrast", "delta_ntu") == 1500
    assert server.rows('SELECT max("total_in") FROM "storm"', "sw")[0]["max"] == 0.8
    check_events(server, "sw", cfg)


def export_cursor(cfg: Path) -> int:
    db = cfg.parent / "state" / "stormwatch.db"
    if not db.exists():
        return 0
    with Store(db, readonly=True) as store:
        return store.state.cursor(CURSOR)


def _send_paced(pub: Publisher, messages: list[tuple[str, Any]], chunk: int,
                pause_s: float) -> None:
    """Publish in chunks with pauses, so the outage falls in the middle of the run."""
    for k in range(0, len(messages), chunk):
        pub.send_many(messages[k:k + chunk])
        time.sleep(pause_s)

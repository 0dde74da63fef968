"""The daemon against a real Mosquitto (monitor/README.md, "Architecture"; sensors/README.md, "MQTT
contract"; README.md, "Commands"): nothing lost, nothing twice."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from monitor.config.file import load_config
from monitor.contract.rejects import Rejection, RejectReason
from monitor.contract.times import iso
from monitor.engine import Engine
from monitor.host.engine import EngineHost
from monitor.sources.parse import parse_message
from monitor.store import Store

from ..conftest import MakeMosquitto
from ..support.daemonkit import (
    PREFIX,
    SITE,
    Background,
    DaemonProcess,
    Publisher,
    cli,
    counter_storm,
    events_of,
    journal_count,
    last_tick_ms,
    reading_topic,
    ticked_after_input_since,
    wait_until,
    write_config,
)
from ..support.services import Mosquitto

pytestmark = pytest.mark.integration


@dataclass
class Site:
    """A broker, a configuration pointing at it, and the daemon running on it."""

    broker: Mosquitto
    cfg: Path
    daemon: DaemonProcess


@pytest.fixture
def site(tmp_path: Path, make_mosquitto: MakeMosquitto) -> Iterator[Site]:
    broker = make_mosquitto()
    cfg = write_config(tmp_path, broker.port)
    daemon = DaemonProcess(cfg)
    try:
        yield Site(broker, cfg, daemon.start())
    finally:
        daemon.close()


def _now_s() -> int:
    return int(time.time()) // 60 * 60


def test_persistent_session_storm_and_inspection_while_running(site: Site) -> None:
    broker, cfg, daemon = site.broker, site.cfg, site.daemon
    assert daemon.stop() == 0  # the broker now holds a persistent session for it

    start = _now_s() - 20 * 3600
    messages = counter_storm(start, 600, storm_from=60, storm_tips=60)
    pub = Publisher(broker.port)
    pub.send_many(messages)  # while the daemon is down
    pub.close()

    daemon.start()
    wait_until(lambda: journal_count(cfg) == len(messages), 30, "the queued readings")
    (q,) = wait_until(lambda: events_of(cfg, "storm_qualified"), 10, "storm_qualified")
    # Tip 50 falls in minute 60 + 49 = 109 after the start.
    assert q["qualified_at"] == iso((start + 109 * 60) * 1000)
    assert q["due"] == iso((start + 109 * 60 + 24 * 3600) * 1000)
    assert q["total_in"] == 0.5

    out = cli("inspect", "--config", str(cfg), "--site", SITE, "--inspector", "J. Rivera",
              "--kind", "storm", "--notes", "silt fence intact")
    assert out.returncode == 0, out.stderr
    assert "for the running daemon" in out.stdout
    closed = wait_until(lambda: [e for e in events_of(cfg, "clock_closed")
                                 if e["clock"] == "storm"], 10, "the storm clock to close")
    assert closed[0]["outcome"] == "met"
    assert closed[0]["clock_id"] in out.stdout
    assert daemon.stop() == 0


def test_inspection_while_daemon_stopped(site: Site) -> None:
    broker, cfg, daemon = site.broker, site.cfg, site.daemon
    start = _now_s() - 30 * 3600
    messages = counter_storm(start, 300, storm_from=10, storm_tips=55)
    pub = Publisher(broker.port)
    pub.send_many(messages)
    pub.close()
    wait_until(lambda: events_of(cfg, "storm_qualified"), 30, "storm_qualified")
    assert daemon.stop() == 0

    at = iso((start + 3 * 3600) * 1000)
    out = cli("inspect", "--config", str(cfg), "--site", SITE, "--inspector", "J. Rivera",
              "--at", at, "--kind", "storm")
    assert out.returncode == 0, out.stderr
    assert "no daemon running" in out.stdout
    (closed,) = [e for e in events_of(cfg, "clock_closed") if e["clock"] == "storm"]
    assert closed["outcome"] == "met" and closed["inspected_at"] == at

    # The daemon starting again neither loses nor repeats it: once it has replayed the
    # journal and ticked past the inspection, nothing more can record the close.
    tick_before = last_tick_ms(cfg)
    daemon.start()
    wait_until(lambda: ticked_after_input_since(cfg, tick_before), 30,
               "a tick of the new run after the inspection")
    assert daemon.stop() == 0
    with Store(cfg.parent / "state" / "stormwatch.db", readonly=True) as store:
        closes = [e for e in store.events.all(types=["clock_closed"])
                  if e.to_json()["clock"] == "storm"]
    assert len(closes) == 1


def test_sigkill_mid_burst_loses_and_repeats_nothing(site: Site) -> None:
    broker, cfg, daemon = site.broker, site.cfg, site.daemon

    start = _now_s() - 60 * 3600
    messages: list[tuple[str, dict[str, Any]]] = []
    for topic, body in counter_storm(start, 3000, storm_from=500, storm_tips=80):
        messages.append((topic, body))
        m = (body["ts"] - start) // 60
        if m % 2 == 0:
            messages.append((reading_topic("tb-up"), {"ts": body["ts"], "ntu": 10.0}))
            ntu = 40.0 if 520 <= m < 600 else 11.0
            messages.append((reading_topic("tb-down"), {"ts": body["ts"] + 30, "ntu": ntu}))
    pub = Publisher(broker.port)
    sender = Background(lambda: pub.send_many(messages))
    sender.start()
    wait_until(lambda: journal_count(cfg) > 1500, 60, "part of the burst to be journaled",
               interval_s=0.02)
    daemon.kill()
    sender.join_checked()
    pub.close()
    tick_before = last_tick_ms(cfg)
    daemon.start()
    wait_until(lambda: journal_count(cfg) == len(messages), 60, "every reading journaled")
    # The engine has applied all of it and recorded what it caused.
    wait_until(lambda: ticked_after_input_since(cfg, tick_before), 30,
               "a tick after the last reading")
    assert daemon.stop() == 0

    config = load_config(cfg)
    with Store(cfg.parent / "state" / "stormwatch.db", readonly=True) as store:
        rows = store.journal.after(0, limit=100_000)
        readings = [r for r in rows if r.kind == "reading"]
        keys = [(r.body["sensor"], r.body["ts_ms"]) for r in readings]
        assert len(keys) == len(set(keys)) == len(messages)  # each exactly once
        stored = [e.to_json() for e in store.events.current()]
        all_revisions = [e.to_json() for e in store.events.all()]
        host = EngineHost.restore(config, store)
        host.catch_up(record=False)
    pairs = [(e["id"], e["revision"]) for e in all_revisions]
    assert len(pairs) == len(set(pairs))
    by_id = {e["id"]: e for e in stored}
    engine_by_id = {e.id: e.to_json() for e in host.engine.current_events()}
    # The events table holds exactly what the restored engine has published.
    assert by_id == engine_by_id, {k: [r for r in all_revisions if r["id"] == k]
                                   for k in by_id.keys() ^ engine_by_id.keys()}

    # The state of an uninterrupted run over the same readings, at the same now.
    reference = Engine(config)
    for topic, body in messages:
        item = parse_message(config, topic, json.dumps(body).encode(),
                             ref_ms=int(time.time() * 1000))
        assert not isinstance(item, Rejection)
        reference.apply(item)
    if host.engine.tick_ms is not None:
        reference.tick(host.engine.tick_ms)

    def strip(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in e.items() if k != "revision"} for e in events]

    assert strip([e.to_json() for e in host.engine.current_events()]) == strip(
        [e.to_json() for e in reference.current_events()])
    assert any(e["type"] == "storm_qualified" for e in stored)
    assert any(e["type"] == "turbidity_contrast" for e in stored)


def test_broker_restart_reconnects_and_loses_nothing(site: Site) -> None:
    broker, cfg, daemon = site.broker, site.cfg, site.daemon
    start = _now_s() - 40 * 3600
    messages = counter_storm(start, 1200, storm_from=100, storm_tips=10)
    pub = Publisher(broker.port)
    pub.send_many(messages[:600])
    pub.close()
    broker.restart()  # SIGTERM: Mosquitto saves its persistence, then starts on the same port
    wait_until(lambda: daemon.log_text().count("connected to") >= 2, 60,
               "the daemon to reconnect by itself")
    pub = Publisher(broker.port)
    pub.send_many(messages[600:])
    pub.close()
    wait_until(lambda: journal_count(cfg) == len(messages), 60, "every reading journaled")
    assert daemon.running
    assert daemon.stop() == 0


def test_the_mqtt_process_dying_is_replaced_and_loses_nothing(site: Site) -> None:
    """``stormwatch run`` keeps its MQTT client in a child process (``mqttproc.py``).
    SIGKILL it mid-burst: the daemon logs it, starts another, and every reading the
    broker confirmed is journaled once."""
    broker, cfg, daemon = site.broker, site.cfg, site.daemon
    assert daemon.proc is not None
    children = _children(daemon.proc.pid)
    assert len(children) == 1, children
    start = _now_s() - 40 * 3600
    messages = counter_storm(start, 2000, storm_from=100, storm_tips=60)
    pub = Publisher(broker.port)
    sender = Background(lambda: pub.send_many(messages))
    sender.start()
    wait_until(lambda: journal_count(cfg) > 300, 60, "part of the burst", interval_s=0.02)
    os.kill(children[0], signal.SIGKILL)
    sender.join_checked()
    pub.close()
    wait_until(lambda: journal_count(cfg) == len(messages), 60, "every reading journaled")
    assert "the MQTT process ended" in daemon.log_text()
    assert daemon.log_text().count("connected to") >= 2
    assert len(_children(daemon.proc.pid)) == 1
    assert daemon.stop() == 0
    with Store(cfg.parent / "state" / "stormwatch.db", readonly=True) as store:
        rows = store.journal.after(0, limit=100_000)
    keys = [(r.body["sensor"], r.body["ts_ms"]) for r in rows if r.kind == "reading"]
    assert len(keys) == len(set(keys)) == len(messages)


def _children(pid: int) -> list[int]:
    """The MQTT processes ``pid`` spawned (multiprocessing's resource tracker aside)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"spawn_main" in cmdline:
                out.append(int(entry))
    return out


BAD: list[tuple[str, str, bytes]] = []


def _bad_messages(now_s: int) -> list[tuple[str, str, bytes]]:
    def j(body: dict[str, Any]) -> bytes:
        return json.dumps(body).encode()

    r = reading_topic
    return [
        ("invalid_json", r("rg1"), b"{not json"),
        ("oversize", r("rg1"), j({"ts": now_s, "tips_total": 1, "pad": "x" * 5000})),
        ("bad_topic", f"{PREFIX}/Bad_Site!/rg1/reading", j({"ts": now_s, "tips_total": 1})),
        ("unknown_site", f"{PREFIX}/elsewhere/rg1/reading", j({"ts": now_s, "tips_total": 1})),
        ("unknown_sensor", r("rg9"), j({"ts": now_s, "tips_total": 1})),
        ("wrong_kind", r("rg1"), j({"ts": now_s, "ntu": 5.0})),
        ("topic_mismatch", r("rg1"), j({"ts": now_s, "tips_total": 1, "sensor": "tb-up"})),
        ("missing_field", r("tb-up"), j({"ts": now_s})),
        ("not_finite", r("tb-up"), b'{"ts": %d, "ntu": NaN}' % now_s),
        ("negative_value", r("tb-up"), j({"ts": now_s, "ntu": -1.0})),
        ("impossible_value", r("trap1-depth"), j({"ts": now_s, "depth_in": 99999})),
        ("bad_timestamp", r("tb-up"), j({"ts": "yesterday", "ntu": 1.0})),
        # A time without an offset: local to whom? (A file may say: --timezone.)
        ("no_timezone", r("tb-up"), j({"ts": "2026-05-01T12:00:00", "ntu": 1.0})),
        ("future_timestamp", r("tb-up"), j({"ts": now_s + 3600, "ntu": 1.0})),
        ("too_old", r("tb-up"), j({"ts": now_s - 8 * 86400, "ntu": 1.0})),
        # An inspection dated ahead has its own code (sensors/README.md, "MQTT contract").
        ("future", f"{PREFIX}/{SITE}/inspection", j({"ts": now_s + 3600, "inspector": "J"})),
        ("missing_ts", f"{PREFIX}/{SITE}/inspection", j({"inspector": "J"})),
        ("bad_value", r("tb-up"), j({"ts": now_s, "ntu": "cloudy"})),
        # seq 7 of tb-up is the good reading's (sent first): another body under it.
        ("seq_conflict", r("tb-up"), j({"ts": now_s - 60, "ntu": 4.0, "seq": 7})),
    ]


def test_every_reject_reason_is_dead_lettered_and_counted(site: Site) -> None:
    broker, cfg, daemon = site.broker, site.cfg, site.daemon
    now = int(time.time())
    bad = _bad_messages(now)
    # ``retained`` needs a retained copy the broker sends at a subscription, so a
    # restart: tests/daemon/test_mqtt_inspections.py.
    assert {reason for reason, _, _ in bad} | {"retained"} == {r.value for r in RejectReason}
    pub = Publisher(broker.port)
    # The good reading first: the seq_conflict case reuses its seq. One publisher,
    # one topic: the broker delivers them in this order.
    pub.send(reading_topic("tb-up"), {"ts": now, "ntu": 3.5, "seq": 7})
    pub.send_many([(topic, payload) for _, topic, payload in bad])
    pub.send(reading_topic("tb-up"), {"ts": now, "ntu": 3.5, "seq": 7})  # a plain duplicate
    pub.close()
    wait_until(lambda: journal_count(cfg) == 1, 20, "the good reading")
    status = wait_until(lambda: _status_if(cfg, len(bad)), 20, "every reject counted")
    assert status["ingest"]["rejected"] == {reason: 1 for reason, _, _ in bad}
    assert status["ingest"]["accepted"] == 1
    with Store(cfg.parent / "state" / "stormwatch.db", readonly=True) as store:
        dead = store.journal.dead_letters(limit=100)
    by_reason = {d.reason: d for d in dead}
    assert by_reason["invalid_json"].payload == b"{not json"
    # The raw bytes of the conflicting message, not the accepted one's.
    assert json.loads(by_reason["seq_conflict"].payload)["ntu"] == 4.0
    wait_until(lambda: _status_with(cfg, lambda s: s["ingest"]["duplicates"] == 1), 20,
               "the repeated good reading counted as a duplicate")
    assert daemon.running
    assert daemon.stop() == 0


def _status_with(cfg: Path, condition: Callable[[dict[str, Any]], bool]
                 ) -> dict[str, Any] | None:
    out = cli("status", "--config", str(cfg), "--json")
    assert out.returncode == 0, out.stderr
    status: dict[str, Any] = json.loads(out.stdout)
    return status if condition(status) else None


def _status_if(cfg: Path, n: int) -> dict[str, Any] | None:
    out = cli("status", "--config", str(cfg), "--json")
    assert out.returncode == 0, out.stderr
    status: dict[str, Any] = json.loads(out.stdout)
    return status if sum(status["ingest"]["rejected"].values()) == n else None


def test_status_json_shape_and_logbook_verify(site: Site) -> None:
    broker, cfg, daemon = site.broker, site.cfg, site.daemon
    start = _now_s() - 10 * 3600
    messages = counter_storm(start, 300, storm_from=30, storm_tips=60)
    messages += [(reading_topic("trap1-depth"), {"ts": start + i * 600, "depth_in": 20.0})
                 for i in range(5)]
    pub = Publisher(broker.port)
    pub.send_many(messages)
    pub.close()
    wait_until(lambda: events_of(cfg, "storm_qualified"), 30, "storm_qualified")

    # The daemon records each site's state as it goes (within half a second of
    # new input, and with every event); status reads that record.
    status = wait_until(lambda: _status_with(cfg, lambda s: s["sites"][SITE]["traps"]["trap-1"][
        "depth_in"] is not None), 10, "the status to show the trap")
    entry = status["sites"][SITE]
    (storm_clock,) = [c for c in entry["open_clocks"] if c["clock"] == "storm"]
    assert {"clock_id", "clock", "started_at", "due", "hours_left"} <= storm_clock.keys()
    assert 0 < storm_clock["hours_left"] < 24
    assert entry["traps"]["trap-1"]["depth_in"] == 20.0
    assert entry["sensors"]["rg1"]["stale"] is False
    assert status["ingest"]["accepted"] == len(messages)
    assert "behind_rows" in status["export"]
    assert status["notify"]["failed"] == 0 and "pending" in status["notify"]
    text = cli("status", "--config", str(cfg))
    assert text.returncode == 0 and "storm" in text.stdout
    assert daemon.stop() == 0

    ok = cli("logbook", "verify", "--config", str(cfg))
    assert ok.returncode == 0, ok.stderr
    md = cli("logbook", "--config", str(cfg), "--site", SITE, "--format", "md")
    # The md export reads as sentences: the storm by its depth, due in local time.
    assert md.returncode == 0 and re.search(r"Storm of \d\.\d+ in qualified .* — inspect by ",
                                             md.stdout), md.stdout

    db = cfg.parent / "state" / "stormwatch.db"
    con = sqlite3.connect(db)
    con.execute("DROP TRIGGER IF EXISTS logbook_no_update")
    con.execute("UPDATE logbook SET body = replace(body, '0.5', '0.4') "
                "WHERE type = 'storm_qualified'")
    con.commit()
    con.close()
    bad = cli("logbook", "verify", "--config", str(cfg))
    assert bad.returncode == 1
    assert "logbook row" in bad.stderr

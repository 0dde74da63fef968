"""The node runtime with every driver on fake buses (no hardware here) and a fake MQTT link.

What is checked here, in the node's own process: each published payload
passes the daemon's own parser (``monitor.sources.parse.parse_message``); a
reading is committed before it is published and deleted only when the daemon's
confirmation covers it (``test_node_confirm.py`` has the resends and the PUBACK
fallback);
the window; the drop of the oldest past ``max_mb`` with a persistent count;
``tips_total`` and ``seq`` across restarts; the clock sanity rule. The same
against a real broker, and SIGKILL, are in ``test_node_mqtt.py``.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from sensors.clock import BUILD_EPOCH_S
from sensors.node import first_seq

from ..support.nodekit import FakeLink
from ..support.noderig import GAUGE, NOW_S, Site, buffered_rows


def _tip(site: Site) -> None:
    pin = site.factory.pin(17)
    pin.drive_low()
    pin.drive_high()


def test_every_driver_publishes_what_the_daemon_accepts(tmp_path: Path) -> None:
    card = tmp_path / "card.csv"
    card.write_text("ts,precip_in\n2026-11-29T23:00:00Z,0.01\n2026-11-29T23:01:00Z,0.02\n")
    site = Site(tmp_path, [
        GAUGE,
        {"id": "tb-down", "kind": "turbidity", "driver": "ads1115",
         "calibration": [[0.0, 0.0], [2.5, 1000.0]], "every_s": 60},
        {"id": "trap1-depth", "kind": "sediment", "driver": "maxbotix", "port": "/dev/ttyAMA0",
         "pings": 3, "min_range_in": 12, "max_range_in": 200, "every_s": 300},
        {"id": "sonde", "kind": "turbidity", "driver": "modbus", "port": "/dev/ttyUSB0",
         "register": 0, "every_s": 60},
        {"id": "rg2", "kind": "rain", "driver": "csv", "file": str(card), "speed": "max"},
    ], buffer={"max_inflight": 100})
    site.adc.volts[0] = 0.5
    site.node.step()
    for minute in range(1, 6):
        for _ in range(minute % 3):
            _tip(site)
            site.clock.advance(2)
        site.clock.advance(60 - 2 * (minute % 3))
        site.node.step()
    readings = [site.check(t, p) for t, p in site.link.readings()]
    by_sensor: dict[str, list[Any]] = {}
    for r in readings:
        by_sensor.setdefault(r.sensor, []).append(r)
    assert {s: len(v) for s, v in by_sensor.items()} == {
        "rg1": 6, "tb-down": 6, "trap1-depth": 2, "sonde": 6, "rg2": 2}
    # tips: 0 at start, then 1, 2, 0, 1, 2 tips per minute, cumulative.
    assert [r.tips_total for r in by_sensor["rg1"]] == [0, 1, 3, 3, 4, 6]
    assert by_sensor["tb-down"][0].ntu == pytest.approx(200.0, abs=0.1)
    assert by_sensor["trap1-depth"][0].distance_in == pytest.approx(1016 / 25.4, abs=0.01)
    assert by_sensor["sonde"][0].ntu == 4.25
    assert [(r.ts_ms, r.precip_in) for r in by_sensor["rg2"]] == [
        (1_795_993_200_000, 0.01), (1_795_993_260_000, 0.02)]  # the card's own times
    for rows in by_sensor.values():
        seqs = [r.seq for r in rows]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
        assert seqs[0] == first_seq(NOW_S)
    statuses = site.link.statuses()
    assert {t.split("/")[3] for t, _ in statuses} == set(by_sensor)
    for topic, body in statuses:
        status = site.check(topic, json.dumps(body).encode())
        assert status.kind == "status" and status.buffered == body["buffered"] > 0
        assert body["dropped"] == 0 and body["clock_invalid"] is False


def _published(db: Path) -> list[bool]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [bool(p) for (p,) in conn.execute("SELECT published FROM readings ORDER BY id")]
    finally:
        conn.close()


def test_commit_before_publish_kept_after_puback_deleted_on_confirmation(tmp_path: Path) -> None:
    card = tmp_path / "card.csv"
    card.write_text("ts,tips_total\n" + "".join(
        f"2026-11-30T05:{m:02d}:00Z,{m}\n" for m in range(30)))
    site = Site(tmp_path, [{"id": "rg2", "kind": "rain", "driver": "csv", "file": str(card),
                            "speed": "max"}],
                buffer={"max_inflight": 8, "max_rate_per_s": 1000}, confirm_after_s=100_000)
    site.run(3)  # FakeLink.publish asserts each reading is committed when published
    assert len(buffered_rows(site.db)) == 30
    assert len(site.link.readings()) == 8  # the window: nothing more until PUBACKs
    site.run(3)
    # No PUBACK, no delete:
    assert len(site.link.readings()) == 8 and len(buffered_rows(site.db)) == 30
    sent = [(mid, json.loads(p)["seq"]) for mid, t, p in site.link.sent if t.endswith("/reading")]
    site.link.ack([mid for mid, _ in sent[:3]])
    site.node.step()
    # Acknowledged by the broker: still held, marked published; three more in the window.
    assert len(buffered_rows(site.db)) == 30
    assert _published(site.db)[:4] == [True, True, True, False]
    assert len(site.link.readings()) == 11
    # The daemon journaled the first two: they go, and only they.
    site.link.confirm("rg2", sent[1][1])
    site.node.step()
    left = buffered_rows(site.db)
    assert len(left) == 28 and left[0][1] == sent[2][1]
    # A refused PUBACK (an ACL denial) marks nothing; the row is tried again later.
    refused_mid, refused_seq = sent[3]
    site.link.ack([refused_mid], refused=True)
    site.node.step()
    assert _published(site.db)[1] is False
    for _ in range(10):                              # everything else acknowledged ...
        site.link.ack()
        site.run(1)
    site.link.confirm("rg2", refused_seq - 1)        # ... and journaled up to the refused one
    site.node.step()
    assert [q for _, q, _ in buffered_rows(site.db)] == list(range(refused_seq, refused_seq + 27))
    site.run(300, step_s=60)                         # after retry_refused_s it goes again
    site.link.ack()
    site.node.step()
    bodies = [json.loads(p) for _, p in site.link.readings()]
    assert [b["tips_total"] for b in bodies] == [*range(30), 3]
    site.link.confirm("rg2", refused_seq + 26)
    site.node.step()
    assert buffered_rows(site.db) == []


def test_backlog_in_order_at_a_bounded_rate_while_new_readings_are_taken(tmp_path: Path) -> None:
    site = Site(tmp_path, [{**GAUGE, "every_s": 1}],
                buffer={"max_inflight": 50, "max_rate_per_s": 2})
    site.link.up = False
    site.run(20)                                     # offline: readings go to the buffer only
    assert site.node.step() == pytest.approx(1.0)    # and the loop sleeps, not spins
    assert site.link.sent == [] and len(buffered_rows(site.db)) == 21
    site.link.up = True
    site.run(5)
    # At 2 per second: the token bucket's 2, then 2 per second; new readings meanwhile.
    assert len(site.link.readings()) == 2 + 2 * 5
    assert len(buffered_rows(site.db)) == 26
    site.link.ack()
    site.run(20)
    site.link.ack()
    site.run(2)
    bodies = [json.loads(p) for _, p in site.link.readings()]
    seqs = [b["seq"] for b in bodies]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert [b["ts"] for b in bodies[:3]] == [  # the original times, a second apart
        "2026-11-30T00:53:20Z", "2026-11-30T00:53:21Z", "2026-11-30T00:53:22Z"]


def test_past_max_mb_the_oldest_are_dropped_and_counted_persistently(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Each reading is ~180 bytes with overhead: 4 KiB holds about 22 of them.
    site = Site(tmp_path, [{**GAUGE, "every_s": 1}],
                buffer={"max_mb": 4 / 1024, "max_inflight": 100})
    site.link.up = False
    with caplog.at_level(logging.WARNING, logger="sensors.node"):
        site.run(59)
    rows = buffered_rows(site.db)
    kept = len(rows)
    assert 15 < kept < 30
    state = site.node.buffer.state("rg1")
    assert state is not None and state.dropped == 60 - kept and state.readings == 60
    assert "buffer full" in caplog.text and "dropped the" in caplog.text
    seqs = [seq for _, seq, _ in rows]
    assert seqs == list(range(first_seq(NOW_S) + 60 - kept, first_seq(NOW_S) + 60))  # newest
    site.restart()                                   # the count survives a restart ...
    site.link.up = True
    site.node.step()                                 # ... and one more reading drops one more
    [(topic, body)] = site.link.statuses()
    assert (body["dropped"], body["buffered"]) == (61 - kept, kept)
    site.check(topic, json.dumps(body).encode())
    sent = [json.loads(p)["seq"] for _, p in site.link.readings()]
    assert sent == [*seqs[1:], seqs[-1] + 1]         # the newest all go out, oldest first


def test_tips_total_and_seq_survive_restarts_and_never_go_back(tmp_path: Path) -> None:
    site = Site(tmp_path, [GAUGE])
    for _ in range(3):
        _tip(site)
        site.clock.advance(2)
    site.run(60, step_s=60)
    site.node.close(drain_s=0)
    _tip(site)                                       # during the restart: lost (a GPIO edge)
    site.clock.advance(5)
    site.link = FakeLink(site.db)
    site.node = site.open()
    _tip(site)
    site.clock.advance(60)
    site.node.step()
    bodies = [json.loads(p) for _, p in site.link.readings()]
    assert [b["tips_total"] for b in bodies] == [3, 3, 4]  # re-sent unacked, then on from 3
    assert [b["seq"] for b in bodies] == [bodies[0]["seq"] + i for i in range(3)]


def test_hardware_counter_wrap_and_reset_never_decrease_tips_total(tmp_path: Path) -> None:
    site = Site(tmp_path, [{"id": "rg1", "kind": "rain", "driver": "modbus",
                            "port": "/dev/ttyUSB0", "register": 10, "type": "uint16",
                            "every_s": 60}])
    site.rs485.words[10] = 65530
    site.node.step()
    site.node.close(drain_s=0)
    site.rs485.words[10] = 3                         # 9 tips during the restart, and a wrap
    site.link = FakeLink(site.db)
    site.node = site.open()
    site.node.step()
    site.rs485.words[10] = 1                         # not a wrap: the logger was reset
    site.clock.advance(60)
    site.node.step()
    totals = [site.check(t, p).tips_total for t, p in site.link.readings()]
    assert totals == [65530, 65539, 65540]


def test_wrong_clock_takes_no_readings_says_so_and_resumes(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="sensors.node"):
        site = Site(tmp_path, [GAUGE], wall_s=86_400.0)  # 1970-01-02: a Pi after a power cut
        _tip(site)
        site.clock.advance(2)
        _tip(site)
        site.run(180, step_s=60)
    assert "before this runtime's build date" in caplog.text
    assert site.link.readings() == [] and buffered_rows(site.db) == []
    assert all(body["clock_invalid"] is True for _, body in site.link.statuses())
    site.clock.wall_s = NOW_S                        # NTP sets the clock
    site.clock.advance(60)
    site.node.step()
    [(topic, payload)] = site.link.readings()
    reading = site.check(topic, payload)
    assert reading.tips_total == 2                   # tips counted meanwhile are not lost
    assert reading.ts_ms == round(site.clock.wall_s * 1000)
    assert site.clock.wall_s > BUILD_EPOCH_S

"""The node's end-to-end confirmations (sensors/README.md, "MQTT contract"; sensors/README.md,
"Sensor node"; ``sensors/confirm.py``) with a fake link and a clock moved by hand: what is kept,
sent again, dropped, and when the node falls back to deleting on PUBACK.

The same through real brokers and the real daemon is ``tests/reliability/test_delivery.py``.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest

from sensors.node import first_seq

from ..support.noderig import GAUGE, NOW_S, Site, buffered_rows

SLOW = {**GAUGE, "every_s": 10_000}  # one reading at the start, then none for a while
FIRST = first_seq(NOW_S)


def _sent_seqs(site: Site) -> list[int]:
    return [json.loads(p)["seq"] for _, p in site.link.readings()]


def _status(site: Site, sensor: str = "rg1") -> dict[str, object]:
    site.node.publish_status()
    body = [b for t, b in site.link.statuses() if t.split("/")[3] == sensor][-1]
    site.check(f"stormwatch/v1/branch-meadows/{sensor}/status", json.dumps(body).encode())
    return body


def test_an_unconfirmed_reading_goes_again_after_confirm_after_s_then_less_often(
        tmp_path: Path) -> None:
    site = Site(tmp_path, [SLOW], confirm_after_s=10, confirm_fallback_minutes=None)
    site.node.step()
    site.link.ack()
    site.run(9)
    assert _sent_seqs(site) == [FIRST]            # acknowledged 9 s ago: not yet
    site.run(1)
    assert _sent_seqs(site) == [FIRST, FIRST]     # 10 s: again, the same bytes
    first, again = site.link.readings()
    assert first == again
    site.link.ack()
    site.run(19)
    assert len(_sent_seqs(site)) == 2             # then after 20 s, not 10
    site.run(1)
    assert len(_sent_seqs(site)) == 3
    site.link.ack()
    site.link.confirm("rg1", FIRST)
    site.run(200)
    assert len(_sent_seqs(site)) == 3 and buffered_rows(site.db) == []  # confirmed: done


def test_a_confirmation_that_moves_starts_the_resend_clock_over(tmp_path: Path) -> None:
    site = Site(tmp_path, [{**GAUGE, "every_s": 4}], confirm_after_s=10,
                confirm_fallback_minutes=None)
    site.node.step()                              # readings at 0, 4, 8 s, each acknowledged
    for _ in range(2):
        site.link.ack()
        site.run(4)
    site.link.ack()
    site.link.confirm("rg1", FIRST)               # the daemon is behind, but moving
    site.run(9)                                   # applied at 8 s: the resend clock starts over
    seqs = _sent_seqs(site)
    assert sorted(set(seqs)) == seqs              # nothing sent twice by 17 s (8 s + 9)
    site.run(1)                                   # 10 s after the mark moved
    seqs = _sent_seqs(site)
    assert seqs.count(FIRST + 1) == 2 and seqs.count(FIRST + 2) == 2, seqs
    assert seqs.count(FIRST) == 1                 # not the confirmed one


def test_without_confirmations_the_node_falls_back_to_puback_says_so_and_comes_back(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    site = Site(tmp_path, [SLOW], confirm_after_s=1_000, confirm_fallback_minutes=1)
    site.node.step()
    site.link.ack()
    site.run(59)
    assert len(buffered_rows(site.db)) == 1 and _status(site)["confirm"] == "journaled"
    with caplog.at_level(logging.INFO, logger="sensors.node"):
        site.run(2)
        site.run(600)
    assert buffered_rows(site.db) == []                   # deleted at the switch: it had its PUBACK
    fallbacks = [r for r in caplog.records if "no confirmation from the daemon" in r.message]
    assert len(fallbacks) == 1 and fallbacks[0].levelno == logging.WARNING  # once
    assert _status(site)["confirm"] == "puback"
    # As before confirmations existed: a reading goes on its PUBACK.
    site.restart()                                # the mode is kept in the buffer
    assert _status(site)["confirm"] == "puback"
    site.clock.advance(1)
    site.node.step()
    assert len(buffered_rows(site.db)) == 1
    site.link.ack()
    site.node.step()
    assert buffered_rows(site.db) == []
    # The first live confirmation brings it back: the next reading is kept after PUBACK.
    with caplog.at_level(logging.INFO, logger="sensors.node"):
        site.link.confirm("rg1", FIRST + 1)
        site.node.step()
    assert "confirmations from the daemon again" in caplog.text
    assert _status(site)["confirm"] == "journaled"
    site.clock.advance(10_000)
    site.node.step()
    site.link.ack()
    site.node.step()
    assert [q for _, q, _ in buffered_rows(site.db)] == [FIRST + 2]


def test_a_retained_confirmation_deletes_but_is_no_sign_of_life(tmp_path: Path) -> None:
    site = Site(tmp_path, [{**GAUGE, "every_s": 20}], confirm_after_s=1_000,
                confirm_fallback_minutes=1)
    site.node.step()
    site.link.ack()
    site.run(20)
    site.link.ack()
    site.link.confirm("rg1", FIRST, retained=True)  # as at a (re)subscription
    site.node.step()
    assert [q for _, q, _ in buffered_rows(site.db)] == [FIRST + 1]
    site.run(39)
    assert _status(site)["confirm"] == "journaled"
    site.run(2)                                      # 60 s with no live word: fallback
    assert _status(site)["confirm"] == "puback"


def test_time_offline_counts_neither_for_resends_nor_for_the_fallback(tmp_path: Path) -> None:
    site = Site(tmp_path, [SLOW], confirm_after_s=30, confirm_fallback_minutes=1)
    site.node.step()
    site.link.ack()
    site.run(20)
    site.link.up = False
    site.run(7200, step_s=60)                     # two hours without the broker
    site.link.up = True
    site.run(5)
    assert _sent_seqs(site) == [FIRST] and _status(site)["confirm"] == "journaled"
    site.run(6)                                   # 31 s online: sent again
    assert _sent_seqs(site) == [FIRST, FIRST]


def test_status_says_the_lowest_seq_held_and_the_next_one_when_none(tmp_path: Path) -> None:
    site = Site(tmp_path, [{**GAUGE, "every_s": 1}], confirm_after_s=1_000)
    site.run(4)                                   # five readings
    site.link.ack()
    site.node.step()
    assert _status(site)["oldest_seq"] == FIRST
    site.link.confirm("rg1", FIRST + 2)
    site.node.step()
    body = _status(site)
    assert (body["oldest_seq"], body["buffered"]) == (FIRST + 3, 2)
    site.link.confirm("rg1", FIRST + 4)
    site.node.step()
    body = _status(site)
    assert (body["oldest_seq"], body["buffered"]) == (FIRST + 5, 0)  # the next to be numbered


def test_past_max_mb_the_oldest_go_confirmed_or_not_and_oldest_seq_moves_past_them(
        tmp_path: Path) -> None:
    site = Site(tmp_path, [{**GAUGE, "every_s": 1}], confirm_after_s=100_000,
                buffer={"max_mb": 4 / 1024, "max_inflight": 100})
    for _ in range(60):                            # every reading acknowledged, none confirmed
        site.run(1)
        site.link.ack()
    rows = buffered_rows(site.db)
    state = site.node.buffer.state("rg1")
    assert state is not None and 15 < len(rows) < 30
    assert state.dropped == state.readings - len(rows)
    body = _status(site)
    assert body["oldest_seq"] == rows[0][1] == FIRST + state.dropped
    assert body["dropped"] == state.dropped


def test_a_confirmation_beyond_what_the_node_numbered_is_ignored(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    site = Site(tmp_path, [SLOW], confirm_after_s=1_000)
    site.node.step()
    site.link.ack()
    with caplog.at_level(logging.WARNING, logger="sensors.node"):
        site.link.confirm("rg1", FIRST + 1)       # never numbered: another buffer's
        site.node.step()
    assert len(buffered_rows(site.db)) == 1
    assert "has numbered only up to" in caplog.text


def test_a_buffer_of_an_older_runtime_is_brought_up_to_date(tmp_path: Path) -> None:
    db = tmp_path / "buffer.db"
    conn = sqlite3.connect(db)
    conn.executescript("""
        CREATE TABLE readings (id INTEGER PRIMARY KEY AUTOINCREMENT, sensor TEXT NOT NULL,
            seq INTEGER NOT NULL, ts_ms INTEGER NOT NULL, topic TEXT NOT NULL,
            payload BLOB NOT NULL, size INTEGER NOT NULL, UNIQUE (sensor, seq));
        CREATE TABLE sensors (id TEXT PRIMARY KEY, next_seq INTEGER NOT NULL, tips_total INTEGER,
            last_counter INTEGER, driver_state TEXT, readings INTEGER NOT NULL DEFAULT 0,
            out_of_range INTEGER NOT NULL DEFAULT 0, discarded INTEGER NOT NULL DEFAULT 0,
            dropped INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
        INSERT INTO meta VALUES ('buffered_bytes', 200);
        INSERT INTO sensors (id, next_seq, tips_total, readings) VALUES ('rg1', 8, 3, 7);
        INSERT INTO readings (sensor, seq, ts_ms, topic, payload, size) VALUES
            ('rg1', 7, 1796000000000, 'stormwatch/v1/branch-meadows/rg1/reading',
             CAST('{"ts":"2026-11-30T00:53:20Z","seq":7,"tips_total":3}' AS BLOB), 200);
    """)
    conn.close()
    site = Site(tmp_path, [SLOW], confirm_after_s=1_000)
    site.node.step()
    assert _sent_seqs(site)[:2] == [7, 8]          # the old row goes out, then on from 8
    assert _status(site)["oldest_seq"] == 7

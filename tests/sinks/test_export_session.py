"""The exporter in-process (``ExportSession``) against a real InfluxDB 1.6 server.

The daemon is not needed here: the journal and the events table are filled
the way the daemon fills them (``commit_batch``, then ``EngineHost.catch_up``)
and the session is stepped directly, so outages and crashes can be placed
exactly. tests/sinks/test_export_daemon.py runs the same code inside ``stormwatch run``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from monitor.contract.inputs import Inspection, Reading
from monitor.sinks.influx import influx as influx_module
from monitor.sinks.influx.writers import Unavailable, V1Writer, Writer
from monitor.store import Store
from monitor.store.exportstate import CURSOR, DEAD_LETTER_REASON, META_SNAPSHOT, export_status

from ..support.influxd import (
    DERIVED,
    RAW,
    Influxd,
    counts,
    dump,
    export_config,
    fill_store,
    journal_counts,
    session,
    site_readings,
)
from ..support.util import SITE

pytest_plugins = ("tests.support.conftest_influx",)
pytestmark = pytest.mark.integration


def test_every_journal_row_once_and_a_replay_changes_nothing(
        tmp_path: Path, influx_server: Influxd, influx_db: str) -> None:
    config = export_config(tmp_path, influx_server, influx_db, batch_size=700)
    items = site_readings(int(time.time()) * 1000 - 20 * 3_600_000, 300)
    fill_store(config, items)
    with Store.in_dir(config.state_dir) as store:
        s = session(config, store)
        assert s.drain(60)
        assert export_status(store, int(time.time() * 1000))["behind_rows"] == 0
    expected = journal_counts(config)
    got = counts(influx_server, influx_db)
    for m in RAW + ("event",):
        assert got[m] == expected[m], m
    # One derived point per rain reading, per sediment reading, per downstream reading.
    assert got["storm"] == expected["rain"]
    assert got["trap"] == expected["sediment"]
    assert got["contrast"] == expected["turbidity"] // 2
    before = dump(influx_server, influx_db, RAW + DERIVED)

    # Replay everything from the start (a lost cursor, a restored backup): same points.
    with Store.in_dir(config.state_dir) as store:
        store.state.set_cursors({CURSOR: 0, "influx_events": 0})
        store.state.meta_set(META_SNAPSHOT, "")
        assert session(config, store).drain(60)
    assert dump(influx_server, influx_db, RAW + DERIVED) == before
    storm = influx_server.rows('SELECT max("total_in"), last("qualified") FROM "storm"',
                               influx_db)
    assert storm[0]["max"] == 0.6


def test_a_refused_point_is_dead_lettered_and_does_not_block_the_rest(
        tmp_path: Path, influx_server: Influxd, influx_db: str) -> None:
    config = export_config(tmp_path, influx_server, influx_db, batch_size=400)
    start = int(time.time()) * 1000 - 3_600_000
    # Someone wrote temp_c as a string before (field types are per shard, hence the
    # same hour): InfluxDB now refuses it as a float.
    status, text = influx_server.write(
        f'turbidity,site=x,sensor=y temp_c="warm" {start - 60_000}'.encode(), influx_db)
    assert status == 204, text
    items: list[Reading | Inspection] = [
        Reading(SITE, "tb-up", "turbidity", start + i * 60_000, ntu=5.0 + i,
                temp_c=12.5 if i == 17 else None) for i in range(50)]
    fill_store(config, items)
    with Store.in_dir(config.state_dir) as store:
        s = session(config, store)
        assert s.drain(60)
        (letter,) = store.journal.dead_letters()
        status_now = export_status(store, int(time.time() * 1000))
    assert letter.reason == DEAD_LETTER_REASON
    assert letter.topic == "influx/turbidity"
    assert letter.payload.startswith(b"turbidity,sensor=tb-up,site=branch-meadows ")
    assert b"temp_c=12.5" in letter.payload
    assert "field type conflict" in letter.detail
    assert status_now["dead_letters"] == 1 and status_now["behind_rows"] == 0
    # Every other reading is there, and so is the refused one's neighbour.
    assert influx_server.count(
        f"SELECT count(ntu) FROM turbidity WHERE site = '{SITE}'", influx_db) == 49
    refused_at = start + 17 * 60_000
    assert influx_server.count(
        f"SELECT count(ntu) FROM turbidity WHERE time = {refused_at}ms", influx_db) == 0


def test_an_outage_keeps_the_cursor_and_the_backlog_drains_in_order(
        tmp_path: Path, make_influxd: Any, caplog: pytest.LogCaptureFixture) -> None:
    server: Influxd = make_influxd()
    server.create_database("sw")
    config = export_config(tmp_path, server, "sw", batch_size=500)
    now_ms = int(time.time()) * 1000
    first = site_readings(now_ms - 30 * 3_600_000, 200)
    fill_store(config, first)
    with Store.in_dir(config.state_dir) as store:
        s = session(config, store)
        assert s.drain(60)
        cursor = store.state.cursor(CURSOR)
        server.stop()
        second = site_readings(now_ms - 20 * 3_600_000, 200)
        fill_store(config, second)
        caplog.set_level(logging.INFO, logger="stormwatch.export")
        delays = [s.step() for _ in range(3)]
        # Exponential backoff with jitter: about 1, 2, 4 s.
        assert 0.7 < delays[0] < 1.3 and 1.5 < delays[1] < 2.5 and 3 < delays[2] < 5
        assert store.state.cursor(CURSOR) == cursor
        status = export_status(store, int(time.time() * 1000))
        assert status["behind_rows"] == len(second)
        assert status["behind_s"] > 0 and status["error"] and status["error_since"]
        warning = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warning) == 1  # once per outage (then every minute), not per retry
        assert f"{len(second)} journal row(s) behind" in warning[0]
        server.start()
        assert s.drain(60)
        status = export_status(store, int(time.time() * 1000))
        assert status["behind_rows"] == 0 and status["error"] is None
    assert any("reachable again" in r.getMessage() for r in caplog.records)
    got = counts(server, "sw")
    expected = journal_counts(config)
    for m in RAW + ("event",):
        assert got[m] == expected[m], m


class FailAfter:
    """A writer that stores ``n`` requests and then finds the server gone (a crash point)."""

    def __init__(self, inner: Writer, n: int) -> None:
        self.inner, self.n = inner, n
        self.target = inner.target

    def write(self, lines: Sequence[str]) -> None:
        if self.n <= 0:
            raise Unavailable("connection refused")
        self.n -= 1
        self.inner.write(lines)

    def close(self) -> None:
        self.inner.close()


def test_a_restart_resumes_from_the_replica_snapshot_with_the_same_points(
        tmp_path: Path, influx_server: Influxd, monkeypatch: pytest.MonkeyPatch) -> None:
    """Crash mid-backlog, restart from the exporter's own snapshot: InfluxDB ends up
    holding exactly what an uninterrupted export writes."""
    monkeypatch.setattr(influx_module, "SNAPSHOT_EVERY_ROWS", 100)
    items = site_readings(int(time.time()) * 1000 - 20 * 3_600_000, 400)
    influx_server.create_database("whole")
    influx_server.create_database("broken")
    whole = export_config(tmp_path / "a", influx_server, "whole", batch_size=250)
    broken = export_config(tmp_path / "b", influx_server, "broken", batch_size=250)
    for config in (whole, broken):
        fill_store(config, items)
    with Store.in_dir(whole.state_dir) as store:
        assert session(whole, store).drain(60)
    with Store.in_dir(broken.state_dir) as store:
        assert broken.influx is not None
        s = session(broken, store, FailAfter(V1Writer(broken.influx), 4))
        assert not s.drain(60)
        snapshot = store.state.meta_get(META_SNAPSHOT)
        cursor = store.state.cursor(CURSOR)
        assert isinstance(snapshot, str) and '"seq":' in snapshot and cursor > 0
        # The process dies here: the buffered batch and the replica are gone.
    with Store.in_dir(broken.state_dir) as store:
        resumed = session(broken, store)
        assert 0 < resumed.replica.position == cursor
        assert resumed.drain(60)
    assert dump(influx_server, "broken", RAW + DERIVED) == \
        dump(influx_server, "whole", RAW + DERIVED)


def test_v1_creates_a_missing_database(tmp_path: Path, influx_server: Influxd,
                                       caplog: pytest.LogCaptureFixture) -> None:
    config = export_config(tmp_path, influx_server, "fresh_db")
    fill_store(config, [Reading(SITE, "tb-up", "turbidity", int(time.time() * 1000), ntu=3.0)])
    with Store.in_dir(config.state_dir) as store:
        assert session(config, store).drain(30)
    assert influx_server.count("SELECT count(ntu) FROM turbidity", "fresh_db") == 1
    assert "did not exist; created it" in caplog.text

"""The daemon's confirmations (``monitor/daemon/confirmer.py``) through ``Daemon.ingest_batch``
and a real store, without a broker: what is published, when, and after a restart.

The publisher stands in for the MQTT connection (``Ingest.publish``); the real
connection, retained messages and the ACL are tested against Mosquitto in
``tests/reliability/test_delivery.py`` and ``tests/sources/test_acl.py``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from monitor.config import Config
from monitor.config.file import load_config
from monitor.daemon.loop import Daemon
from monitor.host.engine import EngineHost
from monitor.sources.mqtt import Received
from monitor.store import Store
from monitor.store.opening import open_store
from monitor.store.sourcenotes import CONFIRM_META

from ..support.daemonkit import PREFIX, SITE, write_config

NOW_S = 1_780_000_000.0  # 2026-05-28
TOPIC = f"{PREFIX}/{SITE}/tb-up"


@dataclass
class FakeLink:
    """Records what the confirmer publishes, as ``Ingest.publish`` would send it."""

    connected: threading.Event = field(default_factory=threading.Event)
    sent: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def publish(self, messages: Sequence[tuple[str, bytes]]) -> None:
        self.sent += [(t, json.loads(p)) for t, p in messages]

    def ack(self, messages: list[Received]) -> int:
        return len(messages)

    def take(self) -> list[tuple[str, int]]:
        out = [(t.rsplit("/", 2)[-2], body["seq"]) for t, body in self.sent]
        self.sent.clear()
        return out


class Mono:
    def __init__(self) -> None:
        self.s = 100.0

    def __call__(self) -> float:
        return self.s


@dataclass
class Rig:
    config: Config
    store: Store
    link: FakeLink
    mono: Mono
    daemon: Daemon = field(init=False)
    host: EngineHost = field(init=False)
    mid: int = 0

    def __post_init__(self) -> None:
        self.start()

    def start(self) -> None:
        """A daemon as ``Daemon._start`` sets it up: restored, then the book restored."""
        self.host = EngineHost.restore(self.config, self.store, clock=lambda: NOW_S)
        self.daemon = Daemon(self.config, clock=lambda: NOW_S, workers=[])
        self.daemon.confirmer.monotonic = self.mono
        self.daemon.confirmer.restore(self.store)

    def send(self, *messages: tuple[str, dict[str, Any]]) -> None:
        batch = []
        for kind, body in messages:
            self.mid += 1
            sensor = body.pop("sensor", "tb-up")
            batch.append(Received(f"{PREFIX}/{SITE}/{sensor}/{kind}",
                                  json.dumps(body).encode(), self.mid, 1, 1,
                                  round(NOW_S * 1000)))
        self.daemon.ingest_batch(self.store, self.link, self.host, batch)

    def publish(self) -> list[tuple[str, int]]:
        self.daemon.confirmer.publish_due(self.link)
        return self.link.take()


def reading(seq: int, sensor: str = "tb-up", minutes_ago: int = 10) -> tuple[str, dict[str, Any]]:
    return "reading", {"sensor": sensor, "ts": NOW_S - 60 * minutes_ago + seq, "seq": seq,
                       "ntu": 10.0}


def status(oldest: int | None, sensor: str = "tb-up", age_s: float = 5, **more: Any
           ) -> tuple[str, dict[str, Any]]:
    body: dict[str, Any] = {"sensor": sensor, "ts": NOW_S - age_s, "buffered": 0, **more}
    if oldest is not None:
        body["oldest_seq"] = oldest
    return "status", body


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    config = load_config(write_config(tmp_path, 1883))
    store = open_store(config)
    link = FakeLink()
    link.connected.set()
    try:
        yield Rig(config, store, link, Mono())
    finally:
        store.close()


def test_the_mark_is_published_after_the_commit_and_at_most_once_a_second(rig: Rig) -> None:
    rig.send(status(1), *(reading(s) for s in range(1, 6)))
    assert rig.publish() == [("tb-up", 5)]
    rig.send(reading(6), reading(7))
    rig.mono.s += 0.5
    assert rig.publish() == []  # within the second: it waits, with its newest value
    rig.send(reading(8))
    rig.mono.s += 0.5
    assert rig.publish() == [("tb-up", 8)]
    assert rig.publish() == []  # nothing new: nothing again


def test_the_payload_and_topic_are_the_contracts(rig: Rig) -> None:
    rig.send(status(3), reading(3))
    rig.daemon.confirmer.publish_due(rig.link)
    assert rig.link.sent == [(f"{PREFIX}/{SITE}/tb-up/journaled",
                              {"seq": 3, "at": "2026-05-28T20:26:40Z"})]


def test_no_status_no_confirmation_and_a_gap_holds_the_mark(rig: Rig) -> None:
    rig.send(reading(1), reading(2), reading(4))
    assert rig.publish() == []  # what the node holds below 1 is unknown
    rig.send(status(1))
    assert rig.publish() == [("tb-up", 2)]  # 3 is missing: the broker lost it
    rig.mono.s += 1
    rig.send(reading(5))
    assert rig.publish() == [("tb-up", 2)]  # again: the node sees it is missing something
    rig.mono.s += 1
    rig.send(reading(3))  # sent again by the node
    assert rig.publish() == [("tb-up", 5)]


def test_nothing_is_confirmed_when_the_commit_fails(rig: Rig, monkeypatch: pytest.MonkeyPatch
                                                   ) -> None:
    rig.send(status(1), reading(1))
    assert rig.publish() == [("tb-up", 1)]

    def full(*args: Any, **kwargs: Any) -> list[int | None]:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(rig.store.journal, "commit", full)
    rig.mono.s += 5
    with pytest.raises(sqlite3.OperationalError):
        rig.send(reading(2), reading(3))
    assert rig.publish() == []
    monkeypatch.undo()
    rig.daemon.ingest_batch(rig.store, rig.link, rig.host, rig.daemon.held)  # the retry
    assert rig.publish() == [("tb-up", 3)]


def test_rejected_readings_count_unless_sending_again_may_help(rig: Rig) -> None:
    rig.send(status(1), reading(1), reading(2, minutes_ago=60 * 24 * 30))  # 2 is too_old
    assert rig.publish() == [("tb-up", 2)]
    rig.mono.s += 1
    rig.send(reading(3, minutes_ago=-60))  # an hour ahead: future_timestamp
    rig.send(reading(4))
    assert rig.publish() == [("tb-up", 2)]
    with Store(rig.store.path, readonly=True) as ro:
        assert ro.journal.reject_counts() == {"future_timestamp": 1, "too_old": 1}


def test_a_sensor_whose_node_said_nothing_gets_nothing(rig: Rig) -> None:
    rig.send(status(1), reading(1), reading(7, sensor="tb-down"), reading(8, sensor="tb-down"))
    assert rig.publish() == [("tb-up", 1)]


def test_after_a_restart_the_mark_is_carried_up_through_the_journal(rig: Rig) -> None:
    rig.send(status(1), *(reading(s) for s in range(1, 4)))
    assert rig.publish() == [("tb-up", 3)]
    rig.store.state.meta_update(rig.daemon.confirmer.book.meta())  # as at a tick
    rig.send(*(reading(s) for s in range(4, 9)))  # committed; then SIGKILL, nothing published
    rig.start()
    with Store(rig.store.path, readonly=True) as ro:
        assert json.loads(str(ro.state.meta_get(CONFIRM_META)))[f"{SITE}/tb-up"]["seq"] == 3
    assert rig.publish() == [("tb-up", 8)]


def test_a_reconnection_publishes_every_mark_again(rig: Rig) -> None:
    rig.send(status(1), reading(1), status(10, sensor="tb-down"), reading(10, sensor="tb-down"))
    assert sorted(rig.publish()) == [("tb-down", 10), ("tb-up", 1)]
    rig.link.connected.clear()
    rig.mono.s += 5
    rig.send(reading(2))
    assert rig.publish() == []  # not while disconnected
    rig.link.connected.set()
    rig.daemon.confirmer.reconnected()
    assert sorted(rig.publish()) == [("tb-down", 10), ("tb-up", 2)]


def test_oldest_seq_going_down_is_looked_up_in_the_journal(rig: Rig) -> None:
    # A node that lost its buffer numbers again from lower (a clock set wrong).
    rig.send(status(100), *(reading(s) for s in range(100, 103)), *(reading(s) for s in (1, 2)))
    assert rig.publish() == [("tb-up", 102)]
    rig.mono.s += 1
    rig.send(status(1, age_s=1))
    assert rig.publish() == [("tb-up", 2)]


def test_off_in_the_configuration_publishes_nothing(tmp_path: Path) -> None:
    path = write_config(tmp_path, 1883)
    path.write_text(path.read_text().replace("client_id: stormwatch-test",
                                             "client_id: stormwatch-test, confirm: false"))
    config = load_config(path)
    assert config.broker.confirm is False
    with open_store(config) as store:
        link = FakeLink()
        link.connected.set()
        off = Rig(config, store, link, Mono())
        off.send(status(1, confirm="puback"), reading(1))
        assert off.publish() == []
        # No mark, but the node's mode is noted: status --json shows its fallback.
        marks = off.daemon.confirmer.book.marks
        assert {k: (m.seq, m.mode) for k, m in marks.items()} == {
            ("branch-meadows", "tb-up"): (None, "puback")}


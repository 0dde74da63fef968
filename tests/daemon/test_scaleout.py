"""Several daemons with disjoint site lists on one broker (``broker.subscribe: sites``).

Two real daemons share one real Mosquitto. Each must journal exactly its own
sites' messages, including those the broker queued in its persistent session
while it was down, dead-letter nothing, and lose nothing between them. With
the default ``subscribe: all`` a message for an unknown site is still
dead-lettered (sensors/README.md, "MQTT contract").
"""

from __future__ import annotations

import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from monitor.store import Store

from ..conftest import MakeMosquitto
from ..support.daemonkit import PREFIX, Daemons, Publisher, journal_count, wait_until, write_config
from ..support.services import Mosquitto, publish_reason

pytestmark = pytest.mark.integration

SITES_A = ("a1", "a2")
SITES_B = ("b1", "b2")

#: MQTT v5 PUBACK reason: accepted, but no session subscribes to the topic.
NO_MATCHING_SUBSCRIBERS = 0x10

Message = tuple[str, dict[str, Any]]
#: What identifies a journaled message: (site, sensor or None, topic kind, ts_ms).
Key = tuple[str, str | None, str, int]


def write_sites_config(directory: Path, port: int, client_id: str, sites: tuple[str, ...],
                       subscribe: str | None = "sites") -> Path:
    """A daemon configuration in ``directory`` (state in ``directory/state``) with one
    rain gauge and one turbidity probe per site; ``subscribe=None`` leaves the default."""
    directory.mkdir(parents=True, exist_ok=True)
    option = "" if subscribe is None else f", subscribe: {subscribe}"
    lines = [f"broker: {{host: 127.0.0.1, port: {port}, client_id: {client_id}{option}}}",
             f"state_dir: {directory / 'state'}", "sites:"]
    for site in sites:
        lines += [f"  - id: {site}",
                  "    sensors:",
                  "      - {id: rg1, kind: rain, in_per_tip: 0.01, stale_after_minutes: 600}",
                  "      - {id: tb1, kind: turbidity, stale_after_minutes: 600}"]
    path = directory / "stormwatch.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def site_messages(site: str, start_s: int, minutes: int, tips_from: int = 0) -> list[Message]:
    """Every minute from ``start_s`` on a reading of each sensor, then one status of each
    and an inspection: every topic kind the daemon subscribes to."""
    out: list[Message] = []
    for m in range(minutes):
        ts = start_s + m * 60
        out.append((f"{PREFIX}/{site}/rg1/reading", {"ts": ts, "tips_total": tips_from + m}))
        out.append((f"{PREFIX}/{site}/tb1/reading", {"ts": ts, "ntu": 5.0 + m % 7}))
    end = start_s + minutes * 60
    out += [(f"{PREFIX}/{site}/{sensor}/status", {"ts": end, "battery_v": 3.9})
            for sensor in ("rg1", "tb1")]
    out.append((f"{PREFIX}/{site}/inspection",
                {"ts": end, "inspector": "J. Rivera", "kind": "routine"}))
    return out


def published_keys(messages: list[Message]) -> set[Key]:
    keys: set[Key] = set()
    for topic, body in messages:
        levels = topic.split("/")
        sensor = levels[3] if len(levels) == 5 else None
        keys.add((levels[2], sensor, levels[-1], body["ts"] * 1000))
    return keys


def journaled_keys(config_path: Path) -> list[Key]:
    keys: list[Key] = []
    with Store(config_path.parent / "state" / "stormwatch.db", readonly=True) as store:
        for row in store.journal.after(0, limit=100_000):
            if row.kind == "inspection":
                keys.append((row.body["site"], None, "inspection", row.body["ts_ms"]))
            elif row.kind == "reading":
                kind = "status" if row.body["kind"] == "status" else "reading"
                keys.append((row.body["site"], row.body["sensor"], kind, row.body["ts_ms"]))
    return keys


def journaled(config_path: Path, key: Key) -> bool:
    return key in journaled_keys(config_path)


def reject_counts(config_path: Path) -> dict[str, int]:
    with Store(config_path.parent / "state" / "stormwatch.db", readonly=True) as store:
        return store.journal.reject_counts()


def publish(broker: Mosquitto, messages: list[Message]) -> None:
    pub = Publisher(broker.port)
    try:
        pub.send_many([(topic, body) for topic, body in messages])
    finally:
        pub.close()


def test_disjoint_daemons_share_one_broker(tmp_path: Path,
                                           make_mosquitto: MakeMosquitto) -> None:
    broker = make_mosquitto()
    cfg_a = write_sites_config(tmp_path / "a", broker.port, "stormwatch-a", SITES_A)
    cfg_b = write_sites_config(tmp_path / "b", broker.port, "stormwatch-b", SITES_B)
    start = int(time.time()) // 60 * 60 - 6 * 3600
    with Daemons() as daemons:
        a = daemons.start(cfg_a)
        b = daemons.start(cfg_b)
        for daemon in (a, b):
            assert "6 subscriptions, subscribe: sites" in daemon.log_text()

        first = [m for site in SITES_A + SITES_B for m in site_messages(site, start, 60)]
        publish(broker, first)
        per_daemon = len(first) // 2
        wait_until(lambda: journal_count(cfg_a) == per_daemon, 30, "a's first readings")
        wait_until(lambda: journal_count(cfg_b) == per_daemon, 30, "b's first readings")

        # B down: only its persistent session holds its sites' messages meanwhile.
        assert b.stop() == 0
        second = [m for site in SITES_A + SITES_B
                  for m in site_messages(site, start + 2 * 3600, 60, tips_from=60)]
        publish(broker, second)
        wait_until(lambda: journal_count(cfg_a) == 2 * per_daemon, 30, "a's second readings")
        assert journal_count(cfg_b) == per_daemon
        # A site neither daemon configures reaches neither (and is dead-lettered by none).
        assert publish_reason(broker.host, broker.port, f"{PREFIX}/c1/rg1/reading",
                              b'{"ts": %d, "tips_total": 1}' % start) == NO_MATCHING_SUBSCRIBERS

        b.start()
        assert "session resumed" in b.log_text()
        wait_until(lambda: journal_count(cfg_b) == 2 * per_daemon, 30,
                   "b's readings queued while it was down")
        # A barrier: one more reading of each daemon's first site, published after all
        # the rest. The broker hands a session its messages in the order it took them,
        # so once a daemon has journaled its barrier, anything misrouted or repeated
        # to it has arrived too.
        barrier = [(f"{PREFIX}/{sites[0]}/tb1/reading", {"ts": start + 4 * 3600, "ntu": 5.0})
                   for sites in (SITES_A, SITES_B)]
        publish(broker, barrier)
        for cfg, message in zip((cfg_a, cfg_b), barrier, strict=True):
            (key,) = published_keys([message])
            wait_until(partial(journaled, cfg, key), 30, f"{cfg.parent.name}'s barrier")
        assert a.stop() == 0
        assert b.stop() == 0

    keys_a, keys_b = journaled_keys(cfg_a), journaled_keys(cfg_b)
    per_site = len(first) // 4 * 2
    assert Counter(key[0] for key in keys_a) == {site: per_site + (site == SITES_A[0])
                                                 for site in SITES_A}
    assert Counter(key[0] for key in keys_b) == {site: per_site + (site == SITES_B[0])
                                                 for site in SITES_B}
    # Every published message is in exactly one journal, once.
    assert len(keys_a) + len(keys_b) == len(set(keys_a) | set(keys_b))
    assert set(keys_a) | set(keys_b) == published_keys(first + second + barrier)
    assert reject_counts(cfg_a) == {}
    assert reject_counts(cfg_b) == {}


def test_switch_to_sites_drops_the_wildcards_of_the_resumed_session(
        tmp_path: Path, make_mosquitto: MakeMosquitto) -> None:
    broker = make_mosquitto()
    cfg = write_sites_config(tmp_path, broker.port, "stormwatch-a", SITES_A, subscribe=None)
    now = int(time.time())
    with Daemons() as daemons:
        daemon = daemons.start(cfg)
        assert "3 subscriptions, subscribe: all" in daemon.log_text()
        assert daemon.stop() == 0
        write_sites_config(tmp_path, broker.port, "stormwatch-a", SITES_A)
        offset = len(broker.log_text())
        daemon.start()
        assert "session resumed, 6 subscriptions, subscribe: sites" in daemon.log_text()
        wait_until(lambda: f"stormwatch-a {PREFIX}/+/inspection" in broker.log_text()[offset:],
                   10, "the daemon to unsubscribe the wildcards")
        # The wildcard would have made it the daemon's (an unknown_site dead letter).
        assert publish_reason(broker.host, broker.port, f"{PREFIX}/b1/rg1/reading",
                              b'{"ts": %d, "tips_total": 1}' % now) == NO_MATCHING_SUBSCRIBERS
        publish(broker, [(f"{PREFIX}/a1/rg1/reading", {"ts": now, "tips_total": 1})])
        wait_until(lambda: journal_count(cfg) == 1, 10, "the reading of its own site")
        assert daemon.stop() == 0
    assert reject_counts(cfg) == {}


def test_subscribe_all_still_dead_letters_an_unknown_site(
        tmp_path: Path, make_mosquitto: MakeMosquitto) -> None:
    broker = make_mosquitto()
    cfg = write_config(tmp_path, broker.port)  # the default, subscribe: all
    now = int(time.time())
    with Daemons() as daemons:
        daemon = daemons.start(cfg)
        assert "3 subscriptions, subscribe: all" in daemon.log_text()
        publish(broker, [(f"{PREFIX}/elsewhere/rg1/reading", {"ts": now, "tips_total": 1})])
        wait_until(lambda: reject_counts(cfg), 20, "the dead letter")
        assert daemon.stop() == 0
    assert reject_counts(cfg) == {"unknown_site": 1}

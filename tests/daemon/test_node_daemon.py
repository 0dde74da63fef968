"""The daemon's side of sensor nodes: a node's status in
``status`` and one MQTT account per node in ``stormwatch acl``."""

from __future__ import annotations

from monitor.contract.inputs import Reading
from monitor.contract.rejects import RejectReason
from monitor.engine import Engine, site_status
from monitor.sources.acl import node_accounts
from monitor.sources.parse import parse_message

from ..support.util import SITE, site_config, ts

SENSORS = [
    {"id": "rg1", "kind": "rain", "in_per_tip": 0.01, "node": "pi-1"},
    {"id": "tb-up", "kind": "turbidity", "node": "pi-1"},
    {"id": "tb-down", "kind": "turbidity", "node": "pi-2"},
    {"id": "trap1-depth", "kind": "sediment"},
]


def test_the_latest_status_gives_buffered_and_dropped_per_sensor() -> None:
    eng = Engine(site_config())
    topic = f"stormwatch/v1/{SITE}/rg1/status"
    first = parse_message(eng.config, topic, b'{"ts": "2026-05-01T10:00:00Z", "buffered": 40,'
                          b' "dropped": 3, "battery_v": 3.9}', ref_ms=ts("10:00"))
    later = parse_message(eng.config, topic, b'{"ts": "2026-05-01T10:01:00Z", "buffered": 0}',
                          ref_ms=ts("10:01"))
    assert isinstance(first, Reading) and isinstance(later, Reading)
    assert (first.buffered, first.dropped) == (40, 3)
    # Arrival order does not matter: the latest status in event time wins, and a
    # status without ``dropped`` keeps the count it had.
    eng.apply(later)
    eng.apply(first)
    rg1 = site_status(eng, SITE, ts("10:02"))["sensors"]["rg1"]
    assert (rg1["buffered"], rg1["dropped"], rg1["battery_v"]) == (0, 3, 3.9)
    assert site_status(eng, SITE, ts("10:02"))["sensors"]["tb-up"]["buffered"] is None
    negative = parse_message(eng.config, topic, b'{"ts": "2026-05-01T10:00:00Z", "dropped": -1}',
                             ref_ms=ts("10:00"))
    assert getattr(negative, "reason", None) is RejectReason.negative_value


def test_sensors_naming_one_node_share_its_account() -> None:
    accounts = node_accounts(site_config(sensors=SENSORS))
    assert sorted(accounts) == [f"{SITE}.pi-1", f"{SITE}.pi-2", f"{SITE}.trap1-depth"]
    assert accounts[f"{SITE}.pi-1"] == [
        f"stormwatch/v1/{SITE}/{s}/{t}" for s in ("rg1", "tb-up") for t in ("reading", "status")]

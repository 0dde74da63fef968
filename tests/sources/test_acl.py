"""The generated Mosquitto ACL, checked in text and enforced by a real broker.

The broker tests start Mosquitto with ``allow_anonymous false``, a password
file made by ``mosquitto_passwd`` and the ACL of a two-site configuration,
then act as the daemon, sensor nodes, a qualified professional and an
anonymous client. A refused publish is seen as the MQTT v5 PUBACK reason code
(Mosquitto 2 answers 0x87 "Not authorized"); that it was never delivered is
shown by publishing an accepted marker afterwards and waiting for it at the
daemon's subscription: the broker handles one client's messages in order, so
once the marker has arrived, the refused message would have arrived before it.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from monitor.config import Config
from monitor.config.file import parse_config
from monitor.sources.acl import (
    AclError,
    accounts,
    daemon_username,
    node_accounts,
    qp_accounts,
    render_acl,
)
from tests.support.services import (
    MISSING_REASON,
    MOSQUITTO_PASSWD,
    Collector,
    Mosquitto,
    connect_reason,
    make_password_file,
    publish,
    publish_reason,
)

PREFIX = "stormwatch/v1"
DAEMON = "stormwatch"
NOT_AUTHORIZED = 0x87


def two_sites(**broker: Any) -> dict[str, Any]:
    """Two sites that share a sensor id, so "another site's topic" is a real test."""
    return {
        "broker": {"username": DAEMON, **broker},
        "state_dir": "/tmp/stormwatch-test",
        "sites": [
            {"id": "mill-road-lot",
             "sensors": [{"id": "rg1", "kind": "rain"},
                         {"id": "trap1-depth", "kind": "sediment"}]},
            {"id": "branch-meadows",
             "sensors": [{"id": "tb-up", "kind": "turbidity"},
                         {"id": "rg1", "kind": "rain"},
                         {"id": "tb-down", "kind": "turbidity"}]},
        ],
    }


def config(**broker: Any) -> Config:
    return parse_config(two_sites(**broker), env={})


def grants(acl: str) -> dict[str, list[tuple[str, str]]]:
    """``{user: [(access, topic), ...]}`` from ACL text, as Mosquitto reads it."""
    out: dict[str, list[tuple[str, str]]] = {}
    user: str | None = None
    for line in acl.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        keyword, _, rest = line.partition(" ")
        if keyword == "user":
            user = rest
            out[user] = []
        else:
            assert keyword == "topic", line
            assert user is not None, f"a grant before any user applies to anonymous: {line}"
            access, _, topic = rest.partition(" ")
            out[user].append((access, topic))
    return out


# --------------------------------------------------------------------------- text


def node_grants(site: str, sensor: str) -> list[tuple[str, str]]:
    """A one-sensor node's grants: it reads its confirmations, writes its readings and status."""
    return [("read", f"{PREFIX}/{site}/{sensor}/journaled"),
            ("write", f"{PREFIX}/{site}/{sensor}/reading"),
            ("write", f"{PREFIX}/{site}/{sensor}/status")]


def test_grants_are_exactly_the_contract_topics() -> None:
    assert grants(render_acl(config())) == {
        DAEMON: [("read", f"{PREFIX}/#"), ("write", f"{PREFIX}/+/+/journaled"),
                 ("write", f"{PREFIX}/+/inspection")],
        "branch-meadows.rg1": node_grants("branch-meadows", "rg1"),
        "branch-meadows.tb-down": node_grants("branch-meadows", "tb-down"),
        "branch-meadows.tb-up": node_grants("branch-meadows", "tb-up"),
        "mill-road-lot.rg1": node_grants("mill-road-lot", "rg1"),
        "mill-road-lot.trap1-depth": node_grants("mill-road-lot", "trap1-depth"),
        "branch-meadows.qp": [("write", f"{PREFIX}/branch-meadows/inspection")],
        "mill-road-lot.qp": [("write", f"{PREFIX}/mill-road-lot/inspection")],
    }


def test_output_is_deterministic_whatever_the_order_in_the_file() -> None:
    data = two_sites()
    shuffled = {**data, "sites": [{**s, "sensors": s["sensors"][::-1]}
                                  for s in data["sites"][::-1]]}
    text = render_acl(parse_config(data, env={}))
    assert render_acl(parse_config(shuffled, env={})) == text
    users = [line.split(" ", 1)[1] for line in text.splitlines() if line.startswith("user ")]
    assert users[0] == DAEMON
    assert users[1:6] == sorted(users[1:6]) and users[6:] == sorted(users[6:])


def test_header_explains_regeneration_and_passwords() -> None:
    header = render_acl(config()).split("\nuser ", 1)[0]
    assert "stormwatch acl --config" in header
    assert "mosquitto_passwd -c" in header
    assert all(line.startswith("#") or not line for line in header.splitlines())


def test_default_daemon_account_and_custom_prefix() -> None:
    data = two_sites(topic_prefix="village/stormwater/")
    del data["broker"]["username"]
    cfg = parse_config(data, env={})
    assert daemon_username(cfg) == "stormwatch"
    daemon = grants(render_acl(cfg))["stormwatch"]
    assert daemon == [("read", "village/stormwater/#"),
                      ("write", "village/stormwater/+/+/journaled"),
                      ("write", "village/stormwater/+/inspection")]


def test_node_and_qp_accounts() -> None:
    cfg = config()
    assert node_accounts(cfg)["mill-road-lot.rg1"] == [f"{PREFIX}/mill-road-lot/rg1/reading",
                                                       f"{PREFIX}/mill-road-lot/rg1/status"]
    assert list(node_accounts(cfg)) == sorted(node_accounts(cfg))
    assert qp_accounts(cfg) == {"branch-meadows.qp": [f"{PREFIX}/branch-meadows/inspection"],
                                "mill-road-lot.qp": [f"{PREFIX}/mill-road-lot/inspection"]}
    without_qp = render_acl(cfg, qualified_professionals=False)
    assert not [u for u in grants(without_qp) if u.endswith(".qp")]


def test_a_sensor_named_qp_is_refused_not_merged() -> None:
    data = two_sites()
    data["sites"][0]["sensors"].append({"id": "qp", "kind": "turbidity"})
    with pytest.raises(AclError, match=r"mill-road-lot\.qp.*rename the sensor"):
        render_acl(parse_config(data, env={}))


def test_a_daemon_username_equal_to_a_node_account_is_refused() -> None:
    with pytest.raises(AclError, match="choose another broker.username"):
        accounts(config(username="branch-meadows.rg1"))


@pytest.mark.parametrize("prefix", ["stormwatch/#", "a/+/b", "/"])
def test_a_prefix_with_wildcards_is_refused(prefix: str) -> None:
    with pytest.raises(AclError, match="topic_prefix"):
        render_acl(config(topic_prefix=prefix))


# --------------------------------------------------------------------------- broker


def password(username: str) -> str:
    return f"pw-{username}-{len(username)}"


@dataclass
class SecuredBroker:
    broker: Mosquitto
    config: Config

    def publish(self, username: str | None, topic: str, payload: bytes) -> bool:
        return publish(self.broker.host, self.broker.port, topic, payload, qos=1,
                       username=username,
                       password=password(username) if username is not None else None)

    def collector(self, username: str, topic_filter: str = f"{PREFIX}/#") -> Collector:
        return Collector(self.broker.host, self.broker.port, topic_filter, username=username,
                         password=password(username)).start()


@pytest.fixture
def secured(make_mosquitto: Callable[..., Mosquitto], tmp_path: Path) -> SecuredBroker:
    if shutil.which(MOSQUITTO_PASSWD) is None:
        pytest.skip(MISSING_REASON)
    cfg = config()
    acl = tmp_path / "stormwatch.acl"
    acl.write_text(render_acl(cfg), encoding="utf-8")
    users = {a.username: password(a.username) for a in accounts(cfg)}
    passwd = make_password_file(tmp_path / "stormwatch.passwd", users)
    broker = make_mosquitto(allow_anonymous=False, password_file=passwd, acl_file=acl,
                            verbose=True)
    return SecuredBroker(broker, cfg)


@pytest.fixture
def daemon(secured: SecuredBroker) -> Iterator[Collector]:
    """The daemon account's subscription to everything under the prefix."""
    collector = secured.collector(DAEMON)
    yield collector
    collector.stop()


def delivered_in_order(secured: SecuredBroker, daemon: Collector, username: str,
                       marker_topic: str) -> None:
    """Publish an accepted marker as ``username``; return once the daemon has it."""
    marker = b'{"marker": true}'
    assert secured.publish(username, marker_topic, marker)
    assert daemon.wait_for(lambda ms: any(m.payload == marker for m in ms)), daemon.messages


def test_a_node_publishes_its_own_reading_and_status_to_the_daemon(
        secured: SecuredBroker, daemon: Collector) -> None:
    assert daemon.granted == [1]
    node = "branch-meadows.rg1"
    reading = b'{"ts": "2026-11-30T14:00:00Z", "tips_total": 42}'
    status = b'{"ts": "2026-11-30T14:00:00Z", "battery_v": 3.9}'
    assert secured.publish(node, f"{PREFIX}/branch-meadows/rg1/reading", reading)
    assert secured.publish(node, f"{PREFIX}/branch-meadows/rg1/status", status)
    assert daemon.wait_for(lambda ms: len(ms) == 2)
    assert [(m.topic, m.payload) for m in daemon.messages] == [
        (f"{PREFIX}/branch-meadows/rg1/reading", reading),
        (f"{PREFIX}/branch-meadows/rg1/status", status)]


@pytest.mark.parametrize("topic", [
    f"{PREFIX}/branch-meadows/tb-up/reading",   # another sensor of its own site
    f"{PREFIX}/branch-meadows/tb-up/status",
    f"{PREFIX}/mill-road-lot/rg1/reading",      # the same sensor id at another site
    f"{PREFIX}/branch-meadows/inspection",      # inspections are the QP's and the daemon's
    f"{PREFIX}/branch-meadows/rg1/other",       # not a contract topic
    "elsewhere/branch-meadows/rg1/reading",     # outside the prefix
])
def test_a_node_cannot_publish_for_another_sensor_or_site(
        secured: SecuredBroker, daemon: Collector, topic: str) -> None:
    node = "branch-meadows.rg1"
    forged = b'{"ts": "2026-11-30T14:00:00Z", "ntu": 999.0}'
    assert not secured.publish(node, topic, forged)
    delivered_in_order(secured, daemon, node, f"{PREFIX}/branch-meadows/rg1/reading")
    assert forged not in [m.payload for m in daemon.messages]
    assert "Denied PUBLISH" in secured.broker.log_text()


def test_the_refusal_is_reason_not_authorized(secured: SecuredBroker) -> None:
    node = "branch-meadows.rg1"
    assert publish_reason(secured.broker.host, secured.broker.port,
                          f"{PREFIX}/mill-road-lot/rg1/reading", b"{}", username=node,
                          password=password(node)) == NOT_AUTHORIZED


def test_anonymous_clients_and_wrong_passwords_cannot_connect(secured: SecuredBroker) -> None:
    host, port = secured.broker.host, secured.broker.port
    assert connect_reason(host, port) == NOT_AUTHORIZED
    assert connect_reason(host, port, username="branch-meadows.rg1", password="guess") >= 0x80
    assert connect_reason(host, port, username="nobody", password="x") >= 0x80
    assert not publish(host, port, f"{PREFIX}/branch-meadows/rg1/reading", b"{}")
    assert connect_reason(host, port, username=DAEMON, password=password(DAEMON)) == 0


@pytest.mark.parametrize("account", ["branch-meadows.rg1", "mill-road-lot.qp"])
def test_only_the_daemon_reads(secured: SecuredBroker, daemon: Collector, account: str) -> None:
    spy = secured.collector(account)
    try:
        # Mosquitto 2.0 grants the subscription and applies the ACL per message
        # on delivery; a broker that refused it (≥ 0x80) would be as good.
        assert spy.granted in ([1], [0x80], [NOT_AUTHORIZED])
        delivered_in_order(secured, daemon, "branch-meadows.rg1",
                           f"{PREFIX}/branch-meadows/rg1/reading")
        delivered_in_order(secured, daemon, "mill-road-lot.qp",
                           f"{PREFIX}/mill-road-lot/inspection")
        assert not spy.wait_for(lambda ms: bool(ms), timeout_s=0.5), spy.messages
    finally:
        spy.stop()


def test_the_qp_records_inspections_of_its_own_site_only(
        secured: SecuredBroker, daemon: Collector) -> None:
    qp = "branch-meadows.qp"
    inspection = b'{"inspector": "J. Rivera, CPESC", "kind": "storm"}'
    assert secured.publish(qp, f"{PREFIX}/branch-meadows/inspection", inspection)
    assert daemon.wait_for_topic(f"{PREFIX}/branch-meadows/inspection")
    assert not secured.publish(qp, f"{PREFIX}/mill-road-lot/inspection", b'{"inspector": "x"}')
    assert not secured.publish(qp, f"{PREFIX}/branch-meadows/rg1/reading", b'{"ts": 0}')


def test_a_node_reads_its_own_confirmations_and_no_other_nodes(
        secured: SecuredBroker, daemon: Collector) -> None:
    """The daemon's retained ``journaled`` messages reach the node they are for, and a
    node subscribed to everything gets no other node's, at its own site or another."""
    mine = f"{PREFIX}/branch-meadows/rg1/journaled"
    others = [f"{PREFIX}/branch-meadows/tb-up/journaled", f"{PREFIX}/mill-road-lot/rg1/journaled"]
    for n, topic in enumerate([mine, *others]):
        assert publish_reason(secured.broker.host, secured.broker.port, topic,
                              b'{"seq": %d, "at": "2026-11-30T14:00:00Z"}' % n,
                              username=DAEMON, password=password(DAEMON),
                              retain=True) < 0x80, topic
    spy = secured.collector("branch-meadows.rg1")  # after the publishes: retained only
    try:
        assert spy.wait_for(lambda ms: bool(ms)), "its own retained confirmation"
        # What else the broker would deliver is delivered by now: a marker of the daemon's
        # on the node's own topic comes after any retained message of the subscription.
        marker = b'{"seq": 99, "at": "2026-11-30T14:01:00Z"}'
        assert secured.publish(DAEMON, mine, marker)
        assert spy.wait_for(lambda ms: any(m.payload == marker for m in ms)), spy.messages
        assert [(m.topic, m.retain) for m in spy.messages] == [(mine, True), (mine, False)]
    finally:
        spy.stop()


def test_a_node_cannot_forge_a_confirmation(secured: SecuredBroker) -> None:
    node = "branch-meadows.rg1"
    for topic in (f"{PREFIX}/branch-meadows/rg1/journaled",
                  f"{PREFIX}/branch-meadows/tb-up/journaled"):
        assert publish_reason(secured.broker.host, secured.broker.port, topic, b'{"seq": 1}',
                              username=node, password=password(node)) == NOT_AUTHORIZED


def test_the_daemon_records_inspections_but_writes_no_readings(
        secured: SecuredBroker, daemon: Collector) -> None:
    assert secured.publish(DAEMON, f"{PREFIX}/mill-road-lot/inspection", b'{"inspector": "x"}')
    assert daemon.wait_for_topic(f"{PREFIX}/mill-road-lot/inspection")
    assert not secured.publish(DAEMON, f"{PREFIX}/mill-road-lot/rg1/reading", b'{"ts": 0}')


# --------------------------------------------------------------------------- deploy/


DEPLOY_CONF = Path(__file__).resolve().parents[2] / "deploy" / "mosquitto" / "stormwatch.conf"


class ShippedConf(Mosquitto):
    """The shipped drop-in, its paths moved into the temp dir, under a minimal main config."""

    def __init__(self, workdir: Path, acl: Path, passwd: Path) -> None:
        super().__init__(workdir)
        self.acl, self.passwd = acl, passwd

    def config_text(self) -> str:
        text = DEPLOY_CONF.read_text(encoding="utf-8")
        text = re.sub(r"(?m)^listener \d+.*$", f"listener {self.port} {self.host}", text)
        text = re.sub(r"(?m)^password_file .*$", f"password_file {self.passwd}", text)
        text = re.sub(r"(?m)^acl_file .*$", f"acl_file {self.acl}", text)
        # What Debian's /etc/mosquitto/mosquitto.conf sets before including conf.d/.
        main = super().config_text()
        kept = [line for line in main.splitlines()
                if line.split(" ", 1)[0] in ("user", "persistence_location", "log_dest")]
        return "\n".join(kept) + "\n" + text


def test_the_shipped_mosquitto_conf_loads_and_denies_anonymous(
        make_mosquitto: Callable[..., Mosquitto], tmp_path: Path) -> None:
    # make_mosquitto only for its skip and teardown; the broker is the shipped conf.
    probe = make_mosquitto(start=False)
    cfg = config()
    acl = tmp_path / "stormwatch.acl"
    acl.write_text(render_acl(cfg), encoding="utf-8")
    passwd = make_password_file(tmp_path / "stormwatch.passwd", {DAEMON: password(DAEMON)})
    broker = ShippedConf(probe.workdir / "shipped", acl, passwd)
    try:
        broker.start()
        assert connect_reason(broker.host, broker.port) == NOT_AUTHORIZED
        assert connect_reason(broker.host, broker.port, username=DAEMON,
                              password=password(DAEMON)) == 0
    finally:
        broker.stop()
    for option in ("max_queued_messages 0", "max_inflight_messages 1000", "persistence true",
                   "allow_anonymous false"):
        assert re.search(rf"(?m)^{option}$", DEPLOY_CONF.read_text(encoding="utf-8")), option

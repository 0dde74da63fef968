"""The daemon and its broker when things go wrong: an unreachable broker,
a session the broker no longer has, and the shipped broker configuration that
keeps one account from taking another's session. Against a real Mosquitto and
the real daemon process (``tests/support/daemonkit.py``).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from ..conftest import MakeMosquitto
from ..support.childproc import free_port
from ..support.daemonkit import (
    ROOT,
    SITE,
    DaemonProcess,
    cli,
    journal_count,
    reading_topic,
    wait_until,
    write_config,
)
from ..support.services import make_password_file, publish_reason


def _status(cfg: Path) -> dict[str, Any]:
    out = cli("status", "--config", str(cfg), "--json")
    assert out.returncode == 0, out.stderr
    status: dict[str, Any] = json.loads(out.stdout)
    return status


# ---------------------------------------------------------------------- an unreachable broker



@pytest.mark.integration
def test_daemon_says_at_once_that_the_broker_is_unreachable(
        tmp_path: Path, make_mosquitto: MakeMosquitto) -> None:
    port = free_port("127.0.0.1")
    cfg = write_config(tmp_path, port)
    daemon = DaemonProcess(cfg)
    try:
        daemon.start(wait_connected=False)
        line = wait_until(lambda: re.search(r".*ERROR.*cannot connect to the broker at "
                                            rf"127\.0\.0\.1:{port}: (.*)", daemon.log_text()),
                          20, "the ERROR line")
        assert "ConnectionRefusedError" in line.group(1)
        # paho tries again 1 s later: that is not logged again (the next line waits 10 s),
        # only at debug level.
        wait_until(lambda: "connection attempt 2 to" in daemon.log_text(), 20, "attempt 2")
        assert daemon.log_text().count("cannot connect to the broker at") == 1
        status = wait_until(lambda: (s := _status(cfg))["broker"]["state"] == "disconnected"
                            and s, 20, "status to show the broker down")
        assert status["broker"]["since"] is not None
        assert daemon.running
        # The broker comes up on that port: the daemon connects by itself and says so.
        make_mosquitto(port=port)
        wait_until(lambda: "connected to 127.0.0.1" in daemon.log_text(), 60, "a connection")
        assert "reached the broker at" in daemon.log_text()
        wait_until(lambda: _status(cfg)["broker"]["state"] == "connected", 20, "connected")
        assert daemon.stop() == 0
        assert _status(cfg)["broker"]["state"] == "disconnected"
    finally:
        daemon.close()


@pytest.mark.integration
def test_daemon_warns_when_its_session_is_gone(tmp_path: Path,
                                               make_mosquitto: MakeMosquitto) -> None:
    """A broker without persistence forgets the daemon's session when it restarts:
    on the reconnect and on the daemon's next start, a WARNING says so."""
    broker = make_mosquitto(persistence=False)
    cfg = write_config(tmp_path, broker.port)
    daemon = DaemonProcess(cfg)
    try:
        daemon.start()
        assert "NO session" not in daemon.log_text()  # a first start has none to find
        broker.restart()
        wait_until(lambda: daemon.log_text().count("connected to") >= 2, 60, "a reconnect")
        wait_until(lambda: daemon.log_text().count("has NO session") == 1, 10, "the warning")
        assert "readings it queued" in daemon.log_text()
        assert daemon.stop() == 0
        broker.restart()
        daemon.start()
        wait_until(lambda: daemon.log_text().count("has NO session") == 2, 10, "the warning")
        assert daemon.stop() == 0
        # With the session kept, no warning.
        daemon.start()
        assert daemon.stop() == 0
        assert daemon.log_text().count("has NO session") == 2
    finally:
        daemon.close()


# ----------------------------------------------------------- the shipped broker configuration

SHIPPED = ROOT / "deploy" / "mosquitto" / "stormwatch.conf"


def _shipped() -> dict[str, str]:
    """The shipped configuration's options (the last of each name)."""
    options = {}
    for line in SHIPPED.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.strip().partition(" ")
            options[name] = value.strip()
    return options


def test_the_shipped_broker_saves_often_and_ties_client_ids_to_accounts() -> None:
    options = _shipped()
    assert options["persistence"] == "true"
    assert int(options["autosave_interval"]) <= 5
    assert options.get("autosave_on_changes", "false") == "false"
    assert options["use_username_as_clientid"] == "true"
    assert options["allow_anonymous"] == "false"


def _hijack(port: int, client_id: str, user: str, password: str) -> None:
    """Connect with another account, the daemon's client id and a clean start."""
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id,
                         protocol=mqtt.MQTTv5)
    client.username_pw_set(user, password)
    client.connect("127.0.0.1", port, keepalive=30, clean_start=True)
    client.loop_start()
    # The broker has dealt with the session it names by the time it answers (CONNACK).
    wait_until(client.is_connected, 10, "the broker to accept the connection")
    client.disconnect()
    client.loop_stop()


@pytest.mark.integration
@pytest.mark.parametrize("tied", [True, False], ids=["shipped", "without-tying"])
def test_a_sensor_account_cannot_take_the_daemons_session(
        tmp_path: Path, make_mosquitto: MakeMosquitto, tied: bool) -> None:
    """With the shipped ``use_username_as_clientid``, a node account connecting as
    the daemon's client id gets its own session, and the 50 readings queued for
    the daemon while it was down all arrive. Without it (the control), the
    daemon's session is gone and the daemon says so."""
    options = _shipped()
    password = uuid.uuid4().hex
    users = {"stormwatch": password, f"{SITE}.rg1": password}
    pw = make_password_file(tmp_path / "passwd", users)
    extra = [f"use_username_as_clientid {options['use_username_as_clientid']}"] if tied else []
    broker = make_mosquitto(allow_anonymous=False, password_file=pw, extra_config=extra,
                            autosave_interval_s=int(options["autosave_interval"]))
    cfg = write_config(tmp_path, broker.port, client_id="stormwatch")
    (tmp_path / "mqtt.pw").write_text(password)
    daemon = DaemonProcess(cfg, env={"STORMWATCH_BROKER__USERNAME": "stormwatch",
                                     "STORMWATCH_BROKER__PASSWORD_FILE":
                                         str(tmp_path / "mqtt.pw")})
    try:
        daemon.start()
        # Seen connected: the daemon noted its session, and expects it back.
        wait_until(lambda: _status(cfg)["broker"]["state"] == "connected", 20, "connected")
        assert daemon.stop() == 0
        now = int(time.time())
        node = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5,
                           client_id=f"{SITE}.rg1")
        node.username_pw_set(f"{SITE}.rg1", password)
        node.connect("127.0.0.1", broker.port)
        node.loop_start()
        infos = [node.publish(reading_topic("rg1"),
                              json.dumps({"ts": now - 3000 + i * 60, "tips_total": i}), qos=1)
                 for i in range(50)]
        for info in infos:
            info.wait_for_publish(10)
        node.disconnect()
        node.loop_stop()
        _hijack(broker.port, "stormwatch", f"{SITE}.rg1", password)
        daemon.start()
        if tied:
            wait_until(lambda: journal_count(cfg) == 50, 30, "the 50 queued readings")
            assert "NO session" not in daemon.log_text()
        else:
            wait_until(lambda: "has NO session" in daemon.log_text(), 10, "the warning")
            # A barrier: one more reading, published once the daemon's new subscription
            # takes it (PUBACK success, not "no matching subscribers"). The broker would
            # hand over anything it still held for the daemon first, so once the
            # barrier is journaled, none of the 50 is coming.
            barrier = json.dumps({"ts": now, "tips_total": 50}).encode()
            wait_until(lambda: publish_reason(
                "127.0.0.1", broker.port, reading_topic("rg1"), barrier,
                username=f"{SITE}.rg1", password=password) == 0, 10,
                "the daemon's subscription to take the barrier")
            wait_until(lambda: journal_count(cfg) >= 1, 10, "the barrier journaled")
            assert journal_count(cfg) == 1
        assert daemon.stop() == 0
    finally:
        daemon.close()

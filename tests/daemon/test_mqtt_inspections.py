"""Inspections over MQTT as the site's qualified-professional account sends them (items 1, 4 and 9):
the real daemon, a real Mosquitto with the ACL and the accounts that
``stormwatch acl`` generates, and the ``{site}.qp`` account publishing.

* A retained inspection is recorded once, however often the daemon restarts (the
  broker sends its retained copy to every new subscription); one without ``ts`` is
  refused (``missing_ts``), never stamped with its arrival.
* The first name certifies: someone off the roster who names a qualified
  professional as a companion closes no clock.
* A photo's time and position are the stored file's, never the payload's; a photo
  that is not stored is refused; the publisher cannot choose a corrective-action id
  (it could name another inspection's action).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from monitor.config.file import load_config
from monitor.contract.times import iso
from monitor.sources.acl import accounts
from monitor.store.photos import store_photo_bytes

from ..conftest import MakeMosquitto
from ..support.daemonkit import DaemonProcess, cli, events_of, store_of, wait_until
from ..support.photos import jpeg_with_gps
from ..support.services import MISSING_REASON, MOSQUITTO_PASSWD, make_password_file, publish
from ..support.webkit import SITE, write_web_config

pytestmark = pytest.mark.integration
PREFIX = "stormwatch/v1"
QP_ACCOUNT = f"{SITE}.qp"
NODE_ACCOUNT = f"{SITE}.rg1"


def password(username: str) -> str:
    return f"pw-{username}"


@dataclass
class Secured:
    cfg: Path
    host: str
    port: int
    daemon: DaemonProcess

    def send(self, username: str, topic: str, body: dict[str, Any] | bytes, *,
             retain: bool = False) -> None:
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        assert publish(self.host, self.port, topic, payload, qos=1, username=username,
                       password=password(username), retain=retain)

    def inspect(self, body: dict[str, Any], *, retain: bool = False) -> None:
        self.send(QP_ACCOUNT, f"{PREFIX}/{SITE}/inspection", body, retain=retain)

    def rejected(self, reason: str) -> int:
        with store_of(self.cfg) as store:
            return store.journal.reject_counts().get(reason, 0)

    def recorded(self) -> list[dict[str, Any]]:
        return events_of(self.cfg, "inspection_recorded")

    def status(self) -> dict[str, Any]:
        proc = cli("status", "--config", str(self.cfg), "--json")
        assert proc.returncode == 0, proc.stderr
        site: dict[str, Any] = json.loads(proc.stdout)["sites"][SITE]
        return site


@pytest.fixture
def secured(tmp_path: Path, make_mosquitto: MakeMosquitto) -> Iterator[Secured]:
    if shutil.which(MOSQUITTO_PASSWD) is None:
        pytest.skip(MISSING_REASON)
    cfg = write_web_config(tmp_path)
    pw_file = tmp_path / "daemon.pw"
    pw_file.write_text(password("stormwatch"))
    cfg.write_text(cfg.read_text().replace(
        "client_id: stormwatch-test}",
        f"client_id: stormwatch-test, username: stormwatch, password_file: '{pw_file}'}}"))
    acl = tmp_path / "stormwatch.acl"
    proc = cli("acl", "--config", str(cfg), "--out", str(acl))
    assert proc.returncode == 0, proc.stderr
    users = {a.username: password(a.username) for a in accounts(load_config(cfg, env={}))}
    assert QP_ACCOUNT in users and NODE_ACCOUNT in users
    broker = make_mosquitto(allow_anonymous=False, verbose=True, acl_file=acl,
                            password_file=make_password_file(tmp_path / "broker.pw", users))
    # The broker's port goes into the configuration the daemon reads.
    text = cfg.read_text()
    cfg.write_text(text.replace("port: 1,", f"port: {broker.port},", 1))
    daemon = DaemonProcess(cfg).start()
    try:
        yield Secured(cfg, broker.host, broker.port, daemon)
    finally:
        daemon.close()
    assert "Traceback" not in daemon.log_text(), daemon.log_text()


def now_iso(minutes_ago: float = 0) -> str:
    return iso(round((time.time() - minutes_ago * 60) * 1000))


def test_a_retained_inspection_is_recorded_once_however_often_the_daemon_restarts(
        secured: Secured) -> None:
    # Without ts it is no inspection of any time: refused, not stamped on arrival.
    secured.inspect({"inspector": "J. Rivera", "kind": "routine"}, retain=True)
    wait_until(lambda: secured.rejected("missing_ts") == 1, 20, "missing_ts")
    # With ts: recorded once (the live copy), then the broker's retained copy comes
    # again at each restart and is never recorded.
    secured.inspect({"inspector": "J. Rivera", "kind": "routine", "ts": now_iso(10)},
                    retain=True)
    wait_until(lambda: len(secured.recorded()) == 1, 20, "the inspection")

    def restart(n: int) -> None:
        assert secured.daemon.stop() == 0
        secured.daemon.start()
        wait_until(lambda: secured.rejected("retained") >= n, 20,
                   f"the retained copy at restart {n}")

    restart(1)
    restart(2)
    assert len(secured.recorded()) == 1
    assert secured.rejected("missing_ts") == 1


def test_a_companion_on_the_roster_does_not_make_an_inspection_count(secured: Secured) -> None:
    """The first name certifies; the roster is checked for that person."""
    # Two readings: a site without active_since starts at a reading another one follows
    # within a routine period (a lone one may be a stray row), so its clock is then open.
    for minutes_ago in (31, 30):
        secured.send(NODE_ACCOUNT, f"{PREFIX}/{SITE}/rg1/reading",
                     {"ts": now_iso(minutes_ago), "tips_total": 0})
    wait_until(lambda: any(c["clock"] == "routine" for c in secured.status()["open_clocks"]),
               30, "the routine clock")
    secured.inspect({"inspector": ["Site Foreman", "J. Rivera"], "ts": now_iso(5)})
    (rec,) = wait_until(secured.recorded, 20, "the inspection")
    assert rec["kind"] == "other" and rec["closes"] == []
    assert rec["credentials"] == ["", ""]  # the companion signed nothing
    assert any(c["clock"] == "routine" for c in secured.status()["open_clocks"])
    # The qualified professional certifying, with the foreman along, does close it.
    secured.inspect({"inspector": ["J. Rivera", "Site Foreman"], "ts": now_iso(4)})
    wait_until(lambda: len(secured.recorded()) == 2, 20, "the second inspection")
    mine = [r for r in secured.recorded() if r["inspector"] == "J. Rivera & Site Foreman"]
    assert mine and mine[0]["kind"] == "routine" and mine[0]["closes"]
    assert mine[0]["credentials"] == ["CPESC 12345", ""]


def test_photo_evidence_and_action_ids_are_stormwatchs(secured: Secured) -> None:
    config = load_config(secured.cfg, env={})
    photos_dir = Path(config.state_dir) / "photos"
    stored = store_photo_bytes(photos_dir, jpeg_with_gps(lat=41.0, lon=-73.5,
                                                         taken="2026:11:30 09:15:00"), 10**7,
                               now_ms=round(time.time() * 1000))
    # Recorded from the command line: an action another inspection must not take over.
    proc = cli("inspect", "--config", str(secured.cfg), "--site", SITE, "--inspector",
               "J. Rivera", "--at", now_iso(20), "--corrective-action", "re-trench the fence")
    assert proc.returncode == 0, proc.stderr
    (real_id,) = [a["id"] for a in secured.status()["corrective_actions"]]

    forged = {"inspector": "J. Rivera", "ts": now_iso(30), "kind": "routine",
              "photos": [{"sha256": stored.sha256, "taken_at": "2001-01-01T00:00:00Z",
                          "lat": 0.0, "lon": 0.0, "caption": "north fence"}],
              "corrective_actions": [{"id": real_id, "text": "nothing to do here"}]}
    secured.inspect(forged)
    wait_until(lambda: len(secured.recorded()) == 2, 20, "the MQTT inspection")
    (rec,) = [r for r in secured.recorded() if r.get("via") == "mqtt"]
    (photo,) = rec["photos"]
    assert (photo["taken_at"], photo["lat"], photo["lon"], photo["caption"]) == (
        stored.taken_at, stored.lat, stored.lon, "north fence")
    assert photo["taken_at"] == "2026-11-30T14:15:00Z"
    (action,) = rec["corrective_actions"]
    assert action["id"] != real_id and action["id"].startswith("ca-")
    texts = {a["id"]: a["text"] for a in secured.status()["corrective_actions"]}
    assert texts[real_id] == "re-trench the fence"
    assert texts[action["id"]] == "nothing to do here"

    # A photo nobody stored cannot be evidence: refused, nothing recorded.
    secured.inspect({**forged, "ts": now_iso(40), "photos": [{"sha256": "ab" * 32}]})
    wait_until(lambda: secured.rejected("bad_value") == 1, 20, "the refusal")
    assert len(secured.recorded()) == 2
    with store_of(secured.cfg) as store:
        (letter,) = [d for d in store.journal.dead_letters() if d.reason == "bad_value"]
    assert "photos.0.sha256: no such photo" in letter.detail

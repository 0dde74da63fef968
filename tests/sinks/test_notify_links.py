"""Alerts routed to the qualified professional carry the signed link to the form.

Real receivers (an aiosmtpd mail server, an HTTP hook for Apprise's
``json://``) take what the worker sends, as in ``test_notify.py``; the link
is cut out of what arrived and verified with the key the configuration
names: the site, the clock, and an expiry ``web.link_hours`` after sending.
Alerts not routed to ``qp``, and every alert without ``web:``, carry none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from monitor.config import Config
from monitor.config.file import parse_config
from monitor.errors import UserError
from monitor.host.links import LinkClaim, sign_link, verify_link
from monitor.sinks.notify.build import build_router, build_worker, form_links
from monitor.sinks.notify.messages import render
from monitor.sinks.notify.worker import NotifyWorker
from monitor.store import Store

from ..support.notifykit import (
    MIN,
    SITE,
    SITE_DOC,
    T0,
    FakeClock,
    alert,
    ev,
    json_url,
    notice,
    storm,
)
from ..support.receivers import HttpReceiver, SmtpReceiver

H = 3_600_000
KEY = b"0123456789abcdef0123456789abcdef"
PUBLIC = "https://sw.example.org"
LINK = re.compile(re.escape(PUBLIC) + r"/a/([A-Za-z0-9_.-]+)")


def config_with(tmp_path: Path, targets: list[dict[str, Any]], *, web: bool = True,
                link_hours: float = 72) -> Config:
    key = tmp_path / "web.key"
    key.write_bytes(KEY)
    doc: dict[str, Any] = {"state_dir": str(tmp_path / "state"),
                           "notify": {"targets": targets, "grafana_url": "https://g.example.org/d"},
                           "sites": [SITE_DOC]}
    if web:
        doc["web"] = {"public_url": PUBLIC + "/", "secret_file": str(key),
                      "link_hours": link_hours}
    return parse_config(doc, env={})


class Daemonless:
    """The store, the router and the worker as ``build_*`` make them, on a fake clock."""

    def __init__(self, config: Config, now: int) -> None:
        self.clock = FakeClock(now)
        self.store = Store.in_dir(config.state_dir)
        router = build_router(config)
        worker = build_worker(config, self.clock)
        assert router is not None and isinstance(worker, NotifyWorker)
        self.router, self.worker = router, worker

    def send(self, *events: Any) -> None:
        self.store.events.record(list(events), 1, recorded_ms=self.clock.ms, routes=self.router)
        while self.worker.drain(self.store):
            pass


@pytest.fixture
def made() -> Iterator[list[Daemonless]]:
    out: list[Daemonless] = []
    yield out
    for d in out:
        d.store.close()


def claims_in(text: str) -> list[LinkClaim | object]:
    return [verify_link(KEY, token, T0 + H) for token in LINK.findall(text)]


# --------------------------------------------------------------------------- the text


def test_the_link_is_a_line_of_its_own_before_the_dashboard() -> None:
    link = f"{PUBLIC}/a/{sign_link(KEY, SITE, 'storm-e1', T0 + 72 * H)}"
    m = render(alert(storm(), grafana_url="https://g.example.org/d", form_link=link))
    tail = m.text.rsplit("\n\n", 1)[1]
    assert tail.splitlines()[0] == f"Inspection form: {link}"
    assert tail.splitlines()[1].startswith("Dashboard: https://g.example.org/d?var-site=")
    assert f"**Inspection form:** <{link}>" in m.markdown
    assert "Inspection form" not in render(alert(storm())).text


# --------------------------------------------------------------------------- delivered


def test_a_storm_mailed_to_the_qp_carries_a_link_that_verifies(
        tmp_path: Path, made: list[Daemonless]) -> None:
    with SmtpReceiver() as smtp:
        config = config_with(tmp_path, [{"url": f"mailto://127.0.0.1:{smtp.port}?mode=insecure"
                                         "&from=stormwatch@example.org&to=qp@example.org",
                                         "tags": ["qp"]}], link_hours=2)
        d = Daemonless(config, T0 + 10 * MIN)
        made.append(d)
        d.send(storm())
        assert smtp.wait_for(lambda ms: len(ms) == 1, 30)
        (mail,) = smtp.mails
    text, html = mail.text(), mail.html() or ""
    tokens = LINK.findall(text)
    assert len(tokens) == 1, text
    assert verify_link(KEY, tokens[0], T0 + 10 * MIN) == LinkClaim(
        SITE, "storm-e1", T0 + 10 * MIN + 2 * H)  # expiry counted from the send
    assert f'href="{PUBLIC}/a/{tokens[0]}"' in html
    expired = verify_link(KEY, tokens[0], T0 + 10 * MIN + 2 * H)
    assert getattr(expired, "reason", None) == "expired"


def test_every_alert_routed_to_qp_has_its_clock_and_others_none(
        tmp_path: Path, http: HttpReceiver, made: list[Daemonless]) -> None:
    config = config_with(tmp_path, [{"url": json_url(http, "qp"), "tags": ["qp"]},
                                    {"url": json_url(http, "officer"), "tags": ["officer"]},
                                    {"url": json_url(http, "ops"), "tags": ["ops"]}])
    d = Daemonless(config, T0 + H)
    made.append(d)
    d.send(storm(),
           notice("inspection_overdue", "overdue-1", T0 + 25 * H, clock_id="storm-e1"),
           ev("trap_fill", "fill-1", T0, trap="trap-1", sensor="trap1-depth",
              fill_fraction=0.42, depth_in=14.0, threshold=0.4),
           ev("sensor_stale", "stale-1", T0, sensor="rg1", last_seen=None,
              stale_after_minutes=15.0))
    # Each post by its target and its alert id (the body's last line).
    posts: dict[tuple[str, str], str] = {}
    for post in http.posts:
        alert_id = post.body["message"].rsplit("Alert id: ", 1)[1].strip()
        posts[post.path.strip("/"), alert_id] = post.body["message"]
    expires = T0 + H + 72 * H
    assert {key: claims_in(text) for key, text in posts.items()} == {
        ("qp", "storm-1:0"): [LinkClaim(SITE, "storm-e1", expires)],
        ("qp", "overdue-1:0"): [LinkClaim(SITE, "storm-e1", expires)],
        ("qp", "fill-1:0"): [LinkClaim(SITE, None, expires)],  # no clock: the site's form
        # The officer's copies of alerts also routed to qp have it too (it grants nothing).
        ("officer", "storm-1:0"): [LinkClaim(SITE, "storm-e1", expires)],
        ("officer", "overdue-1:0"): [LinkClaim(SITE, "storm-e1", expires)],
        ("ops", "stale-1:0"): [],  # routed to ops only
    }
    # Every post still has its dashboard link.
    assert all("Dashboard: https://g.example.org/d?" in text for text in posts.values())


def test_an_alert_for_the_officer_only_has_no_link(
        tmp_path: Path, http: HttpReceiver, made: list[Daemonless]) -> None:
    config = config_with(tmp_path, [{"url": json_url(http), "tags": ["qp", "officer"]}])
    d = Daemonless(config, T0)
    made.append(d)
    d.send(ev("inspection_backdated", "late-1", T0, inspector="J. Rivera",
              inspected_at="2026-11-28T14:00:00Z", entered_at="2026-11-30T14:00:00Z",
              closes=("storm-e1",), hours_late=48.0))
    (post,) = http.posts
    assert "backdated" in post.body["title"].lower() or "entered" in post.body["message"]
    assert LINK.search(post.body["message"]) is None


def test_without_web_no_alert_has_a_link(tmp_path: Path, http: HttpReceiver,
                                         made: list[Daemonless]) -> None:
    config = config_with(tmp_path, [{"url": json_url(http), "tags": ["qp"]}], web=False)
    d = Daemonless(config, T0)
    made.append(d)
    d.send(storm())
    (post,) = http.posts
    assert "/a/" not in post.body["message"] and "Inspection form" not in post.body["message"]


def test_a_missing_key_stops_the_worker_from_being_built(tmp_path: Path) -> None:
    config = config_with(tmp_path, [{"url": "json://127.0.0.1:9/x", "tags": ["qp"]}])
    assert config.web is not None
    Path(config.web.secret_file).unlink()
    with pytest.raises(UserError) as info:
        form_links(config)
    assert info.value.lines == [
        f"web.secret_file: there is no file {config.web.secret_file}; make one with: "
        "head -c 32 /dev/urandom > FILE; chmod 600 FILE"]

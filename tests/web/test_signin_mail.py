"""Asking for a sign-in link by mail from the phone, through the real app (FastAPI's
TestClient over ``create_app``) and a real SMTP server (aiosmtpd) as the
configuration's mail target.

What a person meets: every page that finds them not signed in offers the
e-mail form; a known address gets one mail with a link that signs in once and
lands where they were going. What a stranger learns: nothing (the same page and
status for a known and an unknown address, limited or not), and no mail goes
without the app's own form (the pre-sign-in check) or past the limits. The link
is never in a log line.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from monitor.config.file import load_config
from monitor.config.plausible import warnings
from monitor.host.links import sign_link
from monitor.sinks.notify.messages import local_time
from monitor.web.signin_mail import desk_of

from ..support.receivers import Mail, SmtpReceiver
from ..support.webkit import PUBLIC, QP, SITE, client_of, press_sign_in, web_app, write_web_config

NOW_MS = round(time.time() * 1000)
FORM_WORDS = ("E-mail address", "Email me a sign-in link",
              "Your sign-in has ended on this phone. Enter your e-mail address and we will"
              " send you a link.")
SENT = "If this address belongs to a person of this app, a sign-in link is on its way."
LINK = re.compile(re.escape(PUBLIC) + r"(/signin/[A-Za-z0-9_-]+)")
CHECK = re.compile(r'name="signin_check" value="([^"]+)"')
KNOWN, UNKNOWN = "jr@example.org", "nobody@example.org"
#: The limits deploy/README.md promises: asks per e-mail address in 15 minutes, and per
#: client address in a minute.
PER_ADDRESS, PER_CLIENT = 3, 10


def mail_notify(port: int) -> str:
    """A mail target and a shared channel: the link must go through the first only, to
    the person alone (the URL's own recipient is not theirs)."""
    return ("notify:\n  targets:\n"
            f"    - url: 'mailto://127.0.0.1:{port}?mode=insecure&from=sw@example.org"
            "&to=team@example.org'\n      tags: [signin]\n")


@pytest.fixture
def smtp() -> Iterator[SmtpReceiver]:
    with SmtpReceiver() as receiver:
        yield receiver


@pytest.fixture
def client(tmp_path: Path, smtp: SmtpReceiver) -> Iterator[TestClient]:
    path = write_web_config(tmp_path, more=mail_notify(smtp.port))
    _, app = web_app(tmp_path, path, clock=lambda: NOW_MS)
    with client_of(app) as c:
        yield c


def ask(client: TestClient, address: str, **headers: str) -> Any:
    """What the phone does: open the e-mail form, type the address, press the button."""
    shown = client.get("/signin")
    assert shown.status_code == 200 and all(w in shown.text for w in FORM_WORDS[:2])
    check = CHECK.search(shown.text)
    assert check, shown.text[:500]
    return client.post("/signin", data={"signin_check": check[1], "email": address},
                       headers=headers, follow_redirects=False)


def logged(caplog: pytest.LogCaptureFixture, words: str, timeout_s: float = 20) -> None:
    """Wait for the line the mail's thread logs when it is done with an ask."""
    deadline = time.monotonic() + timeout_s
    while words not in caplog.text:
        assert time.monotonic() < deadline, f"no log line {words!r}: {caplog.text}"
        time.sleep(0.05)


def mailed_link(mail: Mail) -> str:
    found = LINK.search(mail.text())
    assert found, mail.text()
    return found.group(1)


def test_a_known_address_gets_one_mail_whose_link_signs_in_once(
        client: TestClient, smtp: SmtpReceiver, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    got = ask(client, "  JR@Example.ORG ")  # as a phone's keyboard may type it
    assert got.status_code == 200 and SENT in got.text
    assert smtp.wait_for(lambda ms: len(ms) >= 1, 30)
    logged(caplog, f"sign-in by mail: sent a link to {QP}")
    time.sleep(0.5)
    (mail,) = smtp.mails
    assert mail.rcpt_tos == [KNOWN]  # the person alone, not the target's own recipient
    from zoneinfo import ZoneInfo
    until = local_time(NOW_MS + 15 * 60_000, ZoneInfo("America/New_York"))
    assert f"until {until}" in mail.text(), mail.text()
    link = mailed_link(mail)
    # Neither the link nor its token is in any line the app (or Apprise, at DEBUG) logs;
    # aiosmtpd's own lines (``mail.log``) are the test's mail server's.
    lines = [f"{r.name} {r.getMessage()} {r.exc_text or ''}" for r in caplog.records
             if not r.name.startswith("mail.")]
    assert any(line.startswith("apprise") for line in lines)
    assert [line for line in lines if link.split("/")[-1] in line] == []
    signed = press_sign_in(client, link)
    assert signed.status_code == 303 and signed.headers["location"] == "/"
    assert client.get("/").status_code == 200
    again = press_sign_in(TestClient(client.app, base_url="https://testserver"), link)
    assert again.status_code == 400 and all(w in again.text for w in FORM_WORDS[:2])


def test_an_unknown_address_gets_no_mail_and_the_same_answer(
        client: TestClient, smtp: SmtpReceiver, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    unknown = ask(client, UNKNOWN)
    logged(caplog, "no person of the app has the address asked for")
    known = ask(client, KNOWN)
    assert smtp.wait_for(lambda ms: len(ms) == 1, 30)
    assert (unknown.status_code, unknown.text) == (known.status_code, known.text)
    assert unknown.headers.get("set-cookie") == known.headers.get("set-cookie")
    assert [m.rcpt_tos for m in smtp.mails] == [[KNOWN]]


def test_past_the_limit_of_an_address_nothing_goes_and_the_answer_is_the_same(
        client: TestClient, smtp: SmtpReceiver, caplog: pytest.LogCaptureFixture) -> None:
    answers = [ask(client, KNOWN) for _ in range(PER_ADDRESS + 1)]
    assert len({(a.status_code, a.text) for a in answers}) == 1
    assert smtp.wait_for(lambda ms: len(ms) >= PER_ADDRESS, 30)
    time.sleep(1.0)
    assert len(smtp.mails) == PER_ADDRESS
    assert "an e-mail address's limit" in caplog.text  # counted in the sending thread


def test_asks_for_addresses_nobody_has_do_not_use_up_the_apps_limit(
        client: TestClient, smtp: SmtpReceiver) -> None:
    """Forty asks for strangers' addresses from forty clients (more than the app's 30
    mails in 15 minutes): the person asking next still gets their link."""
    web = client.app.state.web  # type: ignore[attr-defined]
    desk = desk_of(web)
    threads = [desk.ask(web, f"n{i}@example.org", f"10.0.0.{i}") for i in range(40)]
    for thread in threads:
        assert thread is not None
        thread.join(10)
    ask(client, KNOWN)
    assert smtp.wait_for(lambda ms: len(ms) == 1, 30)
    assert [m.rcpt_tos for m in smtp.mails] == [[KNOWN]]


def test_past_the_limit_of_a_client_nothing_goes_and_the_answer_is_the_same(
        client: TestClient, smtp: SmtpReceiver, caplog: pytest.LogCaptureFixture) -> None:
    strangers = [ask(client, f"n{i}@example.org") for i in range(PER_CLIENT)]
    limited = ask(client, KNOWN)
    assert {(a.status_code, a.text) for a in strangers} == {(limited.status_code,
                                                             limited.text)}
    assert "a client address's limit" in caplog.text
    time.sleep(1.0)
    assert smtp.mails == []


@pytest.mark.parametrize("how", ["no check", "other cookie", "cross-site"])
def test_a_post_not_from_the_apps_own_form_sends_nothing(
        client: TestClient, smtp: SmtpReceiver, how: str) -> None:
    shown = client.get("/signin")
    check = CHECK.search(shown.text)
    assert check
    data = {"email": KNOWN, "signin_check": check[1]}
    headers = {}
    if how == "no check":
        del data["signin_check"]
    elif how == "other cookie":
        client.cookies.clear()  # the post of another site's page carries no such cookie
    else:
        headers["Sec-Fetch-Site"] = "cross-site"
    got = client.post("/signin", data=data, headers=headers)
    assert got.status_code == 403 and "nothing was sent" in got.text and SENT not in got.text
    time.sleep(1.0)
    assert smtp.mails == []


def test_every_page_that_finds_no_session_offers_the_form(client: TestClient) -> None:
    alert = sign_link(b"k" * 32, SITE, "storm-e1", NOW_MS + 3_600_000)
    expired = sign_link(b"k" * 32, SITE, None, NOW_MS - 1)
    for path, status in (("/", 401), (f"/sites/{SITE}", 401), (f"/sites/{SITE}/inspect", 401),
                         (f"/a/{alert}", 401), (f"/a/{expired}", 410),
                         (f"/a/{alert[:-3]}AAA", 400)):
        got = client.get(path, follow_redirects=False)
        assert got.status_code == status, path
        assert all(w in got.text for w in FORM_WORDS), (path, got.text)
        assert 'type="email"' in got.text and 'autocomplete="email"' in got.text
    used = client.post("/signin/not-a-token", data={"signin_check": client.cookies[
        "sw_signin"]}, follow_redirects=False)
    assert used.status_code == 400 and "Email me a sign-in link" in used.text
    # The API still answers JSON, with no form.
    api = client.post(f"/api/v1/sites/{SITE}/inspections", json={})
    assert api.status_code == 401 and "error" in api.json()


def test_the_mailed_link_lands_on_the_alerts_form(client: TestClient,
                                                  smtp: SmtpReceiver) -> None:
    alert = sign_link(b"k" * 32, SITE, "storm-e1", NOW_MS + 3_600_000)
    assert client.get(f"/a/{alert}").status_code == 401
    assert ask(client, KNOWN).status_code == 200
    assert smtp.wait_for(lambda ms: len(ms) == 1, 30)
    signed = press_sign_in(client, mailed_link(smtp.mails[0]))
    assert signed.headers["location"] == f"/sites/{SITE}/inspect?clock=storm-e1"


def test_without_a_mail_target_the_answer_is_the_same_and_the_operator_is_told(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = write_web_config(tmp_path)
    _, app = web_app(tmp_path, path, clock=lambda: NOW_MS)
    with client_of(app) as client:
        got = ask(client, KNOWN)
        assert got.status_code == 200 and SENT in got.text
        logged(caplog, "notify.targets has no mail target")
    assert any(w.startswith("web: ") and "mail" in w
               for w in warnings(load_config(path, env={})))

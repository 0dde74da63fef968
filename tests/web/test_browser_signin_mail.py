"""A lapsed session gets back in by mail, from the phone: Debian's Chromium at 390×844
(Playwright) against the real ``stormwatch web``, with a real SMTP server
(aiosmtpd) as the configuration's mail target and a storm recorded through the
daemon's engine host (no daemon needs to run: the pages read the state).

The phone signed in once; its cookie is gone (a day without "remember"). A
storm alert's link opens the e-mail form, not a dead end; the mail arrives with
a link; the phone opens it, presses Sign in, and lands on the inspection form of
that site and that storm's clock. Each page: no sideways scroll, no CSP error.
Screenshots go to the test's tmp directory.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from monitor.contract.inputs import Reading
from monitor.host.links import sign_link

from ..support.browser import PHONE, browser, fits_phone, need_chromium, signed_in_page
from ..support.childproc import free_port
from ..support.daemonkit import events_of
from ..support.receivers import SmtpReceiver
from ..support.webkit import PUBLIC, QP, SITE, WebProcess, recorded_web_site

pytestmark = pytest.mark.integration
H_MS = 3_600_000
SIGNIN = re.compile(r"(https?://[^\s<>\"]+/signin/[A-Za-z0-9_-]+)")


def storm_readings(now_ms: int) -> list[Reading]:
    """rg1 every 5 minutes for the last 20 hours; 0.60 in between 18 and 17 hours ago."""
    out, t, seq = [], now_ms - 20 * H_MS, 0
    while t < now_ms - 60_000:
        tips = min(60, max(0, (t - (now_ms - 18 * H_MS)) // 60_000))
        out.append(Reading(SITE, "rg1", "rain", t, tips_total=1000 + tips, seq=seq))
        t, seq = t + 5 * 60_000, seq + 1
    return out


@pytest.fixture
def phone_stack(tmp_path: Path) -> Iterator[dict[str, Any]]:
    need_chromium()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    now_ms = round(time.time() * 1000)
    with SmtpReceiver() as smtp:
        notify = ("notify:\n  targets:\n"
                  f"    - url: 'mailto://127.0.0.1:{smtp.port}?mode=insecure"
                  "&from=sw@example.org'\n")
        path, _ = recorded_web_site(tmp_path, lambda text: text.replace(PUBLIC, url).replace(
            "127.0.0.1:8080", f"127.0.0.1:{port}") + notify, storm_readings(now_ms), now_ms)
        web = WebProcess(path, port)
        try:
            yield {"path": path, "state": tmp_path / "state", "web": web, "smtp": smtp,
                   "shots": tmp_path}
        finally:
            web.stop()
        assert "Traceback" not in web.log(), web.log()


def looked_at(page: Any, shots: Path, name: str, errors: list[str]) -> None:
    """A screenshot, and what a phone must not do: scroll sideways, refuse under CSP."""
    page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
    fits_phone(page, name, errors)


def test_a_lapsed_session_gets_back_in_by_mail_and_lands_on_the_alerts_form(
        phone_stack: dict[str, Any]) -> None:
    (qualified,) = events_of(phone_stack["path"], "storm_qualified")
    clock_id = qualified["clock_id"]
    secret = (phone_stack["path"].parent / "web.key").read_bytes()
    alert = sign_link(secret, SITE, clock_id, round(time.time() * 1000) + 3 * H_MS)
    web, smtp, shots = phone_stack["web"], phone_stack["smtp"], phone_stack["shots"]
    pw, chromium = browser()
    try:
        ctx = chromium.new_context(**PHONE)
        page = signed_in_page(ctx, web.url, phone_stack["state"], QP)
        errors: list[str] = []
        page.on("console", lambda msg: errors.append(msg.text))
        ctx.clear_cookies()  # the session has lapsed

        page.goto(f"{web.url}/a/{alert}")
        assert "Your sign-in has ended on this phone" in page.content()
        looked_at(page, shots, "signin-mail-form", errors)
        page.get_by_label("E-mail address").fill("JR@example.org")
        page.get_by_role("button", name="Email me a sign-in link").click()
        page.wait_for_selector("text=a sign-in link is on its way")
        looked_at(page, shots, "signin-mail-sent", errors)

        assert smtp.wait_for(lambda ms: len(ms) == 1, 30)
        (mail,) = smtp.mails
        assert mail.rcpt_tos == ["jr@example.org"]
        link = SIGNIN.search(mail.text())
        assert link, mail.text()
        page.goto(link.group(1))
        looked_at(page, shots, "signin-button", errors)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(re.compile(rf"/sites/{SITE}/inspect\?clock={re.escape(clock_id)}$"))
        assert page.get_by_role("button", name="Record inspection").is_visible()
        assert clock_id in page.content()
        looked_at(page, shots, "signin-landed-form", errors)

        expired = sign_link(secret, SITE, clock_id, round(time.time() * 1000) - 1)
        ctx.clear_cookies()
        page.goto(f"{web.url}/a/{expired}")
        assert "Email me a sign-in link" in page.content()
        looked_at(page, shots, "signin-expired-alert", errors)
    finally:
        chromium.close()
        pw.stop()

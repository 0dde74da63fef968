"""Every page of the field app on a phone: Debian's Chromium at 390×844 (Playwright)
against the real ``stormwatch web``, the real daemon, a real Mosquitto and a real
SMTP server (aiosmtpd).

A storm reaches the daemon through the broker; the qualified professional signs in
by mail from the sign-in page, records the storm inspection with a corrective
action, sends the action to the contractor, who marks it done from the link; the
officer signs in and lands on the overview. On each page a person meets: no
sideways scroll at the phone's own width (a page wider than the phone makes a
mobile browser zoom out, which widens ``innerWidth`` too, so its 390 px are
checked as well), no error of the app's Content Security Policy in the console,
and the page's words in plain language (sentences, local times, clocks named by
their storm), never the engine's raw names.

Screenshots go to the test's tmp directory; with ``STORMWATCH_DOCS_SHOTS=DIR`` they
are also copied there (how ``docs/`` gets the README's pictures).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from ..support.browser import PHONE, SIGNIN, Stack, browser, fits_phone, storm
from ..support.daemonkit import events_of, wait_until
from ..support.webkit import SITE

pytestmark = pytest.mark.integration

#: What the engine's own vocabulary looks like; none of it belongs on a page.
RAW = re.compile(r"\b(storm_qualified|trap_cleanout_required|clock_id=|fill_fraction="
                 r"|inspection_recorded|\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?Z)\b")


class Looker:
    """Takes each page's screenshot and checks what a phone must not do."""

    def __init__(self, stack: Stack) -> None:
        self.shots = stack.shots
        self.errors: list[str] = []
        self.seen: list[str] = []

    def watch(self, page: Any) -> Any:
        page.on("console", lambda msg: self.errors.append(msg.text))
        return page

    def look(self, page: Any, name: str, *words: str) -> str:
        page.wait_for_load_state("load")
        page.screenshot(path=str(self.shots / f"{name}.png"), full_page=True)
        fits_phone(page, name, self.errors)
        text = page.locator("body").inner_text()
        raw = RAW.search(text)
        assert raw is None, (name, raw.group(0) if raw else "")
        for word in words:
            assert word.lower() in text.lower(), (name, word, text[:2000])
        self.seen.append(name)
        return str(text)


def mailed_to(stack: Stack, page: Any, address: str) -> str:
    """Ask the sign-in page for a link, as a person without a session does; the link."""
    before = len(stack.smtp.mails)
    page.goto(stack.web.url + "/signin")
    page.get_by_label("E-mail address").fill(address)
    page.get_by_role("button", name="Email me a sign-in link").click()
    page.wait_for_selector("text=a sign-in link is on its way")
    assert stack.smtp.wait_for(lambda ms: len(ms) > before, 30)
    found = SIGNIN.search(stack.smtp.mails[-1].text())
    assert found, stack.smtp.mails[-1].text()
    return found.group(1)


def kept_by_worker(page: Any) -> list[str]:
    """The addresses the page's service worker keeps in its caches."""
    urls: list[str] = page.evaluate("""async () => {
        const out = [];
        for (const name of await caches.keys()) {
            for (const req of await (await caches.open(name)).keys()) out.push(req.url);
        }
        return out;
    }""")
    return urls


def test_every_page_fits_a_phone_in_plain_words(stack: Stack) -> None:
    link = storm(stack)
    looker = Looker(stack)
    pw, chromium = browser()
    try:
        phone = chromium.new_context(**PHONE)
        page = looker.watch(phone.new_page())
        page.goto(link)
        looker.look(page, "alert-link-signed-out", "E-mail address")
        page.goto(stack.web.url + "/signin")
        looker.look(page, "signin-by-mail", "Email me a sign-in link")
        signin = mailed_to(stack, page, "jr@example.org")
        page.goto(signin)
        looker.look(page, "signin-button", "Remember this phone")
        page.get_by_role("button", name="Sign in").click()
        # Signed in where the alert's link was going: its storm's form.
        page.wait_for_url(re.compile(r"/inspect\?clock=storm-"))
        looker.look(page, "form", "storm of", "Record inspection")
        page.get_by_label("Silt fence: condition").select_option("needs_repair")
        page.locator("#ca_text_1").fill("restake the silt fence at station 2+40")
        page.locator("#certified").check()
        page.get_by_role("button", name="Record inspection").click()
        page.wait_for_selector("#closed li")
        looker.look(page, "answer", "storm of", "on time",
                    "restake the silt fence at station 2+40")
        wait_until(lambda: events_of(stack.cfg, "inspection_recorded"), 30, "the inspection")

        page.goto(f"{stack.web.url}/sites/{SITE}")
        looker.look(page, "site", "Storm of", "§ 134-9A(2)",
                    "restake the silt fence at station 2+40")
        item = page.locator("ul.actions li.action")
        item.locator("summary", has_text="Send to contractor").click()
        item.get_by_role("button", name="Send to contractor").click()
        page.wait_for_selector("#contractor-link")
        looker.look(page, "contractor-link-made")
        crew = looker.watch(chromium.new_context(**PHONE).new_page())
        contractor_link = page.locator("#contractor-link").input_value()
        crew.goto(contractor_link)
        looker.look(crew, "contractor", "restake the silt fence at station 2+40", "Mark done")
        # The phone's service worker keeps pages for offline use, but never a page whose
        # address is a token: the link must not outlive its expiry in the phone's cache.
        crew.evaluate("navigator.serviceWorker.ready.then(() => true)")
        crew.reload()
        assert kept_by_worker(crew) and not [
            u for u in kept_by_worker(crew) if "/c/" in u or "/signin" in u]
        crew.get_by_label("Note").fill("new stakes, fence re-trenched")
        crew.get_by_role("button", name="Mark done").click()
        crew.wait_for_selector("h1:has-text('Thank you')")
        looker.look(crew, "contractor-done")
        page.goto(f"{stack.web.url}/sites/{SITE}")
        looker.look(page, "site-action-done", "done by the contractor")
        page.goto(f"{stack.web.url}/sites/{SITE}/report")
        looker.look(page, "report", "storm of", "found", "sent", "done")
        page.goto(stack.web.url + "/")
        looker.look(page, "home", "Record an inspection")

        office = chromium.new_context(**PHONE)
        desk = looker.watch(office.new_page())
        desk.goto(mailed_to(stack, desk, "officer@example.org"))
        desk.get_by_role("button", name="Sign in").click()
        desk.wait_for_url(re.compile(r"/officer$"))
        looker.look(desk, "officer", "Branch Meadows Subdivision")
    finally:
        chromium.close()
        pw.stop()
    keep = os.environ.get("STORMWATCH_DOCS_SHOTS")
    if keep:
        for name in looker.seen:
            shutil.copy(stack.shots / f"{name}.png", Path(keep) / f"field-app-{name}.png")

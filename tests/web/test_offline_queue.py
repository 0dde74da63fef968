"""The offline queue as a person on a phone meets it: Chromium at 390 × 844 against the
real ``stormwatch web``, the real daemon and Mosquitto (the fixtures of
``test_browser``), the network cut with ``context.set_offline``.

A submission made without a network is answered at the button, in view; the form
is locked; a second tap, and the same form opened again, leave one entry under
the form's one idempotency key; the home, site and form pages list it; back
online it is recorded once and listed as sent. A submission the server refuses
(4xx) is not retried: its words are shown, its data kept, and "Fix and resend"
opens the form filled with it.
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from ..support.browser import PHONE, Stack, browser, mailed_signin, read_queue, recorded
from ..support.daemonkit import wait_until
from ..support.photos import jpeg_with_gps
from ..support.webkit import QP, SITE

WAITING_NOTE = ("No network: this inspection is saved on this phone and will be sent when"
                " the network is back. Do not record it again.")
ENTRIES = read_queue("getAll()", """found.map((i) => ({
  key: i.key, state: i.state || "waiting", error: i.error || null, data: i.data,
  files: (i.files || []).length }))""")
# A mobile Chromium widens innerWidth to the content: the phone's 390 px is the measure.
NO_SIDEWAYS = "document.documentElement.scrollWidth <= Math.min(window.innerWidth, 390)"
WITHIN = "document.getElementById('queue').getBoundingClientRect().right <= 390"


def signed_in_phone(chromium: Any, stack: Stack) -> tuple[Any, Any, list[str]]:
    """(context, page, console messages): the qp signed in on a phone."""
    ctx = chromium.new_context(**PHONE)
    page = ctx.new_page()
    said: list[str] = []
    page.on("console", lambda m: said.append(m.text))
    page.goto(mailed_signin(stack, QP))
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/$|/sites/"))
    return ctx, page, said


def in_view(page: Any, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 844


def tap_again(page: Any) -> None:
    """Both ways a second submission can be forced past the locked button."""
    page.evaluate("document.getElementById('inspect').requestSubmit()")
    page.locator("#inspect button[type=submit]").click(force=True)
    time.sleep(0.5)


def test_an_offline_submission_is_answered_at_the_button_and_queued_once(
        stack: Stack) -> None:
    photo = stack.shots.parent / "entrance.jpg"
    photo.write_bytes(jpeg_with_gps(lat=40.7128, lon=-74.0060))
    form_url = f"{stack.web.url}/sites/{SITE}/inspect"
    pw, chromium = browser()
    try:
        ctx, page, said = signed_in_phone(chromium, stack)
        page.goto(form_url)
        key = page.locator("[name=idempotency_key]").input_value()
        page.locator("#ca_text_1").fill("sweep the entrance")
        page.locator("#photo_1").set_input_files(str(photo))
        page.locator("#certified").check()
        ctx.set_offline(True)
        page.get_by_role("button", name="Record inspection").click()
        page.wait_for_selector("#submit-status.waits")
        status = page.locator("#submit-status")
        assert status.inner_text() == WAITING_NOTE
        assert status.get_attribute("role") == "status"
        assert page.evaluate("document.getElementById('inspect').nextElementSibling.id") \
            == "submit-status"
        assert in_view(page, "#submit-status")
        page.screenshot(path=str(stack.shots / "offline-queued.png"))
        for control in ("#inspector", "#inspected_at", "#kind", "#ca_text_1", "#photo_1",
                        "#notes", "#certified", "#locate", "#inspect button[type=submit]"):
            assert page.locator(control).is_disabled(), control
        assert page.locator("#inspect button[type=submit]").inner_text() \
            == "Saved on this phone \u2014 waiting for network"
        assert page.get_by_role("button", name="Record another inspection").is_visible()

        tap_again(page)
        (entry,) = page.evaluate(ENTRIES)
        assert (entry["key"], entry["state"], entry["files"]) == (key, "waiting", 1)
        assert in_view(page, "#submit-status")
        waits = page.locator("#waiting .waiting-list li")
        assert waits.count() == 1
        assert "Branch Meadows" in waits.inner_text() and "1 photo" in waits.inner_text()
        assert "Waiting since" in waits.inner_text()

        # Online again but the API still unreachable: the same form, opened afresh from
        # the server (with a new key), shows what waits, locked, and queues nothing new.
        ctx.route("**/api/v1/**", lambda route: route.abort())
        ctx.set_offline(False)
        for url in (stack.web.url + "/", f"{stack.web.url}/sites/{SITE}"):
            page.goto(url)
            listed = page.locator("#queue .waiting-list li.waiting")
            listed.wait_for()
            assert "Branch Meadows" in listed.inner_text() and "Waiting since" in \
                listed.inner_text(), url
            # The list stays within the phone (the rest of the site page is not this
            # test's: its log book head hash is measured where the page is tested).
            assert page.evaluate(WITHIN), url
        page.screenshot(path=str(stack.shots / "site-waiting.png"), full_page=True)
        page.goto(form_url)
        page.wait_for_selector("#submit-status.waits")
        assert page.locator("#inspect button[type=submit]").is_disabled()
        assert page.locator("#ca_text_1").input_value() == "sweep the entrance"
        tap_again(page)
        assert [(e["key"], e["state"]) for e in page.evaluate(ENTRIES)] == [(key, "waiting")]
        assert page.evaluate(NO_SIDEWAYS)
        assert recorded(stack) == []

        ctx.unroute("**/api/v1/**")
        page.evaluate("window.stormwatchFlush()")
        page.wait_for_selector("#submit-status.good")
        assert "Sent: this inspection is recorded." in page.locator("#submit-status").inner_text()
        sent = page.locator("#waiting .waiting-list li.sent")
        assert "Sent" in sent.inner_text()
        assert sent.locator("a").get_attribute("href") == f"/sites/{SITE}"
        page.screenshot(path=str(stack.shots / "sent.png"))
        page.get_by_role("button", name="Record another inspection").click()
        assert page.locator("#inspect button[type=submit]").is_enabled()
        fresh = page.locator("[name=idempotency_key]").input_value()
        assert fresh != key and page.locator("#ca_text_1").input_value() == ""
        assert [(e["key"], e["state"]) for e in page.evaluate(ENTRIES)] == [(key, "sent")]
        assert not page.locator("#queue").is_visible()  # listed by the button only
        page.goto(stack.web.url + "/")
        done = page.locator("#queue .waiting-list li.sent")
        assert "Sent" in done.inner_text() and page.evaluate(NO_SIDEWAYS)
        page.screenshot(path=str(stack.shots / "home-sent.png"))
        done.get_by_role("button", name="Hide").click()
        page.wait_for_selector("#queue", state="hidden")
        assert page.evaluate(ENTRIES) == []
    finally:
        chromium.close()
        pw.stop()
    wait_until(lambda: recorded(stack), 30, "the inspection")
    time.sleep(2)
    (rec,) = recorded(stack)
    assert len(rec["photos"]) == 1
    assert [m for m in said if "Content Security Policy" in m] == []


def test_a_queued_submission_the_server_refuses_is_shown_kept_and_not_retried(
        stack: Stack) -> None:
    site_now = datetime.now(ZoneInfo("America/New_York"))
    ahead = (site_now + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
    pw, chromium = browser()
    try:
        ctx, page, said = signed_in_phone(chromium, stack)
        posts: list[str] = []
        page.on("request", lambda r: posts.append(r.url) if r.method == "POST"
                and "/inspections" in r.url else None)
        page.goto(f"{stack.web.url}/sites/{SITE}/inspect")
        page.locator("#inspected_at").fill(ahead)  # a time the server refuses
        page.locator("#ca_text_1").fill("sweep the entrance")
        page.locator("#certified").check()
        ctx.set_offline(True)
        page.get_by_role("button", name="Record inspection").click()
        page.wait_for_selector("#submit-status.waits")
        ctx.set_offline(False)  # the "online" event sends it: 422
        page.wait_for_selector("#submit-status.bad", timeout=30_000)
        words = page.locator("#submit-status").inner_text()
        assert "The server refused this inspection: inspected_at:" in words
        assert "ahead of this machine's clock" in words
        assert page.locator("#inspect button[type=submit]").is_enabled()
        page.screenshot(path=str(stack.shots / "refused.png"))
        (entry,) = page.evaluate(ENTRIES)
        assert entry["state"] == "refused" and entry["error"].startswith("inspected_at:")
        assert entry["data"]["corrective_actions"][0]["text"] == "sweep the entrance"
        page.evaluate("window.stormwatchFlush()")
        page.goto(stack.web.url + "/")
        listed = page.locator("#queue .waiting-list li.refused")
        assert "Refused by the server: inspected_at:" in listed.inner_text()
        time.sleep(1)
        assert len(posts) == 1  # never sent again by itself
        assert page.evaluate(NO_SIDEWAYS)
        page.screenshot(path=str(stack.shots / "home-refused.png"), full_page=True)

        listed.get_by_role("link", name="Fix and resend").click()
        page.wait_for_selector("#submit-status.bad")
        assert page.locator("#ca_text_1").input_value() == "sweep the entrance"
        assert page.locator("#inspected_at").input_value() == ahead
        page.locator("#inspected_at").fill(site_now.strftime("%Y-%m-%dT%H:%M"))
        page.get_by_role("button", name="Record inspection").click()
        page.wait_for_selector("#closed li")
        assert [e["state"] for e in page.evaluate(ENTRIES)] == ["sent"]
    finally:
        chromium.close()
        pw.stop()
    wait_until(lambda: recorded(stack), 30, "the inspection")
    time.sleep(2)
    assert len(recorded(stack)) == 1 and len(posts) == 2
    assert [m for m in said if "Content Security Policy" in m] == []


def test_the_list_needs_no_script_to_stay_out_of_the_way(stack: Stack) -> None:
    """Without JavaScript the form posts as before: the list and the note stay hidden."""
    pw, chromium = browser()
    try:
        ctx = chromium.new_context(**PHONE, java_script_enabled=False)
        page = ctx.new_page()
        page.goto(mailed_signin(stack, QP))
        page.get_by_role("button", name="Sign in").click()
        page.goto(f"{stack.web.url}/sites/{SITE}/inspect")
        assert not page.locator("#waiting").is_visible()
        assert not page.locator("#another").is_visible()
        assert not page.locator("#queue").is_visible()
        assert page.locator("#submit-status[role=status]").count() == 1  # there, and empty
        page.locator("#certified").check()
        page.get_by_role("button", name="Record inspection").click()
        page.wait_for_selector("#closed li")
    finally:
        chromium.close()
        pw.stop()
    wait_until(lambda: recorded(stack), 30, "the inspection")

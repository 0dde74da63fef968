"""A corrective action from the inspection that asks for it to the one that verifies it,
in Debian's Chromium at a phone's viewport (390 × 844) against the real daemon,
Mosquitto, ``stormwatch web`` and a real SMTP server (aiosmtpd).

The qualified professional records a storm inspection asking for a repair, sends it
to the contractor from the site page (the mail reaches aiosmtpd); the contractor,
with no account, opens the mailed link, adds a note and a photo and marks it done;
the qualified professional's next inspection verifies it; the report shows found →
sent → done → verified. Every page fits the phone's width, and the console has no
CSP error. Screenshots go to the test's tmp directory (and /tmp/i29-actions-shots).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from ..support.browser import PHONE, Stack, browser, fill_form, mailed_signin, storm
from ..support.daemonkit import events_of, wait_until
from ..support.photos import jpeg_with_gps
from ..support.webkit import QP, SITE

pytestmark = pytest.mark.integration
CONTRACTOR_LINK = re.compile(r"(https?://[^\s<>\"]+/c/[A-Za-z0-9_.-]+)")


def fits(page: Any, name: str, shots: Path, part: str | None = None) -> None:
    """The page fits the phone's width (a mobile viewport widens to what overflows, so
    the 390 px are asserted too: of the whole page, or of ``part`` where the rest of the
    page is not this test's); a full-page screenshot is kept."""
    width = page.evaluate("document.documentElement.scrollWidth")
    inner = page.evaluate("window.innerWidth")
    page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
    assert width <= inner, (name, width, inner)
    if part is None:
        assert width <= PHONE["viewport"]["width"], (name, width)  # type: ignore[index]
    else:
        box = page.locator(part).first.bounding_box()
        assert box is not None and box["x"] + box["width"] <= 390, (name, box)


def test_a_corrective_action_goes_to_the_contractor_and_back_to_verified(
        stack: Stack) -> None:
    link = storm(stack)
    photo = stack.shots.parent / "fence.jpg"
    photo.write_bytes(jpeg_with_gps(lat=40.7128, lon=-74.0060))
    fix = stack.shots.parent / "fixed.jpg"
    fix.write_bytes(jpeg_with_gps(lat=40.7129, lon=-74.0061))
    # The asking inspection half an hour ago: the verifying one is at a later minute.
    earlier = (datetime.now(ZoneInfo("America/New_York")) - timedelta(minutes=30))
    pw, chromium = browser()
    csp: list[str] = []
    try:
        ctx = chromium.new_context(**PHONE, geolocation={"latitude": 40.7127, "longitude":
                                                         -74.0059, "accuracy": 9},
                                   permissions=["geolocation"])
        qp = ctx.new_page()
        qp.on("console", lambda m: csp.append(f"{qp.url}: {m.text}")
              if "Content Security Policy" in m.text else None)
        qp.goto(link)
        qp.goto(mailed_signin(stack, QP))
        qp.get_by_role("button", name="Sign in").click()
        qp.wait_for_url(re.compile(r"/inspect"))
        fill_form(qp, photo)
        qp.locator("#inspected_at").fill(earlier.strftime("%Y-%m-%dT%H:%M"))
        qp.get_by_role("button", name="Record inspection").click()
        qp.wait_for_selector("#closed li")

        # Found: the site page lists it; the qp sends it to the contractor.
        qp.goto(f"{stack.web.url}/sites/{SITE}")
        item = qp.locator("ul.actions li.action")
        assert "restake the silt fence at 2+40" in item.inner_text()
        assert "Not done yet." in item.inner_text()
        item.locator("summary", has_text="Send to contractor").click()
        item.get_by_label("Contractor's e-mail (optional)").fill("crew@example.org")
        fits(qp, "1-site-actions", stack.shots, "ul.actions")
        before = len(stack.smtp.mails)
        item.get_by_role("button", name="Send to contractor").click()
        qp.wait_for_selector("#contractor-link")
        assert "Mailed to crew@example.org" in qp.content()
        shown = qp.locator("#contractor-link").input_value()
        fits(qp, "2-sent", stack.shots)
        assert stack.smtp.wait_for(lambda ms: len(ms) > before, 30)
        mail = stack.smtp.mails[-1]
        assert mail.rcpt_tos == ["crew@example.org"]
        found = CONTRACTOR_LINK.search(mail.text())
        assert found and found.group(1) == shown

        # Done: the contractor, with no account, on a phone of their own.
        crew = chromium.new_context(**PHONE).new_page()
        crew.on("console", lambda m: csp.append(f"{crew.url}: {m.text}")
                if "Content Security Policy" in m.text else None)
        crew.goto(found.group(1))
        text = crew.locator("main").inner_text()
        for words in ("Repair at Branch Meadows Subdivision", "restake the silt fence at 2+40",
                      "Asked for by J. Rivera", "EST", "Photos of the inspection"):
            assert words in text, words
        crew.wait_for_selector("ul.shots img")
        assert crew.locator("ul.shots img").evaluate("i => i.naturalWidth") > 0
        crew.get_by_label("Note").fill("new stakes, fence re-trenched")
        crew.get_by_label("Photos").set_input_files(str(fix))
        fits(crew, "3-contractor", stack.shots)
        crew.get_by_role("button", name="Mark done").click()
        crew.wait_for_selector("h1:has-text('Thank you')")
        fits(crew, "4-contractor-thanks", stack.shots)

        # Verified: the next inspection's form offers it, and the qp ticks it.
        qp.goto(f"{stack.web.url}/sites/{SITE}")
        assert "Done by the contractor on " in qp.locator("ul.actions").inner_text()
        fits(qp, "5-site-done", stack.shots, "ul.actions")
        qp.goto(f"{stack.web.url}/sites/{SITE}/inspect")
        box = qp.locator("fieldset.action")
        words = box.inner_text()
        assert re.search(r"done by the contractor on .+: verify", words), words
        fits(qp, "6-form-verify", stack.shots, "fieldset.action")
        box.get_by_label("resolved").check()
        qp.locator("#certified").check()
        qp.get_by_role("button", name="Record inspection").click()
        qp.wait_for_selector("h1")
        def verified() -> bool:  # once the running daemon has applied it
            qp.goto(f"{stack.web.url}/sites/{SITE}")
            return "None open." in qp.locator("ul.actions").inner_text()
        wait_until(verified, 30, "the verification")
        gone = crew.goto(found.group(1))
        assert gone is not None and gone.status == 410

        # The report's chain (its own inline stylesheet is another matter: not counted).
        checked = list(csp)
        qp.goto(f"{stack.web.url}/sites/{SITE}/report")
        report = qp.locator("body").inner_text()
        qp.screenshot(path=str(stack.shots / "7-report.png"), full_page=True)
    finally:
        chromium.close()
        pw.stop()
    assert checked == []
    chain = report.split("found → sent → done → verified", 1)[1]
    for words in ("restake the silt fence at 2+40", "mailed to crew@example.org",
                  "by contractor: new stakes, fence re-trenched", f"inspection by {QP}",
                  "on time"):
        assert words in chain, (words, chain[:800])
    (done,) = wait_until(lambda: events_of(stack.cfg, "corrective_action_done"), 10, "done")
    assert done["done_by"] == "contractor" and len(done["photos"]) == 1

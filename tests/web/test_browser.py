"""The field app in a real browser: Debian's Chromium at a phone's
viewport, driven by Playwright, against the real ``stormwatch web``, the real
daemon, a real Mosquitto and a real SMTP server (aiosmtpd).

A storm's alert reaches an HTTP receiver with the link to the form; the phone
opens it, is asked to sign in, signs in through the mailed link, fills the
form (a practice needing repair, a corrective action, a JPEG with EXIF GPS,
its location), and records the inspection; then the log book row, ``status``
and ``logbook verify`` (OK, then exit 1 once the photo file is altered) are
checked. The second test records with the browser offline, comes back online,
and finds exactly one inspection. Screenshots go to the test's tmp directory.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..support.browser import (
    PHONE,
    Stack,
    browser,
    fill_form,
    mailed_signin,
    need_chromium,
    read_queue,
    recorded,
    storm,
)
from ..support.childproc import free_port
from ..support.daemonkit import cli, events_of, wait_until
from ..support.photos import jpeg_with_gps
from ..support.webkit import (
    OFFICER,
    QP,
    SITE,
    WebProcess,
    signin_token,
    web_env,
)

pytestmark = pytest.mark.integration
























def test_the_qp_records_the_storm_inspection_on_a_phone_from_the_alert(stack: Stack) -> None:
    link = storm(stack)
    photo = stack.shots.parent / "fence.jpg"
    photo.write_bytes(jpeg_with_gps(lat=40.7128, lon=-74.0060))
    pw, chromium = browser()
    try:
        ctx = chromium.new_context(**PHONE, geolocation={"latitude": 40.7127, "longitude":
                                                         -74.0059, "accuracy": 9},
                                   permissions=["geolocation"])
        page = ctx.new_page()
        page.goto(link)
        assert "Sign in first" in page.content()  # the alert's link grants nothing alone
        page.goto(mailed_signin(stack, QP))
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(re.compile(rf"/sites/{SITE}/inspect\?clock=storm-"))
        assert "This inspection closes" in page.content() and "Storm 0.50 in" in page.content()
        fill_form(page, photo)
        page.screenshot(path=str(stack.shots / "form.png"), full_page=True)
        page.get_by_role("button", name="Record inspection").click()
        page.wait_for_selector("#closed li")
        answer = page.locator("main").inner_text()
        page.screenshot(path=str(stack.shots / "answer.png"), full_page=True)
        # The clock by name and the corrective action by its text, not by their ids.
        assert "Storm of " in answer and "on time" in answer, answer
        assert "restake the silt fence at 2+40" in answer, answer

        officer = chromium.new_context(**PHONE).new_page()
        officer.goto(mailed_signin(stack, OFFICER))
        officer.get_by_role("button", name="Sign in").click()
        officer.goto(stack.web.url + "/officer")
        assert "Log book: verifies" in officer.content()
        officer.screenshot(path=str(stack.shots / "officer.png"), full_page=True)
    finally:
        chromium.close()
        pw.stop()

    (rec,) = wait_until(lambda: recorded(stack), 30, "the inspection")
    assert rec["inspector"] == QP and rec["via"] == "web" and rec["certified"] is True
    assert rec["findings"][0] == {"practice": "silt-fence",
                                  "condition": "needs_repair: undermined at station 2+40"}
    sha = rec["photos"][0]["sha256"]
    assert rec["photos"][0]["lat"] == pytest.approx(40.7128, abs=1e-4)
    assert rec["location"]["lat"] == pytest.approx(40.7127, abs=1e-4)
    book = cli("logbook", "--config", str(stack.cfg), "--site", SITE)
    rows = [r for r in csv.DictReader(io.StringIO(book.stdout))
            if r["type"] == "inspection_recorded"]
    assert len(rows) == 1 and QP in rows[0]["details"] and "silt-fence" in rows[0]["details"]
    with_photo = [r for r in wait_until(lambda: events_of(stack.cfg, "clock_closed"), 10, "close")
                  if r["clock"] == "storm"]
    assert with_photo[0]["outcome"] == "met"
    status = json.loads(cli("status", "--config", str(stack.cfg), "--json").stdout)
    assert [c for c in status["sites"][SITE]["open_clocks"] if c["clock"] == "storm"] == []
    ok = cli("logbook", "verify", "--config", str(stack.cfg))
    assert ok.returncode == 0, ok.stderr
    stored = stack.state / "photos" / sha[:2] / sha
    assert stored.read_bytes() == photo.read_bytes()
    stored.chmod(0o644)
    stored.write_bytes(stored.read_bytes() + b"\0")
    bad = cli("logbook", "verify", "--config", str(stack.cfg))
    assert bad.returncode == 1 and f"photo {sha} was altered" in bad.stderr
    shutil.copy(stack.shots / "form.png", stack.shots.parent / "field-app-form.png")


def test_an_inspection_made_offline_is_sent_once_when_back_online(stack: Stack) -> None:
    link = storm(stack)
    pw, chromium = browser()
    try:
        ctx = chromium.new_context(**PHONE)
        page = ctx.new_page()
        page.goto(mailed_signin(stack, QP))
        page.get_by_role("button", name="Sign in").click()
        page.goto(link)
        page.wait_for_url(re.compile(r"/inspect"))
        page.locator("#certified").check()
        page.locator("#ca_text_1").fill("sweep the entrance")
        ctx.set_offline(True)
        page.get_by_role("button", name="Record inspection").click()
        page.wait_for_selector("#queue[data-waiting='1']", state="attached")
        assert "1 inspection waits" in page.locator("#queue").inner_text()
        page.screenshot(path=str(stack.shots / "offline.png"), full_page=True)
        time.sleep(1)
        assert recorded(stack) == []
        ctx.set_offline(False)
        page.wait_for_selector("#queue[data-waiting='0']", state="attached", timeout=30_000)
        page.evaluate("window.stormwatchFlush()")  # a second flush sends nothing again
    finally:
        chromium.close()
        pw.stop()
    wait_until(lambda: recorded(stack), 30, "the inspection")
    time.sleep(2)
    assert len(recorded(stack)) == 1
    assert [c["outcome"] for c in events_of(stack.cfg, "clock_closed")
            if c["clock"] == "storm"] == ["met"]


# --------------------------------------------------------------------------- sign-out


@pytest.fixture
def lone_web(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """``stormwatch web`` alone (no daemon: the pages read the state it was left in)."""
    need_chromium()
    port = free_port()
    made = web_env(tmp_path, listen=f"127.0.0.1:{port}", public=f"http://127.0.0.1:{port}")
    web = WebProcess(made["path"], port)
    try:
        yield {**made, "web": web}
    finally:
        web.stop()
    assert "Traceback" not in web.log(), web.log()





QUEUED = read_queue("count()", "found")
CACHED = """async () => {
  const urls = [];
  for (const name of await caches.keys()) {
    for (const req of await (await caches.open(name)).keys()) urls.push(new URL(req.url).pathname);
  }
  return urls;
}"""


def offline_text(page: Any, url: str) -> str:
    """What the phone shows at ``url`` without a network (its own error page: "")."""
    from playwright.sync_api import Error
    try:
        page.goto(url)
    except Error as exc:
        # Chromium's own offline page: said as the error, or as a navigation to it.
        if "ERR_INTERNET_DISCONNECTED" in str(exc) or "chrome-error://" in str(exc):
            return ""
        raise
    return str(page.content())


def test_sign_out_clears_the_pages_and_the_queue_from_the_phone(
        lone_web: dict[str, Any]) -> None:
    web: WebProcess = lone_web["web"]
    site, form = f"{web.url}/sites/{SITE}", f"{web.url}/sites/{SITE}/inspect"
    pw, chromium = browser()
    try:
        ctx = chromium.new_context(**PHONE)
        page = ctx.new_page()
        asked: list[str] = []

        def answer(dialog: Any) -> None:  # "sign out anyway?"
            asked.append(dialog.message)
            dialog.accept()

        page.on("dialog", answer)
        page.goto(f"{web.url}/signin/{signin_token(lone_web['state'], QP)}")
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(web.url + "/")
        page.evaluate("navigator.serviceWorker.ready.then(() => true)")
        page.reload()  # now under the worker, which keeps what is opened
        for url in (site, form):
            page.goto(url)
        assert {f"/sites/{SITE}", f"/sites/{SITE}/inspect"} <= set(page.evaluate(CACHED))
        # Offline, the form opens from the worker's cache, and a submission waits in the
        # queue; the API is unreachable, so it still waits once the phone is online again.
        ctx.route("**/api/v1/**", lambda route: route.abort())
        ctx.set_offline(True)
        assert "Record inspection" in offline_text(page, form)
        page.locator("#certified").check()
        page.get_by_role("button", name="Record inspection").click()
        page.wait_for_selector("#queue[data-waiting='1']", state="attached")
        ctx.set_offline(False)
        page.goto(site)
        page.wait_for_selector("#queue[data-waiting='1']", state="attached")
        assert page.evaluate(QUEUED) == 1

        page.get_by_role("button", name="Sign out").click()
        page.wait_for_url(web.url + "/")
        assert asked == ["1 inspection has not been sent yet (no network). Signing out"
                         " deletes them from this phone. Sign out anyway?"]
        assert "Sign in" in page.content()
        assert page.evaluate(QUEUED) == 0
        assert [u for u in page.evaluate(CACHED) if u.startswith("/sites/")] == []
        ctx.set_offline(True)
        for url in (site, form):
            shown = offline_text(page, url)
            assert "Record inspection" not in shown and SITE not in shown, shown[:300]
            assert 'name="csrf"' not in shown
    finally:
        chromium.close()
        pw.stop()
    assert recorded_nowhere(lone_web)


def recorded_nowhere(env: dict[str, Any]) -> bool:
    """No inspection reached the journal (the queued one was never sent)."""
    from monitor.store.opening import open_store
    with open_store(env["config"], readonly=True) as store:
        return store.journal.max_seq() == 0

"""The field app in a real Chromium.

The stack the browser tests run against (broker, daemon, web app, mail receivers), a
phone's viewport, signing in by the mailed link, and the form filled as a person fills
it.
"""

from __future__ import annotations

import base64
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .daemonkit import Publisher, cli, counter_storm, events_of
from .receivers import HttpReceiver, SmtpReceiver
from .webkit import WebProcess, signin_token

CHROMIUM = "/usr/bin/chromium"

PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2,
         "is_mobile": True, "has_touch": True}


LINK = re.compile(r"(https?://[^\s<>\"]+/a/[A-Za-z0-9_.-]+)")

SIGNIN = re.compile(r"(https?://[^\s<>\"]+/signin/[A-Za-z0-9_-]+)")


@dataclass
class Stack:
    cfg: Path
    state: Path
    web: WebProcess
    http: HttpReceiver
    smtp: SmtpReceiver
    shots: Path


def need_chromium() -> None:
    """Skip unless Debian's Chromium and Playwright for Python are here: these tests drive
    the real browser, which no other part can stand in for (deploy/install-test-deps.sh
    installs both; CI runs with STORMWATCH_REQUIRE_SERVICES=1, so there a skip fails)."""
    if not Path(CHROMIUM).exists():
        pytest.skip("no /usr/bin/chromium (deploy/install-test-deps.sh installs it)")
    pytest.importorskip("playwright.sync_api")


def storm(stack: Stack, broker_port: int | None = None) -> str:
    """A storm that reached 0.50 in about 18 h ago: its alert's link to the form."""
    start = int(time.time()) // 60 * 60 - 20 * 3600
    port = int(re.search(r"port: (\d+)", stack.cfg.read_text()).group(1))  # type: ignore[union-attr]
    pub = Publisher(broker_port or port)
    pub.send_many(counter_storm(start, 600, storm_from=60, storm_tips=60))
    pub.close()
    # The storm's own alert: other alerts of the site (a routine clock's, a sensor's)
    # may carry a link to the form too, without a clock, and may come first.
    assert stack.http.wait_for(lambda ps: storm_link(ps) is not None, 60)
    found = storm_link(stack.http.posts)
    assert found is not None
    return found


def storm_link(posts: list[Any]) -> str | None:
    """The first form link of ``posts`` that names a storm clock."""
    for post in posts:
        for found in LINK.finditer(json.dumps(post.body)):
            link = found.group(1).rstrip("\\n").split("\\n")[0]
            claim = link.rsplit("/", 1)[1].split(".", 1)[0]
            body = json.loads(base64.urlsafe_b64decode(claim + "=" * (-len(claim) % 4)))
            if str(body.get("c") or "").startswith("storm-"):
                return link
    return None


def mailed_signin(stack: Stack, name: str) -> str:
    before = len(stack.smtp.mails)
    out = cli("user", "link", "--config", str(stack.cfg), "--name", name, "--send")
    assert out.returncode == 0, out.stderr
    assert stack.smtp.wait_for(lambda ms: len(ms) > before, 30)
    found = SIGNIN.search(stack.smtp.mails[-1].text())
    assert found, stack.smtp.mails[-1].text()
    return found.group(1)


def browser() -> Any:
    need_chromium()
    from playwright.sync_api import sync_playwright
    pw = sync_playwright().start()
    return pw, pw.chromium.launch(executable_path=CHROMIUM, args=[
        "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"])


def fits_phone(page: Any, name: str, console: list[str] | None = None) -> None:
    """What a phone must not do on a page: scroll sideways, or refuse under the app's
    CSP (the messages of ``console``, when given). A page wider than the phone makes a
    mobile browser zoom out, which widens ``innerWidth`` with it: so the phone's own
    width is asserted too, not only ``scrollWidth <= innerWidth``."""
    scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert inner == PHONE["viewport"]["width"] and scroll <= inner, (name, scroll, inner)  # type: ignore[index]
    if console is not None:
        assert [e for e in console if "Content Security Policy" in e] == [], name


def signed_in_page(context: Any, base_url: str, state_dir: Path, name: str) -> Any:
    """A page of ``context`` signed in as ``name`` by a fresh link (``user link``'s)."""
    page = context.new_page()
    page.goto(f"{base_url}/signin/{signin_token(state_dir, name)}")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/(officer)?$"))
    return page


def fill_form(page: Any, photo: Path) -> None:
    page.get_by_label("Silt fence: condition").select_option("needs_repair")
    page.get_by_label("Silt fence: note").fill("undermined at station 2+40")
    page.locator("#ca_text_1").fill("restake the silt fence at 2+40")
    page.locator("#photo_1").set_input_files(str(photo))
    page.locator("[name=caption_1]").fill("silt fence, station 2+40")
    page.get_by_role("button", name="Use my location").click()
    # The page's CSP allows no eval: wait on selectors, not on JavaScript strings.
    page.wait_for_selector("#where:has-text('±')")
    page.get_by_label("Notes").fill("windy, dry since the storm")
    page.locator("#certified").check()


def recorded(stack: Stack) -> list[dict[str, Any]]:
    return events_of(stack.cfg, "inspection_recorded")


def read_queue(request: str, answer: str) -> str:
    """A page function answering ``answer`` (JavaScript of ``found``) about the result of
    ``request`` on app.js's offline queue (IndexedDB "stormwatch", store "queue")."""
    return """async () => {
  const db = await new Promise((ok, fail) => {
    const req = indexedDB.open("stormwatch", 1);
    req.onupgradeneeded = () => req.result.createObjectStore("queue", { keyPath: "key" });
    req.onsuccess = () => ok(req.result); req.onerror = () => fail(req.error);
  });
  const found = await new Promise((ok) => {
    const r = db.transaction("queue").objectStore("queue").REQUEST;
    r.onsuccess = () => ok(r.result);
  });
  db.close();
  return ANSWER;
}""".replace("REQUEST", request).replace("ANSWER", answer)

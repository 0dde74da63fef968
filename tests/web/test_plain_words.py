"""The site page and the answer page in plain words: each log book entry a sentence
with its numbers and local times (``contract/sentences.py``), clocks by name ("storm
of Dec 2", never ``storm-rg1-20261202T153600Z``), ids and hashes tucked away, and
nothing wider than a phone.

The real app on a real state directory: rain, sediment and an inspection with long
unbroken text go through the engine host as the daemon would record them, dated
around the wall clock the pages judge by.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from monitor.config import Config
from monitor.contract.inputs import CorrectiveAction, Inspection, Reading
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE

from ..support.browser import PHONE, browser, fits_phone, need_chromium
from ..support.childproc import free_port
from ..support.webkit import (
    QP,
    SITE,
    WebProcess,
    client_for,
    recorded_web_site,
    sign_in,
    signin_token,
)

H = MS_PER_HOUR
NOW = int(time.time() * 1000) // H * H
#: What no page may show a person: a field by name, an ISO 8601 or compact UTC time.
RAW = re.compile(r"fill_fraction=|clock_id=|\b[a-z]+_[a-z_]+=|\d{4}-\d\d-\d\dT\d\d:\d\d"
                 r"|\d{8}T\d{6}Z")
LONG = ("https://plans.example.org/branch-meadows/swppp/revision-7/sheet-C-401/"
        "erosion-and-sediment-control-details-and-notes.pdf")


def season() -> list[Any]:
    """Three days of a gauge with a storm of 0.60 in a day ago, a trap filling past its
    clean-out level, and an inspection with a long link and a long corrective action."""
    items: list[Any] = []
    storm_from = NOW - 26 * H
    for i, t in enumerate(range(NOW - 72 * H, NOW + 1, 10 * MS_PER_MINUTE)):
        tips = max(0, min(60, (t - storm_from) // (2 * MS_PER_MINUTE)))
        items.append(Reading(SITE, "rg1", "rain", t, tips_total=5000 + tips, seq=i))
    for i, t in enumerate(range(NOW - 72 * H, NOW + 1, H)):
        items.append(Reading(SITE, "trap1-depth", "sediment", t,
                             depth_in=8.0 + 30.0 * i / 72, seq=i))
    items.append(Inspection(SITE, QP, NOW - 60 * H, kind="routine", notes=f"see {LONG}",
                            inspectors=(QP,), corrective_actions=(CorrectiveAction(
                                "ca-" + "9" * 40, "re-stake-the-north-silt-fence-"
                                "between-stations-2+40-and-3+10", NOW + 48 * H),)))
    return items


@dataclass(frozen=True)
class Season:
    path: Path
    config: Config
    client: TestClient


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Season:
    tmp = tmp_path_factory.mktemp("season")
    since = (datetime.fromtimestamp(NOW / 1000, timezone.utc) - timedelta(days=4)).date()
    path, config = recorded_web_site(tmp, lambda text: text.replace(
        "    condition: B\n", f"    condition: B\n    active_since: {since}\n"), season(), NOW)
    client = client_for(config)
    sign_in(client, tmp / "state", QP)
    return Season(path, config, client)


def text_of(html: str) -> str:
    """What a person reads of a page: the text outside the tags and the tucked-away
    ids (``<details class="ids">``), whose job is to hold the ids."""
    html = re.sub(r'<details class="ids[^"]*">.*?</details>', " ", html, flags=re.S)
    html = re.sub(r"</?(?:strong|span|code|a|em)\b[^>]*>", "", html)  # inline: no gap
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_the_site_page_says_each_entry_as_a_sentence_in_local_time(book: Season) -> None:
    page = book.client.get(f"/sites/{SITE}")
    assert page.status_code == 200, page.text
    shown = text_of(page.text)
    assert not RAW.search(shown), RAW.search(shown)
    assert "trap_cleanout_required" not in shown and "storm_qualified" not in shown
    assert re.search(r"Storm of 0\.\d\d in qualified \w{3} \w{3} \d+ \d\d:\d\d E[SD]T — inspect "
                     r"by \w{3} \w{3} \d+ \d\d:\d\d E[SD]T, § 134-9A\(2\)", shown), shown
    assert re.search(r"Sediment trap trap-1 is (still )?\d+(\.\d+)?% full — clean it out, "
                     r"§ 134-9A\(1\)", shown), shown
    # The open storm clock by the local date its storm began, past its deadline (due
    # 24 h after it qualified, about 24.5 h ago), in local time.
    began = datetime.fromtimestamp((NOW - 26 * H) / 1000, book.config.sites[0].zone)
    assert re.search(rf"Storm of {began:%b} {began.day}: storm inspection OVERDUE since "
                     r"\w{3} \w{3} \d+ \d\d:\d\d E[SD]T \(late by", shown)
    # Ids and hashes are still there, out of the way.
    assert '<details class="ids"><summary>clock id</summary><code class="hash">storm-rg1-' \
        in page.text
    assert re.search(r'<details class="ids hint"><summary>Log book head <code>[0-9a-f]{12}…'
                     r'</code></summary><code class="hash">sha256 [0-9a-f]{64}</code>',
                     page.text)


def test_the_answer_page_names_the_clock_and_the_action_and_leads_on(book: Season) -> None:
    client = book.client
    html = client.get(f"/sites/{SITE}/inspect").text
    csrf = re.search(r'name="csrf-token" content="([0-9a-f]+)"', html)
    key = re.search(r'name="idempotency_key" value="([^"]+)"', html)
    assert csrf and key
    due = (datetime.fromtimestamp(NOW / 1000, book.config.sites[0].zone)
           + timedelta(days=3)).date()
    got = client.post(f"/sites/{SITE}/inspect", data={
        "csrf": csrf[1], "idempotency_key": key[1], "inspector": QP, "kind": "storm",
        "p.silt-fence.condition": "needs_repair", "ca_text": "restake silt fence",
        "ca_due": str(due), "certified": "on"})
    assert got.status_code == 201, got.text
    shown = text_of(got.text)
    assert not RAW.search(shown), RAW.search(shown)
    began = datetime.fromtimestamp((NOW - 26 * H) / 1000, book.config.sites[0].zone)
    assert re.search(rf"Storm of {began:%b} {began.day}: storm inspection done LATE \(due "
                     r"\w{3} \w{3} \d+ \d\d:\d\d E[SD]T\)", shown), shown
    # A due date is the day it names, not the midnight that ends it.
    assert f"restake silt fence: due the end of {due:%a %b} {due.day} " in shown
    assert "ca-" in got.text  # the id, tucked away
    assert f'href="/sites/{SITE}"' in got.text and "Record another inspection" in got.text


def test_the_markdown_log_book_is_sentences(book: Season) -> None:
    from ..support.commandkit import stormwatch
    proc = stormwatch(book.path, ("logbook", "--site", SITE, "--format", "md"))
    assert proc.returncode == 0, proc.stderr
    body = proc.stdout.split("|---|", 1)[1]
    assert not RAW.search(body.replace(LONG, "")), RAW.search(body)
    assert "Storm of 0.50 in qualified " in body and "— clean it out, § 134-9A(1)" in body


# --------------------------------------------------------------------------- the phone

@pytest.fixture
def served(book: Season) -> Iterator[WebProcess]:
    need_chromium()
    port = free_port()
    text = book.path.read_text()
    book.path.write_text(re.sub(r"listen: '[^']*'", f"listen: '127.0.0.1:{port}'", text))
    web = WebProcess(book.path, port)
    try:
        yield web
    finally:
        web.stop()
        book.path.write_text(text)
    assert "Traceback" not in web.log(), web.log()


@pytest.mark.integration
def test_the_site_and_answer_pages_fit_a_phone_without_a_csp_error(
        book: Season, served: WebProcess, tmp_path: Path) -> None:
    pw, chromium = browser()
    try:
        page = chromium.new_context(**PHONE).new_page()
        console: list[str] = []
        page.on("console", lambda m: console.append(m.text))
        token = signin_token(Path(book.config.state_dir), QP)
        page.goto(f"{served.url}/signin/{token}")
        page.get_by_role("button", name="Sign in").click()
        page.goto(f"{served.url}/sites/{SITE}")
        assert "Sediment trap trap-1 is" in page.content()
        for d in page.locator("details").all():  # the ids opened too: still no scroll
            d.evaluate("e => e.open = true")
        page.screenshot(path=str(tmp_path / "site.png"), full_page=True)
        fits_phone(page, "site")
        # The answer to an inspection recorded from the phone: as narrow.
        page.goto(f"{served.url}/sites/{SITE}/inspect")
        page.locator("#ca_text_1").fill("re-stake-the-north-silt-fence-between-stations-"
                                        "2+40-and-3+10-before-the-next-storm")
        page.locator("#certified").check()
        page.get_by_role("button", name="Record inspection").click()
        page.wait_for_selector("text=Inspection recorded")
        page.wait_for_selector("#closed li")
        page.screenshot(path=str(tmp_path / "answer.png"), full_page=True)
        # The clocks it closed by name, never by id. Which ones depends on what the
        # module's other tests recorded before (the answer page's test closes the storm
        # clock, in another minute when the machine is slow): a storm's or a week's.
        closed = page.inner_text("#closed")
        assert re.search(r"(Storm|Week) of [A-Z][a-z]{2} \d+", closed), closed
        assert "storm-rg1-" not in closed and "routine-" not in closed
        assert page.get_by_role("link", name="Record another inspection").count() == 1
        fits_phone(page, "answer")
        assert not [m for m in console if "Content Security Policy" in m], console
    finally:
        chromium.close()
        pw.stop()

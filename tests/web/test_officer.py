"""The officer's overview: the officer lands on it, every site ranked by what is owed
there (the same order on a qualified professional's "My sites"), in plain words with
local due times; a site with no recorded state says so. Then the icons and the
manifest a phone needs to add the app to its home screen.

The sites are made through the daemon's engine host on a clock fixed at ``NOW_MS``:
a storm qualified 29 h before (its 24-hour inspection overdue by 5 h), one 22 h
before (due in 2 h), a trap past its clean-out level, a clean site with fresh
readings, and a site added to the configuration after the daemon recorded the
others (no state at all).
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from monitor.config.file import load_config
from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE, parse_iso
from monitor.host.engine import EngineHost
from monitor.host.rows import journal_in
from monitor.store.opening import open_store

from ..support.daemonkit import wait_until
from ..support.webkit import OFFICER, QP, add_people, client_for, press_sign_in

#: Thu 2026-12-03 16:30 UTC, 11:30 EST.
NOW_MS = parse_iso("2026-12-03T16:30:00Z")
QUALIFY_AFTER_MS = 40 * MS_PER_MINUTE  # the 5th reading of ``storm`` reaches 0.5 in

SITE = """\
  - id: {id}
    name: {name}
    timezone: America/New_York
    condition: B
    sensors:
      - {{id: rg1, kind: rain, in_per_tip: 0.01, stale_after_minutes: 600}}
      - {{id: trap1-depth, kind: sediment, stale_after_minutes: 600}}
    traps:
      - {{id: trap-1, sensor: trap1-depth, shape: trapezoidal, bottom_length_ft: 20,
         bottom_width_ft: 10, side_slope: 2, design_depth_ft: 4}}
"""
SITES = {"site-clean": "Clean Acres", "site-trap": "Full Trap Farm",
         "site-soon": "Soon Street", "site-late": "Late Lane"}
NEW = ("site-new", "New Lot (no data)")


def write(tmp_path: Path, sites: dict[str, str], public: str = "https://sw.example.org",
          name: str = "stormwatch.yaml") -> Path:
    secret = tmp_path / "web.key"
    secret.write_bytes(b"k" * 32)
    text = (f"broker: {{host: 127.0.0.1, port: 1}}\nstate_dir: {tmp_path / 'state'}\n"
            f"web: {{public_url: '{public}', secret_file: '{secret}'}}\n"
            "qualified_professionals: [{name: J. Rivera}, {name: M. Chen}, {name: K. Ortiz}]\n"
            "sites:\n"
            + "".join(SITE.format(id=i, name=n) for i, n in sites.items()))
    path = tmp_path / name
    path.write_text(text)
    return path


def storm(site: str, start_ms: int) -> list[Reading]:
    """A gauge's counter: 0.1 in every 10 minutes from ``start_ms`` (0.5 in at 40 min)."""
    return [Reading(site=site, sensor="rg1", kind="rain", ts_ms=start_ms + (k - 1) * 600_000,
                    tips_total=10 * k) for k in range(7)]


def fresh(site: str, depth_in: float) -> list[Reading]:
    """Readings of the last hour: the gauge dry, the trap at ``depth_in`` (past warm-up)."""
    start = NOW_MS - 60 * MS_PER_MINUTE
    return [Reading(site=site, sensor="rg1", kind="rain", ts_ms=start + m * 600_000,
                    tips_total=0) for m in range(6)] + \
        [Reading(site=site, sensor="trap1-depth", kind="sediment", ts_ms=start + m * 600_000,
                 depth_in=depth_in) for m in range(6)]


def overdue_by(hours: float) -> int:
    """The start of a storm whose 24-hour inspection is ``hours`` late at ``NOW_MS``."""
    return NOW_MS - round((24 + hours) * MS_PER_HOUR) - QUALIFY_AFTER_MS


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("officer")
    path = write(tmp, SITES)
    items = (storm("site-late", overdue_by(5)) + storm("site-soon", overdue_by(-2))
             + fresh("site-trap", 40.0) + fresh("site-clean", 2.0))
    config = load_config(path, env={})
    with open_store(config) as store:
        host = EngineHost.restore(config, store, clock=lambda: NOW_MS / 1000)
        store.journal.commit([journal_in(it, topic=None, received_ms=None)
                              for it in sorted(items, key=lambda r: r.ts_ms)])
        host.catch_up()
        host.tick()
    # A site the daemon has not recorded yet: added after it ran.
    path = write(tmp, {**SITES, NEW[0]: NEW[1]})
    add_people(tmp / "state")
    from monitor.store.users import User, Users
    with Users.open(tmp / "state") as users:  # a qp of every site
        users.add(User("K. Ortiz", "qp", None, tuple([*SITES, NEW[0]])))
    from monitor.web.app import create_app
    config = load_config(path, env={})
    return {"config": config, "state": tmp / "state", "clients": {}, "tmp": tmp,
            "app": create_app(config, clock=lambda: NOW_MS, wait_s=0.5)}


def client(env: dict[str, Any], who: str) -> Any:
    """A client signed in as ``who`` by a link issued on the app's clock (once: sign-ins
    are rate-limited)."""
    from monitor.store.users import Users
    if who in env["clients"]:
        return env["clients"][who]
    c = env["clients"][who] = client_for(env["config"], env["app"])
    with Users.open(env["state"]) as users:
        token = users.issue_signin(who, NOW_MS)
    assert press_sign_in(c, f"/signin/{token}").status_code == 303
    return c


EXPECTED = ["Late Lane", "New Lot (no data)", "Soon Street", "Full Trap Farm", "Clean Acres"]


def names_in(html: str, block: str) -> list[str]:
    """The site names in the order a block of the page (``site-cards``, the table, or
    My sites) lists them."""
    return re.findall(r'<a href="/sites/[a-z-]+">([^<]+)</a>', block_of(html, block))


def block_of(html: str, marker: str) -> str:
    start = html.index(marker)
    return html[start:]


def test_the_officer_lands_on_the_overview(env: dict[str, Any]) -> None:
    officer = client(env, OFFICER)
    got = officer.get("/", follow_redirects=False)
    assert got.status_code == 303 and got.headers["location"] == "/officer"
    qp = client(env, QP)
    mine = qp.get("/", follow_redirects=False)
    assert mine.status_code == 200 and "My sites" in mine.text


def test_the_overview_ranks_every_site_by_what_is_owed(env: dict[str, Any]) -> None:
    html = client(env, OFFICER).get("/officer").text
    cards = html[html.index('class="site-cards"'):html.index('class="overview-table"')]
    table = html[html.index('class="overview-table"'):]
    assert names_in(cards, "") == EXPECTED
    assert names_in(table, "") == EXPECTED
    # Plain words with the site's local time, and how late.
    assert "Storm of Dec 2: inspection OVERDUE by 5 h (due Thu 06:30 EST)" in cards
    assert "Storm of Dec 2: inspection due in 2 h (Thu 13:30 EST)" in cards
    assert "clean it out" in cards.split("Full Trap Farm")[1].split("</section>")[0]
    assert "State UNKNOWN" in cards.split("New Lot (no data)")[1].split("</section>")[0]
    assert "Nothing owed" not in cards.split("New Lot (no data)")[1].split("</section>")[0]


def test_my_sites_uses_the_same_ranking(env: dict[str, Any]) -> None:
    html = client(env, "K. Ortiz").get("/").text
    assert names_in(html, "<h1>My sites") == EXPECTED
    assert "State UNKNOWN" in html


def test_the_log_book_head_is_short_and_whole_on_hover(env: dict[str, Any]) -> None:
    html = client(env, OFFICER).get("/officer").text
    verdict = re.search(r'Log book: .*?</p>', html, re.S)
    assert verdict and "verifies" in verdict[0]
    shown = re.search(r'<code class="hash" title="([0-9a-f]{64})">([0-9a-f]+)…</code>',
                      verdict[0])
    assert shown and shown[1].startswith(shown[2]) and len(shown[2]) < 20


# --------------------------------------------------------------------------- install


def image_of(got: Any) -> Image.Image:
    assert got.status_code == 200 and got.headers["content-type"].startswith("image/"), got
    return Image.open(io.BytesIO(got.content))


def test_the_favicon_is_an_image(env: dict[str, Any]) -> None:
    c = client_for(env["config"], env["app"])  # no sign-in: a browser asks before one
    icon = image_of(c.get("/favicon.ico"))
    assert icon.format == "ICO"


def test_the_manifest_installs_with_icons_of_its_declared_sizes(env: dict[str, Any]) -> None:
    """What Chromium needs to offer "Install app": a name, start_url, display
    standalone (or fullscreen, minimal-ui), and PNG icons of 192 and 512 px."""
    c = client_for(env["config"], env["app"])
    got = c.get("/static/manifest.json")
    assert got.headers["content-type"].startswith("application/manifest+json")
    manifest = json.loads(got.text)
    for key in ("id", "name", "short_name", "start_url", "scope", "theme_color",
                "background_color"):
        assert manifest.get(key), key
    assert manifest["display"] == "standalone"
    sizes = set()
    for icon in manifest["icons"]:
        image = image_of(c.get(icon["src"]))
        w, h = (int(n) for n in icon["sizes"].split("x"))
        assert image.size == (w, h) and icon["type"] == "image/png" and image.format == "PNG"
        assert icon["purpose"] in ("any", "maskable")
        sizes.add((w, icon["purpose"]))
    assert {(192, "any"), (512, "any")} <= sizes and any(p == "maskable" for _, p in sizes)
    page = client(env, QP).get("/").text
    for rel in ("icon", "apple-touch-icon"):
        link = re.search(rf'<link rel="{rel}"[^>]* href="([^"]+)"', page)
        assert link, rel
        image_of(c.get(link[1]))


# --------------------------------------------------------------------------- in Chromium


@pytest.fixture
def served(env: dict[str, Any]) -> Iterator[str]:
    """The app over the same state, served over HTTP by uvicorn on loopback (its
    cookies then not Secure: a browser keeps them over http), on the same clock."""
    import threading

    import uvicorn

    from monitor.web.app import create_app

    from ..support.childproc import free_port
    port = free_port()
    path = write(env["tmp"], {**SITES, NEW[0]: NEW[1]}, public=f"http://127.0.0.1:{port}",
                 name="served.yaml")
    app = create_app(load_config(path, env={}), clock=lambda: NOW_MS, wait_s=0.5)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, 30, "uvicorn")
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(30)


@pytest.mark.integration
def test_the_overview_on_a_phone_and_on_a_desk(env: dict[str, Any], served: str) -> None:
    """Cards at 390 x 844 (nothing wider than the screen), a table at 1280 x 800; no
    Content Security Policy error in the console. Screenshots in the test's directory."""
    from monitor.store.users import Users

    from ..support.browser import PHONE, browser
    shots = env["tmp"] / "shots"
    shots.mkdir(exist_ok=True)
    pw, chromium = browser()
    try:
        for size, context in (("phone", PHONE),
                              ("desk", {"viewport": {"width": 1280, "height": 800}})):
            page = chromium.new_context(**context).new_page()
            errors: list[str] = []
            page.on("console", lambda m, errors=errors: errors.append(m.text)
                    if m.type == "error" else None)
            with Users.open(env["state"]) as users:
                token = users.issue_signin(OFFICER, NOW_MS)
            page.goto(f"{served}/signin/{token}")
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(f"{served}/officer")  # "/" sent the officer to the overview
            page.screenshot(path=str(shots / f"officer-{size}.png"), full_page=True)
            cards = page.locator(".site-card")
            table = page.locator("table.overview-table")
            if size == "phone":
                assert cards.count() == 5 and cards.first.is_visible()
                assert not table.is_visible()
                assert page.evaluate("document.documentElement.scrollWidth"
                                     " <= window.innerWidth")
            else:
                assert table.is_visible() and not cards.first.is_visible()
                assert table.locator("tbody tr").count() == 5
            assert cards.first.locator("h2").inner_text() == "Late Lane"
            assert not [e for e in errors if "Content Security Policy" in e], errors
            page.context.close()
        page = chromium.new_context(**PHONE).new_page()  # a qualified professional's list
        with Users.open(env["state"]) as users:
            token = users.issue_signin("K. Ortiz", NOW_MS)
        page.goto(f"{served}/signin/{token}")
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{served}/")
        page.screenshot(path=str(shots / "my-sites-phone.png"), full_page=True)
        assert page.locator("section.site h2").all_inner_texts() == EXPECTED
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        chromium.close()
        pw.stop()

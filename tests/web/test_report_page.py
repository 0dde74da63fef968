"""The compliance report in the field app: styled under the app's own Content Security
Policy, laid out for a phone.

The policy (``style-src 'self'``) ignores an inline ``<style>`` and every
``style=`` attribute, so the page links the stylesheet the app serves,
``/static/report.css``: the very text the file ``stormwatch report --out``
inlines. The month plotted is ``test_report_print``'s (rain, a trap, a turbidity
pair). In Debian's Chromium at 390 × 844, the real ``stormwatch web`` serving
it, the stylesheet applies, the page never scrolls sideways and the console
holds no policy error; screenshots at 390 × 844 and 1280 × 800 go to the test's
directory.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from monitor.views.report.style import CSS

from ..support.childproc import free_port
from ..support.reportkit import ACTIVE, TO, plotted_month
from ..support.webkit import (
    OFFICER,
    SITE,
    WebProcess,
    client_for,
    recorded_web_site,
    sign_in,
)

MAY = "from=2026-05-01&to=2026-05-31"
NAME = "    name: Branch Meadows Subdivision\n"


def _month_site(tmp_path: Path, listen: str = "127.0.0.1:8080") -> tuple[Path, Any]:
    def edit(text: str) -> str:
        text = text.replace(NAME, NAME + ACTIVE, 1)
        return text.replace("listen: '127.0.0.1:8080'", f"listen: '{listen}'", 1)

    return recorded_web_site(tmp_path, edit, plotted_month(), now_ms=TO)


def test_the_page_links_the_stylesheet_the_app_serves(tmp_path: Path) -> None:
    _, config = _month_site(tmp_path)
    client = client_for(config)
    sign_in(client, tmp_path / "state", OFFICER)
    page = client.get(f"/sites/{SITE}/report?{MAY}")
    assert page.status_code == 200, page.text
    assert "style-src 'self'" in page.headers["content-security-policy"]
    html = page.text
    assert "<link rel='stylesheet' href='/static/report.css'>" in html
    assert "<style" not in html and not re.search(r"\sstyle\s*=", html)
    assert "name='viewport' content='width=device-width, initial-scale=1'" in html
    # The plots are data: URIs, which the policy allows (img-src 'self' data:).
    assert html.count('src="data:image/png;base64,') == 3
    css = client.get("/static/report.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert css.text == CSS  # one stylesheet: the file inlines this very text
    again = client.get("/static/report.css", headers={"If-None-Match": css.headers["etag"]})
    assert again.status_code == 304
    # The PDF is laid out from the file's form (its stylesheet inlined, nothing fetched).
    pdf = client.get(f"/sites/{SITE}/report?{MAY}&format=pdf")
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF")


@pytest.mark.integration
def test_the_report_reads_on_a_phone_in_chromium(tmp_path: Path) -> None:
    from ..support.browser import PHONE, browser, need_chromium, signed_in_page
    need_chromium()
    port = free_port()
    path, _ = _month_site(tmp_path, f"127.0.0.1:{port}")
    path.write_text(path.read_text().replace("https://sw.example.org",
                                             f"http://127.0.0.1:{port}", 1))
    web = WebProcess(path, port)
    pw, chromium = browser()
    try:
        page = signed_in_page(chromium.new_context(**PHONE), web.url, tmp_path / "state",
                              OFFICER)
        console: list[str] = []
        page.on("console", lambda m: console.append(m.text))
        page.goto(f"{web.url}/sites/{SITE}/report?{MAY}")
        page.wait_for_load_state("load")
        looks = page.evaluate("""() => {
            const s = (q, p) => getComputedStyle(document.querySelector(q))[p];
            return {collapse: s('table', 'borderCollapse'), th: s('th', 'backgroundColor'),
                    font: s('body', 'fontFamily'),
                    plot: document.querySelector('figure.plot img').getBoundingClientRect().width,
                    scroll: document.documentElement.scrollWidth, inner: window.innerWidth};
        }""")
        page.screenshot(path=str(tmp_path / "report-phone.png"), full_page=True)
        desk = signed_in_page(chromium.new_context(viewport={"width": 1280, "height": 800}),
                              web.url, tmp_path / "state", OFFICER)
        desk.goto(f"{web.url}/sites/{SITE}/report?{MAY}")
        desk.screenshot(path=str(tmp_path / "report-desktop.png"), full_page=False)
        desk_scroll = desk.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        chromium.close()
        pw.stop()
        web.stop()
    assert looks["collapse"] == "collapse" and looks["th"] == "rgb(238, 238, 238)", looks
    assert "system-ui" in looks["font"], looks
    assert looks["scroll"] <= looks["inner"] and 0 < looks["plot"] <= looks["inner"], looks
    assert desk_scroll
    assert not [m for m in console if "Content Security Policy" in m], console
    assert "Traceback" not in web.log(), web.log()

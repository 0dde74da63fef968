"""The report on paper and as a file: two plots a page, no page left nearly empty, and
the file ``--out FILE.html`` one self-contained document with its stylesheet.

May 2026 at a site with everything a report plots: two storms on its rain gauge,
a sediment trap past its clean-out level and a turbidity exceedance at its
outfall (the months of ``test_report_month`` and ``test_report_owed`` together),
recorded through the real engine host. The PDF is WeasyPrint's own document
model of the report's HTML: each page's laid-out boxes say how far down its
content reaches and which plots it holds.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from weasyprint.formatting_structure import boxes  # type: ignore[import-untyped]

from monitor.config.file import load_config
from monitor.store.opening import open_store
from monitor.views.report.build import build_report
from monitor.views.report.pdf import document
from monitor.views.report.photos import photo_grid
from monitor.views.report.style import CSS

from ..support.commandkit import stormwatch
from ..support.daemonkit import SITE
from ..support.photos import LOCAL, jpeg_with_gps, stored_photo
from ..support.reportkit import FROM, TO, month_site, plotted_month

#: A page filled less than this, other than the last, is nearly empty.
NEARLY_EMPTY = 1 / 3




def _month_config(tmp_path: Path) -> Path:
    return month_site(tmp_path, items=plotted_month())


def _pages(doc: Any) -> list[tuple[float, list[str], str]]:
    """Each page: how far down its content area the content reaches (0 to 1), the plots
    on it (their alternative text), and its text."""
    out = []
    for page in doc.pages:
        box = page._page_box
        top = box.content_box_y()
        leaves = [b for child in box.children if not isinstance(child, boxes.MarginBox)
                  for b in child.descendants()
                  if isinstance(b, boxes.TextBox | boxes.ReplacedBox)]
        bottom = max((b.position_y + b.margin_height() for b in leaves), default=top)
        plots = [b.element.get("alt") for b in leaves if isinstance(b, boxes.ReplacedBox)
                 and "time axis:" in (b.element.get("alt") or "")]
        text = " ".join(b.text for b in leaves if isinstance(b, boxes.TextBox))
        out.append(((bottom - top) / box.height, plots, text))
    return out


def test_two_plots_a_page_and_no_page_nearly_empty(tmp_path: Path) -> None:
    config = load_config(_month_config(tmp_path), env={})
    with open_store(config) as store:
        html = build_report(config, store, SITE, FROM, TO, TO)
    pages = _pages(document(html))
    plots = [p for _, on_page, _ in pages for p in on_page]
    assert [p.split(" ", 2)[:2] for p in plots] == [
        ["Hourly", "rain"], ["Sediment", "trap"], ["Turbidity", "downstream"]], plots
    with_plots = [i for i, (_, on_page, _) in enumerate(pages) if on_page]
    assert len(with_plots) <= math.ceil(len(plots) / 2), [len(p[1]) for p in pages]
    # The section's heading is on the page of its first plot, never left behind alone.
    heading = next(i for i, (_, _, text) in enumerate(pages) if "Plots" in text.split())
    assert heading == with_plots[0], (heading, with_plots)
    fills = [round(fill, 2) for fill, _, _ in pages]
    assert all(fill >= NEARLY_EMPTY for fill in fills[:-1]), fills
    assert pages[-1][2].strip() or pages[-1][1], "the last page is blank"


def test_a_season_of_photos_flows_from_page_to_page(tmp_path: Path) -> None:
    """Fourteen photos after most of a page of text: they run on from row to row, their
    heading with the first row, never a page with the heading alone."""
    photos = [{"sha256": stored_photo(tmp_path, jpeg_with_gps(size=(640 + i, 480))),
               "taken_at": "2026-11-30T14:15:00Z", "lat": 40.7128, "lon": -74.006,
               "caption": f"photo {i}"} for i in range(14)]
    html = (f"<!DOCTYPE html><html><head><style>{CSS}</style></head><body><h1>Report</h1>"
            f"<p>{'words ' * 600}</p><h2>Inspection photos</h2>"
            f"{photo_grid(photos, tmp_path, LOCAL)}<h2>After</h2></body></html>")
    pages = _pages(document(html))
    fills = [round(fill, 2) for fill, _, _ in pages]
    assert all(fill >= NEARLY_EMPTY for fill in fills[:-1]), fills
    heading = next(i for i, (_, _, text) in enumerate(pages) if "Inspection photos" in text)
    assert "photo 0" in pages[heading][2]


def test_the_file_holds_its_stylesheet_and_reads_on_a_phone(tmp_path: Path) -> None:
    out = tmp_path / "may.html"
    run = stormwatch(_month_config(tmp_path), ("report", "--site", SITE, "--from",
                                               "2026-05-01", "--to", "2026-05-31"), out=out)
    assert run.returncode == 0, run.stderr
    html = out.read_text(encoding="utf-8")
    # One file to mail: the stylesheet inlined (no policy applies to a file), the plots
    # data: URIs, nothing linked.
    assert f"<style>{CSS}</style>" in html
    assert "<link" not in html and "@media print" in CSS
    assert '<meta name=\'viewport\' content=\'width=device-width, initial-scale=1\'>' in html
    assert not re.search(r"\sstyle\s*=", html)
    assert html.count('<figure class="plot"><img alt=') == 3

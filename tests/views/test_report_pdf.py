"""The report as PDF (WeasyPrint, from the same HTML): pages, text, nothing fetched."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

from weasyprint.formatting_structure import boxes  # type: ignore[import-untyped]

from monitor.config.file import load_config
from monitor.store.opening import open_store
from monitor.views.report.build import build_report
from monitor.views.report.pdf import document, render_pdf

from ..support.commandkit import stormwatch
from ..support.daemonkit import SITE
from ..support.reportkit import FROM, TO, month_site


def _text(doc: Any) -> str:
    """Every text box of the laid-out pages, without whitespace (lines wrap anywhere)."""
    parts = [b.text for page in doc.pages for b in page._page_box.descendants()
             if isinstance(b, boxes.TextBox)]
    return "".join("".join(parts).split())


def _squeezed(text: str) -> str:
    return "".join(text.split())


def test_the_pdf_has_the_pages_and_the_outstanding_duties(tmp_path: Path) -> None:
    config = load_config(month_site(tmp_path), env={})
    with open_store(config) as store:
        html = build_report(config, store, SITE, FROM, TO, TO)
    pdf = render_pdf(html)
    assert pdf.startswith(b"%PDF-")
    doc = document(html)
    # Header, law, summary, duties, tables and two plots: a few landscape Letter pages.
    assert 3 <= len(doc.pages) <= 12, len(doc.pages)
    text = _text(doc)
    for words in ("Outstanding at the end of the period",
                  "Corrective action ca-1: re-trench silt fence north",
                  "Remove sediment from trap trap-1", "overdue by 25.0 days",
                  "the week of May 3", "§ 134-8C",
                  f"page 1 of {len(doc.pages)}"):
        assert _squeezed(words) in text, words


def test_nothing_is_fetched_from_the_network() -> None:
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            asked.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return None

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    try:
        pdf = render_pdf(f"<html><head><link rel='stylesheet' href='{base}/s.css'><style>"
                         f"@font-face{{font-family:X;src:url({base}/f.woff)}}"
                         f"body{{font-family:X}}</style></head><body><h1>Report</h1>"
                         f"<img src='{base}/i.png'></body></html>")
    finally:
        server.shutdown()
    assert pdf.startswith(b"%PDF-")
    assert asked == []


def test_the_command_writes_pdf(tmp_path: Path) -> None:
    cfg = month_site(tmp_path)
    args = ("report", "--site", SITE, "--from", "2026-05-01", "--to", "2026-05-31")
    by_name = stormwatch(cfg, args, out=tmp_path / "may.pdf")
    assert by_name.returncode == 0, by_name.stderr
    assert (tmp_path / "may.pdf").read_bytes().startswith(b"%PDF-")
    by_flag = stormwatch(cfg, (*args, "--format", "pdf"), out=tmp_path / "may.out")
    assert by_flag.returncode == 0, by_flag.stderr
    assert (tmp_path / "may.out").read_bytes().startswith(b"%PDF-")
    html = stormwatch(cfg, args, out=tmp_path / "may.html")
    assert html.returncode == 0, html.stderr
    assert (tmp_path / "may.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")

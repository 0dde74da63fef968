"""The compliance report as PDF: WeasyPrint, from the very HTML of ``build_report``.

One document, two forms: the PDF is the HTML laid out for paper by the report's
own stylesheet (``style.py``: its ``@page`` and ``@media print`` rules, US
Letter landscape for the wide tables, two plots a page, the page number and
count at the foot), so the two cannot say different things, and a browser
printing the report gets the same pages. Nothing is fetched: the report
inlines its stylesheet, plots and photo thumbnails (``data:`` URIs), and the
URL fetcher refuses anything else (a network font or image would make the PDF
depend on what a server answers that day, and leak that the report was made);
fonts come from the machine (fontconfig).
"""

from __future__ import annotations

from typing import Any


def no_network() -> Any:
    """WeasyPrint's URL fetcher for the report: ``data:`` URIs only (any other URL is
    refused, and WeasyPrint leaves that resource out)."""
    from weasyprint import URLFetcher  # type: ignore[import-untyped]

    return URLFetcher(allowed_protocols={"data"}, allow_redirects=False)


def document(html: str) -> Any:
    """The laid-out WeasyPrint document of the report (pages, text), nothing fetched."""
    from weasyprint import HTML

    return HTML(string=html, url_fetcher=no_network()).render()


def render_pdf(html: str) -> bytes:
    """The report's HTML as PDF bytes."""
    return document(html).write_pdf()  # type: ignore[no-any-return]

"""The compliance report as PDF: WeasyPrint, from the very HTML of ``build_report``.

One document, two forms: the PDF is the HTML laid out for paper (its ``@page``
rules: US Letter, landscape for the wide tables, the page number and count at
the foot), so the two cannot say different things. Nothing is fetched: the
report inlines its plots and photo thumbnails as ``data:`` URIs, and the URL
fetcher refuses anything else (a network font or image would make the PDF
depend on what a server answers that day, and leak that the report was
made); fonts come from the machine (fontconfig).
"""

from __future__ import annotations

from typing import Any

#: Print layout, added to the report's own styles.
PAGE_CSS = """
@page{size:letter landscape;margin:1.4cm 1.2cm 1.6cm;
 @bottom-left{content:string(title);font-size:8pt;color:#555}
 @bottom-right{content:"page " counter(page) " of " counter(pages);font-size:8pt;color:#555}}
h1{string-set:title content()}
body{margin:0;max-width:none;font-size:9.5pt}
h2{break-after:avoid} tr,figure,img{break-inside:avoid}
th,td{font-size:8.5pt}
"""


def no_network() -> Any:
    """WeasyPrint's URL fetcher for the report: ``data:`` URIs only (any other URL is
    refused, and WeasyPrint leaves that resource out)."""
    from weasyprint import URLFetcher  # type: ignore[import-untyped]

    return URLFetcher(allowed_protocols={"data"}, allow_redirects=False)


def document(html: str) -> Any:
    """The laid-out WeasyPrint document of the report (pages, text), nothing fetched."""
    from weasyprint import CSS, HTML

    fetcher = no_network()
    return HTML(string=html, url_fetcher=fetcher).render(
        stylesheets=[CSS(string=PAGE_CSS, url_fetcher=fetcher)])


def render_pdf(html: str) -> bytes:
    """The report's HTML as PDF bytes."""
    return document(html).write_pdf()  # type: ignore[no-any-return]

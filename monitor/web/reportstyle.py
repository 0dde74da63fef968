"""The compliance report's stylesheet, served by the field app.

The app's Content Security Policy (``style-src 'self'``) ignores the inline
``<style>`` of the report file, so the report page links
``/static/report.css`` instead, answered here from the very text the file
inlines (``views/report/style.py``): one stylesheet, no copy. Its router is
included before the pages' (whose ``/static/{name}`` serves the files of
``static/``).
"""

from __future__ import annotations

import hashlib

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ..views.report.style import CSS, CSS_PATH

router = APIRouter()

#: The stylesheet's validator: it changes only with the program.
ETAG = '"' + hashlib.sha256(CSS.encode()).hexdigest()[:32] + '"'


@router.get(CSS_PATH)
def report_css(request: Request) -> Response:
    headers = {"ETag": ETAG, "Cache-Control": "no-cache"}
    if request.headers.get("if-none-match") == ETAG:
        return Response(status_code=304, headers=headers)
    return Response(CSS, media_type="text/css; charset=utf-8", headers=headers)

"""The last answer of the field app: an unexpected exception is a 500 that keeps the
connection, logged with its traceback.

Theory of operation. What the app means to refuse it refuses with ``Refused``
(a 4xx and ``path.to.field: message``, ``app.py``'s handler). Anything else
that escapes a route is a fault of ours or of the machine (a disk that went
read-only, a photos directory that is a file). Starlette's own last resort,
``ServerErrorMiddleware``, answers 500 and then raises the exception again, so
that the server logs it; uvicorn, seeing an exception after the response
began, closes the transport, and the next request a phone sends on that
HTTP/1.1 keep-alive connection is reset (its offline queue then takes a
sent inspection for a network failure).

``SafetyNet`` sits inside it, around every route: it catches the exception,
logs it once with its traceback under an incident id, answers 500 with that id
(JSON ``{"error": "server: ..."}`` to the API, the app's error page to a
browser: ``answer``) and returns normally, so the connection stays open. The
log line names the route's template (``/signin/{token}``), never the path
itself, nor the query or a header: a path can carry a sign-in or alert token,
and no token goes into a log. An exception after the answer has begun cannot
be answered any more; it is logged, and uvicorn closes that connection.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable

from fastapi import Request
from fastapi.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("monitor.web")

#: Makes the answer to a request: (request, HTTP status, ``field: message``).
Answer = Callable[[Request, int, str], Response]


class Tracked:
    """An ASGI ``send`` that remembers whether the answer has begun (after that, no
    other answer can be sent)."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self.started = False

    async def __call__(self, message: Message) -> None:
        self.started = self.started or message["type"] == "http.response.start"
        await self.send(message)


class SafetyNet:
    """Answer 500 to any exception a route lets out, and keep the connection."""

    def __init__(self, app: ASGIApp, answer: Answer) -> None:
        self.app = app
        self.answer = answer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        tracked = Tracked(send)
        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            incident = secrets.token_hex(4)
            route = getattr(scope.get("route"), "path", "(no route)")
            log.error("web: unexpected %s in %s %s (incident %s)", type(exc).__name__,
                      scope.get("method", "?"), route, incident, exc_info=exc)
            if tracked.started:
                return
            response = self.answer(Request(scope), 500,
                                   f"server: an unexpected error (incident {incident}, in"
                                   " the server's log); try again, or tell the"
                                   " administrator")
            await response(scope, receive, send)

"""The field app's FastAPI application (``create_app``), beside the daemon.

Theory of operation. One process (``stormwatch web``) serves the pages and the
API of the inspection form. It reads the state directory as ``stormwatch
status`` does and writes inspections into the journal through
``host.inspections`` as ``stormwatch inspect`` does; it never runs the engine
(a running daemon applies the row within its loop; with none running,
``commit_inspection`` brings the recorded state up to date itself, under the
state lock, exactly as the command does).

Every request passes ``BodyLimit`` first: a body larger than its bound (one
photo for the photo API, a form of ``MAX_FORM_PHOTOS`` photos for the form) is
refused with 413 as soon as it grows past it, before anything is parsed or
written. Errors of the API are JSON ``{"error": "path.to.field: message"}``;
those of a page are a page saying the same (``answer``); an exception no route
meant is a 500 of the same shape that keeps the connection (``safetynet.py``).
No path component of a request reaches the filesystem: photos are named by
their hash (``store/photos.py``), templates and static files by the app's own
routes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..config import Config, photos_dir_of
from ..host.links import read_secret
from ..store.idempotency import IdempotencyKeys
from ..store.uploads import Limits, Uploads
from ..store.users import Users
from . import actions, api, pages, reportstyle, samples, signin
from .auth import RateLimit, Refused
from .context import HERE, MAX_FORM_PHOTOS, Web, cookies_secure, wall_ms
from .safetynet import SafetyNet, Tracked
from .sweep import PhotoSweep


class BodyTooLarge(Exception):
    """A request body past its bound, raised while it streams in (answered 413)."""


class BodyLimit:
    """Refuse (413) a request body past its bound while it streams in."""

    def __init__(self, app: ASGIApp, bound: Callable[[str], int]) -> None:
        self.app = app
        self.bound = bound

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        limit = self.bound(scope["path"])
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                await _too_large(scope, send, limit)
                return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > limit:
                raise BodyTooLarge()
            return message

        tracked = Tracked(send)
        try:
            await self.app(scope, counted, tracked)
        except BodyTooLarge:
            if not tracked.started:
                await _too_large(scope, send, limit)


async def _too_large(scope: Scope, send: Send, limit: int) -> None:
    response = JSONResponse({"error": f"body: larger than {limit / 1e6:.1f} MB"},
                            status_code=413)
    await response(scope, _nothing, send)


async def _nothing() -> Message:
    return {"type": "http.disconnect"}


def wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/") or \
        "application/json" in request.headers.get("accept", "")


def create_app(config: Config, *, clock: Callable[[], int] = wall_ms,
               wait_s: float = 20.0) -> FastAPI:
    """The app for ``config`` (whose ``web:`` must be set)."""
    web_cfg = config.web
    if web_cfg is None:
        raise ValueError("web: not configured")
    state_dir = Path(config.state_dir)
    max_photo = round(web_cfg.max_photo_mb * 1_000_000)
    uploads = Uploads.open(state_dir)
    web = Web(config=config, secret=read_secret(web_cfg.secret_file),
              users=Users.open(state_dir), keys=IdempotencyKeys.open(state_dir),
              photos_dir=photos_dir_of(config), max_photo_bytes=max_photo,
              secure_cookies=cookies_secure(web_cfg), clock=clock,
              templates=Jinja2Templates(directory=str(HERE / "templates")),
              limiter=RateLimit(), uploads=uploads,
              upload_limits=Limits(web_cfg.photos_per_minute,
                                   round(web_cfg.photo_mb_per_day * MIB)),
              min_free_bytes=round(web_cfg.min_free_mb * MIB),
              sweep=PhotoSweep(config, photos_dir_of(config), uploads), wait_s=wait_s)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(_sweeping(web))
        yield
        task.cancel()
        web.sweep.join(SWEEP_JOIN_S)
        web.users.close()
        web.keys.close()
        web.uploads.close()

    app = FastAPI(title="stormwatch field app", docs_url=None, redoc_url=None,
                  openapi_url=None, lifespan=lifespan)
    app.state.web = web

    def bound(path: str) -> int:
        if path == "/api/v1/photos":
            return max_photo + 65_536
        if path.endswith(("/inspect", "/done")):  # the form's photos, or a repair's
            return MAX_FORM_PHOTOS * max_photo + 1_000_000
        return 1_000_000

    app.add_middleware(BodyLimit, bound=bound)
    # Inside the security headers (added by _handlers, so outside this), so that a
    # 500 carries them too.
    app.add_middleware(SafetyNet, answer=lambda request, status, message:
                       answer(web, request, status, message))

    _handlers(app, web)
    app.include_router(reportstyle.router)  # before the pages' /static/{name}
    app.include_router(pages.router)
    app.include_router(api.router)
    app.include_router(signin.router)
    app.include_router(actions.router)
    app.include_router(samples.router)
    return app


#: The configuration's ``*_mb`` (config/README.md: MiB).
MIB = 1 << 20
#: How often the app offers the photo sweep a turn (it runs at most hourly), and how
#: long a stop waits for a sweep in progress.
SWEEP_POKE_S = 600.0
SWEEP_JOIN_S = 30.0


async def _sweeping(web: Web) -> None:
    """The photo sweep's turns while the app runs (``sweep.py``), the first at once."""
    while True:
        web.sweep.poke(web.now_ms())
        await asyncio.sleep(SWEEP_POKE_S)


def answer(web: Web, request: Request, status: int, message: str,
           title: str | None = None) -> Response:
    """An error as the API answers it (``{"error": "field: message"}``) or as a page
    (``title`` its heading; by default what the status says)."""
    if wants_json(request):
        return JSONResponse({"error": message}, status_code=status)
    if status == 401:  # every page that finds no session offers the way back in
        return signin.not_signed_in(web, request)
    if title is None:
        title = "Not done" if status < 500 else "Something went wrong"
    return web.templates.TemplateResponse(
        request, "message.html", {"title": title, "message": message, "user": None},
        status_code=status)


def _handlers(app: FastAPI, web: Web) -> None:
    """Security headers on every answer; errors as JSON (the API) or a page."""
    @app.middleware("http")
    async def headers(request: Request, call_next: Callable[[Request], Any]) -> Response:
        response: Response = await call_next(request)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        response.headers.setdefault(
            "Content-Security-Policy",
            "default-src 'self'; img-src 'self' data: blob:; style-src 'self';"
            " script-src 'self'; form-action 'self'; frame-ancestors 'none'")
        return response

    @app.exception_handler(Refused)
    async def refused(request: Request, exc: Refused) -> Response:
        return answer(web, request, exc.status, exc.message, exc.title)

    @app.exception_handler(404)
    async def not_found(request: Request, exc: Exception) -> Response:
        if wants_json(request):
            return JSONResponse({"error": "path: no such page"}, status_code=404)
        return HTMLResponse("<!doctype html><title>Not found</title><p>No such page.</p>",
                            status_code=404)

    @app.exception_handler(405)
    async def not_allowed(request: Request, exc: Exception) -> Response:
        return JSONResponse({"error": f"method: {request.method} not allowed here"},
                            status_code=405)

"""The pages: sign-in, my sites, a site, the inspection form and its answer, the officer's
overview, the report and the log book as CSV. Plain HTML forms that work without
JavaScript; ``static/app.js`` adds the camera, the location and the offline queue.

Every page that shows a site checks ``may_read``, the form ``may_record``, on
every request (``auth.check_site``: a site the person may not read is answered
as one that does not exist); a page without a session asks for sign-in (401).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, Final
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, RedirectResponse, Response
from starlette.datastructures import FormData, UploadFile
from starlette.formparsers import MultiPartException

from ..config import SiteConfig
from ..contract.events import StormQualified
from ..contract.inputs import fix_caption
from ..contract.localtime import local_datetime
from ..contract.permits import rule_words
from ..host.links import LinkError, verify_link
from ..rules.permits.benchmark import watches
from ..rules.permits.duties import permits_of
from ..store import Store
from ..store.opening import open_store
from ..store.users import User
from .api import save_upload
from .auth import (
    CSRF_FIELD,
    SESSION_COOKIE,
    Caller,
    Refused,
    caller_of,
    check_csrf,
    check_site,
    clear_cookie,
    csrf_token,
)
from .context import HERE, MAX_FORM_PHOTOS, Web, form_field, web_of
from .owedwords import rows_of
from .record import CONDITIONS, KINDS, STATEMENT, local_input_to_iso
from .signin import ENDED, ask_signin
from .siteview import SiteView, read_sites

router = APIRouter()
STATIC: Final = {"app.js": "text/javascript", "app.css": "text/css", "sw.js": "text/javascript",
                 "manifest.json": "application/manifest+json",
                 # The home-screen icons (``manifest.json``, ``base.html``).
                 "icon-192.png": "image/png", "icon-512.png": "image/png",
                 "icon-maskable-512.png": "image/png", "apple-touch-icon.png": "image/png",
                 "favicon.ico": "image/x-icon"}
FORM_ROWS: Final = 3


@contextmanager
def reading(web: Web) -> Iterator[Store]:
    try:
        store = open_store(web.config, readonly=True)
    except Exception as exc:  # a missing or unreadable database: say so, never "all clear"
        raise Refused(503, f"state_dir: cannot read the state database ({exc})") from None
    with store:
        yield store


def page(web: Web, request: Request, name: str, caller: Caller | None, status: int = 200,
         **context: Any) -> Response:
    csrf = csrf_token(web.secret, caller.session_id) if caller and caller.session_id else ""
    return web.templates.TemplateResponse(
        request, name, {"user": caller.user if caller else None, "csrf": csrf,
                        "csrf_field": CSRF_FIELD, **context}, status_code=status)


def signed_in(request: Request, web: Web) -> Caller:
    caller = caller_of(request, web.users, web.now_ms())
    if caller is None:  # a page answers with the e-mail form (``signin.not_signed_in``)
        raise Refused(401, "sign-in: not signed in on this phone; ask for a sign-in link"
                           " by e-mail at /signin")
    return caller


def _sites_of(web: Web, user: User) -> list[str]:
    return [s.id for s in web.config.sites if user.may_read(s.id)]


# --------------------------------------------------------------------------- static


@router.get("/static/{name}")
def static(name: str) -> Response:
    if name not in STATIC:  # a fixed set of names: nothing of the path reaches the disk
        raise Refused(404, "path: no such file")
    return FileResponse(HERE / "static" / name, media_type=STATIC[name])


@router.get("/favicon.ico")
def favicon() -> Response:
    """Where browsers look for the icon before any page names one."""
    return FileResponse(HERE / "static" / "favicon.ico", media_type=STATIC["favicon.ico"])


@router.get("/sw.js")
def service_worker() -> Response:
    return FileResponse(HERE / "static" / "sw.js", media_type="text/javascript",
                        headers={"Service-Worker-Allowed": "/", "Cache-Control": "no-cache"})


# --------------------------------------------------------------------------- sign-out


@router.post("/signout")
async def signout(request: Request) -> Response:
    web = web_of(request)
    caller = signed_in(request, web)
    form = await request.form(max_files=0, max_fields=5)
    check_csrf(web.secret, caller, form_field(form, CSRF_FIELD))
    if caller.session_id:
        web.users.end_session(caller.session_id)
    response = RedirectResponse("/", status_code=303)
    clear_cookie(response, SESSION_COOKIE, secure=web.secure_cookies)
    # What the phone keeps of the session: the worker's copies of the pages (the form
    # with its CSRF token) and the offline queue. The browser deletes them on this
    # header; app.js deletes them itself before it posts (a browser without it).
    response.headers["Clear-Site-Data"] = '"cache", "storage"'
    return response


@router.get("/a/{token}")
def alert_link(token: str, request: Request) -> Response:
    """An alert's deep link: which form to open. It grants nothing by itself."""
    web = web_of(request)
    claim = verify_link(web.secret, token, web.now_ms())
    caller = caller_of(request, web.users, web.now_ms())
    if isinstance(claim, LinkError):
        status = 400 if claim.reason != "expired" else 410
        if caller is None:  # the way in is what they need first; then the start page
            said = ("This alert's link has expired: open the site from your start page"
                    if status == 410 else f"This alert's link is no good: {claim.message}")
            return ask_signin(web, request, status=status, message=f"{said}. {ENDED}",
                              title="Link expired" if status == 410 else "Link damaged")
        raise Refused(status, f"link: {claim.message}")
    target = f"/sites/{claim.site}/inspect" + (f"?clock={claim.clock_id}" if claim.clock_id
                                               else "")
    if caller is None:
        site = web.config.site(claim.site)
        return ask_signin(web, request, title="Sign in first", next_target=target,
                          message=f"{ENDED} The inspection form of"
                                  f" {site.name if site and site.name else claim.site}"
                                  " opens after that.")
    return RedirectResponse(target, status_code=303)


# --------------------------------------------------------------------------- pages


@router.get("/")
def home(request: Request) -> Response:
    """A qualified professional's sites, worst first; the officer's home is the overview."""
    web = web_of(request)
    caller = caller_of(request, web.users, web.now_ms())
    if caller is None:
        return ask_signin(web, request)
    if caller.user.role == "officer":
        return RedirectResponse("/officer", status_code=303)
    with reading(web) as store:
        # The list shows each open storm clock's storm: those events only.
        views = read_sites(web.config, store, web.now_ms(), _sites_of(web, caller.user),
                           events=(StormQualified.TYPE,))
    return page(web, request, "home.html", caller, rows=rows_of(views))


@router.get("/sites/{site_id}")
def site_page(site_id: str, request: Request) -> Response:
    web = web_of(request)
    caller = signed_in(request, web)
    check_site(caller, web.config, site_id)
    with reading(web) as store:
        view = read_sites(web.config, store, web.now_ms(), [site_id], detail=True)[0]
    # The dewatering discharge points a hand sample may be entered for (web/samples.py).
    return page(web, request, "site.html", caller, v=view,
                discharge_points=sorted(watches(view.site)))


@router.get("/officer")
def officer(request: Request) -> Response:
    web = web_of(request)
    caller = signed_in(request, web)
    if caller.user.role != "officer":
        raise Refused(403, "role: the overview of every site is the officer's")
    with reading(web) as store:
        views = read_sites(web.config, store, web.now_ms(), events=False)
        found = verdict(web, store)
    return page(web, request, "officer.html", caller, rows=rows_of(views), verdict=found)


#: How long the officer page reuses a verdict on an unchanged log book head.
VERDICT_S: Final = 60.0


def verdict(web: Web, store: Store) -> Any:
    """``logbook verify`` of the whole chain and the photos, again only when the head
    moved or a minute passed: it reads every row, which the page cannot afford at
    every request on a season of 100 sites."""
    import time

    from ..views.logbook import verify_logbook
    head = store.events.logbook_head()
    held = web.cache.get("verdict")
    if held is not None and held[0] == head and time.monotonic() < held[1]:
        return held[2]
    found = verify_logbook(store, photos_dir=web.photos_dir,
                           sites=[s.id for s in web.config.sites])
    web.cache["verdict"] = (head, time.monotonic() + VERDICT_S, found)
    return found


def action_deadline_words(site: SiteConfig) -> dict[str, str]:
    """At a site whose permits set deadlines for corrective actions and maintenance, each
    kind's deadline in words with its source (the form offers the choice then)."""
    found: dict[str, str] = {}
    for permit in permits_of(site):
        for kind, duty in (("corrective", permit.corrective_action),
                           ("maintenance", permit.maintenance)):
            if duty is not None:
                words = f"{duty.words()} ({rule_words(permit.key, duty.cite.section, '')})"
                found[kind] = f"{found[kind]}; {words}" if kind in found else words
    return found if "maintenance" in found else {}


def _form_context(web: Web, caller: Caller, view: SiteView, clock: str | None) -> dict[str, Any]:
    now = _local_now(web, view.site.zone)
    return {"v": view, "clock": clock, "conditions": CONDITIONS, "kinds": KINDS,
            "statement": STATEMENT, "now_local": now.strftime("%Y-%m-%dT%H:%M"),
            "due_default": (now + timedelta(days=1)).strftime("%Y-%m-%d"),
            "key": secrets.token_urlsafe(18), "rows": range(1, FORM_ROWS + 1),
            "kind": "storm" if any(c["clock"] == "storm" for c in view.open_clocks)
            else "routine",
            "practices": web.config.site(view.site.id).practices,  # type: ignore[union-attr]
            "deadlines": action_deadline_words(view.site)}


@router.get("/sites/{site_id}/inspect")
def inspect_form(site_id: str, request: Request, clock: str | None = None) -> Response:
    web = web_of(request)
    caller = signed_in(request, web)
    check_site(caller, web.config, site_id, record=True)
    with reading(web) as store:
        view = read_sites(web.config, store, web.now_ms(), [site_id])[0]
    return page(web, request, "inspect.html", caller, **_form_context(web, caller, view, clock))


def form_to_json(web: Web, person: str, site_id: str, form: FormData) -> dict[str, Any]:
    """The form's fields as the API's JSON (photos stored on the way, as ``person``'s)."""
    site = web.config.site(site_id)
    assert site is not None
    findings = []
    for p in site.practices:
        cond = form_field(form, f"p.{p.id}.condition") or ""
        if cond:
            findings.append({"practice": p.id, "condition": cond,
                             "note": form_field(form, f"p.{p.id}.note")})
    kinds = form.getlist("ca_kind")
    actions = [{"text": t, "due": d or None,
                **({"kind": "maintenance"} if i < len(kinds) and kinds[i] == "maintenance"
                   else {})}
               for i, (t, d) in enumerate(zip(form.getlist("ca_text"), form.getlist("ca_due"),
                                              strict=False))
               if isinstance(t, str) and t.strip() and isinstance(d, str)]
    photos = []
    uploads = [(k, v) for k, v in form.multi_items() if isinstance(v, UploadFile)]
    if len(uploads) > MAX_FORM_PHOTOS:
        raise Refused(413, f"photos: at most {MAX_FORM_PHOTOS} per inspection")
    for name, upload in uploads:
        if not upload.filename and upload.size == 0:
            continue  # an empty file input
        stored = save_upload(web, person, upload)
        caption: str | None
        if name.startswith("fix."):
            caption = fix_caption(name[4:80])
        else:
            caption = form_field(form, "caption_" + name.removeprefix("photo_")) or None
        photos.append({"sha256": stored.sha256, "caption": caption})
    lat, lon, acc = (form_field(form, n) for n in ("lat", "lon", "accuracy_m"))
    location = None
    if lat and lon:
        try:
            location = {"lat": float(lat), "lon": float(lon),
                        "accuracy_m": float(acc) if acc else None}
        except ValueError:
            raise Refused(422, "location: not a position") from None
    at = form_field(form, "inspected_at")
    return {"inspectors": [n.strip() for n in (form_field(form, "inspector") or "").split("&")
                           if n.strip()],
            "inspected_at": local_input_to_iso(web.config, site_id, at) if at else None,
            "kind": form_field(form, "kind"), "findings": findings, "corrective_actions": actions,
            "resolves": [r for r in form.getlist("resolves") if isinstance(r, str)],
            "notes": form_field(form, "notes"), "photos": photos, "location": location,
            "certified": form.get("certified") == "on"}


@router.post("/sites/{site_id}/inspect")
async def inspect_post(site_id: str, request: Request) -> Response:
    web = web_of(request)
    caller = signed_in(request, web)
    check_site(caller, web.config, site_id, record=True)
    try:
        form = await request.form(max_files=MAX_FORM_PHOTOS + 20, max_fields=400)
    except MultiPartException as exc:
        raise Refused(400, f"form: {exc.message}") from None
    # The token is checked before a single photo is stored.
    check_csrf(web.secret, caller, form_field(form, CSRF_FIELD))
    from starlette.concurrency import run_in_threadpool

    from .api import KEY_RE, once
    key = form_field(form, "idempotency_key") or ""
    if not KEY_RE.fullmatch(key):
        raise Refused(400, "idempotency_key: missing; reload the form")
    data = await run_in_threadpool(form_to_json, web, caller.user.name, site_id, form)
    if not data["certified"]:
        raise Refused(422, "certified: tick the statement to certify the inspection")
    _, answer = await run_in_threadpool(once, web, caller, site_id, key, data)
    site = web.config.site(site_id)
    return page(web, request, "answer.html", caller, status=201, a=answer, site=site)


@router.get("/sites/{site_id}/report")
def report(site_id: str, request: Request, format: str = "html") -> Response:
    web = web_of(request)
    caller = signed_in(request, web)
    check_site(caller, web.config, site_id)
    from ..views.report.build import build_report, parse_bound
    site = web.config.site(site_id)
    assert site is not None
    texts = request.query_params
    bounds = []
    for name, default, end in (("from", _default_from, False), ("to", _today, True)):
        try:
            bounds.append(parse_bound(texts.get(name) or default(web, site), site, end=end))
        except ValueError as exc:
            raise Refused(422, f"{name}: {exc} (use YYYY-MM-DD)") from None
    from_ms, to_ms = bounds
    if from_ms >= to_ms:  # as `stormwatch report` refuses it: no report of nothing
        raise Refused(422, f"from: {texts.get('from')} is not before to {texts.get('to')}")
    # The page links the report's stylesheet (the policy blocks inline styles); the PDF
    # is laid out from the file's form, its stylesheet inlined (nothing is fetched).
    from ..views.report.style import CSS_PATH
    with reading(web) as store:
        # The log book's verdict as the overview holds it (by head): verifying the whole
        # chain at every request cost the report seconds at 100 sites (bench/web.py).
        html = build_report(web.config, store, site_id, from_ms, to_ms, web.now_ms(),
                            stylesheet=None if format == "pdf" else CSS_PATH,
                            logbook_problems=verdict(web, store).problems)
    if format == "pdf":
        import importlib
        try:  # the PDF renderer (WeasyPrint) is optional on a small install
            render_pdf = importlib.import_module("monitor.views.report.pdf").render_pdf
        except (ImportError, AttributeError):
            raise Refused(501, "format: the PDF report is not available here") from None
        return Response(render_pdf(html), media_type="application/pdf")
    return Response(html, media_type="text/html; charset=utf-8")


def _local_now(web: Web, zone: ZoneInfo) -> datetime:
    """The app's clock in the site's zone (an instant every zone can show)."""
    now = local_datetime(web.now_ms(), zone)
    assert now is not None, "the clock is outside years 1 to 9999"
    return now


def _today(web: Web, site: Any) -> str:
    return _local_now(web, site.zone).strftime("%Y-%m-%d")


def _default_from(web: Web, site: Any) -> str:
    return (_local_now(web, site.zone) - timedelta(days=30)).strftime("%Y-%m-%d")


@router.get("/sites/{site_id}/logbook.csv")
def logbook_csv(site_id: str, request: Request) -> Response:
    web = web_of(request)
    caller = signed_in(request, web)
    check_site(caller, web.config, site_id)
    from ..views.logexport import export_logbook
    with reading(web) as store:
        text = export_logbook(web.config, store, site_id, "csv")
    return Response(text, media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{site_id}.csv"'})

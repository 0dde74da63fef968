"""Corrective actions to done: the qualified professional marks one done or sends it to
the contractor; the contractor's link (``actionlink.py``) shows it and takes its "done".

Routes (the site page's actions block, ``templates/_actions.html``, posts to the
first two):

``POST /sites/{id}/actions/{action}/done``  the qualified professional: a note and
    photos; recorded as a ``done`` step by them (``via: web``).
``POST /sites/{id}/actions/{action}/send``  the qualified professional: a signed link
    to that one action, expiring after ``web.link_hours``; mailed to the address
    given (to it alone: ``probe.send_to_address``), and shown to copy either way.
``GET /c/{token}``, ``POST /c/{token}/done``  the contractor: the action, the photos
    of the inspection that found it (``GET /c/{token}/photos/{sha256}``), and a form
    (note, photos, "Mark done") whose CSRF token is bound to the link.

Who may: the first two need a session of someone who may record at the site
(``check_site``: an officer may not, a qualified professional of another site
gets "not configured"), and the page's CSRF token. The link needs nothing else
and grants nothing else; it works while the action is not verified. A stranger
may try links, so the contractor's routes are rate-limited per client. Every
step is journaled by ``host/actionsteps.py`` (the action checked open first) and
so sealed in the log book; no token is logged or recorded. Photos are stored as
the form's are (``api.save_upload``: type, size and pixel checks, the upload
limits of the person, here of the link), their EXIF read from the stored file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile
from starlette.formparsers import MultiPartException

from ..config import photo_pixels_of
from ..contract.clocknames import deadline, spoken
from ..contract.events import InspectionRecorded
from ..contract.inputs import CONTRACTOR, ActionStep, Photo
from ..contract.localtime import local_text
from ..contract.message import INFO, Message
from ..host.actionsteps import StepRefused, commit_step, open_action
from ..host.evidence import stored_photo
from ..host.links import LinkError
from ..rules.clocks.actions import ActionState
from ..sinks.notify.probe import send_to_address
from ..store.photos import PhotoError, is_sha256, photo_path
from .actionlink import ActionClaim, form_token, form_token_ok, sign_action_link, verify_action_link
from .api import save_upload
from .auth import CSRF_FIELD, RateLimit, Refused, check_csrf, check_site
from .context import Web, form_field, web_of
from .pages import page, reading, signed_in

router = APIRouter()
#: Photos one "done" may carry.
MAX_STEP_PHOTOS: Final = 5
#: Requests a minute one client may make of the contractor's routes.
LINK_REQUESTS: Final = 60
#: "Done" reports one link may make in an hour: each is a sealed row of the log book,
#: so a link forwarded to a stranger must not fill it (a crew adding a late photo fits).
DONE_PER_HOUR: Final = 6
EMAIL: Final = re.compile(r"[^@\s<>,;]{1,64}@[A-Za-z0-9.-]{1,190}\.[A-Za-z]{2,24}")
NOTE_CHARS: Final = 2000


async def _form(request: Request, files: int) -> FormData:
    try:
        return await request.form(max_files=files, max_fields=20)
    except MultiPartException as exc:
        raise Refused(400, f"form: {exc.message}") from None


def _open(web: Web, site_id: str, action_id: str) -> ActionState:
    with reading(web) as store:
        try:
            return open_action(store, site_id, action_id)
        except StepRefused as exc:
            raise Refused(exc.status, str(exc)) from None


def _commit(web: Web, step: ActionStep) -> None:
    try:
        commit_step(web.config, step, web.wait_s)
    except StepRefused as exc:
        raise Refused(exc.status, str(exc)) from None


def _photos(web: Web, person: str, form: FormData) -> tuple[Photo, ...]:
    """The form's photos, stored as ``person``'s uploads, as their files say."""
    uploads = [v for _, v in form.multi_items() if isinstance(v, UploadFile)
               and (v.filename or v.size)]
    if len(uploads) > MAX_STEP_PHOTOS:
        raise Refused(413, f"photos: at most {MAX_STEP_PHOTOS}")
    out = []
    for i, upload in enumerate(uploads):
        stored = save_upload(web, person, upload)
        web.uploads.cite(stored.sha256, web.now_ms())
        try:
            out.append(stored_photo(web.photos_dir, Photo(stored.sha256), f"photos.{i}",
                                    now_ms=web.now_ms(), max_pixels=photo_pixels_of(web.config)))
        except PhotoError as exc:
            raise Refused(422, str(exc)) from None
    return tuple(out)


def _note(form: FormData) -> str | None:
    note = form_field(form, "note") or None
    if note is not None and len(note) > NOTE_CHARS:
        raise Refused(422, f"note: at most {NOTE_CHARS} characters")
    return note


# --------------------------------------------------------------------------- the qp


@router.post("/sites/{site_id}/actions/{action_id}/done")
async def qp_done(site_id: str, action_id: str, request: Request) -> Response:
    web = web_of(request)
    caller = signed_in(request, web)
    check_site(caller, web.config, site_id, record=True)
    form = await _form(request, MAX_STEP_PHOTOS + 1)
    check_csrf(web.secret, caller, form_field(form, CSRF_FIELD))
    action = _open(web, site_id, action_id)
    note = _note(form)
    photos = await run_in_threadpool(_photos, web, caller.user.name, form)
    if note is None and not photos:
        raise Refused(422, "note: say what was done, or add a photo of the fix")
    step = ActionStep(site_id, action_id, "done", web.now_ms(), caller.user.name, action.text,
                      note=note, photos=photos, via="web")
    await run_in_threadpool(_commit, web, step)
    return RedirectResponse(f"/sites/{site_id}#action-{action_id}", status_code=303)


@router.post("/sites/{site_id}/actions/{action_id}/send")
async def send(site_id: str, action_id: str, request: Request) -> Response:
    web = web_of(request)
    caller = signed_in(request, web)
    check_site(caller, web.config, site_id, record=True)
    form = await _form(request, 0)
    check_csrf(web.secret, caller, form_field(form, CSRF_FIELD))
    email = form_field(form, "email") or None
    if email is not None and not EMAIL.fullmatch(email):
        raise Refused(422, "email: not an e-mail address (leave it empty to copy the link)")
    action = _open(web, site_id, action_id)
    assert web.config.web is not None
    now = web.now_ms()
    expires = now + web.config.web.link_ms
    token = sign_action_link(web.secret, site_id, action_id, expires)
    link = f"{web.config.web.public_url}/c/{token}"
    site = web.config.site(site_id)
    assert site is not None
    mailed = None
    if email is not None:
        message = contractor_message(site.name or site.id, action, caller.user.name, link,
                                     lambda ms: deadline(ms, site.zone), expires)
        verdicts = await run_in_threadpool(send_to_address, web.config, email, message)
        mailed = bool(verdicts) and verdicts[-1].result.ok
    # The log book names the address only when a mail server took the mail: "sent to
    # crew@example.org" must not stand for a mail that never left.
    step = ActionStep(site_id, action_id, "sent", now, caller.user.name, action.text,
                      to=email if mailed else None)
    await run_in_threadpool(_commit, web, step)
    response = page(web, request, "action_sent.html", caller, site=site, a=action, link=link,
                    email=email, mailed=mailed, until=local_text(expires, site.zone))
    response.headers["Cache-Control"] = "no-store"  # it holds the link
    return response


def contractor_message(site_name: str, action: ActionState, sender: str, link: str,
                       local: Any, expires_ms: int) -> Message:
    """The mail that carries a contractor's link."""
    due = f" by {local(action.due_ms)}" if action.due_ms is not None else ""
    body = (f"{sender} asks you to make a repair at {site_name}{due}:\n\n{action.text}\n\n"
            "Open the link to see it and the photos of the inspection that found it; when it "
            "is done, add a note and photos and press Mark done. No account is needed. The "
            f"link works until {local(expires_ms)}.")
    return Message(f"Repair at {site_name}: {action.text}"[:120], f"{body}\n\n{link}\n",
                   f"{body}\n\n<{link}>\n", INFO)


# --------------------------------------------------------------------------- the contractor


@contextmanager
def _link(request: Request, token: str) -> Iterator[tuple[Web, ActionClaim, ActionState]]:
    """The link's claim and its action, still open; refused (rate limit, bad link,
    verified action) otherwise."""
    web = web_of(request)
    limiter = web.cache.setdefault("contractor_links", RateLimit(attempts=LINK_REQUESTS))
    if not limiter.allow(request.client.host if request.client else "?"):
        raise Refused(429, "link: too many requests from this address; wait a minute")
    claim = verify_action_link(web.secret, token, web.now_ms())
    if isinstance(claim, LinkError):
        raise Refused(400 if claim.reason != "expired" else 410, f"link: {claim.message}",
                      title="This link does not work")
    if web.config.site(claim.site) is None:
        raise Refused(404, "link: the site of this link is no longer configured")
    try:
        action = _open(web, claim.site, claim.action_id)
    except Refused as exc:
        raise Refused(410 if exc.status == 409 else exc.status,
                      "link: this repair was verified done by the next inspection; the link"
                      " no longer works" if exc.status == 409 else exc.message,
                      title="This link does not work") from None
    yield web, claim, action


def _finding_photos(web: Web, claim: ActionClaim) -> list[dict[str, Any]]:
    """The photos of the inspection that asked for the action."""
    with reading(web) as store:
        for e in store.events.current(claim.site):
            b = e.body
            if isinstance(b, InspectionRecorded) and any(
                    a.get("id") == claim.action_id for a in b.corrective_actions):
                return list(b.photos or ())
    return []


def _contractor_page(request: Request, name: str, status: int = 200,
                     **context: Any) -> Response:
    web = web_of(request)
    response = web.templates.TemplateResponse(
        request, name, {"user": None, "csrf": "", **context}, status_code=status)
    response.headers["Cache-Control"] = "no-store"  # its address holds the token
    return response


@router.get("/c/{token}")
def contractor(token: str, request: Request) -> Response:
    with _link(request, token) as (web, claim, action):
        site = web.config.site(claim.site)
        assert site is not None
        return _contractor_page(
            request, "contractor.html", site=site, a=action, token=token,
            photos=_finding_photos(web, claim), form_token=form_token(web.secret, token),
            local=lambda when: spoken(when, site.zone),
            deadline=lambda when: deadline(when, site.zone), csrf_field=CSRF_FIELD)


@router.get("/c/{token}/photos/{sha256}")
def contractor_photo(token: str, sha256: str, request: Request) -> Response:
    with _link(request, token) as (web, claim, _):
        shown = {p.get("sha256") for p in _finding_photos(web, claim)}
        if not is_sha256(sha256) or sha256 not in shown:
            raise Refused(404, "photo: not a photo of this repair")
        path = photo_path(web.photos_dir, sha256)
        if not path.is_file():
            raise Refused(404, "photo: no longer stored")
        return FileResponse(path, media_type=_media_type(path.read_bytes()[:12]),
                            headers={"Cache-Control": "no-store"})


def _media_type(head: bytes) -> str:
    if head.startswith(b"\x89PNG"):
        return "image/png"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return "image/jpeg"


@router.post("/c/{token}/done")
async def contractor_done(token: str, request: Request) -> Response:
    with _link(request, token) as (web, claim, action):
        form = await _form(request, MAX_STEP_PHOTOS + 1)
        if not form_token_ok(web.secret, token, form_field(form, CSRF_FIELD)):
            raise Refused(403, "csrf: the form's security token is missing or wrong; open the"
                               " link again and send it again")
        note = _note(form)
        # Per link: the upload limits of one sending, not of every contractor together.
        person = f"{CONTRACTOR} {claim.site}/{claim.action_id}"
        reports = web.cache.setdefault("contractor_done",
                                       RateLimit(attempts=DONE_PER_HOUR, window_s=3600.0))
        if not reports.allow(person):
            raise Refused(429, f"done: this repair was reported done {DONE_PER_HOUR} times in"
                               " the last hour; that is recorded, nothing more is needed")
        photos = await run_in_threadpool(_photos, web, person, form)
        if note is None and not photos:
            raise Refused(422, "note: say what was done, or add a photo of the fix")
        step = ActionStep(claim.site, claim.action_id, "done", web.now_ms(), CONTRACTOR,
                          action.text, note=note, photos=photos, via="link")
        await run_in_threadpool(_commit, web, step)
        site = web.config.site(claim.site)
        assert site is not None
        return _contractor_page(request, "contractor_done.html", status=201, site=site,
                                a=action, photos=photos)

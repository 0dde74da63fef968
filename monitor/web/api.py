"""The API the page's offline queue uses, and anyone with a token (§ 11 of the design).

``POST /api/v1/photos``: one image (multipart field ``photo``) → ``{"sha256", ...}``.
``POST /api/v1/sites/{id}/inspections``: JSON, header ``Idempotency-Key`` → 201
with the inspection, the clocks it closed and the corrective-action ids; the
same key again gives the same answer and records nothing twice (the key is
kept in ``state_dir/web.sqlite``, ``store/idempotency.py``). Errors are
``{"error": "path.to.field: message"}`` with a 4xx status.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException

from ..config import photo_pixels_of
from ..store.idempotency import Conflict, Done, Pending
from ..store.photos import PhotoError, PhotoTooLarge, StoredPhoto, store_photo
from .auth import CSRF_HEADER, Caller, Refused, caller_of, check_csrf
from .context import Web, web_of
from .record import record

router = APIRouter()
KEY_RE: Final = re.compile(r"[A-Za-z0-9._:-]{8,128}")


def require(request: Request, web: Web) -> Caller:
    caller = caller_of(request, web.users, web.now_ms())
    if caller is None:
        raise Refused(401, "authorization: sign in (the session cookie) or send"
                           " Authorization: Bearer TOKEN (`stormwatch user token`)")
    return caller


def save_upload(web: Web, upload: UploadFile) -> StoredPhoto:
    """Store one uploaded file as a photo (its file name is never used)."""
    upload.file.seek(0)

    def chunks() -> Any:
        while chunk := upload.file.read(65_536):
            yield chunk

    try:
        return store_photo(web.photos_dir, chunks(), web.max_photo_bytes, now_ms=web.now_ms(),
                           max_pixels=photo_pixels_of(web.config))
    except PhotoTooLarge as exc:
        raise Refused(413, str(exc)) from None
    except PhotoError as exc:
        raise Refused(415, str(exc)) from None


def photo_json(photo: StoredPhoto) -> dict[str, Any]:
    """The answer to an upload: ``taken_at`` null and the camera's words in
    ``taken_at_text`` when its EXIF time is no plausible time."""
    return {"sha256": photo.sha256, "size_bytes": photo.size_bytes, "format": photo.format,
            "taken_at": photo.taken_at, "taken_at_text": photo.taken_at_text,
            "lat": photo.lat, "lon": photo.lon}


@router.post("/api/v1/photos")
async def post_photo(request: Request) -> JSONResponse:
    web = web_of(request)
    caller = require(request, web)
    check_csrf(web.secret, caller, request.headers.get(CSRF_HEADER))
    if caller.user.role != "qp":
        raise Refused(403, "role: only a qualified professional records photos")
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise Refused(415, "photo: send multipart/form-data with one file in field 'photo'")
    try:
        form = await request.form(max_files=1, max_fields=5)
    except MultiPartException as exc:
        raise Refused(400, f"photo: {exc.message}") from None
    upload = form.get("photo")
    if not isinstance(upload, UploadFile):
        raise Refused(422, "photo: one file in field 'photo' is required")
    from starlette.concurrency import run_in_threadpool
    stored = await run_in_threadpool(save_upload, web, upload)
    return JSONResponse(photo_json(stored), status_code=201)


@router.post("/api/v1/sites/{site_id}/inspections")
async def post_inspection(site_id: str, request: Request) -> JSONResponse:
    web = web_of(request)
    caller = require(request, web)
    check_csrf(web.secret, caller, request.headers.get(CSRF_HEADER))
    if web.config.site(site_id) is None:
        raise Refused(404, f"site: {site_id[:64]!r} is not configured")
    if not caller.user.may_record(site_id):
        raise Refused(403, f"site: {caller.user.name} may not record inspections at {site_id}")
    key = request.headers.get("idempotency-key", "")
    if not KEY_RE.fullmatch(key):
        raise Refused(400, "Idempotency-Key: required, 8 to 128 characters of A-Z a-z 0-9 . _ : -")
    try:
        data = json.loads(await request.body())
    except (ValueError, UnicodeDecodeError):
        raise Refused(400, "body: not JSON") from None
    if not isinstance(data, dict):
        raise Refused(400, "body: must be a JSON object")
    from starlette.concurrency import run_in_threadpool
    status, answer = await run_in_threadpool(once, web, caller, site_id, key, data)
    return JSONResponse(answer, status_code=status)


def once(web: Web, caller: Caller, site_id: str, key: str,
         data: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Record under ``key`` unless it was recorded already (then its answer again)."""
    claim = web.keys.claim(key, caller.user.name, site_id, web.now_ms())
    if isinstance(claim, Done):
        return claim.status, claim.answer
    if isinstance(claim, Pending):
        raise Refused(409, "Idempotency-Key: this inspection is being recorded; ask again"
                           " in a moment")
    if isinstance(claim, Conflict):
        raise Refused(422, "Idempotency-Key: already used for another inspection")
    try:
        answer = record(web.config, web.photos_dir, caller.user, site_id, data, web.now_ms(),
                        web.wait_s)
    except BaseException:
        web.keys.release(key)
        raise
    web.keys.finish(key, 201, answer)
    return 201, answer

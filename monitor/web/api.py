"""The API the page's offline queue uses, and anyone with a token (monitor/README.md, "web: the
field app").

``POST /api/v1/photos``: one image (multipart field ``photo``) → ``{"sha256", ...}``.
``POST /api/v1/sites/{id}/inspections``: JSON, header ``Idempotency-Key`` → 201
with the inspection, the clocks it closed and the corrective-action ids; the
same key again with the same inspection gives the same answer and records
nothing twice, and with another inspection is 422 (keys are each person's own
and kept with a hash of the request in ``state_dir/web.sqlite``,
``store/idempotency.py``). Errors are
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
from ..store.idempotency import Conflict, Done, Pending, body_digest
from ..store.photos import (
    PhotoError,
    PhotoTooLarge,
    StoredPhoto,
    TooManyBytes,
    free_bytes,
    photo_path,
    store_photo,
)
from ..store.uploads import TooMany
from .auth import CSRF_HEADER, Caller, Refused, caller_of, check_csrf, check_site
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


def save_upload(web: Web, person: str, upload: UploadFile) -> StoredPhoto:
    """Store one uploaded file as a photo of ``person`` (its file name is never used),
    within the free-disk floor and the person's limits (``store/uploads.py``)."""
    size = upload.size or 0
    free = free_bytes(web.photos_dir)
    if free - size < web.min_free_bytes:
        raise Refused(507, f"photo: the server's disk is nearly full ({_mib(free)} MiB"
                           f" free; uploads stop below {_mib(web.min_free_bytes)} MiB,"
                           " web.min_free_mb); nothing was stored; tell the administrator")
    begun = web.uploads.begin(person, web.now_ms(), web.upload_limits)
    if isinstance(begun, TooMany):
        raise Refused(429, _too_many(web, begun))
    stored = _store(web, upload, begun.bytes_left)
    web.uploads.finish(begun.id, stored.sha256, stored.size_bytes)
    if not photo_path(web.photos_dir, stored.sha256).exists():
        # The same bytes were stored long ago and swept between _store and finish;
        # the row committed now keeps any later sweep off this copy.
        stored = _store(web, upload, begun.bytes_left)
    return stored


def _store(web: Web, upload: UploadFile, bytes_left: int) -> StoredPhoto:
    upload.file.seek(0)

    def chunks() -> Any:
        while chunk := upload.file.read(65_536):
            yield chunk

    limit = min(web.max_photo_bytes, bytes_left)
    try:
        return store_photo(web.photos_dir, chunks(), limit, now_ms=web.now_ms(),
                           max_pixels=photo_pixels_of(web.config))
    except TooManyBytes as exc:
        if limit < web.max_photo_bytes:
            raise Refused(429, _quota(web, web.upload_limits.bytes_per_day - bytes_left)
                          ) from None
        raise Refused(413, str(exc)) from None
    except PhotoTooLarge as exc:
        raise Refused(413, str(exc)) from None
    except PhotoError as exc:
        raise Refused(415, str(exc)) from None


def _too_many(web: Web, refused: TooMany) -> str:
    if refused.limit == "rate":
        return (f"photo: at most {web.upload_limits.per_minute} photos a minute per person"
                f" (web.photos_per_minute); wait {refused.wait_s} s")
    return _quota(web, refused.used) + f"; the oldest counts until {refused.wait_s} s from now"


def _quota(web: Web, used: int) -> str:
    return (f"photo: at most {_mib(web.upload_limits.bytes_per_day)} MiB of photos a day"
            f" per person (web.photo_mb_per_day); {_mib(used)} MiB sent in the last 24"
            " hours")


def _mib(size_bytes: int) -> str:
    return f"{size_bytes / (1 << 20):.3g}"


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
    stored = await run_in_threadpool(save_upload, web, caller.user.name, upload)
    web.sweep.poke(web.now_ms())
    return JSONResponse(photo_json(stored), status_code=201)


@router.post("/api/v1/sites/{site_id}/inspections")
async def post_inspection(site_id: str, request: Request) -> JSONResponse:
    web = web_of(request)
    caller = require(request, web)
    check_csrf(web.secret, caller, request.headers.get(CSRF_HEADER))
    check_site(caller, web.config, site_id, record=True)
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
    """Record under the caller's ``key`` unless it was recorded already (then its answer
    again); the same key with another inspection is refused (422)."""
    try:
        digest = body_digest(site_id, data)
    except ValueError:
        raise Refused(422, "body: NaN and Infinity are not numbers here") from None
    name = caller.user.name
    claim = web.keys.claim(key, name, site_id, digest, web.now_ms())
    if isinstance(claim, Done):
        return claim.status, claim.answer
    if isinstance(claim, Pending):
        raise Refused(409, "Idempotency-Key: this inspection is being recorded; ask again"
                           " in a moment")
    if isinstance(claim, Conflict):
        raise Refused(422, "Idempotency-Key: already used with a different inspection")
    try:
        answer = record(web.config, web.photos_dir, caller.user, site_id, data, web.now_ms(),
                        web.wait_s)
    except BaseException:
        web.keys.release(key, name)
        raise
    web.keys.finish(key, name, 201, answer)
    return 201, answer

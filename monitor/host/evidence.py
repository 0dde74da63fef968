"""An inspection's photos as their stored files say, never as a message claims.

A photo is evidence: its EXIF time and position are shown in the report beside
the inspection a qualified professional signs (§ 134-9A(2) "inspection
reports"). The field app reads them from the file it stored; an inspection
from MQTT names its photos by SHA-256 too, and its ``taken_at``, ``lat`` and
``lon`` are only claims of the publisher, so they are replaced here by what
the stored file says (``store/photos.read_image``). A photo that is not stored
(or no longer reads as an image) cannot be evidence: the inspection is
refused naming it, as the field app refuses it, and the publisher can upload
it (``POST /api/v1/photos``) and send the inspection again.

This is the shell's work (it reads files), done where the input is taken: in
the daemon's batch before the journal commit, so the journal row, and so the
log book, hold what the files say.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from zoneinfo import ZoneInfo

from ..contract.inputs import Inspection, Photo
from ..contract.rejects import Rejection, RejectReason
from ..ingest.inspections import with_action_ids
from ..store.photos import PhotoError, photo_path, read_image


class MissingPhoto(PhotoError):
    """A photo an inspection names is not stored under its hash."""


def stored_photo(photos_dir: Path, photo: Photo, field: str, *, now_ms: int,
                 max_pixels: int) -> Photo:
    """``photo`` with the time and position of its stored file (the caption is the
    inspector's); ``PhotoError`` naming ``field`` when it is not stored, not an image
    any more, or past ``max_pixels``. ``now_ms`` bounds a plausible EXIF time
    (``store/photos.read_image``)."""
    path = photo_path(photos_dir, photo.sha256)
    if not path.is_file():
        raise MissingPhoto(f"{field}.sha256: no such photo; send it to /api/v1/photos first")
    try:
        info = read_image(path, now_ms=now_ms, max_pixels=max_pixels)
    except PhotoError as exc:
        raise PhotoError(f"{field}: {exc}") from None
    return Photo(photo.sha256, info.taken_at, info.lat, info.lon, photo.caption,
                 info.taken_at_text)


def with_stored_photos(photos_dir: Path, insp: Inspection, zone: ZoneInfo, *,
                       now_ms: int, max_pixels: int) -> Inspection | Rejection:
    """``insp`` with every photo as its stored file says (``stored_photo``), its
    corrective-action ids made again from that body; a ``Rejection`` (``bad_value``)
    naming the first photo that is not stored or not an image."""
    if not insp.photos:
        return insp
    try:
        photos = tuple(stored_photo(photos_dir, p, f"photos.{i}", now_ms=now_ms,
                                    max_pixels=max_pixels)
                       for i, p in enumerate(insp.photos))
    except PhotoError as exc:
        return Rejection(RejectReason.bad_value, str(exc))
    # The ids hash the whole inspection: made again from the body that is kept, so the
    # same message sent twice is still one journal row.
    return with_action_ids(replace(insp, photos=photos), zone)

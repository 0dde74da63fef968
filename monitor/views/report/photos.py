"""The report's photos of each inspection: thumbnails inline, the hash under each.

An inspection recorded with photos carries them in its ``inspection_recorded``
event (and so in the log book chain): ``photos``, each ``{sha256, taken_at,
lat, lon, caption}`` (``taken_at`` and the position from the photo's EXIF when
it was stored, or null). The bytes are kept under ``photos_dir`` by their hash
(``store/photos.py``: read only through ``photo_path``). Each photo is shown as
a small JPEG thumbnail made with Pillow and inlined as a data URI (the report
stays one self-contained file, and its PDF fetches nothing), with the full
SHA-256 under it, its EXIF time in the site's zone (or, when the camera's time
was no plausible one, what the camera said: ``taken_at_text``), its position
and caption.

A photo whose file is missing, whose bytes no longer have the recorded hash,
that Pillow cannot read, or that has more pixels than ``web.max_photo_mpx``
(one stored before the cap, or since it was lowered: it is not decoded at
all) is shown as such in its place, never dropped: an
inspection's evidence that is gone must be visible in the report a qualified
professional signs. Rows recorded before photos existed have no ``photos``:
no section for them.
"""

from __future__ import annotations

import base64
import hashlib
import io
from collections.abc import Callable, Iterable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from ...contract.events import Event, InspectionRecorded
from ...store.photos import DEFAULT_MAX_PIXELS, PhotoTooLarge, open_image, photo_path
from .tables import LocalTime

#: The longest side of a thumbnail, in pixels, and its JPEG quality: small enough that
#: a season of photos keeps the report a file one can mail.
THUMB_PX = 320
THUMB_QUALITY = 70


def photos_of(body: InspectionRecorded) -> list[Mapping[str, Any]]:
    """The photos an inspection's event carries (none on rows recorded before photos)."""
    return list(body.photos or ())


def photos_section(events: Iterable[Event], photos_dir: Path, local: LocalTime,
                   max_pixels: int = DEFAULT_MAX_PIXELS) -> str:
    """``<h2>Inspection photos</h2>``: each inspection of ``events`` with photos, its
    photos in the order recorded (one of more than ``max_pixels`` not decoded)."""
    parts = []
    for e in events:
        b = e.body
        if not isinstance(b, InspectionRecorded):
            continue
        photos = photos_of(b)
        if not photos:
            continue
        parts.append(f"<h3>Inspection of {escape(local(b.inspected_at))} by "
                     f"{escape(b.inspector)}</h3>"
                     + photo_grid(photos, photos_dir, local, max_pixels))
    if not parts:
        return ""
    return "<h2>Inspection photos</h2>" + "".join(parts)


def photo_grid(photos: Sequence[Mapping[str, Any]], photos_dir: Path, local: LocalTime,
               max_pixels: int = DEFAULT_MAX_PIXELS) -> str:
    """One figure per photo: thumbnail (or what is wrong with the file), caption, EXIF
    time and position, SHA-256."""
    return '<div class="photos">' + "".join(
        _figure(p, photos_dir, local, max_pixels) for p in photos) + "</div>"


def _figure(photo: Mapping[str, Any], photos_dir: Path, local: LocalTime,
            max_pixels: int) -> str:
    sha = str(photo.get("sha256") or "")
    image, problem = _thumbnail(photos_dir, sha, max_pixels)
    if image is not None:
        top = (f'<img class="thumb" alt="{escape(_alt(photo))}" '
               f'src="data:image/jpeg;base64,{image}">')
    else:
        top = f'<div class="missing">{escape(problem)}</div>'
    lines = []
    if photo.get("caption"):
        lines.append(escape(str(photo["caption"])))
    lines.append(escape(taken_words(photo, local)))
    lat, lon = photo.get("lat"), photo.get("lon")
    lines.append(escape(f"at {float(lat):.5f}, {float(lon):.5f}" if lat is not None
                        and lon is not None else "position: no EXIF GPS"))
    lines.append(f'<span class="sha">SHA-256 {escape(sha)}</span>')
    return f"<figure>{top}<figcaption>{'<br>'.join(lines)}</figcaption></figure>"


def taken_words(photo: Mapping[str, Any], local: Callable[[str], str]) -> str:
    """When a photo was taken, for people: ``taken 2026-11-30 09:15 EST`` (``local``
    formats the instant; a stored time it cannot format is shown as stored), or
    what the camera said when that was no plausible time (``taken_at_text``), or
    that its file had no EXIF time."""
    taken, said = photo.get("taken_at"), photo.get("taken_at_text")
    if taken:
        shown = local(str(taken))
        if shown == str(taken):  # a row of an older version: no instant the zone shows
            return f"taken: {taken} as recorded (no time in the site's zone)"
        return f"taken {shown}"
    if said:
        return f"taken: unknown (the camera said \u201c{said}\u201d)"
    return "taken: no EXIF time"


def _alt(photo: Mapping[str, Any]) -> str:
    return str(photo.get("caption") or "inspection photo")


def _thumbnail(photos_dir: Path, sha: str, max_pixels: int) -> tuple[str | None, str]:
    """The thumbnail as base64 JPEG, or None and what is wrong with the photo.

    Decoded no further than needed: a photo of more than ``max_pixels`` not at
    all (its header says how many it has); a JPEG at the smallest of 1/2, 1/4 or
    1/8 of its size that still gives twice the thumbnail (``draft``, the DCT
    scaling of libjpeg: a 48 MP photo costs a 0.75 MP decode); the rest once,
    then shrunk in place before it is turned or converted (no full-size copy).
    """
    try:
        path = photo_path(photos_dir, sha)
    except ValueError:
        return None, "NOT A PHOTO HASH: the record names no photo file"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, "PHOTO MISSING: no file with this hash in the photos directory"
    except OSError as exc:
        return None, f"PHOTO UNREADABLE: {exc.strerror or exc}"
    if hashlib.sha256(data).hexdigest() != sha:
        return None, "PHOTO ALTERED: the file no longer has the recorded SHA-256"
    from PIL import ImageOps, UnidentifiedImageError

    try:
        with open_image(io.BytesIO(data), max_pixels) as img:
            img.draft("RGB", (2 * THUMB_PX, 2 * THUMB_PX))
            img.thumbnail((THUMB_PX, THUMB_PX))
            thumb = ImageOps.exif_transpose(img).convert("RGB")
            out = io.BytesIO()
            thumb.save(out, "JPEG", quality=THUMB_QUALITY)
    except PhotoTooLarge as exc:
        return None, f"PHOTO TOO LARGE TO SHOW: {str(exc).removeprefix('photo: ')}"
    except (UnidentifiedImageError, OSError, ValueError):
        return None, "NOT AN IMAGE: Pillow cannot read the file"
    return base64.b64encode(out.getvalue()).decode("ascii"), ""

"""Inspection photos as evidence (§ 134-9A(2) reports): kept byte for byte by SHA-256.

Theory of operation. A photo arrives as a stream of bytes (an upload of the
field app, or a file). ``store_photo`` writes it to a temporary file in
``photos_dir/tmp`` while hashing it, refusing it as soon as it grows past the
limit (so a huge upload never fills memory or the disk), then checks with
Pillow that it is an image of an accepted type and of at most ``max_pixels``
(read from its header: nothing is decoded, ``open_image``), reads its EXIF
time and GPS position, and renames it to ``photos_dir/<sha256[:2]>/<sha256>``: the rename
is atomic, so a reader sees the whole photo or none. A photo already stored
(the same bytes) is left as it is. Nothing here rewrites or deletes a stored
photo; the inspection's journal row holds the hash, so ``logbook verify`` can
tell a missing or altered file (``check_photo``).

No name from a request reaches the filesystem: the only path component taken
from outside is the hash, and ``photo_path`` accepts only 64 lowercase hex
digits.

A camera's clock is not evidence of anything by itself: a time before
``PLAUSIBLE_FROM`` (no phone wrote one) or more than a day after the upload
(``now_ms``, which the caller passes: nothing here reads a clock) is kept as
unknown, ``taken_at`` None, with the camera's words in ``taken_at_text``, so
that a report shows what the camera said and nothing downstream has to turn
``0001:01:01 00:00:00 +05:00`` into an instant.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

from ..config.web import DEFAULT_MAX_PHOTO_PIXELS
from ..contract.inputs import MAX_TIME_TEXT
from ..contract.times import iso
from ..errors import UserError

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

#: The image types accepted (Pillow's format names): what phones and cameras write.
IMAGE_FORMATS: Final = frozenset({"JPEG", "PNG", "WEBP", "MPO"})
#: The most pixels an image may have (``web.max_photo_mpx``'s default).
DEFAULT_MAX_PIXELS: Final = DEFAULT_MAX_PHOTO_PIXELS
_HEX64: Final = re.compile(r"[0-9a-f]{64}")
_CHUNK: Final = 1 << 16
_EXIF_IFD, _GPS_IFD = 0x8769, 0x8825
_DATETIME_ORIGINAL, _OFFSET_ORIGINAL, _DATETIME = 36867, 36881, 306
#: The earliest EXIF time taken as a photo's time (1990-01-01 UTC): before digital
#: cameras kept EXIF, so only a camera whose clock was never set writes one.
PLAUSIBLE_FROM_MS: Final = 631_152_000_000
#: How far after the upload an EXIF time may lie (a camera's clock a little fast,
#: a zone written wrong) before it is taken as unknown.
PLAUSIBLE_AHEAD_MS: Final = 86_400_000


class PhotoError(UserError):
    """A photo refused: not an image of an accepted type, or too large."""


class PhotoTooLarge(PhotoError):
    """A photo larger than the limits: its bytes (``web.max_photo_mb``) or its pixels
    (``web.max_photo_mpx``)."""


class TooManyBytes(PhotoTooLarge):
    """More bytes arrived than ``store_photo`` was allowed to keep."""


@dataclass(frozen=True, slots=True)
class ImageInfo:
    """What Pillow reads of an image file: its format, its EXIF time (ISO UTC, or None
    with the camera's own text in ``taken_at_text`` when that is no plausible
    time) and its EXIF position."""

    format: str
    taken_at: str | None = None
    lat: float | None = None
    lon: float | None = None
    taken_at_text: str | None = None


@dataclass(frozen=True, slots=True)
class StoredPhoto:
    """A photo as kept: its hash and size, and what ``read_image`` read of it."""

    sha256: str
    size_bytes: int
    format: str
    taken_at: str | None = None
    lat: float | None = None
    lon: float | None = None
    taken_at_text: str | None = None


def is_sha256(text: str) -> bool:
    """Whether ``text`` is a photo's name: 64 lowercase hex digits."""
    return _HEX64.fullmatch(text) is not None


def photo_path(photos_dir: Path, sha256: str) -> Path:
    """Where the photo with this hash is kept (``ValueError`` for anything but a hash)."""
    if not is_sha256(sha256):
        raise ValueError(f"not a SHA-256 (64 lowercase hex digits): {sha256[:80]!r}")
    return photos_dir / sha256[:2] / sha256


def store_photo(photos_dir: Path, chunks: Iterable[bytes], max_bytes: int, *,
                now_ms: int, max_pixels: int = DEFAULT_MAX_PIXELS) -> StoredPhoto:
    """Stream ``chunks`` to disk, check the image, keep it under its hash.

    ``PhotoTooLarge`` as soon as more than ``max_bytes`` arrive or when its header
    says more than ``max_pixels``, ``PhotoError`` when it is no image of
    ``IMAGE_FORMATS``; either way nothing is kept. ``now_ms`` is the upload's
    time, which bounds a plausible EXIF time.
    """
    tmp_dir = photos_dir / "tmp"
    tmp_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(dir=tmp_dir, prefix="upload-")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                size += len(chunk)
                if size > max_bytes:
                    raise TooManyBytes(f"photo: larger than {max_bytes / 1e6:.0f} MB")
                digest.update(chunk)
                out.write(chunk)
        if size == 0:
            raise PhotoError("photo: empty")
        info = read_image(tmp, now_ms=now_ms, max_pixels=max_pixels)
        sha = digest.hexdigest()
        final = photo_path(photos_dir, sha)
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.exists():
            tmp.unlink()
        else:
            os.chmod(tmp, 0o444)
            os.replace(tmp, final)
        return StoredPhoto(sha, size, info.format, info.taken_at, info.lat, info.lon,
                           info.taken_at_text)
    finally:
        tmp.unlink(missing_ok=True)


def store_photo_bytes(photos_dir: Path, data: bytes, max_bytes: int, *,
                      now_ms: int, max_pixels: int = DEFAULT_MAX_PIXELS) -> StoredPhoto:
    """``store_photo`` of bytes already in memory (a test, a small file)."""
    return store_photo(photos_dir, [data[i:i + _CHUNK] for i in range(0, len(data), _CHUNK)],
                       max_bytes, now_ms=now_ms, max_pixels=max_pixels)


def read_file_chunks(path: Path) -> Iterable[bytes]:
    """A file's bytes in chunks, for ``store_photo``."""
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            yield chunk


@contextmanager
def open_image(source: Path | IO[bytes], max_pixels: int) -> Iterator[PILImage]:
    """The image in ``source``, opened (its header read, nothing decoded), or
    ``PhotoTooLarge`` when it has more than ``max_pixels``: a few kilobytes of PNG
    can say 13 000 x 13 000, and decoding that takes most of a gigabyte. Pillow's
    own guard (``DecompressionBombError``, and its warning where warnings are
    errors) fires before the size can be read; it is the same refusal."""
    from PIL import Image

    try:
        img = Image.open(source)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        limit = Image.MAX_IMAGE_PIXELS or 0
        raise PhotoTooLarge(f"photo: more pixels than Pillow opens safely (over"
                            f" {limit / 1e6:.0f} megapixels), at most"
                            f" {max_pixels / 1e6:g} megapixels") from None
    with img:
        width, height = img.size
        if width * height > max_pixels:
            raise PhotoTooLarge(f"photo: {width}\u00d7{height} pixels, at most"
                                f" {max_pixels / 1e6:g} megapixels")
        yield img


def read_image(path: Path, *, now_ms: int, max_pixels: int = DEFAULT_MAX_PIXELS
               ) -> ImageInfo:
    """What an image file says of itself (``ImageInfo``; an EXIF time later than a day
    after ``now_ms`` is unknown), or ``PhotoError`` when Pillow does not take it as
    an image of ``IMAGE_FORMATS`` (``PhotoTooLarge`` past ``max_pixels``). Nothing
    is decoded: the header, the EXIF block and (for PNG) the chunks' checksums."""
    from PIL import UnidentifiedImageError

    try:
        with open_image(path, max_pixels) as img:
            fmt = img.format or ""
            img.verify()
        if fmt not in IMAGE_FORMATS:
            raise PhotoError(f"photo: a {fmt or 'unknown'} image; send JPEG, PNG or WebP")
        with open_image(path, max_pixels) as img:
            exif = img.getexif()
            taken, taken_text = _exif_time(exif, now_ms)
            lat, lon = _exif_position(exif)
    except PhotoError:
        raise
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise PhotoError(f"photo: not an image ({type(exc).__name__}); send JPEG, PNG or WebP"
                         ) from None
    return ImageInfo(fmt, taken, lat, lon, taken_text)


def _exif_time(exif: Any, now_ms: int) -> tuple[str | None, str | None]:
    """EXIF DateTimeOriginal (or DateTime) as (ISO UTC, None), or (None, the camera's
    text) when that is no plausible time (module docstring); (None, None) without one.

    A time without OffsetTimeOriginal is the camera's local time of an unknown zone,
    so it is taken as given (UTC)."""
    sub = exif.get_ifd(_EXIF_IFD)
    text = sub.get(_DATETIME_ORIGINAL) or exif.get(_DATETIME)
    if not isinstance(text, str):
        return None, None
    text = text.strip("\x00 ")
    offset = sub.get(_OFFSET_ORIGINAL)
    offset = offset.strip("\x00 ") if isinstance(offset, str) else ""
    tz = timezone.utc
    if re.fullmatch(r"[+-]\d\d:\d\d", offset):
        sign = -1 if offset[0] == "-" else 1
        tz = timezone(sign * timedelta(hours=int(offset[1:3]), minutes=int(offset[4:6])))
    try:
        when = datetime.strptime(text, "%Y:%m:%d %H:%M:%S").replace(tzinfo=tz)
        ms = round(when.timestamp() * 1000)
    except ValueError:  # "0000:00:00 00:00:00", "    :  :     :  :  " (a clock never set)
        ms = None
    if ms is not None and PLAUSIBLE_FROM_MS <= ms <= now_ms + PLAUSIBLE_AHEAD_MS:
        return iso(ms - ms % 1000), None
    said = "".join(c for c in f"{text} {offset}".strip() if c.isprintable())
    return None, said[:MAX_TIME_TEXT] or None


def _exif_position(exif: Any) -> tuple[float | None, float | None]:
    gps = exif.get_ifd(_GPS_IFD)
    try:
        lat = _degrees(gps[2], gps.get(1, "N"), "S")
        lon = _degrees(gps[4], gps.get(3, "E"), "W")
    except (KeyError, TypeError, ValueError, ZeroDivisionError, IndexError):
        return None, None
    if not (-90 <= lat <= 90 and -180 <= lon <= 180):
        return None, None
    return round(lat, 7), round(lon, 7)


def _degrees(dms: Any, ref: Any, negative: str) -> float:
    d, m, s = (float(x) for x in dms)
    value = d + m / 60 + s / 3600
    return -value if str(ref).strip("\x00 ").upper() == negative else value


def free_bytes(photos_dir: Path) -> int:
    """Free space (for a process without root's reserve) on the file system that holds
    ``photos_dir``, or would once it is made."""
    path = photos_dir
    while not path.exists() and path.parent != path:
        path = path.parent
    return shutil.disk_usage(path).free


def check_photo(photos_dir: Path, sha256: str) -> str | None:
    """What is wrong with a stored photo (missing, or its bytes no longer hash to
    its name), or None when it is intact."""
    try:
        path = photo_path(photos_dir, sha256)
    except ValueError as exc:
        return str(exc)
    if not path.is_file():
        return f"photo {sha256} is missing ({path})"
    digest = hashlib.sha256()
    for chunk in read_file_chunks(path):
        digest.update(chunk)
    if digest.hexdigest() != sha256:
        return f"photo {sha256} was altered: its file now hashes to {digest.hexdigest()} ({path})"
    return None

"""The field app's evidence on an inspection: photos, location and certification.

Checked like every other field of an inspection (``ingest/inspections.py``
calls ``check_evidence``): a wrong shape is a ``Rejection`` naming the field,
``photos.1.sha256: ...``. A photo is named by its SHA-256; whether the file is
there is for ``logbook verify`` to say, not for the message to vouch for.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final

from ..contract.inputs import MAX_TIME_TEXT, Location, Photo
from ..contract.rejects import Rejection, RejectReason

_HEX64: Final = re.compile(r"[0-9a-f]{64}")
MAX_CAPTION: Final = 500


@dataclass(frozen=True, slots=True)
class Evidence:
    photos: tuple[Photo, ...] = ()
    location: Location | None = None
    certified: bool | None = None


def _bad(field: str, message: str) -> Rejection:
    return Rejection(RejectReason.bad_value, f"{field}: {message}")


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)


def _coordinates(field: str, lat: object, lon: object) -> Rejection | None:
    if not (_number(lat) and -90 <= lat <= 90):  # type: ignore[operator]
        return _bad(f"{field}.lat", "must be a latitude in degrees (-90..90)")
    if not (_number(lon) and -180 <= lon <= 180):  # type: ignore[operator]
        return _bad(f"{field}.lon", "must be a longitude in degrees (-180..180)")
    return None


def check_photos(value: object) -> tuple[Photo, ...] | Rejection:
    """``photos``: a list of ``{sha256, taken_at, lat, lon, caption, taken_at_text}``
    (only ``sha256`` required)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        return _bad("photos", "must be a list of {sha256, caption}")
    out = []
    for i, item in enumerate(value):
        field = f"photos.{i}"
        if not isinstance(item, dict):
            return _bad(field, "must be {sha256, caption}")
        sha = item.get("sha256")
        if not (isinstance(sha, str) and _HEX64.fullmatch(sha)):
            return _bad(f"{field}.sha256", "must be 64 lowercase hex digits")
        caption, taken = item.get("caption"), item.get("taken_at")
        if caption is not None and not (isinstance(caption, str)
                                        and len(caption) <= MAX_CAPTION):
            return _bad(f"{field}.caption", f"must be text of at most {MAX_CAPTION} characters")
        if taken is not None and not isinstance(taken, str):
            return _bad(f"{field}.taken_at", "must be an ISO 8601 time")
        said = item.get("taken_at_text")
        if said is not None and not (isinstance(said, str) and len(said) <= MAX_TIME_TEXT):
            return _bad(f"{field}.taken_at_text",
                        f"must be text of at most {MAX_TIME_TEXT} characters")
        lat, lon = item.get("lat"), item.get("lon")
        if lat is not None or lon is not None:
            wrong = _coordinates(field, lat, lon)
            if wrong is not None:
                return wrong
        out.append(Photo(sha, taken, lat, lon, (caption or "").strip() or None, said))
    return tuple(out)


def check_location(value: object) -> Location | None | Rejection:
    """``location``: ``{lat, lon, accuracy_m}`` or null."""
    if value is None:
        return None
    if not isinstance(value, dict):
        return _bad("location", "must be {lat, lon, accuracy_m} or null")
    wrong = _coordinates("location", value.get("lat"), value.get("lon"))
    if wrong is not None:
        return wrong
    acc = value.get("accuracy_m")
    if acc is not None and not (_number(acc) and acc >= 0):
        return _bad("location.accuracy_m", "must be metres (0 or more) or null")
    return Location(float(value["lat"]), float(value["lon"]),
                    None if acc is None else float(acc))


def check_evidence(fields: object) -> Evidence | Rejection:
    """``photos``, ``location`` and ``certified`` of an inspection message."""
    assert isinstance(fields, dict) or hasattr(fields, "get")
    photos = check_photos(fields.get("photos"))
    if isinstance(photos, Rejection):
        return photos
    location = check_location(fields.get("location"))
    if isinstance(location, Rejection):
        return location
    certified = fields.get("certified")
    if certified is not None and not isinstance(certified, bool):
        return _bad("certified", "must be true or false")
    return Evidence(photos, location, certified)

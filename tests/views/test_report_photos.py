"""The report's inspection photos: thumbnails inline, the hash under each, EXIF time
and position in the site's zone, the caption; a missing or altered file shown as such."""

from __future__ import annotations

import base64
import hashlib
import io
import re
from pathlib import Path

from PIL import Image

from monitor.contract.events import Event, Fact, InspectionRecorded
from monitor.store.photos import photo_path
from monitor.views.report.photos import THUMB_PX, photo_grid, photos_section

from ..support.photos import LOCAL, jpeg_with_gps, png_plain, stored_photo


def _thumb(html: str) -> Image.Image:
    (data,) = re.findall(r'src="data:image/jpeg;base64,([^"]+)"', html)
    return Image.open(io.BytesIO(base64.b64decode(data)))


def test_a_photo_is_a_small_inline_thumbnail_with_its_hash_time_and_place(
        tmp_path: Path) -> None:
    data = jpeg_with_gps(size=(1280, 960))
    sha = stored_photo(tmp_path, data)
    assert sha == hashlib.sha256(data).hexdigest()
    html = photo_grid([{"sha256": sha, "taken_at": "2026-11-30T14:15:00Z", "lat": 40.7128,
                        "lon": -74.006, "caption": "silt fence <north> after repair"}],
                      tmp_path, LOCAL)
    thumb = _thumb(html)
    # 1280 x 960 scaled to fit 320 px: 320 x 240, as JPEG.
    assert (thumb.format, thumb.size) == ("JPEG", (THUMB_PX, 240))
    assert f"SHA-256 {sha}" in html
    # 14:15 UTC on Nov 30 is 09:15 EST.
    assert "taken 2026-11-30 09:15 EST" in html
    assert "at 40.71280, -74.00600" in html
    assert "silt fence &lt;north&gt; after repair" in html and "<north>" not in html
    assert 'alt="silt fence &lt;north&gt; after repair"' in html


def test_missing_altered_and_non_image_files_are_shown_never_dropped(tmp_path: Path) -> None:
    kept = stored_photo(tmp_path, png_plain())
    altered = stored_photo(tmp_path, jpeg_with_gps())
    photo_path(tmp_path, altered).write_bytes(b"not the photo any more")
    missing = hashlib.sha256(b"a photo never stored").hexdigest()
    not_image = hashlib.sha256(b"text").hexdigest()
    photo_path(tmp_path, not_image).parent.mkdir(parents=True, exist_ok=True)
    photo_path(tmp_path, not_image).write_bytes(b"text")
    photos = [{"sha256": s, "taken_at": None, "lat": None, "lon": None, "caption": None}
              for s in (kept, missing, altered, not_image, "../../etc/passwd")]
    html = photo_grid(photos, tmp_path, LOCAL)
    figures = html.split("<figure>")[1:]
    assert len(figures) == 5
    assert "data:image/jpeg;base64," in figures[0]
    assert "taken: no EXIF time" in figures[0] and "position: no EXIF GPS" in figures[0]
    assert "PHOTO MISSING" in figures[1] and f"SHA-256 {missing}" in figures[1]
    assert "PHOTO ALTERED" in figures[2] and f"SHA-256 {altered}" in figures[2]
    assert "NOT AN IMAGE" in figures[3]
    assert "NOT A PHOTO HASH" in figures[4]
    assert html.count("data:image/jpeg;base64,") == 1


def _inspection(**extra: object) -> Event:
    data = {"inspector": "J. Rivera", "kind": "routine", "inspected_at": "2026-11-30T14:00:00Z",
            "closes": [], "entered_at": None, "backdated": False, "findings": [],
            "corrective_actions": [], "inspectors": ["J. Rivera"], "credentials": [""],
            "resolves": [], **extra}
    body = InspectionRecorded.from_json(data)
    return Event(Fact("branch-meadows", 0, "i-1", body))


def test_inspections_recorded_before_photos_have_no_photo_section(tmp_path: Path) -> None:
    assert photos_section([_inspection()], tmp_path, LOCAL) == ""


def test_an_inspections_photos_from_its_event(tmp_path: Path) -> None:
    sha = stored_photo(tmp_path, jpeg_with_gps())
    html = photos_section([_inspection(photos=[{"sha256": sha, "taken_at": None, "lat": None,
                                                "lon": None, "caption": "inlet"}])],
                          tmp_path, LOCAL)
    assert html.startswith("<h2>Inspection photos</h2><h3>Inspection of "
                           "2026-11-30 09:00 EST by J. Rivera</h3>")
    assert f"SHA-256 {sha}" in html and "inlet" in html

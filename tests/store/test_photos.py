"""Photos kept byte for byte by SHA-256 (``monitor/store/photos.py``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from monitor.store.photos import (
    PhotoError,
    PhotoTooLarge,
    check_photo,
    photo_path,
    store_photo,
    store_photo_bytes,
)
from tests.support.photos import NOW_MS, jpeg_with_gps, png_plain


def test_a_jpeg_is_kept_under_its_hash_with_its_exif_time_and_position(tmp_path: Path) -> None:
    data = jpeg_with_gps(lat=40.7128, lon=-74.006, taken="2026:11:30 09:15:00",
                         offset="-05:00")
    got = store_photo_bytes(tmp_path, data, 1_000_000, now_ms=NOW_MS)
    sha = hashlib.sha256(data).hexdigest()
    assert got.sha256 == sha and got.size_bytes == len(data) and got.format == "JPEG"
    assert got.taken_at == "2026-11-30T14:15:00Z"  # 09:15 at -05:00
    assert got.lat == pytest.approx(40.7128, abs=1e-4)
    assert got.lon == pytest.approx(-74.006, abs=1e-4)
    path = tmp_path / sha[:2] / sha
    assert path.read_bytes() == data and photo_path(tmp_path, sha) == path
    assert list((tmp_path / "tmp").iterdir()) == []
    assert check_photo(tmp_path, sha) is None
    # The same bytes again: the same photo, nothing rewritten.
    assert store_photo_bytes(tmp_path, data, 1_000_000, now_ms=NOW_MS).sha256 == sha


def test_a_png_without_exif_has_no_time_and_no_position(tmp_path: Path) -> None:
    got = store_photo_bytes(tmp_path, png_plain(), 1_000_000, now_ms=NOW_MS)
    assert (got.format, got.taken_at, got.lat, got.lon) == ("PNG", None, None, None)


@pytest.mark.parametrize("data", [b"", b"%PDF-1.4 not an image", b"\xff\xd8\xff\xe0 truncated"])
def test_what_is_no_image_is_refused_and_nothing_is_kept(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(PhotoError):
        store_photo_bytes(tmp_path, data, 1_000_000, now_ms=NOW_MS)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_a_gif_is_an_image_but_not_a_photo_type(tmp_path: Path) -> None:
    import io

    from PIL import Image
    buf = io.BytesIO()
    Image.new("P", (4, 4)).save(buf, "GIF")
    with pytest.raises(PhotoError, match="GIF"):
        store_photo_bytes(tmp_path, buf.getvalue(), 1_000_000, now_ms=NOW_MS)


def test_an_upload_past_the_limit_stops_at_the_limit(tmp_path: Path) -> None:
    sent = []

    def endless() -> object:
        while True:
            sent.append(1)
            yield b"\0" * 65536

    with pytest.raises(PhotoTooLarge):
        store_photo(tmp_path, endless(), 200_000, now_ms=NOW_MS)  # type: ignore[arg-type]
    assert len(sent) == 4  # read no further than the limit
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_photo_path_takes_only_a_hash() -> None:
    for bad in ["../../etc/passwd", "A" * 64, "0" * 63, "0" * 64 + "/x"]:
        with pytest.raises(ValueError):
            photo_path(Path("/p"), bad)


def test_check_names_a_missing_and_an_altered_photo(tmp_path: Path) -> None:
    data = jpeg_with_gps()
    sha = store_photo_bytes(tmp_path, data, 1_000_000, now_ms=NOW_MS).sha256
    path = photo_path(tmp_path, sha)
    path.chmod(0o644)
    path.write_bytes(data + b"x")
    assert f"photo {sha} was altered" in (check_photo(tmp_path, sha) or "")
    path.unlink()
    assert f"photo {sha} is missing" in (check_photo(tmp_path, sha) or "")

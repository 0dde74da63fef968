"""Photos for the tests: a JPEG with EXIF time and GPS, made with Pillow, and stored as
the web app stores an upload."""

from __future__ import annotations

import io
from pathlib import Path

from monitor.config import SiteConfig
from monitor.store.photos import store_photo
from monitor.views.report.tables import LocalTime

#: The upload time the store tests tell it (2027-01-15 08:00 UTC): after every EXIF
#: time these photos carry, so each is plausible.
NOW_MS = 1_800_000_000_000


def jpeg_with_gps(lat: float = 40.7128, lon: float = -74.006,
                  taken: str = "2026:11:30 09:15:00", offset: str | None = "-05:00",
                  size: tuple[int, int] = (64, 48), color: tuple[int, int, int] = (90, 120, 60)
                  ) -> bytes:
    """A small JPEG whose EXIF says when (``taken`` at ``offset``) and where."""
    from PIL import Image

    img = Image.new("RGB", size, color)
    exif = Image.Exif()
    exif[306] = taken
    sub = exif.get_ifd(0x8769)
    sub[36867] = taken
    if offset is not None:
        sub[36881] = offset
    gps = exif.get_ifd(0x8825)

    def dms(value: float) -> tuple[float, float, float]:
        value = abs(value)
        d = int(value)
        m = int((value - d) * 60)
        return (float(d), float(m), round((value - d - m / 60) * 3600, 4))

    gps[1] = "N" if lat >= 0 else "S"
    gps[2] = dms(lat)
    gps[3] = "E" if lon >= 0 else "W"
    gps[4] = dms(lon)
    out = io.BytesIO()
    img.save(out, "JPEG", exif=exif.tobytes(), quality=85)
    return out.getvalue()


def png_plain(size: tuple[int, int] = (8, 8)) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", size, (200, 10, 10)).save(out, "PNG")
    return out.getvalue()


def png_bomb(width: int = 13_000, height: int = 13_000) -> bytes:
    """A PNG of ``width`` x ``height`` black pixels (1 bit each) in a few kilobytes:
    169 megapixels in about 20 KB by default, written chunk by chunk so that making
    it never holds the image."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    row = b"\0" * (1 + (width + 7) // 8)  # filter byte "none", then the bits
    squeeze = zlib.compressobj(9)
    body = b"".join(squeeze.compress(row) for _ in range(height)) + squeeze.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)  # 1-bit greyscale
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", body)
            + chunk(b"IEND", b""))


#: The local time of a report's photo captions: a site in New York.
LOCAL = LocalTime(SiteConfig.model_validate({"id": "branch-meadows",
                                             "timezone": "America/New_York",
                                             "condition": "B"}))


def stored_photo(photos_dir: Path, data: bytes) -> str:
    """Store ``data`` as the web app stores an upload (at ``NOW_MS``); its sha256."""
    return store_photo(photos_dir, [data], 10_000_000, now_ms=NOW_MS).sha256

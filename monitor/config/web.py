"""The field web app's configuration (``web:``) and a site's practices (``sites[].practices``).

Theory of operation
-------------------
``stormwatch web`` serves the inspection form to the qualified professional's
phone (§ 134-9A(2): "a qualified professional conduct site inspections").
``web:`` says where it listens, the public address links are made with, and
the file holding the key that signs those links; without the section there
is no web app and alerts carry no form link. A site's ``practices`` are the
erosion and sediment controls the form asks about one by one (silt fence,
inlet protection, ...), each with an id for the journal row and a name for
people.

The schema refuses what cannot work (a ``public_url`` that is no http(s)
address, a listen address without a port). Whether ``secret_file`` can be
read is a question about the machine, not the file: ``secret_file_problem``
answers it for ``check-config`` and for the commands that sign, so a
configuration can be validated elsewhere than where it runs.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from .base import Id, Model, NonNegativeFloat, PositiveFloat

#: How to make a signing key, said wherever one is missing.
MAKE_SECRET = "make one with: head -c 32 /dev/urandom > FILE; chmod 600 FILE"

#: Fewer bytes than this cannot be a key anybody meant (an empty file, a newline).
MIN_SECRET_BYTES = 16

#: ``web.max_photo_mpx`` by default: every phone camera mode whose JPEG fits in
#: ``max_photo_mb`` (12, 48, 50, 64 MP) with room to spare; a 108 or 200 MP JPEG
#: is 25 to 60 MB and refused for its bytes anyway.
DEFAULT_MAX_PHOTO_MPX = 100.0
DEFAULT_MAX_PHOTO_PIXELS = round(DEFAULT_MAX_PHOTO_MPX * 1_000_000)
#: Pillow refuses outright to open more (``DecompressionBombError``: twice its
#: ``MAX_IMAGE_PIXELS`` of 89 478 485), so a larger cap could not be honoured.
PILLOW_MAX_MPX = 178.0


class Practice(Model):
    """One erosion or sediment control of a site, asked about on the inspection form."""

    id: Id
    name: str = Field(min_length=1)


class WebConfig(Model):
    """The web app (``stormwatch web``) and the links to it in alerts."""

    #: host:port the app listens on (behind a TLS reverse proxy in production).
    listen: str = "127.0.0.1:8080"
    #: The https address people open; sign-in and alert links are made with it.
    public_url: str
    #: The key that signs alert links (at least 16 bytes, read as bytes).
    secret_file: str
    link_hours: PositiveFloat = 72.0
    session_days: PositiveFloat = 30.0
    max_photo_mb: PositiveFloat = 15.0
    #: The most pixels a photo may have, in millions (config/README.md says why 100).
    max_photo_mpx: float = Field(default=DEFAULT_MAX_PHOTO_MPX, gt=0, le=PILLOW_MAX_MPX,
                                 allow_inf_nan=False)
    #: None: ``state_dir/photos`` (``schema.photos_dir_of``).
    photos_dir: str | None = None
    #: Uploads per person: photos in any minute (at least a form's ten), MB in any
    #: 24 hours; past either, 429 (config/README.md).
    photos_per_minute: int = Field(default=30, ge=10)
    photo_mb_per_day: PositiveFloat = 1000.0
    #: Uploads stop (507) while the photos' file system has less free space than this.
    min_free_mb: NonNegativeFloat = 500.0

    @field_validator("listen")
    @classmethod
    def _listen(cls, value: str) -> str:
        host, sep, port = value.rpartition(":")
        if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise ValueError(f"{value!r} is not host:port (e.g. 127.0.0.1:8080)")
        return value

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"{value!r} is not an http(s) address "
                             "(e.g. https://stormwatch.example.org)")
        if parts.query or parts.fragment:
            raise ValueError("must have no query or fragment (links are made by appending a path)")
        return value.rstrip("/")

    @property
    def host(self) -> str:
        return self.listen.rpartition(":")[0].strip("[]")

    @property
    def port(self) -> int:
        return int(self.listen.rpartition(":")[2])

    @property
    def link_ms(self) -> int:
        return int(self.link_hours * 3_600_000)

    @property
    def max_photo_bytes(self) -> int:
        return int(self.max_photo_mb * 1024 * 1024)

    @property
    def max_photo_pixels(self) -> int:
        return round(self.max_photo_mpx * 1_000_000)


def secret_file_problem(secret_file: str | Path) -> str | None:
    """Why ``web.secret_file`` cannot sign links (``web.secret_file: ...``), or None."""
    path = Path(secret_file)
    try:
        size = len(path.read_bytes())
    except FileNotFoundError:
        return f"web.secret_file: there is no file {path}; {MAKE_SECRET}"
    except IsADirectoryError:
        return f"web.secret_file: {path} is a directory; {MAKE_SECRET}"
    except OSError as exc:
        return f"web.secret_file: cannot read {path} ({exc.strerror or exc}); {MAKE_SECRET}"
    if size < MIN_SECRET_BYTES:
        return (f"web.secret_file: {path} holds {size} bytes, fewer than {MIN_SECRET_BYTES}; "
                f"{MAKE_SECRET}")
    return None

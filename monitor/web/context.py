"""What every route of the field app needs (``Web``), kept apart from the app factory
so that the routes and ``app.py`` do not import each other."""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from fastapi import Request
from fastapi.templating import Jinja2Templates
from starlette.datastructures import FormData

from ..config import Config, WebConfig
from ..store.idempotency import IdempotencyKeys
from ..store.uploads import Limits, Uploads
from ..store.users import Users
from .auth import SIGNIN_FAILURES, RateLimit
from .sweep import PhotoSweep

HERE: Final = Path(__file__).parent
MAX_FORM_PHOTOS: Final = 10


def wall_ms() -> int:
    return round(time.time() * 1000)


def is_loopback(listen: str) -> bool:
    host = listen.rpartition(":")[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cookies_secure(web: WebConfig) -> bool:
    """Whether the app's cookies carry ``Secure``: whenever people reach it over https
    (``public_url``), which in the documented deployment is a TLS proxy in front of
    an app on loopback, and whenever it listens beyond loopback. Only an http
    ``public_url`` on loopback (a test, the demo) leaves it off: a browser would
    never send a Secure cookie back over http."""
    return web.public_url.startswith("https://") or not is_loopback(web.listen)


@dataclass
class Web:
    """What every route needs: the configuration, the secret, the stores, the clock."""

    config: Config
    secret: bytes
    users: Users
    keys: IdempotencyKeys
    photos_dir: Path
    max_photo_bytes: int
    secure_cookies: bool
    clock: Callable[[], int]
    templates: Jinja2Templates
    limiter: RateLimit
    #: Who uploaded which photo (``store/uploads.py``), the limits of one person's
    #: uploads, the free space below which uploads stop, and the sweep of photos
    #: no inspection names (``sweep.py``).
    uploads: Uploads
    upload_limits: Limits
    min_free_bytes: int
    sweep: PhotoSweep
    wait_s: float = 20.0
    #: Failed sign-ins from every address together (``auth``: the rate limit).
    failed_signins: RateLimit = field(
        default_factory=lambda: RateLimit(attempts=SIGNIN_FAILURES))
    #: The officer page's log book verdict, by head (``pages.verdict``).
    cache: dict[str, Any] = field(default_factory=dict)

    def now_ms(self) -> int:
        return self.clock()



def form_field(form: FormData, name: str) -> str | None:
    """A text field of a posted form, stripped; None when absent or a file."""
    value = form.get(name)
    return value.strip() if isinstance(value, str) else None


def web_of(request: Request) -> Web:
    web: Web = request.app.state.web
    return web

"""Who is asking: sessions, bearer tokens, CSRF tokens and the sign-in rate limit.

Theory of operation. Sign-in is by a single-use link (``stormwatch user link``):
``GET /signin/{token}`` shows a button and redeems nothing (a mail scanner that
follows links must not use the link up); ``POST`` redeems it (``Users``) and
sets the session cookie. Every cookie of the app is set by ``set_cookie`` and
cleared by ``clear_cookie``: ``HttpOnly``, ``SameSite``, and ``Secure`` whenever
``web.public_url`` is https or the app listens beyond loopback
(``context.cookies_secure``): behind the TLS proxy the app itself sees plain
http on loopback, but the phone talks https, and a cookie that may travel in
the clear is one a network can steal. A session id, a sign-in token and a bearer token are random
and kept only as hashes by ``Users``; none is ever logged (uvicorn's access
log is off, ``commands/web.py``).

Login CSRF. A page of another site could post a sign-in form of its own
with a link of the attacker's: the phone would be signed in as the attacker,
and its offline queue would then send the victim's inspections in the
attacker's name. So the sign-in page sets a random pre-sign-in cookie
(``SIGNIN_COOKIE``: ``SameSite=Strict``, so no other site's post carries it)
and puts the same value in a hidden field; the post must bring both, equal
(``signin_refusal``), and a browser that says the post is ``cross-site`` or
``same-site`` (``Sec-Fetch-Site``) is refused whatever it brings. ``Origin``
is not used: under the app's ``Referrer-Policy: no-referrer`` Chromium sends
``Origin: null`` for the app's own form. A refused post uses nothing up.

A form post carries a CSRF token: the HMAC of the session id under the app's
secret, so it needs no storage and a page of another origin cannot know it.
A JSON post with the cookie carries the same token in ``X-CSRF-Token``; one
with ``Authorization: Bearer`` needs none (no browser sends that by itself).

The rate limit counts sign-in attempts per client address in a sliding window
(in memory: it only needs to slow a guesser down; the tokens are 256 bits).
The address is uvicorn's, which believes ``X-Forwarded-For`` from loopback
(the TLS proxy, ``commands/web.py``); any process on the machine can forge
it there, so failed sign-ins are also counted for the whole app
(``SIGNIN_FAILURES`` a minute): no header makes guessing faster than that.
Only failures count, so people signing in with good links never fill it; a
guesser who fills it delays other people's sign-ins by a minute, not their
sessions.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Literal

from fastapi import Request
from fastapi.responses import Response

from ..config import Config
from ..store.users import User, Users

SESSION_COOKIE: Final = "sw_session"
NEXT_COOKIE: Final = "sw_next"
CSRF_FIELD: Final = "csrf"
CSRF_HEADER: Final = "x-csrf-token"
SIGNIN_COOKIE: Final = "sw_signin"
SIGNIN_FIELD: Final = "signin_check"
#: What ``Sec-Fetch-Site`` may say of a sign-in post (absent: an older browser, a script).
_SIGNIN_FETCH_SITES: Final = frozenset({"same-origin", "none"})
_NONCE: Final = re.compile(r"[A-Za-z0-9_-]{43}")
SIGNIN_ATTEMPTS: Final = 10
SIGNIN_WINDOW_S: Final = 60.0
#: Failed sign-ins a minute from every address together (``Web.failed_signins``).
SIGNIN_FAILURES: Final = 30


class Refused(Exception):
    """A request refused: HTTP ``status`` and ``path.to.field: message``."""

    def __init__(self, status: int, message: str, title: str = "Not done") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.title = title


def csrf_token(secret: bytes, session_id: str) -> str:
    return hmac.new(secret, b"csrf\x00" + session_id.encode(), hashlib.sha256).hexdigest()


def _same(expected: str, given: str) -> bool:
    # As bytes: compare_digest raises on a str with a character beyond ASCII.
    return hmac.compare_digest(expected.encode(), given.encode())


def csrf_ok(secret: bytes, session_id: str | None, given: str | None) -> bool:
    if not session_id or not given:
        return False
    return _same(csrf_token(secret, session_id), given)


def signin_nonce(request: Request) -> str:
    """The pre-sign-in value of this browser: its cookie's, or a new random one."""
    held = request.cookies.get(SIGNIN_COOKIE, "")
    return held if _NONCE.fullmatch(held) else secrets.token_urlsafe(32)


def signin_refusal(request: Request, given: str | None) -> str | None:
    """Why a sign-in post is not the app's own sign-in page's (``path: message``), or None."""
    held = request.cookies.get(SIGNIN_COOKIE)
    fetch_site = request.headers.get("sec-fetch-site")
    if (fetch_site is None or fetch_site in _SIGNIN_FETCH_SITES) and held and given \
            and _same(held, given):
        return None
    return ("sign-in: refused, as it did not come from the sign-in page of this app (a page"
            " of another site may be trying to sign this phone in as another person)."
            " Nothing was signed in and the link was not used. To sign in, open the link"
            " you were sent again and press Sign in on that page.")


def set_cookie(response: Response, name: str, value: str, *, secure: bool,
               max_age: int | None = None, path: str = "/",
               samesite: Literal["lax", "strict"] = "lax") -> None:
    """Set one of the app's cookies: never readable by a script, never sent by a page of
    another site's subrequests, ``Secure`` as ``secure`` says (``Web.secure_cookies``)."""
    response.set_cookie(name, value, max_age=max_age, httponly=True, samesite=samesite,
                        secure=secure, path=path)


def clear_cookie(response: Response, name: str, *, secure: bool, path: str = "/") -> None:
    """Clear one of the app's cookies, with the flags it was set with (a browser may keep
    a Secure cookie that a non-Secure header tries to clear)."""
    response.delete_cookie(name, path=path, httponly=True, samesite="lax", secure=secure)


@dataclass
class RateLimit:
    """At most ``attempts`` per ``window_s`` per key: ``allow`` counts and answers at once;
    ``full`` and ``count`` do it in two steps, for what is counted only when it fails."""

    attempts: int = SIGNIN_ATTEMPTS
    window_s: float = SIGNIN_WINDOW_S
    clock: Callable[[], float] = time.monotonic
    _seen: dict[str, deque[float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _window(self, key: str) -> deque[float]:
        # Under the lock: the times of ``key`` within the window.
        now = self.clock()
        if len(self._seen) > 10_000:  # bounded: forget the oldest addresses
            self._seen.clear()
        seen = self._seen.setdefault(key, deque())
        while seen and seen[0] <= now - self.window_s:
            seen.popleft()
        return seen

    def allow(self, key: str) -> bool:
        with self._lock:
            seen = self._window(key)
            if len(seen) >= self.attempts:
                return False
            seen.append(self.clock())
            return True

    def full(self, key: str) -> bool:
        with self._lock:
            return len(self._window(key)) >= self.attempts

    def count(self, key: str) -> None:
        with self._lock:
            self._window(key).append(self.clock())


@dataclass(frozen=True, slots=True)
class Caller:
    """The person behind a request, and how they proved it."""

    user: User
    session_id: str | None  # None: a bearer token


def caller_of(request: Request, users: Users, now_ms: int) -> Caller | None:
    """The session cookie's or the bearer token's person, or None."""
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        user = users.api_user(auth[7:].strip(), now_ms)
        return Caller(user, None) if user is not None else None
    session = request.cookies.get(SESSION_COOKIE)
    if session:
        user = users.session_user(session, now_ms)
        if user is not None:
            return Caller(user, session)
    return None


def check_site(caller: Caller, config: Config, site_id: str, *, record: bool = False) -> None:
    """Refuse a site the caller may not read exactly as one that does not exist (404, the
    same words): a 403 would tell them which site ids exist. A site they read but may
    not record on (the officer's case) is 403, since they know it exists."""
    if config.site(site_id) is None or not caller.user.may_read(site_id):
        raise Refused(404, f"site: {site_id[:64]!r} is not configured")
    if record and not caller.user.may_record(site_id):
        raise Refused(403, f"site: {caller.user.name} may not record inspections at {site_id}")


def check_csrf(secret: bytes, caller: Caller, given: str | None) -> None:
    """Refuse a cookie-authenticated write without the session's CSRF token."""
    if caller.session_id is None:
        return
    if not csrf_ok(secret, caller.session_id, given):
        raise Refused(403, "csrf: the form's security token is missing or wrong; reload the"
                           " page and send it again")

"""Who is asking: sessions, bearer tokens, CSRF tokens and the sign-in rate limit.

Theory of operation. Sign-in is by a single-use link (``stormwatch user link``):
``GET /signin/{token}`` shows a button and redeems nothing (a mail scanner that
follows links must not use the link up); ``POST`` redeems it (``Users``) and
sets the session cookie: ``HttpOnly``, ``SameSite=Lax``, ``Secure`` unless the
app listens on loopback only (then the TLS proxy in front is the only way in,
or it is a test). A session id, a sign-in token and a bearer token are random
and kept only as hashes by ``Users``; none is ever logged (uvicorn's access
log is off, ``commands/web.py``).

A form post carries a CSRF token: the HMAC of the session id under the app's
secret, so it needs no storage and a page of another origin cannot know it.
A JSON post with the cookie carries the same token in ``X-CSRF-Token``; one
with ``Authorization: Bearer`` needs none (no browser sends that by itself).

The rate limit counts sign-in attempts per client address in a sliding window
(in memory: it only needs to slow a guesser down; the tokens are 256 bits).
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from fastapi import Request

from ..store.users import User, Users

SESSION_COOKIE: Final = "sw_session"
NEXT_COOKIE: Final = "sw_next"
CSRF_FIELD: Final = "csrf"
CSRF_HEADER: Final = "x-csrf-token"
SIGNIN_ATTEMPTS: Final = 10
SIGNIN_WINDOW_S: Final = 60.0


class Refused(Exception):
    """A request refused: HTTP ``status`` and ``path.to.field: message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def csrf_token(secret: bytes, session_id: str) -> str:
    return hmac.new(secret, b"csrf\x00" + session_id.encode(), hashlib.sha256).hexdigest()


def csrf_ok(secret: bytes, session_id: str | None, given: str | None) -> bool:
    if not session_id or not given:
        return False
    return hmac.compare_digest(csrf_token(secret, session_id), given)


@dataclass
class RateLimit:
    """At most ``attempts`` per ``window_s`` per key (the client address)."""

    attempts: int = SIGNIN_ATTEMPTS
    window_s: float = SIGNIN_WINDOW_S
    clock: Callable[[], float] = time.monotonic
    _seen: dict[str, deque[float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def allow(self, key: str) -> bool:
        now = self.clock()
        with self._lock:
            if len(self._seen) > 10_000:  # bounded: forget the oldest addresses
                self._seen.clear()
            seen = self._seen.setdefault(key, deque())
            while seen and seen[0] <= now - self.window_s:
                seen.popleft()
            if len(seen) >= self.attempts:
                return False
            seen.append(now)
            return True


@dataclass(frozen=True, slots=True)
class Caller:
    """The person behind a request, and how they proved it."""

    user: User
    session_id: str | None  # None: a bearer token


def caller_of(request: Request, users: Users, now_ms: int) -> Caller | None:
    """The session cookie's or the bearer token's person, or None."""
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        user = users.api_user(auth[7:].strip())
        return Caller(user, None) if user is not None else None
    session = request.cookies.get(SESSION_COOKIE)
    if session:
        user = users.session_user(session, now_ms)
        if user is not None:
            return Caller(user, session)
    return None


def check_csrf(secret: bytes, caller: Caller, given: str | None) -> None:
    """Refuse a cookie-authenticated write without the session's CSRF token."""
    if caller.session_id is None:
        return
    if not csrf_ok(secret, caller.session_id, given):
        raise Refused(403, "csrf: the form's security token is missing or wrong; reload the"
                           " page and send it again")

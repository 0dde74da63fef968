"""Signed, expiring links from an alert to the inspection form of its site and clock.

Theory of operation
-------------------
An alert routed to the qualified professional (§ 134-9A(2): inspect "within
24 hours of any storm event producing 0.5 inch of precipitation or more")
carries ``{web.public_url}/a/{token}``: one tap opens the form of that site,
prefilled with that clock. Alerts go to shared channels (a team's mailbox,
an ntfy topic), so the link grants no write access by itself: it says only
which form to open, and the web app still asks for a sign-in. What the
signature prevents is a forged link sending someone to another site's form
or keeping one alive past ``web.link_hours``.

A token is ``base64url(claim) "." base64url(HMAC-SHA256(secret, purpose || claim))``
with the claim a compact JSON object ``{"s": site, "c": clock_id, "e":
expires_ms}``; no padding, so it fits a URL path as it is. The purpose
string keeps a link's MAC from ever being valid for another use of the same
key (``sign_claim``/``open_claim`` serve other links under purposes of their own:
the contractor's, ``web/actionlink.py``). Pure functions: the secret and the
clock are passed in (``read_secret`` is the one place that reads the key file,
for the shell that builds the notifier or the web app).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..config.web import WebConfig, secret_file_problem
from ..contract.events import Event
from ..errors import UserError

#: Bound on what is even decoded: a real token is well under 200 characters.
MAX_TOKEN_CHARS = 1024
_PURPOSE = b"stormwatch alert link v1\x00"


@dataclass(frozen=True, slots=True)
class LinkClaim:
    """What a valid link says: the form of ``site`` for ``clock_id`` (None: no clock)."""

    site: str
    clock_id: str | None
    expires_ms: int


@dataclass(frozen=True, slots=True)
class LinkError:
    """Why a link is refused; ``reason`` for code, ``message`` for the person."""

    reason: Literal["malformed", "forged", "expired"]
    message: str


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(secret: bytes, claim: bytes, purpose: bytes) -> bytes:
    return hmac.new(secret, purpose + claim, hashlib.sha256).digest()


def sign_claim(secret: bytes, claim: dict[str, object], purpose: bytes = _PURPOSE) -> str:
    """A token carrying ``claim``, signed for ``purpose`` (module docstring)."""
    data = json.dumps(claim, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return f"{_b64(data)}.{_b64(_mac(secret, data, purpose))}"


def open_claim(secret: bytes, token: str, purpose: bytes = _PURPOSE,
               damaged: str = "this link is damaged (copy all of it from the alert)"
               ) -> dict[str, Any] | LinkError:
    """The claim a token signed with ``secret`` for ``purpose`` carries (its expiry not
    checked yet), or why it is refused (``damaged``: the words for a malformed one)."""
    malformed = LinkError("malformed", damaged)
    if len(token) > MAX_TOKEN_CHARS or token.count(".") != 1:
        return malformed
    body, _, mac = token.partition(".")
    try:
        claim, given = _unb64(body), _unb64(mac)
    except (binascii.Error, ValueError):
        return malformed
    if not hmac.compare_digest(_mac(secret, claim, purpose), given):
        return LinkError("forged", "this link was not made by this stormwatch")
    try:
        data = json.loads(claim)
    except ValueError:
        return malformed
    return data if isinstance(data, dict) else malformed


def sign_link(secret: bytes, site: str, clock_id: str | None, expires_ms: int) -> str:
    """The token of a link to ``site``'s form for ``clock_id``, valid before ``expires_ms``."""
    return sign_claim(secret, {"s": site, "c": clock_id, "e": expires_ms})


def verify_link(secret: bytes, token: str, now_ms: int) -> LinkClaim | LinkError:
    """The claim of a token signed with ``secret`` and not expired at ``now_ms``."""
    data = open_claim(secret, token)
    if isinstance(data, LinkError):
        return data
    malformed = LinkError("malformed", "this link is damaged (copy all of it from the alert)")
    try:
        site, clock_id, expires_ms = data["s"], data["c"], data["e"]
    except KeyError:
        return malformed
    if (not isinstance(site, str) or not (clock_id is None or isinstance(clock_id, str))
            or not isinstance(expires_ms, int) or isinstance(expires_ms, bool)):
        return malformed
    if now_ms >= expires_ms:
        return LinkError("expired", "this link has expired; open the site from the start page")
    return LinkClaim(site=site, clock_id=clock_id, expires_ms=expires_ms)


def read_secret(path: str | Path) -> bytes:
    """The signing key in ``path``, as bytes; a ``UserError`` saying how to make one."""
    problem = secret_file_problem(path)
    if problem is not None:
        raise UserError(problem)
    return Path(path).read_bytes()


def alert_link(web: WebConfig, secret: bytes, site: str, clock_id: str | None,
               now_ms: int) -> str:
    """``{public_url}/a/{token}``: the form link an alert at ``now_ms`` carries."""
    return f"{web.public_url}/a/{sign_link(secret, site, clock_id, now_ms + web.link_ms)}"


def clock_of(event: Event) -> str | None:
    """The clock an event is about (storm, due soon, overdue, closed, missed), if any."""
    clock_id = getattr(event.body, "clock_id", None)
    return clock_id if isinstance(clock_id, str) and clock_id else None


@dataclass(frozen=True)
class FormLinks:
    """What the notify worker needs to put form links in alerts: ``web:`` and its key
    (read once, by the shell that builds the worker)."""

    web: WebConfig
    secret: bytes

    def for_event(self, event: Event, now_ms: int) -> str:
        """The link to ``event``'s site and clock, expiring ``link_hours`` after ``now_ms``."""
        return alert_link(self.web, self.secret, event.site, clock_of(event), now_ms)

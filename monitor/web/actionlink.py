"""The contractor's link to one corrective action: signed, expiring, scoped to it.

Theory of operation
-------------------
A qualified professional hands a repair to the contractor ("Send to
contractor"): the contractor has no account and gets a link,
``{public_url}/c/{token}``, that shows that one action and takes its "done"
(a note, photos). The token is ``base64url(claim) "." base64url(HMAC-SHA256(
secret, purpose || claim))`` with the claim ``{"s": site, "a": action_id,
"e": expires_ms, "n": nonce}``, as the alert links are (``host/links.py``) but
under a purpose of its own, so neither kind of link is ever valid as the other.
It grants that action's page, its inspection's photos and its "done", nothing
else: no session, no other action or site. It stops
working when it expires (``web.link_hours``) or once an inspection has
verified the action (``actions.py`` checks that at every request).

The contractor's form has no session to bind a CSRF token to, so its token is
an HMAC of the link's own token (``form_token``): a page of another site that
does not know the link cannot make one, and one that knows the link holds the
link anyway. The random nonce makes each sending a link of its own.

Pure functions: the secret and the clock are passed in. No token is ever
logged or recorded (the log book's ``corrective_action_sent`` names who sent
it and to which address, never the link).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from ..host.links import LinkError, open_claim, sign_claim

_PURPOSE = b"stormwatch contractor link v1\x00"
_FORM = b"stormwatch contractor form v1\x00"


@dataclass(frozen=True, slots=True)
class ActionClaim:
    """What a valid contractor link says: action ``action_id`` of ``site``."""

    site: str
    action_id: str
    expires_ms: int


def sign_action_link(secret: bytes, site: str, action_id: str, expires_ms: int) -> str:
    """The token of a contractor link to ``site``'s action ``action_id``."""
    return sign_claim(secret, {"s": site, "a": action_id, "e": expires_ms,
                               "n": secrets.token_urlsafe(9)}, _PURPOSE)


def verify_action_link(secret: bytes, token: str, now_ms: int) -> ActionClaim | LinkError:
    """The claim of a contractor link signed with ``secret`` and not expired at ``now_ms``."""
    damaged = "this link is damaged (copy all of it from the message)"
    data = open_claim(secret, token, _PURPOSE, damaged)
    if isinstance(data, LinkError):
        return data
    site, action_id, expires_ms = data.get("s"), data.get("a"), data.get("e")
    if not isinstance(site, str) or not isinstance(action_id, str) \
            or not isinstance(expires_ms, int) or isinstance(expires_ms, bool):
        return LinkError("malformed", damaged)
    if now_ms >= expires_ms:
        return LinkError("expired", "this link has expired; ask the qualified professional"
                                    " who sent it for a new one")
    return ActionClaim(site, action_id, expires_ms)


def form_token(secret: bytes, token: str) -> str:
    """The CSRF token of the contractor's form under link ``token``."""
    return hmac.new(secret, _FORM + token.encode("utf-8"), hashlib.sha256).hexdigest()


def form_token_ok(secret: bytes, token: str, given: str | None) -> bool:
    return given is not None and hmac.compare_digest(form_token(secret, token).encode(),
                                                     given.encode())

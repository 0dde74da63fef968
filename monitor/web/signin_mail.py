"""Sign-in links by mail: a person whose session ended asks for a link with their
e-mail address, on the phone, and it goes to that address alone.

Theory of operation. ``MailDesk.ask`` takes an address someone typed and says
nothing back: whether it belongs to a person of the app, whether the mail went,
whether a limit held it, the page that asked shows the same words, with the
same status and the same timing (``signin.py``). So the lookup, the new
single-use link (``Users.issue_signin``, ``SIGNIN_MINUTES``) and the sending
all happen in a thread of their own after the answer has gone; what became of
it is for the operator, in the log (the person's name and the mail target's
label, never the link nor its token: a link in a log is a sign-in for whoever
reads it).

The mail goes through ``send_to_address`` only: the first mail target of
``notify.targets``, with the person as its only recipient. Never a shared
channel: whoever reads a team's mailbox or an ntfy topic could sign in as
them. Without a mail target there is nothing to send it through; the page
still answers the same and the log says why (``check-config`` warns).

Limits (in memory, like the sign-in limit of ``auth``): ``PER_CLIENT`` asks a
minute from one client address, counted at the request; ``PER_ADDRESS`` mails
to one person's address in ``WINDOW_S`` (a stranger cannot fill someone's
mailbox) and ``OVERALL`` mails in ``WINDOW_S`` for the whole app (no set of
clients and addresses makes the app a mail cannon), both counted in the
thread once the address is found to be a person's: asks for addresses nobody
has cost nothing, so a stranger cannot fill the app's limit with them and keep
everyone else from getting back in. An ask past a limit sends nothing, and
answers the same.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Final
from zoneinfo import ZoneInfo

from ..config import Config
from ..sinks.notify.probe import mail_to, send_to_address, signin_message
from ..store.users import SIGNIN_MINUTES, User
from .auth import RateLimit
from .context import Web

log = logging.getLogger("monitor.web.signin")

WINDOW_S: Final = SIGNIN_MINUTES * 60.0
PER_ADDRESS: Final = 3
PER_CLIENT: Final = 10
OVERALL: Final = 30
#: Longer than any address (RFC 5321: 254): refused before it is counted or kept.
MAX_ADDRESS_CHARS: Final = 254


def normal_address(text: str) -> str | None:
    """The address as it is compared (trimmed, case folded), or None when ``text`` is
    not one: something@somewhere, no spaces, not too long."""
    address = text.strip().casefold()
    local, at, domain = address.rpartition("@")
    if not at or not local or "." not in domain or len(address) > MAX_ADDRESS_CHARS \
            or any(c.isspace() for c in address):
        return None
    return address


@dataclass
class MailDesk:
    """The limits of asking for sign-in links by mail, and the sending."""

    per_address: RateLimit = field(default_factory=lambda: RateLimit(PER_ADDRESS, WINDOW_S))
    per_client: RateLimit = field(default_factory=lambda: RateLimit(PER_CLIENT, 60.0))
    overall: RateLimit = field(default_factory=lambda: RateLimit(OVERALL, WINDOW_S))

    def ask(self, web: Web, address: str, client: str) -> threading.Thread | None:
        """Send a link to the person of ``address`` (normalised), in a thread, unless the
        client's limit holds it: the thread, or None when nothing is sent (for the
        tests). The thread checks the address's and the app's limits itself."""
        if not self._allow(self.per_client, client, "a client address's"):
            return None
        thread = threading.Thread(target=send_link, args=(web, address, web.now_ms(), self),
                                  name="signin-mail", daemon=True)
        thread.start()
        return thread

    def may_mail(self, address: str) -> bool:
        """Count a mail to a person's ``address``, unless its or the app's limit holds it."""
        return self._allow(self.per_address, address, "an e-mail address's") and \
            self._allow(self.overall, "all", "the whole app's")

    @staticmethod
    def _allow(limit: RateLimit, key: str, scope: str) -> bool:
        if limit.allow(key):
            return True
        log.warning("sign-in by mail: not sent, %s limit of %d asks in %.0f s was reached",
                    scope, limit.attempts, limit.window_s)
        return False


def desk_of(web: Web) -> MailDesk:
    """The app's desk: kept with the app's other in-memory state (``Web.cache``)."""
    desk = web.cache.setdefault("signin_mail", MailDesk())
    assert isinstance(desk, MailDesk)
    return desk


def has_mail_target(config: Config) -> bool:
    """Whether ``notify.targets`` has a mail URL a sign-in link can go through."""
    return any(mail_to(t.url, "x@example.org") is not None for t in config.notify.targets)


def send_link(web: Web, address: str, now_ms: int, desk: MailDesk | None = None) -> None:
    """Mail a new sign-in link to each person whose address is ``address``; log what
    became of it. Never raises: it runs where nobody would hear it."""
    try:
        people = [u for u in web.users.all() if u.email and u.email.strip().casefold()
                  == address]
        if not people:
            log.info("sign-in by mail: no person of the app has the address asked for;"
                     " nothing sent")
            return
        if desk is not None and not desk.may_mail(address):
            return
        if not has_mail_target(web.config):
            log.warning("sign-in by mail: not sent to %s: notify.targets has no mail target"
                        " (mailto:// or mailtos://) to send it through",
                        ", ".join(u.name for u in people))
            return
        for user in people:
            _mail(web, user, now_ms)
    except Exception as exc:  # the message of an exception could hold the link: its type only
        log.error("sign-in by mail: not sent (%s)", type(exc).__name__)


def _mail(web: Web, user: User, now_ms: int) -> None:
    assert web.config.web is not None and user.email is not None
    token = web.users.issue_signin(user.name, now_ms, ttl_s=SIGNIN_MINUTES * 60)
    link = f"{web.config.web.public_url}/signin/{token}"
    message = signin_message(user.name, link, now_ms + SIGNIN_MINUTES * 60_000,
                             _zone_of(web.config, user))
    verdicts = send_to_address(web.config, user.email, message)
    if verdicts and verdicts[-1].result.ok:
        log.info("sign-in by mail: sent a link to %s via %s", user.name,
                 verdicts[-1].target.label)
        return
    for v in verdicts:
        log.warning("sign-in by mail: not sent to %s via %s: %s", user.name, v.target.label,
                    v.result.error)


def _zone_of(config: Config, user: User) -> ZoneInfo:
    """The time zone the mail says "until" in: the person's first site's."""
    sites = [s for s in config.sites if s.id in user.sites] or config.sites
    return sites[0].zone

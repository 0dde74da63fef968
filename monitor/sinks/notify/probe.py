"""``stormwatch notify-test``: a test message to every target (or a tag's), a verdict per target;
and ``send_to``, the same sending for other one-off messages (``logbook anchor --send``),
and ``send_to_address``: a message for one person only (``user link --send``).

The first thing a new user runs: it goes through the same targets, the same
Apprise sends and the same secret masking as the daemon, without touching the
store, so it works beside a running daemon and before the first one.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit
from zoneinfo import ZoneInfo

from ...config import Config, NotifyConfig, NotifyTarget
from ...contract.message import INFO, Line, Message
from .messages import local_time
from .targets import SendResult, Target, load_targets


@dataclass(frozen=True)
class Verdict:
    target: Target
    result: SendResult


def probe_message(config: Config, target: Target, tag: str | None, now_ms: int) -> Message:
    """The test message for one target: what it is, where from, and how to route to it."""
    site = config.sites[0]
    when = local_time(now_ms, site.zone)
    host = socket.gethostname()
    tags = ", ".join(sorted(target.tags)) if target.tags else "every tag"
    alert_id = f"test-{now_ms}"
    lines = [Line("Target", target.label), Line("Receives", tags),
             Line("Sent", f"{when} from {host}"), Line("Alert id", alert_id)]
    body = ("This is a test message from stormwatch. If you can read it, alerts routed to "
            f"{'tag ' + repr(tag) if tag else 'this target'} reach you here.")
    text = body + "\n\n" + "\n".join(f"{x.label}: {x.text}" for x in lines) + "\n"
    markdown = body + "\n\n" + "  \n".join(f"**{x.label}:** {x.text}" for x in lines) + "\n"
    return Message(f"stormwatch test message ({site.name or site.id})", text, markdown, INFO)


def send_to(config: Config, tag: str | None,
            message: Callable[[Target], Message]) -> list[Verdict]:
    """Send ``message(target)`` once to each target that receives ``tag`` (all when
    None), through the targets the daemon loads; a verdict per target.

    What ``notify-test`` and ``logbook anchor --send`` share. Raises
    ``NotifySetupError`` when the targets cannot be loaded.
    """
    targets = [t for t in load_targets(config.notify) if tag is None or t.receives(tag)]
    return [Verdict(t, t.send(message(t))) for t in targets]


def run_test(config: Config, tag: str | None = None) -> list[Verdict]:
    """Send the test message to each target that receives ``tag`` (all when None).

    Raises ``NotifySetupError`` when the targets cannot be loaded.
    """
    now_ms = round(time.time() * 1000)
    return send_to(config, tag, lambda t: probe_message(config, t, tag, now_ms))


#: Apprise's e-mail schemes: the targets a message for one address can go through.
MAIL_SCHEMES = ("mailto", "mailtos")


def mail_to(url: str, address: str) -> str | None:
    """The Apprise mail URL ``url`` with ``address`` as its only recipient (the same
    server, login and sender), or None when ``url`` is no mail URL."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in MAIL_SCHEMES:
        return None
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
             if k.lower() not in ("to", "cc", "bcc")]
    # Recipients in the path (mailto://host/a@b.org) go too: only ``address`` gets it.
    return urlunsplit(parts._replace(path="", query=urlencode([*query, ("to", address)])))


def signin_message(name: str, link: str, expires_ms: int, zone: ZoneInfo) -> Message:
    """The mail that carries a sign-in link (``user link --send``, the web app)."""
    until = local_time(expires_ms, zone)
    body = (f"Open this link on your phone to sign in to stormwatch as {name}. It works "
            f"once, until {until}; ask for a new one after that.")
    return Message("stormwatch: your sign-in link", f"{body}\n\n{link}\n",
                   f"{body}\n\n<{link}>\n", INFO)


def send_to_address(config: Config, address: str, message: Message) -> list[Verdict]:
    """Send ``message`` to ``address`` alone, through the first mail target of
    ``notify.targets`` that takes it (its server and login): a sign-in link must
    reach its person, not a shared channel. The verdicts of the targets tried, in
    order (the last one ok when it was sent); none when no target is a mail URL."""
    mails = [NotifyTarget(url=url, name=t.name or f"notify.targets.{i}")
             for i, t in enumerate(config.notify.targets)
             if (url := mail_to(t.url, address)) is not None]
    verdicts: list[Verdict] = []
    for target in load_targets(NotifyConfig(targets=mails)):
        verdicts.append(Verdict(target, target.send(message)))
        if verdicts[-1].result.ok:
            break
    return verdicts

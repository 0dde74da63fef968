"""Apprise targets: loading them from the configuration, and sending to one of them.

A target is one Apprise service (one URL) with the tags whose alerts it
receives. They come from ``notify.targets`` (inline URLs with our ``tags``)
and from ``notify.config_file``, an Apprise configuration file in its own
YAML or TEXT format (``tag:``/``tags:`` per URL), which people already keep
their targets in. ``${VAR}`` in that file is replaced from the environment as
in our own configuration, so its secrets need not sit in it either. A target
without tags receives every alert.

Each target gets an ``Apprise`` object of its own and is notified on its own,
so the outcome is known per target (``Apprise.notify`` answers for all its
services together). Why a send failed is what Apprise logged at WARNING or
above during it, masked (``secrets.mask``).

Loading is local work only (parsing URLs, reading one file): it runs on the
engine thread at start-up, where no network I/O may happen. Sending happens
only on the notification worker's thread and in ``notify-test``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import apprise

from ...config import NotifyConfig
from ...contract.message import Message
from ...errors import UserError
from . import console, secrets

# The console:// scheme must exist before any URL is parsed.
assert console.SCHEME == "console"

_ENV_REF: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class NotifySetupError(UserError):
    """The notify configuration cannot be used; one ``path: message`` line per problem."""

    prefixed = False

    def __init__(self, lines: list[str]) -> None:
        super().__init__(*lines)


def asset() -> apprise.AppriseAsset:
    # secure_logging (Apprise's default) masks passwords in the URLs it logs;
    # set explicitly because our log lines depend on it.
    return apprise.AppriseAsset(app_id="stormwatch", app_desc="Stormwater compliance alerts",
                                secure_logging=True)


@dataclass(frozen=True)
class SendResult:
    ok: bool
    error: str | None = None


@dataclass
class Target:
    """One Apprise service and the tags it receives (none: every tag).

    ``key`` identifies the target in ``outbox_receipts``: its ``name`` when
    configured, else a hash of its privacy URL (stable across restarts and
    reordering, and not the secret itself).
    """

    key: str
    label: str
    tags: frozenset[str]
    service: Any
    origin: str
    body_format: str = "text"
    _apprise: Any = field(default=None, repr=False)

    def receives(self, tag: str) -> bool:
        return not self.tags or tag in self.tags

    def describe(self) -> str:
        tags = ", ".join(sorted(self.tags)) if self.tags else "every tag"
        return f"{self.label} [{tags}]"

    def send(self, message: Message) -> SendResult:
        """Send one message; never raises (a plugin's exception is a failed send)."""
        markdown = self.body_format == "markdown"
        capture = _Capture()
        try:
            with capture.attached():
                result = self._apprise.notify(
                    body=message.markdown if markdown else message.text,
                    title=message.title,
                    notify_type=apprise.NotifyType(message.notify_type),
                    body_format=(apprise.NotifyFormat.MARKDOWN if markdown
                                 else apprise.NotifyFormat.TEXT))
            ok = bool(result)
        except Exception as exc:  # a plugin bug must not stop the worker
            ok = False
            capture.extra.append(f"{type(exc).__name__}: {exc}")
        if ok:
            return SendResult(True)
        reason = "; ".join(dict.fromkeys(capture.lines)) or "the service did not accept it"
        return SendResult(False, secrets.mask(reason))


class _Capture(logging.Handler):
    """Collects what Apprise logs during one send, to say why it failed.

    Apprise states the cause of a failure only at DEBUG ("Socket Exception:
    (535, b'5.7.8 Authentication credentials invalid')") and a vaguer line at
    WARNING ("Connection error while submitting email"). So while a send
    runs, Apprise's logger is opened to DEBUG and kept to itself; afterwards
    the records the logging configuration asked for are passed on as usual.
    """

    #: DEBUG lines worth quoting as the reason of a failure.
    CAUSE = re.compile(r"exception|response details|refused|error", re.IGNORECASE)

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.extra: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    @property
    def lines(self) -> list[str]:
        out = [" ".join(r.getMessage().split()) for r in self.records
               if r.levelno >= logging.WARNING
               or (r.levelno < logging.INFO and self.CAUSE.search(r.getMessage()))]
        return out + self.extra

    @contextmanager
    def attached(self) -> Iterator[None]:
        log = logging.getLogger(secrets.APPRISE_LOGGER)
        level, propagate, wanted = log.level, log.propagate, log.getEffectiveLevel()
        log.setLevel(logging.DEBUG)
        log.propagate = False
        log.addHandler(self)
        try:
            yield
        finally:
            log.removeHandler(self)
            log.setLevel(level)
            log.propagate = propagate
            if propagate:
                root = logging.getLogger()
                for record in self.records:
                    if record.levelno >= wanted:
                        root.handle(record)


def _formats(service: Any) -> list[str]:
    """The body formats a service takes, preferred first (``?format=`` first of all)."""
    declared = getattr(service, "notify_format", apprise.NotifyFormat.TEXT)
    items = list(declared) if isinstance(declared, (tuple, list, set, frozenset)) \
        else [declared]
    override = getattr(service, "_format_override", None)
    if override is not None:
        items.insert(0, override)
    return [str(getattr(f, "value", f)) for f in items]


def choose_body_format(service: Any, setting: str) -> str:
    """``markdown`` or ``text`` for a service under ``notify.body_format``.

    ``auto`` sends Markdown where the service prefers Markdown or HTML (Apprise
    converts it to HTML for e-mail), and plain text elsewhere (SMS, JSON
    hooks, the console), where Markdown would show its asterisks.
    """
    if setting != "auto":
        return setting
    first = _formats(service)[0] if _formats(service) else "text"
    return "markdown" if first in ("markdown", "html") else "text"


def interpolate_env(text: str, env: Mapping[str, str], where: str) -> str:
    """Replace ``${VAR}``; an unset variable is an error naming ``where``."""
    unset: list[str] = []

    def sub(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            unset.append(name)
            return ""
        return env[name]

    out = _ENV_REF.sub(sub, text)
    if unset:
        raise NotifySetupError([f"{where}: environment variable {name} is not set"
                                for name in dict.fromkeys(unset)])
    return out


def _scheme(url: str) -> str:
    return url.split("://", 1)[0] if "://" in url else "(no scheme)"


def _key(label: str, taken: set[str]) -> str:
    base = hashlib.sha256(label.encode("utf-8")).hexdigest()[:16]
    key, n = base, 1
    while key in taken:
        n += 1
        key = f"{base}-{n}"
    return key


def load_targets(config: NotifyConfig, env: Mapping[str, str] | None = None) -> list[Target]:
    """Every target of the configuration, ready to send; ``NotifySetupError`` if unusable.

    Registers each target's secrets for masking (``secrets.register``) and
    installs the masking filter on the logging handlers.
    """
    secrets.install()
    env = os.environ if env is None else env
    problems: list[str] = []
    loaded: list[tuple[Any, frozenset[str], str | None, str]] = []
    for i, t in enumerate(config.targets):
        where = f"notify.targets.{i}.url"
        ap = apprise.Apprise(asset=asset())
        if not ap.add(t.url):
            problems.append(f"{where}: Apprise cannot use this {_scheme(t.url)}:// URL "
                            "(unknown scheme, or a part of it is invalid)")
            continue
        for service in ap:
            loaded.append((service, frozenset(t.tags), t.name, where))
    if config.config_file:
        where = "notify.config_file"
        try:
            text = Path(config.config_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{where}: cannot read {config.config_file} ({exc})")
        else:
            try:
                text = interpolate_env(text, env, where)
            except NotifySetupError as exc:
                problems += exc.lines
            else:
                services = _services_of_config(text)
                if services is None:
                    problems.append(f"{where}: {config.config_file} is not an Apprise YAML or "
                                    "TEXT configuration")
                elif not services:
                    problems.append(f"{where}: {config.config_file} defines no usable URL")
                for service in services or []:
                    tags = frozenset(str(t) for t in getattr(service, "tags", set()) or ())
                    loaded.append((service, tags, None, where))
    if problems:
        raise NotifySetupError(problems)
    targets: list[Target] = []
    taken: set[str] = set()
    for service, tags, name, origin in loaded:
        secrets.register(secrets.secrets_of(service))
        url = secrets.mask(str(service.url(privacy=True)))
        # The label drops the query, mostly Apprise's own defaults (retry=0&...).
        label = name or url.split("?", 1)[0]
        key = name if name else _key(url, taken)
        if key in taken:
            raise NotifySetupError([f"{origin}: two targets are named {name!r}"])
        taken.add(key)
        ap = apprise.Apprise(asset=asset())
        ap.add(service)
        targets.append(Target(key, label, tags, service, origin,
                              choose_body_format(service, config.body_format), ap))
    return targets


def _services_of_config(text: str) -> list[Any] | None:
    """The services of an Apprise configuration text (YAML or TEXT, detected); None if neither."""
    cfg = apprise.AppriseConfig(asset=asset())
    if not cfg.add_config(text):
        return None
    ap = apprise.Apprise(asset=asset())
    ap.add(cfg)
    return list(ap)


def tags_received(targets: list[Target]) -> frozenset[str] | None:
    """The tags some target receives, or None when a target receives every tag."""
    if any(not t.tags for t in targets):
        return None
    return frozenset(tag for t in targets for tag in t.tags)

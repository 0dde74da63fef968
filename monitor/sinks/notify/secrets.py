"""Keeping notification secrets out of every log line and error message.

``monitor.logs.redact`` masks the common shapes (``user:password@host``,
``?token=...``), whatever code logged them. Apprise URLs carry secrets in
more shapes than that: tokens in the path (``tgram://BOTTOKEN/chat``),
header values (``json://host/?+Authorization=Bearer%20x``), keys under other
names. So every secret of every loaded target is also *registered* here, by
value, from what the Apprise plugin itself declares private (its template
tokens and arguments marked ``private``), its password, and header values
whose names look like credentials; ``mask`` replaces each registered value
(and its URL-quoted spelling) with ``***``.

``install()`` puts ``SecretFilter`` on the handlers of the root logger (where
``monitor.logs.configure`` sends every line) and on Apprise's own logger, and
caps that logger at INFO: at DEBUG Apprise prints raw configuration text
("Loading raw configuration: ...") before any target, hence any secret, is
known. Error strings that we store (``outbox.last_error``) or print
(``notify-test``) go through ``mask`` as well.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from typing import Any, Final
from urllib.parse import quote

from ...logs import redact

APPRISE_LOGGER: Final = "apprise"
#: Shorter values are not masked: "a" or "25" would shred every line, and a
#: secret that short is not a secret.
MIN_SECRET_LEN: Final = 4
_CREDENTIAL_NAME = re.compile(r"auth|token|key|secret|pass|session|cookie|signature",
                              re.IGNORECASE)

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None


def register(values: Iterable[Any]) -> None:
    """Remember secret values (strings; others are ignored) to be masked from now on."""
    global _pattern
    with _lock:
        before = len(_secrets)
        for value in values:
            if isinstance(value, str) and len(value) >= MIN_SECRET_LEN:
                _secrets.add(value)
                _secrets.add(quote(value, safe=""))
        if len(_secrets) != before:
            # Longest first, so a secret containing another is masked whole.
            ordered = sorted(_secrets, key=len, reverse=True)
            _pattern = re.compile("|".join(re.escape(s) for s in ordered))


def mask(text: str) -> str:
    """``text`` with every registered secret and every URL password masked."""
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub("***", text)
    return redact(text)


def secrets_of(service: Any) -> list[str]:
    """The secret values of one loaded Apprise plugin instance.

    Read from the plugin's own declaration of its URL parts: every template
    token or argument marked ``private`` (passwords, API keys, tokens), the
    password, and credential-looking header values (Apprise shows headers in
    full even in its "privacy" URLs).
    """
    found: list[str] = []

    def add(value: Any) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for item in value:
                add(item)

    for table_name in ("template_tokens", "template_args"):
        table = getattr(service, table_name, None) or {}
        for name, spec in table.items():
            if isinstance(spec, dict) and spec.get("private"):
                add(getattr(service, str(spec.get("map_to", name)), None))
    add(getattr(service, "password", None))
    headers = getattr(service, "headers", None)
    if isinstance(headers, dict):
        for name, value in headers.items():
            if _CREDENTIAL_NAME.search(str(name)):
                add(value)
                # "Bearer abc": the credential alone is the secret, not the scheme.
                scheme, _, credential = str(value).partition(" ")
                if credential and scheme.isalpha():
                    add(credential.strip())
    return found


class SecretFilter(logging.Filter):
    """Masks secrets in a record's message (and traceback) before any handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to logging's own error report
            return True
        masked = mask(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and record.exc_info[0] is not None:
            trace = logging.Formatter().formatException(record.exc_info)
            clean = mask(trace)
            if clean != trace:
                # Formatters (ours included) render exc_info themselves, unmasked:
                # fold the masked traceback into the message instead.
                record.msg, record.args = f"{record.getMessage()}\n{clean}", None
                record.exc_info, record.exc_text = None, None
        return True


_FILTER: Final = SecretFilter()


def install() -> None:
    """Mask on every root handler and on Apprise's logger; keep Apprise at INFO or above.

    Idempotent; call it again after handlers are replaced (``logs.configure``).
    """
    apprise_log = logging.getLogger(APPRISE_LOGGER)
    if apprise_log.getEffectiveLevel() < logging.INFO:
        apprise_log.setLevel(logging.INFO)
    if _FILTER not in apprise_log.filters:
        apprise_log.addFilter(_FILTER)
    for handler in logging.getLogger().handlers:
        if _FILTER not in handler.filters:
            handler.addFilter(_FILTER)

"""Logging to stderr as text or JSON lines, with secrets kept out.

A URL's password (``mailtos://user:secret@host``) or a token in a query string
never reaches a log line: the formatter masks them whatever code logged them.

Every log line passes through ``redact``, including lines that quote what a
hostile client sent (a topic can be 65 535 bytes), so it must cost time in
proportion to the line, whatever the line holds. The first version was one
regular expression, ``[a-zA-Z][a-zA-Z0-9+.-]*://...``: on a long run of letters
it started at every letter, scanned to the end of the run and failed, which is
quadratic (a 60 000-character topic took 6.6 s a line and held up ingest). The
URL rule is now a scan that anchors on each ``://`` and moves only forward
(``_mask_urls``); the query-string rule stays a regular expression, as it can
only start at ``?`` or ``&`` and each attempt stops at the next ``&``. On top,
what hostile input puts into a line is cut short (``clip``): the reject log
quotes at most ``TOPIC_MAX`` characters of a topic.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from typing import Final

#: Characters of a topic (or any quoted input) a log line shows.
TOPIC_MAX: Final = 200

# The query-string rule: starts only at ? or &, each attempt ends at the next &.
_QUERY_SECRET = re.compile(
    r"(?P<pre>[?&](?:token|password|pass|key|secret|apikey)=)(?P<secret>[^&\s]+)",
    re.IGNORECASE)
# The URL rule's pieces (see _mask_urls).
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_USER_END = re.compile(r"[:/@\s]")
_SECRET_END = re.compile(r"[@\s]")


def clip(text: str, limit: int = TOPIC_MAX) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was when cut, with
    control characters escaped: a topic holding a newline must not forge a log line
    (the fuzz target's report)."""
    if len(text) > limit:
        text = f"{text[:limit]}…[{len(text)} chars]"
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _has_scheme(text: str, end: int) -> bool:
    """Whether ``text[:end]`` ends with a URL scheme, ``[a-zA-Z][a-zA-Z0-9+.-]*``.

    Walks back over scheme characters only; a ``://`` holds none, so the walks
    of successive ``://`` never overlap and all of them together are linear.
    """
    i = end - 1
    letter = False
    while i >= 0 and text[i] in _SCHEME_CHARS:
        letter = letter or text[i].isalpha()
        i -= 1
    return letter


def _mask_urls(text: str) -> str:
    """Mask ``secret`` in every ``scheme://user:secret@``: what the regular expression
    ``[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\\s]+:[^@\\s]+@`` would find, in linear time.

    From each ``://``: the user part runs to the first ``:``, ``/``, ``@`` or
    blank, and must end at a ``:``; the secret then runs to the first ``@`` or
    blank, and must end at an ``@``. Every search starts where the last one
    stopped (a failed secret search also rules out every ``://`` before its
    blank: none of them can reach an ``@`` either), so each character is
    looked at a bounded number of times.
    """
    out: list[str] = []
    done = 0  # text[:done] is in out
    pos = 0
    while True:
        at = text.find("://", pos)
        if at < 0:
            break
        user = _USER_END.search(text, at + 3)
        if user is None:
            break
        colon = user.start()
        if colon == at + 3 or text[colon] != ":" or not _has_scheme(text, at):
            pos = max(colon, at + 1)
            continue
        secret = _SECRET_END.search(text, colon + 1)
        if secret is None:
            break
        end = secret.start()
        if end == colon + 1 or text[end] != "@":
            pos = end
            continue
        out += [text[done:colon + 1], "***"]
        done = pos = end
    return "".join(out) + text[done:] if out else text


def redact(text: str) -> str:
    """Mask passwords in URLs and secret query parameters (in time linear in ``text``)."""
    text = _mask_urls(text)
    if "=" in text:
        text = _QUERY_SECRET.sub(lambda m: f"{m.group('pre')}***", text)
    return text


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")
        self.converter = time.gmtime

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return redact(json.dumps(entry, ensure_ascii=False))


def configure(fmt: str = "text", level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # paho logs through its own logger only when asked; keep third parties quieter.
    logging.getLogger("urllib3").setLevel(logging.WARNING)

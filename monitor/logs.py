"""Logging to stderr as text or JSON lines, with secrets kept out; the reject log;
systemd's notify protocol (the daemon's other report to its service manager).

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
import os
import re
import socket
import sys
import time
from collections import OrderedDict
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


# --------------------------------------------------------------------------- the reject log


class RejectLog:
    """Log each (sensor, reason) at most once a minute (DESIGN § 3); the caller counts.

    The memory of what was logged when is bounded twice, so that a flood of
    distinct topics (5 000 unique ones grew it by 9.7 MB) cannot grow it:
    entries older than the minute are forgotten (they no longer hold anything
    back), and at most ``max_keys`` are kept, the oldest going first, each key
    cut to ``TOPIC_MAX`` characters. Forgetting early can only mean one line
    more, never a message less: every reject is counted and dead-lettered
    whatever is logged.
    """

    EVERY_S: Final = 60.0

    def __init__(self, logger: logging.Logger, max_keys: int = 1000) -> None:
        self.log = logger
        self.max_keys = max_keys
        #: (sensor, reason) -> when it was last logged, oldest first.
        self.last: OrderedDict[tuple[str, str], float] = OrderedDict()

    def note(self, topic: str, reason: str, detail: str, now: float) -> bool:
        """Log this reject unless its (sensor, reason) was logged within the minute
        (``now``: monotonic seconds); whether it was logged."""
        parts = topic.rsplit("/", 3)  # {prefix}/site/sensor/kind: the site and sensor
        key = (clip("/".join(parts[-3:-1]) if len(parts) >= 3 else topic), reason)
        while self.last:
            oldest, at = next(iter(self.last.items()))
            if now - at < self.EVERY_S and len(self.last) < self.max_keys:
                break
            del self.last[oldest]
        if key in self.last:
            return False
        self.last[key] = now
        self.log.warning("rejected message on %s: %s (%s)", clip(topic), reason, clip(detail))
        return True


# --------------------------------------------------------------------------- systemd


class SdNotify:
    """systemd's notify protocol (``Type=notify``), a datagram to $NOTIFY_SOCKET: the
    daemon's other report to its service manager, beside its log lines."""

    def __init__(self) -> None:
        addr = os.environ.get("NOTIFY_SOCKET")
        self.addr = "\0" + addr[1:] if addr and addr.startswith("@") else addr
        usec = os.environ.get("WATCHDOG_USEC")
        self.watchdog_s = int(usec) / 1e6 / 2 if usec and usec.isdigit() else None
        self._last_watchdog = 0.0

    def send(self, state: str) -> None:
        if not self.addr:
            return
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
                s.connect(self.addr)
                s.sendall(state.encode())
        except OSError as exc:
            logging.getLogger("stormwatch.daemon").debug("sd_notify failed: %s", exc)

    def watchdog(self) -> None:
        if self.watchdog_s is None:
            return
        now = time.monotonic()
        if now - self._last_watchdog >= self.watchdog_s:
            self._last_watchdog = now
            self.send("WATCHDOG=1")

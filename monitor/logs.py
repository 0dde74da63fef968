"""Logging to stderr as text or JSON lines, with secrets kept out.

A URL's password (``mailtos://user:secret@host``) or a token in a query string
never reaches a log line: the formatter masks them whatever code logged them.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time

_SECRET_PATTERNS = [
    re.compile(r"(?P<pre>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]+:)(?P<secret>[^@\s]+)(?P<post>@)"),
    re.compile(r"(?P<pre>[?&](?:token|password|pass|key|secret|apikey)=)(?P<secret>[^&\s]+)"
               r"(?P<post>)", re.IGNORECASE),
]


def redact(text: str) -> str:
    """Mask passwords in URLs and secret query parameters."""
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: f"{m.group('pre')}***{m.group('post')}", text)
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

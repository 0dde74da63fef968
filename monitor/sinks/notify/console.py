"""``console://``: alerts printed in the terminal, through the very same Apprise path.

A custom Apprise notification (``@apprise.decorators.notify``), so the demo
and a first-time user see exactly what a phone would get — routed, rendered,
retried and recorded by the same worker — without a mail server. ``console://``
writes to standard output, ``console://stderr`` to standard error (for a
daemon whose stdout is not looked at).

Importing this module registers the scheme once per process (Apprise keeps a
process-wide table of schemes; a second registration would only log a
warning).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any, cast

import apprise
from apprise.decorators import notify

SCHEME = "console"
_write_lock = threading.Lock()

SendFunc = Callable[..., bool]
# Apprise's decorator is untyped; this is its signature as used here.
_register = cast(Callable[..., Callable[[SendFunc], SendFunc]], notify)


def console_notify(body: str, title: str, notify_type: str, *args: Any,
                   meta: dict[str, Any] | None = None, **kwargs: Any) -> bool:
    """Print one alert as a block: a rule with its type and title, then the body."""
    host = str((meta or {}).get("host") or "")
    stream = sys.stderr if host == "stderr" else sys.stdout
    with _write_lock:  # one block at a time, never interleaved
        stream.write(block(title, body, notify_type))
        stream.flush()
    return True


def block(title: str, body: str, notify_type: str) -> str:
    """One alert as the terminal shows it: a rule with its type and title, the body
    (the demo's timeline prints the same blocks, in event order)."""
    rule = f"==== stormwatch alert [{notify_type}] " + "=" * 24
    return f"\n{rule}\n{title}\n\n{body.rstrip()}\n{'=' * len(rule)}\n"


_register(on=SCHEME, name="stormwatch console", body_format=apprise.NotifyFormat.TEXT)(
    console_notify)

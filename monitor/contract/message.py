"""A message for a person: its title, its body in plain text and Markdown, and how
urgent it is.

The notifier renders alerts into it (``sinks/notify/messages.py``), the log book's
anchor is one (``views/logbook.py``), and the field app mails a contractor one
(``web/actions.py``): a value all three share, so none of them leans on another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Apprise notify types (apprise.NotifyType values), as plain strings to keep this pure.
INFO, SUCCESS, WARNING, FAILURE = "info", "success", "warning", "failure"


@dataclass(frozen=True, slots=True)
class Line:
    """One fact of a body: ``label: text``; a quote is set apart; a url is a link."""

    label: str | None
    text: str
    quote: bool = False
    url: str | None = None


@dataclass(frozen=True, slots=True)
class Message:
    """A rendered message. ``notify_type`` is an ``apprise.NotifyType`` value."""

    title: str
    text: str
    markdown: str
    notify_type: str


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")


def md_escape(text: str) -> str:
    """Escape what Markdown would read as markup in our own (plain) sentences and names."""
    return _MD_SPECIAL.sub(r"\\\1", text)

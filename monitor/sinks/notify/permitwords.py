"""What an alert says of the rule behind a deadline: the permit, its section and its
words (config/README.md, "Permits").

An alert of Chapter 134 quotes § 134-9A(2) as it always did; an alert of another
permit's clock quotes that permit's rule, from its profile, and says when the
rule was read only at second hand ("verify against your permit").
"""

from __future__ import annotations

from ...config import SiteConfig
from ...contract.message import Line
from ...contract.permits import is_chapter_134, rule_words
from ...rules.permits.duties import citation


def duty_line(site: SiteConfig | None, permit: str | None, section: str | None,
              duty: str | None = None) -> Line | None:
    """The rule behind a deadline (of ``duty``: ``storm``, ``routine``, ``snow``) as an
    alert's quote; None for Chapter 134's (the caller quotes § 134-9A(2) itself)."""
    if is_chapter_134(permit) or section is None or permit is None:
        return None
    cite = citation(site, permit, section, duty) if site is not None else None
    head = f"{rule_words(permit, section, section)} requires"
    if cite is None:
        return Line(head, section)
    words = f"\"{cite.quote}\""
    if not cite.verified:
        words += " (read at second hand: verify against your permit)"
    return Line(head, words, quote=True)


def source_words(permit: str | None, section: str | None) -> str:
    """`` (EPA CGP 2022 Part 4.2)`` after a subject; nothing for Chapter 134's."""
    if is_chapter_134(permit) or section is None:
        return ""
    return f" ({rule_words(permit, section, section)})"

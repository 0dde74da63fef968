"""The report's duties table per permit (config/README.md, "Permits"): for each permit the
site names, every rule that applies to it with its source, trigger and deadline, and
what its clocks came to in the period, counted from the period's own events (the
engine decided each outcome; the report only counts them).
"""

from __future__ import annotations

from html import escape

from ...config import SiteConfig
from ...contract.events import ClockClosed, InspectionMissed, StormQualified
from ...engine import Period
from ...rules.permits.checks import unmonitored
from ...rules.permits.duties import Permit, permits_of
from ..duties import Duty, deadline_words, trigger_words
from .tables import table


def permits_section(site: SiteConfig, facts: Period, forecasts: bool) -> str:
    """One table per permit; nothing for a site that names no permits (Chapter 134 alone:
    the sections above are its duties). ``forecasts``: whether the configuration fetches
    the weather a forecast trigger needs."""
    if not site.permits:
        return ""
    parts = ["<h2>Duties by permit</h2><p>Each permit's rules, where they were read, and "
             "what its inspection clocks came to in this period. A rule marked <strong>to "
             "verify</strong> was read at second hand: check it against the permit you "
             "hold.</p>"]
    for permit in permits_of(site):
        parts.append(f"<h3>{escape(permit.title)} ({escape(permit.key)})</h3>")
        parts.append(table(["Rule", "Section", "Trigger", "Deadline", "Verified",
                            "In this period"],
                           _rows(site, permit, facts, forecasts),
                           "No rule of this permit applies."))
    return "".join(parts)


def _rows(site: SiteConfig, permit: Permit, facts: Period, forecasts: bool
          ) -> list[list[str]]:
    duties: dict[str, Duty] = {d.cite.rule: d for d in (
        permit.routine, permit.storm, permit.snow, permit.corrective_action,
        permit.maintenance, permit.shutdown, permit.benchmark) if d is not None}
    rows = []
    for rule, cite in permit.rules:
        duty = duties.get(rule.id)
        rows.append([
            escape(rule.id), escape(cite.section),
            escape(trigger_words(duty) if duty is not None else rule.duty),
            escape(deadline_words(duty, site) if duty is not None else "—"),
            "yes" if cite.verified else "<strong>to verify</strong>",
            escape(_in_period(site, permit, rule.duty, duty, facts, forecasts))])
    return rows


def _in_period(site: SiteConfig, permit: Permit, kind: str, duty: Duty | None, facts: Period,
               forecasts: bool) -> str:
    """What the duty came to, or why the site cannot watch it: a missing measurement is
    never a met duty."""
    if duty is None:
        return "—"
    why = unmonitored(duty, site, forecasts)
    return why or _outcomes(permit, kind, facts)


def _outcomes(permit: Permit, duty: str, facts: Period) -> str:
    """What the permit's clocks of ``duty`` came to in the period, from its events."""
    if duty not in ("routine", "storm", "snow"):
        return "—"
    kind = "routine" if duty == "routine" else "storm"
    closed = [b for b in facts.bodies(ClockClosed)
              if b.permit == permit.key and b.clock == kind
              and ("snowmelt-" in b.clock_id) == (duty == "snow")]
    met = sum(b.outcome == "met" for b in closed)
    late = len(closed) - met
    words = [f"{met} met", f"{late} late"]
    if duty == "storm":
        storms = [b for b in facts.bodies(StormQualified)
                  if b.permit == permit.key and b.clock_id]
        words.insert(0, f"{len(storms)} storm(s) qualified")
    if duty == "routine":
        missed = [b for b in facts.bodies(InspectionMissed) if b.permit == permit.key]
        words.append(f"{len(missed)} week(s) missed")
    return ", ".join(words)

"""The report's list of what the site still owed at the end of the period.

A count ("1 open at the end") leaves the reader to find what is open; this
section names each duty the engine says is owed (``engine/duties.py``): what
it is, since when, by when, how late, and the section of Chapter 134 behind
it. The instant is the end of the period, or the instant the engine last
judged the site when that is earlier (the period has not ended for it yet):
the heading says which. Without a recorded state the inspection clocks are
read from the events alone, and the section says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from ...config import SiteConfig
from ...contract.clocknames import clock_name
from ...contract.figures import fill_text
from ...contract.times import MS_PER_HOUR
from ...engine import Duty
from ...rules.active import cadence_words
from .tables import LocalTime, outcome, table


def owed_section(site: SiteConfig, duties: Sequence[Duty], at_ms: int, to_ms: int,
                 recorded: bool, local: LocalTime) -> str:
    """``<h2>Outstanding at the end of the period</h2>`` and one row per duty."""
    when = (f"at the end of the period, {local(to_ms)}" if at_ms >= to_ms - 1 else
            f"as of {local(at_ms)}, where the engine last judged the site: the period "
            f"ends {local(to_ms)}")
    head = f"<h2>Outstanding at the end of the period</h2><p>Duties still owed {escape(when)}"
    head += ("." if recorded else ": the daemon has recorded no state for this site, so "
             "the inspection clocks are read from the events alone.") + "</p>"
    rows = [[escape(_what(site, d, local)), escape(local(d.since_ms)), escape(local(d.due_ms)),
             _state(d, at_ms), f'<span class="nowrap">{escape(d.section)}</span>']
            for d in duties]
    return head + table(["Duty", "Since", "Due", "State at the end", "Section"], rows,
                        "Nothing outstanding." if recorded else
                        "Nothing outstanding found in the events (no recorded state).")


def _what(site: SiteConfig, d: Duty, local: LocalTime) -> str:
    if d.kind == "inspection":
        kind = ("Storm inspection (within 24 hours of the storm)" if d.clock == "storm"
                else f"Routine inspection ({cadence_words(site)})")
        name = clock_name(d.subject, site.zone, d.clock, site.cadence_days(d.subject))
        return f"{kind}: the {name}"
    if d.kind == "cleanout":
        levels = site.fill_levels(d.subject) or (0.5,)
        # Never rounded across the clean-out level: 49.7 % is not "50%" (figures.py).
        fill = "unknown" if d.fill_fraction is None else fill_text(d.fill_fraction, *levels)
        level = fill_text(levels[-1])
        text = (f"Remove sediment from trap {d.subject}: clean-out demanded and not done; "
                f"{fill} of design volume at its last reading ({local(d.measured_ms)}), "
                f"clean-out at {level}")
        if d.fault:
            text += f" (sensor faulty: {d.fault}; the fill is the last valid one)"
        return text
    if d.kind == "action":
        return f"Corrective action {d.subject}: {d.text} (asked by {d.by})"
    return (f"Turbidity contrast at {d.subject} exceeded and not cleared "
            f"(against {'the absolute level' if d.basis == 'absolute' else 'background'})")


def _state(d: Duty, at_ms: int) -> str:
    """Overdue (and by how long), or the time left; a routine clock's missed weeks."""
    if d.kind in ("cleanout", "turbidity"):
        return outcome("overdue") + escape(f" (standing since {_hours(at_ms - d.since_ms)})")
    if d.due_ms is None:
        return escape("open, no due date" if d.kind == "action" else "open, due not yet known")
    if d.overdue:
        text = outcome("overdue") + escape(f" by {_hours(at_ms - d.due_ms)}")
    else:
        text = escape(f"open, {_hours(d.due_ms - at_ms)} left")
    if d.missed_weeks:
        text += escape(f"; {d.missed_weeks} week(s) missed (§ 134-12D: each a separate "
                       "violation)")
    return text


def _hours(ms: int) -> str:
    hours = ms / MS_PER_HOUR
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} days"

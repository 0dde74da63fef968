"""What is owed at a site, in the words a person reads on the overview and "My sites":
"Storm of Dec 2: inspection OVERDUE by 5 h (due Thu 11:30 EST)", "Trap trap-1 is 52% full: clean
it out". Every time is the site's local time with its zone; a site with no recorded
state says so, never "nothing owed".

Words only: what is owed, and whether it is late, is the engine's summary
(``status --json``) as ``ranking.known`` reads it. ``clock_words`` is the one place
a clock is named, so a better name (the storm's date) can replace it alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from zoneinfo import ZoneInfo

from ..config import SiteConfig
from ..contract.clocknames import clock_name, spoken
from ..contract.figures import fill_text
from ..contract.localtime import local_datetime
from ..contract.permits import rule_words
from ..contract.times import MS_PER_HOUR
from ..contract.unmonitored_words import reason_words
from ..engine import OpenClock, SiteNow
from .ranking import DUE_SOON_HOURS, known, late_actions, rank_now
from .siteview import SiteView

#: A due time within this many hours of now is named by its weekday alone ("Thu 11:30").
WEEKDAY_HOURS: Final = 6 * 24


def when_words(when_ms: int, zone: ZoneInfo, now_ms: int) -> str:
    """"Thu 11:30 EST" within six days of now, "Thu Dec 10 11:30 EST" beyond."""
    local = local_datetime(when_ms, zone)
    if local is None:
        return "an unknown time"
    if abs(when_ms - now_ms) < WEEKDAY_HOURS * MS_PER_HOUR:
        return f"{local:%a %H:%M} {local.tzname()}"
    return spoken(when_ms, zone)  # as every sentence says a time


def hours_words(hours: float) -> str:
    """A span as a person says it: "40 min", "5 h", "2.5 h", "3.2 days"."""
    if hours < 1:
        return f"{max(1, round(hours * 60))} min"
    if hours < 48:
        return f"{hours:.0f} h" if hours >= 10 or hours == round(hours) else f"{hours:.1f} h"
    return f"{hours / 24:.1f} days"


def clock_words(clock: OpenClock, zone: ZoneInfo, now_ms: int, days: float = 7.0) -> str:
    """One open inspection clock, named by its storm or week: what is owed, by when, and
    how late (``Storm of Dec 2: inspection OVERDUE by 5 h (due Thu 06:30 EST)``), and at
    a site that names its permits the rule it keeps (``…, EPA CGP 2022 Part 4.2``)."""
    name = clock_name(clock.clock_id, zone, clock.clock, days)
    what = f"{name[:1].upper()}{name[1:]}: inspection"
    rule = (f", {rule_words(clock.permit, clock.section, '')}"
            if clock.permit is not None and clock.section else "")
    if clock.due_ms is None or clock.hours_left is None:
        return f"{what} due once the storm ends (it has not ended yet){rule}"
    due = when_words(clock.due_ms, zone, now_ms)
    if clock.overdue:
        return f"{what} OVERDUE by {hours_words(-clock.hours_left)} (due {due}){rule}"
    return f"{what} due in {hours_words(clock.hours_left)} ({due}){rule}"


def soon(clock: OpenClock) -> bool:
    """Overdue, due within ``DUE_SOON_HOURS``, or waiting for its storm to end."""
    return clock.overdue or clock.hours_left is None or clock.hours_left <= DUE_SOON_HOURS


@dataclass(frozen=True, slots=True)
class Owed:
    """A site's lines for the overview: what is owed (clocks, missed weeks, corrective
    actions), its traps, its turbidity pairs and its sensors."""

    owed: list[str] = field(default_factory=list)
    #: Open clocks not due within ``ranking.DUE_SOON_HOURS``: shown, not stressed.
    later: list[str] = field(default_factory=list)
    traps: list[str] = field(default_factory=list)
    turbidity: list[str] = field(default_factory=list)
    sensors: list[str] = field(default_factory=list)
    unknown: bool = False
    #: The trap, turbidity and sensor lines that ask for something (not "ok").
    attention: list[str] = field(default_factory=list)


UNKNOWN_LINE: Final = ("State UNKNOWN: nothing recorded for this site yet (the daemon"
                       " records it while it runs); whether anything is owed cannot be told")


def owed_of(site: SiteConfig, status: Mapping[str, Any], now_ms: int,
            now: SiteNow | None = None) -> Owed:
    """The lines of one site's ``status --json`` object at ``now_ms`` (``now``: its
    summary as ``ranking.known`` read it, when the caller has it)."""
    now = now if now is not None else known(status)
    if now is None:
        return Owed([UNKNOWN_LINE], [], ["unknown"] if site.traps else [],
                    ["unknown"] if site.turbidity_pairs else [], ["unknown"], unknown=True)
    zone, days = site.zone, site.cadence_days
    owed = [clock_words(c, zone, now_ms, days(c.clock_id)) for c in now.open_clocks if soon(c)]
    later = [clock_words(c, zone, now_ms, days(c.clock_id)) for c in now.open_clocks
             if not soon(c)]
    if now.missed_weeks:
        owed.append(f"{now.missed_weeks} week(s) without a required inspection"
                    " (§\u00a0134-12D, each a separate violation)")
    late = late_actions(status)
    if late:
        owed.append(f"{late} corrective action(s) past due")
    traps, pairs, sensors = _trap_lines(site, now), _pair_lines(now), _sensor_lines(now)
    attention = [line for line, bad in traps + pairs + sensors if bad]
    if not owed:
        owed = ["No inspection due within a day" if attention else "Nothing owed now"]
    return Owed(owed, later, [t for t, _ in traps],
                [p for p, _ in pairs], [s for s, _ in sensors] or ["all ok"],
                attention=attention)


#: A line, and whether it asks for something.
Line = tuple[str, bool]


def _trap_lines(site: SiteConfig, now: SiteNow) -> list[Line]:
    lines = []
    for tid, t in now.traps.items():
        fill = ("unknown" if t.fill_fraction is None
                else fill_text(t.fill_fraction, *site.fill_levels(tid)))
        if t.sensor_fault is not None:
            lines.append((f"{tid}: SENSOR FAULT, last valid fill {fill}: check it by eye",
                          True))
        elif t.level == "cleanout":
            lines.append((f"{tid} is {fill} full: clean it out (§\u00a0134-9A(1))", True))
        elif t.level == "unknown":
            lines.append((f"{tid}: fill unknown", True))
        else:
            lines.append((f"{tid} {fill} full" + (" (nearly due a clean-out)"
                                                  if t.level == "warn" else ""), False))
    return lines


def _pair_lines(now: SiteNow) -> list[Line]:
    lines = []
    for pid, p in now.turbidity.items():
        if p.unknown_reason is not None:
            lines.append((f"{pid}: contrast UNKNOWN ({reason_words(p.unknown_reason)})", True))
        elif p.state == "ok":
            lines.append((f"{pid} ok", False))
        else:
            delta = "" if p.delta_ntu is None else f", {p.delta_ntu:+g} NTU over background"
            lines.append((f"{pid} {p.state.upper()}{delta} (§\u00a0134-8C)", True))
    return lines


def _sensor_lines(now: SiteNow) -> list[Line]:
    return [(f"sensor {sid} {s.health.upper()}", True) for sid, s in now.sensors.items()
            if s.health != "ok"]


@dataclass(frozen=True, slots=True)
class Row:
    """A site on the overview or "My sites": its view, its tier (``ranking.TIERS``) and
    its lines."""

    v: SiteView
    tier: str
    owed: Owed


def rows_of(views: Iterable[SiteView]) -> list[Row]:
    """The sites worst first (``ranking.rank_now``), each with its lines at its view's
    instant; each site's summary read once."""
    rows = []
    for v in views:
        now = known(v.status)
        rank = rank_now(now)
        rows.append((rank.key(v.site.id), Row(v, rank.tier, owed_of(v.site, v.status,
                                                                     v.now_ms, now))))
    return [row for _, row in sorted(rows, key=lambda r: r[0])]

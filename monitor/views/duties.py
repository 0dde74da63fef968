"""``stormwatch duties``: every duty of a site's permits, with its source and its state now.

A duty is a rule of a permit's profile that applies to the site's choices
(``rules/permits/duties.py``). Each is shown with where it comes from (permit,
section, quote, where it was read, verified or to verify), what triggers it,
the rule of its deadline, and its state now: the open clocks of that permit as
``stormwatch status`` reads them from the state directory (``status.py``), the
open corrective actions or maintenance items with the deadline the permit gives
each, or "not monitored" where the site lacks the sensor the trigger needs, or
"no state yet" where the daemon has not recorded the site. A missing measurement is never
a met duty (config/README.md, "Permits").

A permit's clocks are told apart by their ``permit`` (where the engine records
it) or else by their id: the first-listed permit's clocks have plain ids, every
other permit's begin with ``<permit>/``.
"""

from __future__ import annotations

import textwrap
from typing import Any

from ..config import SiteConfig
from ..contract.localtime import local_text
from ..contract.times import iso, parse_iso
from ..rules.clocks.deadlines import deadline_ms
from ..rules.permits.checks import unmonitored
from ..rules.permits.duties import (
    BenchmarkDuty,
    Citation,
    DeadlineDuty,
    Permit,
    RoutineDuty,
    ShutdownDuty,
    SnowDuty,
    StormDuty,
    clock_duty,
    permits_of,
)

Duty = RoutineDuty | StormDuty | SnowDuty | DeadlineDuty | ShutdownDuty | BenchmarkDuty
#: The duties that run on clocks (``duties.clock_duty`` says which a clock keeps).
CLOCKED = {"routine": "routine", "storm": "storm", "snow": "snow"}
#: Width of the plain text: a phone held upright shows about this many columns.
WIDTH = 60


def calendar_words(site: SiteConfig) -> str:
    """The business calendar as a deadline names it (``business hours 07:00-17:00
    (US-NC holidays)``)."""
    days = site.calendar
    place = days.country + (f"-{days.subdiv}" if days.subdiv else "")
    return f"business hours {days.hours} ({place} holidays)"


def _days(n: float) -> str:
    return f"{n:g} calendar day{'s' * (n != 1)}"


def trigger_words(duty: Duty) -> str:
    """What opens the duty, in words."""
    if isinstance(duty, RoutineDuty):
        due = ("due at the end of the local day" if duty.due == "end_of_day"
               else "due to the hour after the last inspection")
        if duty.times == 1:
            return f"routine: every {_days(duty.every_days)} ({due})"
        return (f"routine: {duty.times} inspections in every {_days(duty.every_days)}, at "
                f"least {duty.min_gap_days} full days apart ({due})")
    if isinstance(duty, StormDuty):
        if duty.source == "forecast":
            chance = (f" with a probability of {duty.probability_min:g} % or more"
                      if duty.probability_min is not None else "")
            return f"storm: {duty.threshold_in:g} in forecast by the NWS{chance}"
        span = {"event_total": "in one storm event", "event_24h": "within 24 h",
                "rolling_24h": "in any 24 h"}.get(duty.window, duty.window)
        return (f"storm: {duty.threshold_in:g} in {span} ({duty.window}) measured by the "
                "site's gauges")
    if isinstance(duty, SnowDuty):
        return f"snow: {duty.threshold_in:g} in within {duty.window_hours:g} h"
    if isinstance(duty, DeadlineDuty):
        what = "corrective action" if duty.kind == "corrective_action" else "maintenance"
        return f"{what}: a problem found that needs it"
    if isinstance(duty, ShutdownDuty):
        notice = " after written notice" if duty.notice == "required" else ""
        return f"shutdown: a recorded temporary shutdown{notice}"
    sensors = ", ".join(duty.sensors) or "none configured"
    return (f"turbidity benchmark: {duty.min_samples_per_day} sample(s) a day of each "
            f"dewatering discharge ({sensors})")


def deadline_words(duty: Duty, site: SiteConfig) -> str:
    """The rule of the duty's deadline, in words."""
    if isinstance(duty, RoutineDuty):
        return f"{_days(duty.interval_days)} after the last inspection"
    if isinstance(duty, StormDuty | SnowDuty):
        start = ("the storm ends" if isinstance(duty, StormDuty)
                 and duty.clock_start == "event_end" else
                 "the forecast qualifies" if isinstance(duty, StormDuty)
                 and duty.source == "forecast" else
                 "the snowfall qualifies" if isinstance(duty, SnowDuty) else
                 "the storm qualifies")
        words = f"{duty.deadline_hours:g} h after {start}"
        if isinstance(duty, StormDuty) and duty.outside_hours == "next_business_day":
            words += ("; the close of the next business day when it ends outside "
                      + calendar_words(site))
        return words
    if isinstance(duty, DeadlineDuty):
        calendar = f"; {calendar_words(site)}" if duty.business_days is not None else ""
        return f"{duty.words()} from discovery{calendar}"
    if isinstance(duty, ShutdownDuty):
        return f"an inspection every {_days(duty.every_days)} while the shutdown lasts"
    return f"the weekly average of the samples at most {duty.ntu:g} NTU"


def _resolved(permit: Permit) -> dict[str, Duty]:
    """The permit's tracked duties by the id of the rule each came from."""
    found = (permit.routine, permit.storm, permit.snow, permit.corrective_action,
             permit.maintenance, permit.shutdown, permit.benchmark)
    return {d.cite.rule: d for d in found if d is not None}


def clocks_of(permit: Permit, kind: str, clocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The open clocks of kind ``kind`` that belong to ``permit`` (module docstring)."""
    def mine(c: dict[str, Any]) -> bool:
        if c.get("permit"):
            return bool(c["permit"] == permit.key)
        cid = str(c.get("clock_id", ""))
        return "/" not in cid if permit.primary else cid.startswith(permit.key + "/")

    def of_kind(c: dict[str, Any]) -> bool:
        # A snowmelt clock is a storm clock of the permit's snow rule (its id says so).
        cid = str(c.get("clock_id", ""))
        return clock_duty(str(c.get("clock")), cid) == kind

    return [{k: c.get(k) for k in ("clock_id", "due", "hours_left", "overdue")}
            for c in clocks if of_kind(c) and mine(c)]


def _state(duty: Duty | None, kind: str, permit: Permit, site: SiteConfig,
           entry: dict[str, Any] | None, forecasts: bool) -> dict[str, Any]:
    """A duty's state now from the site's ``status`` object (None: never recorded)."""
    if duty is None:
        return {"status": "not tracked", "reason": "another rule of this permit holds "
                "this duty" if kind != "notes" else "a note, no duty of its own"}
    reason = unmonitored(duty, site, forecasts)
    if reason is not None:
        return {"status": "not monitored", "reason": reason}
    if kind not in CLOCKED and not isinstance(duty, DeadlineDuty):
        return {"status": "no clock", "reason": "follows from what is found or recorded"}
    if entry is None or entry.get("recorded_at") is None:
        return {"status": "no state yet"}
    if isinstance(duty, DeadlineDuty):
        actions = actions_due(duty, site, entry)
        return {"status": "open" if actions else "none open", "actions": actions}
    clocks = clocks_of(permit, CLOCKED[kind], entry.get("open_clocks") or [])
    return {"status": "open" if clocks else "none open", "clocks": clocks}


def actions_due(duty: DeadlineDuty, site: SiteConfig, entry: dict[str, Any]
                ) -> list[dict[str, Any]]:
    """The site's actions of the duty's kind not yet verified, each with the deadline
    the duty gives it (``rules/clocks/deadlines.py``) and whether it has passed, unfixed,
    when the status was made (``generated_at``)."""
    kind = "maintenance" if duty.kind == "maintenance" else "corrective"
    now = parse_iso(str(entry.get("generated_at") or entry.get("recorded_at")))
    out = []
    for a in entry.get("corrective_actions") or []:
        if a.get("kind", "corrective") != kind or a.get("verified_at"):
            continue
        due = deadline_ms(site, duty, parse_iso(a["opened_at"]))
        out.append({"action_id": a["id"], "text": a["text"], "due": iso(due),
                    "overdue": now > due and not a.get("done_at")})
    return out


def _source(cite: Citation) -> str:
    return cite.source + (f" (read at: {cite.read_at})" if cite.read_at else "")


def build_duties(site: SiteConfig, entry: dict[str, Any] | None,
                 forecasts: bool) -> dict[str, Any]:
    """The ``duties --json`` object of ``site``; ``entry`` is its ``status`` object,
    or None when the state directory holds none; ``forecasts``: whether the
    configuration fetches weather forecasts (its ``weather`` section)."""
    permits = []
    for permit in permits_of(site):
        resolved = _resolved(permit)
        duties = []
        for rule, cite in permit.rules:
            duty = resolved.get(rule.id)
            duties.append({
                "rule": rule.id, "duty": rule.duty, "section": cite.section,
                "quote": cite.quote, "source": _source(cite), "verified": cite.verified,
                "trigger": trigger_words(duty) if duty is not None else None,
                "deadline": deadline_words(duty, site) if duty is not None else None,
                "state": _state(duty, rule.duty, permit, site, entry, forecasts)})
        permits.append({"permit": permit.key, "profile": permit.profile,
                        "title": permit.title, "duties": duties})
    return {"site": site.id, "permits": permits}


def _state_words(state: dict[str, Any], site: SiteConfig) -> list[str]:
    status = state["status"]
    if status == "no state yet":
        return ["no state yet (the daemon has not recorded this site)"]
    if status in ("not monitored", "not tracked", "no clock"):
        return [state["reason"] if status == "not monitored" else f"{status}: {state['reason']}"]
    if status == "none open":
        return ["no open clock" if "clocks" in state else "no open action"]
    lines = [f"{a['action_id']} ({a['text']}): due {local_text(a['due'], site.zone)}"
             + (", OVERDUE" if a["overdue"] else "") for a in state.get("actions", ())]
    for c in state.get("clocks", ()):
        left = c["hours_left"]
        when = ("due when the storm ends" if left is None else
                f"due {local_text(c['due'], site.zone)}, "
                + (f"OVERDUE by {-left:.1f} h" if c["overdue"] else f"{left:.1f} h left"))
        lines.append(f"{when} ({c['clock_id']})")
    return lines


def _wrap(label: str, text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=f"    {label:<9}",
                         subsequent_indent=" " * 13) or [f"    {label}"]


def format_duties(site: SiteConfig, shown: dict[str, Any]) -> str:
    """The plain text of ``duties``: a block per duty, narrow enough for a phone."""
    lines = [f"{site.id}: the duties of {len(shown['permits'])} permit(s)"]
    for permit in shown["permits"]:
        lines += ["", *textwrap.wrap(f"{permit['permit']} — {permit['title']}", WIDTH,
                                     subsequent_indent="  ")]
        for d in permit["duties"]:
            mark = "verified" if d["verified"] else "TO VERIFY against your permit"
            lines += textwrap.wrap(f"{d['duty']} ({d['rule']}), {d['section']}", WIDTH,
                                   initial_indent="  ", subsequent_indent="    ")
            if d["trigger"] is not None:
                lines += _wrap("trigger", d["trigger"]) + _wrap("deadline", d["deadline"])
            state = _state_words(d["state"], site)
            lines += _wrap("state", state[0])
            lines += [line for s in state[1:] for line in _wrap("", s)]
            lines += _wrap("rule", f"\"{d['quote']}\"") + _wrap("source",
                                                                 f"{d['source']}; {mark}")
    return "\n".join(lines)


def permit_triggers(site: SiteConfig) -> str:
    """The triggers of each permit a site names, as the summary states them
    (``permits: epa-cgp-2022 (every 14 days, storms of 0.25 in by event_24h, snowmelt of
    3.25 in)``): ``check-config``'s summary and ``replay``'s table; ``stormwatch duties``
    says each in full."""
    words = []
    for permit in permits_of(site):
        what = []
        if permit.routine is not None:
            what.append(f"every {permit.routine.every_days:g} days" + (
                f" ({permit.routine.times} times)" if permit.routine.times > 1 else ""))
        if permit.storm is not None:
            what.append(f"storms of {permit.storm.threshold_in:.2f} in by "
                        f"{permit.storm.window if permit.storm.source == 'gauge' else 'forecast'}")
        if permit.snow is not None:
            what.append(f"snowmelt of {permit.snow.threshold_in:g} in")
        words.append(f"{permit.key} ({', '.join(what) or 'no inspection clocks'})")
    return "permits " + "; ".join(words)

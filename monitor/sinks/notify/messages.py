"""Alert texts: a title and a body per event type that a person can act on from a phone.

Pure functions of the alert (event, site, *now*): no I/O, so every text is
tested without a mail server. Each message says

* where: the site's name, id and address;
* what happened, with units: rain in inches with two decimals, turbidity in
  NTU, trap fill in percent of design capacity;
* by when: every time in the site's own time zone ("Tue Dec 1, 2026 9:15 AM
  EST"), and a deadline also as hours left (or overdue) *at the moment the
  message is rendered*, which is the moment it is sent: a message retried
  for an hour does not arrive claiming the hours it had when it was first
  tried;
* why: the duty of Chapter 134 it concerns, quoted with its section
  (§ 134-9A(2) inspections, § 134-9A(1) sediment traps, § 134-8C turbidity,
  § 134-12D penalties for an overdue inspection);
* what to do, the link to the site's inspection form when the field app is
  configured (``web:``; the worker signs it), a Grafana link when
  ``notify.grafana_url`` is set, and the alert id (``{event id}:{revision}``)
  by which a repeat is recognised.

Bodies come in plain text and in Markdown (the two source formats Apprise
converts from); ``targets.py`` picks the one each service takes best.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit
from zoneinfo import ZoneInfo

from ...config import SiteConfig
from ...contract.clocknames import clock_name
from ...contract.events import (
    BackgroundMissing,
    BatteryLow,
    ClockClosed,
    CorrectiveActionDue,
    CounterReset,
    Event,
    GaugeDisagrees,
    InspectionBackdated,
    InspectionDueSoon,
    InspectionMissed,
    InspectionOverdue,
    InspectionRecorded,
    Pegged,
    ProbesSuspect,
    SensorFault,
    SensorRecovered,
    SensorStale,
    SiteClosed,
    StormEnded,
    StormForecast,
    StormQualified,
    StormStarted,
    TrapCleaned,
    TrapCleanoutRequired,
    TrapFill,
    TurbidityContrast,
    TurbidityMonitored,
    TurbidityUnmonitored,
)
from ...contract.figures import depth_text, fill_text
from ...contract.localtime import local_datetime
from ...contract.message import FAILURE, INFO, SUCCESS, WARNING, Line, Message, md_escape
from ...contract.permits import is_chapter_134
from ...contract.sentences import FAULT_WORDS, sentence
from ...contract.times import MS_PER_HOUR, parse_iso
from ...contract.unmonitored_words import still_checked
from ...rules.permits.duties import clock_duty, storm_deadline_hours
from ...rules.registry import KINDS
from .permitwords import duty_line, source_words

# The chapter's words, quoted where they apply (seed text of Chapter 134).
QUOTE_134_9A2: Final = (
    "the applicant shall have a qualified professional conduct site inspections and document "
    "the effectiveness of all erosion and sediment control practices every seven days and "
    "within 24 hours of any storm event producing 0.5 inch of precipitation or more. "
    "Inspection reports shall be maintained in a site log book.")
QUOTE_134_9A1: Final = (
    "Sediment shall be removed from sediment traps or sediment ponds whenever their design "
    "capacity has been reduced by 50%.")
QUOTE_134_8C: Final = (
    "Any land development activity shall not cause an increase in turbidity that will result "
    "in substantial visible contrast to natural conditions in surface waters of the State of "
    "New York.")
PENALTY_134_12D: Final = (
    "a fine of up to $350 for a first offense (more for repeat offenses), and \"each week's "
    "continued violation shall constitute a separate additional violation.\"")

#: An event reported this much after its own time says so (delayed data or delivery).
LATE_NOTE_MS: Final = MS_PER_HOUR

@dataclass(frozen=True, slots=True)
class Escalation:
    """Why an alert is being sent to the fallback tag instead of (also) its route."""

    from_tag: str
    attempts: int
    since_ms: int
    last_error: str | None = None


@dataclass(frozen=True, slots=True)
class Alert:
    """Everything a message is rendered from.

    ``previous`` is the revision of the same event last delivered to this
    tag, when this one is sent as its correction (monitor/README.md, "Architecture").
    """

    alert_id: str
    event: Event
    now_ms: int
    site: SiteConfig | None = None
    grafana_url: str | None = None
    previous: Event | None = None
    escalation: Escalation | None = None
    #: The signed link to the site's inspection form (``host/links.py``), made by the
    #: worker for an alert routed to ``qp`` when ``web:`` is configured.
    form_link: str | None = None
    #: ``stormwatch inspect --config PATH`` as it works typed on the daemon's machine
    #: (``config/invocation.command_for``: the program and the configuration the
    #: daemon runs with), and the site's qualified professionals: the worker's.
    inspect_command: str | None = None
    roster: tuple[str, ...] = ()


@dataclass(slots=True)
class Content:
    """What one event type says, before the common parts are added."""

    headline: str
    summary: str
    facts: list[Line] = field(default_factory=list)
    notify_type: str = INFO
    duty: list[Line] = field(default_factory=list)


# --------------------------------------------------------------------------- units


def ms_of(value: Any) -> int | None:
    """Milliseconds of an ISO 8601 field of an event, or None when absent."""
    return parse_iso(value) if isinstance(value, str) and value else None


def local_time(ts_ms: int, zone: ZoneInfo, *, year: bool = True) -> str:
    """``Tue Dec 1, 2026 9:15 AM EST``: 12-hour clock, the zone's own abbreviation.

    Spelled out here rather than with ``%p``/``%-d``, which depend on the C
    library and its locale.
    """
    dt = local_datetime(ts_ms, zone)
    if dt is None:  # no instant the zone can show: the number as it is (localtime.py)
        return str(ts_ms)
    hour = dt.hour % 12 or 12
    half = "AM" if dt.hour < 12 else "PM"
    date = f"{dt:%a %b} {dt.day}" + (f", {dt.year}" if year else ",")
    return f"{date} {hour}:{dt.minute:02d} {half} {dt.tzname()}"


def number(value: Any) -> float | None:
    """A numeric field, or None when it is missing or not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def inches(value: Any, *thresholds_in: float) -> str:
    """A depth with two decimals, never rounded across ``thresholds_in``
    (``contract/figures.py``: 0.496 in is not 0.50 in)."""
    x = number(value)
    return depth_text(x, *thresholds_in) if x is not None else "? in"


def ntu(value: Any) -> str:
    x = number(value)
    return f"{x:.1f} NTU" if x is not None else "? NTU"


def signed_ntu(value: Any) -> str:
    x = number(value)
    return f"{x:+.1f} NTU" if x is not None else "? NTU"


def percent(fraction: Any, *levels: float) -> str:
    """A fill fraction as percent of design capacity, one decimal, never rounded across
    ``levels`` (``contract/figures.py``: 49.96 % is not 50.0 %)."""
    x = number(fraction)
    return fill_text(x, *levels, digits=1) if x is not None else "?%"


def hours(ms: int) -> str:
    return f"{ms / MS_PER_HOUR:.1f} hours"


def duration(ms: int) -> str:
    """A span for people: seconds, minutes or hours, whichever reads naturally."""
    if ms < 90_000:
        return f"{ms / 1000:.0f} seconds"
    if ms < 90 * 60_000:
        return f"{ms / 60_000:.0f} minutes"
    return hours(ms)


def hours_left(due_ms: int, now_ms: int) -> str:
    """``23.4 hours left`` or ``2.0 hours overdue``."""
    if due_ms >= now_ms:
        return f"{hours(due_ms - now_ms)} left"
    return f"{hours(now_ms - due_ms)} overdue"


def grafana_link(base: str, site_id: str, at_ms: int, now_ms: int) -> str:
    """The dashboard for this site around the event: ``var-site`` and a time range.

    Existing query parameters of ``base`` (``orgId=1``) are kept. The range runs
    from a day before the event to an hour after now (Grafana takes epoch ms).
    """
    parts = urlsplit(base)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
             if k not in ("var-site", "from", "to")]
    query += [("var-site", site_id), ("from", str(at_ms - 24 * MS_PER_HOUR)),
              ("to", str(max(at_ms, now_ms) + MS_PER_HOUR))]
    return urlunsplit(parts._replace(query=urlencode(query)))


# --------------------------------------------------------------------------- per type


class _Ctx:
    """The event and the site, with the helpers every type uses."""

    def __init__(self, alert: Alert) -> None:
        self.alert = alert
        self.event = alert.event
        self.site = alert.site
        self.zone = alert.site.zone if alert.site is not None else ZoneInfo("UTC")
        self.now = alert.now_ms
        self.at = alert.event.at_ms

    def local(self, value: int | str | None, *, year: bool = True) -> str:
        ms = value if isinstance(value, int) else ms_of(value)
        return local_time(ms, self.zone, year=year) if ms is not None else "unknown"

    def routine_days(self, clock_id: str = "") -> float:
        """The routine cadence in days of a clock's permit (the law's seven without a
        site)."""
        return self.site.cadence_days(clock_id) if self.site is not None else 7.0

    def clock_name(self, clock: str) -> str:
        """The kind of inspection a clock event asks for, by the event's own clock."""
        clock_id = str(getattr(self.event.body, "clock_id", "") or "")
        if clock == "routine":
            return f"{self.routine_days(clock_id):g}-day routine inspection"
        return "storm inspection"

    def sensor_kind(self, sensor_id: str) -> str | None:
        sensor = self.site.sensor(sensor_id) if self.site is not None else None
        return sensor.kind if sensor is not None else None

    def rain_threshold(self) -> tuple[float, ...]:
        """The site's storm threshold, what a storm's depth is printed beside."""
        return (self.site.rain.threshold_in,) if self.site is not None else ()

    def fill_levels(self, trap: str, *more: float) -> tuple[float, ...]:
        """The fills a trap's fill is judged against, and ``more`` (an event's own)."""
        return (self.site.fill_levels(trap) if self.site is not None else ()) + more

    def inspect_command(self, *args: str) -> str:
        """The command that records an inspection at the site, as it works typed on the
        daemon's machine: its program and configuration, and the inspector when the
        roster names one (else ``NAME``, with the names it may be)."""
        base = self.alert.inspect_command or "stormwatch inspect --config FILE"
        roster = self.alert.roster
        who = shlex.quote(roster[0]) if len(roster) == 1 else "NAME"
        command = " ".join([base, "--site", self.event.site, "--inspector", who, *args])
        return command + (f"; NAME: one of {', '.join(roster)}" if len(roster) > 1 else "")

    def record_hint(self, kind: str) -> str:
        return ("have the qualified professional inspect the erosion and sediment controls and "
                f"record it in the site log book ({self.inspect_command('--kind', kind)}).")


def _duty_9a2() -> Line:
    return Line("Chapter 134 § 134-9A(2) requires", f"\"...{QUOTE_134_9A2}\"", quote=True)


def _duty(c: _Ctx, permit: str | None, section: str | None) -> Line:
    """The rule behind a clock's deadline: § 134-9A(2), or the permit's own."""
    body = c.event.body
    kind = str(getattr(body, "clock", "storm") or "storm")
    duty = clock_duty(kind, str(getattr(body, "clock_id", "") or ""))
    return duty_line(c.site, permit, section, duty) or _duty_9a2()


def _duty_9a1() -> Line:
    return Line("Chapter 134 § 134-9A(1) requires", f"\"{QUOTE_134_9A1}\"", quote=True)


def _duty_8c() -> Line:
    return Line("Chapter 134 § 134-8C", f"\"{QUOTE_134_8C}\"", quote=True)


def _storm_qualified(c: _Ctx, e: StormQualified) -> Content:
    limit = e.threshold_in
    rain = (f"{inches(e.total_in, limit)} this storm, {inches(e.max_24h_in, limit)} within 24 "
            f"hours (threshold {inches(limit)}), gauge {e.gauge}")
    if e.source == "reference":
        # weather.reference_opens_clock: the station saw it, the site gauge did not.
        rain = (f"{inches(e.total_in, limit)} within 24 hours at the reference station "
                f"{e.reference} (threshold {inches(limit)}), while gauge {e.gauge} "
                "was silent or saw under a quarter of it")
    facts = [Line("Rain", rain), Line("Qualified at", c.local(e.qualified_at))]
    if e.uncertain_in:
        facts.insert(1, Line("Timing unknown", f"{inches(e.uncertain_in)} of it was found "
                             "when a silent gauge reported again; it is counted at that "
                             "reading"))
    if len(e.gauges) > 1 or (e.gauges and e.gauges[0] != e.gauge):
        facts.insert(1, Line("Gauges counted", ", ".join(e.gauges)))
    due = ms_of(e.due)
    if e.qualified_not_before is not None:
        return _storm_revealed(c, e, facts)
    if e.informational:
        return Content(
            f"storm {inches(e.total_in, e.threshold_in)} (informational)",
            f"A storm event reached the inspection threshold. {_no_deadline(c, e)}; the "
            "storm is recorded in the log book.", facts, INFO)
    if due is None:
        facts.append(Line("Inspection due", "24 hours after the rain stops; you will get the "
                          "deadline when the storm has ended"))
        return Content(f"storm {inches(e.total_in, e.threshold_in)}: inspection clock starts when "
                       f"the rain stops{source_words(e.permit, e.section)}",
                       "A storm event qualifies for a storm inspection.",
                       facts, WARNING, [_duty(c, e.permit, e.section),
                                        Line("To do", c.record_hint("storm"))])
    facts.append(Line("Inspection due", f"{c.local(due)} ({hours_left(due, c.now)})"))
    return Content(
        f"storm {inches(e.total_in, e.threshold_in)}, inspect by {c.local(due, year=False)}"
        f"{source_words(e.permit, e.section)}",
        _storm_summary(c, e), facts, WARNING,
        [_duty(c, e.permit, e.section), Line("To do", c.record_hint("storm"))])


def _storm_summary(c: _Ctx, e: StormQualified) -> str:
    """Within how long of what storm the inspection is due, and by which rule."""
    if e.permit is None or e.section is None or c.site is None:
        return "A storm event qualified: a storm inspection is due within 24 hours."
    within = storm_deadline_hours(c.site, e.permit) or 24.0
    return (f"A storm event qualified: a storm inspection is due within {within:g} hours of "
            f"a {inches(e.threshold_in)} storm, {source_words(e.permit, e.section)[2:-1]}.")


def _no_deadline(c: _Ctx, e: StormQualified) -> str:
    """Why no inspection deadline applies to an informational storm: the site's
    condition, or the part of the site's life it fell outside (``outside``)."""
    site = c.site
    if e.outside == "before_active_since":
        since = f" on {site.active_since}" if site is not None else ""
        why = f"It qualified before the site became active{since}"
    elif e.outside == "before_start":
        why = ("It qualified before the site's readings show it active (without "
               "active_since a site starts at a reading another follows within a routine "
               "inspection period: a stray row, or a site never heard from, has not "
               "started); set active_since if the site was active then")
    elif e.outside == "after_final_stabilization":
        why = "It qualified after the site's final stabilization"
    elif e.outside == "paused":
        why = "It qualified during a pause of the site's inspections agreed with the officer"
    elif e.outside is not None:
        why = f"It qualified outside the site's active period ({e.outside})"
    else:
        return ("This site does not meet Condition A, B or C of § 134-7B(2), so no "
                "inspection deadline applies")
    return why + ", so no inspection deadline applies"


def _storm_revealed(c: _Ctx, e: StormQualified, facts: list[Line]) -> Content:
    """A storm that qualified on rain a silent gauge revealed (monitor/README.md, "The rules"): when
    it qualified is known only to lie after the silence began, so the deadline may lie
    before the one counted from the reveal, and may have passed already."""
    early = ms_of(e.due_not_before)
    facts.append(Line("May have qualified as early as",
                         f"{c.local(e.qualified_not_before)}: the gauge was silent from then "
                         f"until {c.local(e.qualified_at)}, and the rain it reported then "
                         "may have fallen at any time in between"))
    if e.informational:
        return Content(f"storm {inches(e.total_in, e.threshold_in)} (informational), "
                       "timing unknown",
                       "A storm event reached the inspection threshold, found when a silent "
                       f"gauge reported again. {_no_deadline(c, e)}.", facts, INFO)
    due = ms_of(e.due)
    if early is not None:
        passed = "; that has already passed" if early <= c.now else ""
        facts.append(Line("Inspection may be due as early as",
                          f"{c.local(early)} ({hours_left(early, c.now)}){passed}"))
    if due is not None:
        facts.append(Line("Inspection due at the latest", f"{c.local(due)} "
                          f"({hours_left(due, c.now)}), counted from the reading"))
    return Content(
        f"storm {inches(e.total_in, e.threshold_in)}: INSPECT NOW, the deadline may have passed",
        "A storm event qualified on rain a silent gauge revealed: it may have qualified as "
        f"early as {c.local(e.qualified_not_before)}, so the 24-hour storm inspection may "
        "already be due or past due. Inspect now.",
        facts, FAILURE if early is not None and early <= c.now else WARNING,
        [_duty_9a2(), Line("To do", "inspect now: " + c.record_hint("storm"))])


def _storm_started(c: _Ctx, e: StormStarted) -> Content:
    return Content(f"rain started on {e.gauge}",
                   f"Rain started at {c.local(e.started_at)} on gauge {e.gauge}.")


def _storm_ended(c: _Ctx, e: StormEnded) -> Content:
    qualified = "qualified" if e.qualified else "did not qualify"
    limit = c.rain_threshold()
    return Content(f"storm ended, {inches(e.total_in, *limit)}",
                   f"The storm event on gauge {e.gauge} ended at "
                   f"{c.local(e.ended_at)}; it {qualified} for an inspection.",
                   [Line("Rain", f"{inches(e.total_in, *limit)} in all, "
                         f"{inches(e.max_24h_in, *limit)} at most within 24 hours")])


def _due_soon(c: _Ctx, e: InspectionDueSoon) -> Content:
    due = parse_iso(e.due)
    name = c.clock_name(e.clock)
    left = max(0, due - c.now)
    return Content(
        f"{name} due in {hours(left).replace(' hours', ' h')}, by {c.local(due, year=False)}"
        f"{source_words(e.permit, e.section)}",
        f"Reminder: the {name} is due {c.local(due)} and has not been recorded yet.",
        [Line("Inspection due", f"{c.local(due)} ({hours_left(due, c.now)})"),
         Line("Clock", e.clock_id)],
        WARNING,
        [_duty(c, e.permit, e.section), Line("To do", c.record_hint(e.clock))])


def _overdue(c: _Ctx, e: InspectionOverdue) -> Content:
    due = parse_iso(e.due)
    name = c.clock_name(e.clock)
    due_text = c.local(due)
    facts = [Line("Was due", due_text), Line("Overdue by", hours(max(0, c.now - due))),
             Line("Clock", e.clock_id)]
    repeat = c.site.rain.overdue_repeat_hours if c.site is not None else 4.0
    return Content(
        f"OVERDUE {name} (was due {c.local(due, year=False)})"
        f"{source_words(e.permit, e.section)}",
        f"The {name} was due {due_text} and no inspection has been recorded. This notice "
        f"repeats every {repeat:g} hours until one is.",
        facts, FAILURE,
        [_duty(c, e.permit, e.section), *_penalty(e.permit),
         Line("To do", c.record_hint(e.clock))])


def _penalty(permit: str | None) -> list[Line]:
    """§ 134-12D's penalty, for Chapter 134's clocks only."""
    return [Line("Penalty (§ 134-12D)", PENALTY_134_12D)] if is_chapter_134(permit) else []


def _clock_closed(c: _Ctx, e: ClockClosed) -> Content:
    name = c.clock_name(e.clock)
    due, inspected = parse_iso(e.due), parse_iso(e.inspected_at)
    facts = [Line("Inspected", c.local(inspected)), Line("Was due", c.local(due))]
    if e.backdated and e.entered_at:
        facts.append(Line("Entered", f"{c.local(e.entered_at)} (backdated)"))
    if e.outcome == "late":
        return Content(f"{name} recorded LATE ({hours(inspected - due)} after the deadline)"
                       f"{source_words(e.permit, e.section)}",
                       f"The {name} was recorded after its deadline.", facts, WARNING,
                       [_duty(c, e.permit, e.section)])
    return Content(f"{name} recorded on time{source_words(e.permit, e.section)}",
                   f"The {name} was recorded before its deadline.", facts, SUCCESS)


def _inspection_recorded(c: _Ctx, e: InspectionRecorded) -> Content:
    facts = [Line("Inspected", c.local(e.inspected_at)), Line("Kind", e.kind)]
    if any(e.credentials):
        facts.append(Line("Credentials", "; ".join(
            f"{n}: {cr}" for n, cr in zip(e.inspectors, e.credentials, strict=False) if cr)))
    if e.backdated and e.entered_at:
        facts.append(Line("Entered", f"{c.local(e.entered_at)} (backdated)"))
    if e.closes:
        facts.append(Line("Closes", ", ".join(clock_name(x, c.zone, days=c.routine_days(x))
                                               for x in e.closes)))
    facts += [Line("Finding", f"{f['practice']}: {f['condition']}") for f in e.findings]
    facts += [Line("Corrective action", f"{a['id']}: {a['text']}"
                   + (f" (due {c.local(a['due'])})" if a.get("due") else ""))
              for a in e.corrective_actions]
    if e.resolves:
        facts.append(Line("Resolves", ", ".join(e.resolves)))
    if e.notes:
        facts.append(Line("Notes", e.notes))
    return Content(f"inspection recorded by {e.inspector}",
                   f"An inspection by {e.inspector} was recorded in the log book.",
                   facts, SUCCESS)


def _backdated(c: _Ctx, e: InspectionBackdated) -> Content:
    facts = [Line("Inspected", c.local(e.inspected_at)), Line("Entered", c.local(e.entered_at)),
             Line("Entered after", f"{e.hours_late:g} hours")]
    if e.closes:
        facts.append(Line("Closed", ", ".join(e.closes)))
    return Content(
        f"inspection entered {e.hours_late:.0f} h after its own time",
        f"An inspection by {e.inspector} dated {c.local(e.inspected_at)} was entered only "
        f"{c.local(e.entered_at)}. The log book keeps both times; any clock it closed had "
        f"stood open meanwhile.", facts, WARNING, [_duty_9a2()])


def _missed(c: _Ctx, e: InspectionMissed) -> Content:
    return Content(
        f"week {e.week} without the {c.clock_name(e.clock)}",
        f"No {c.clock_name(e.clock)} has been recorded for week {e.week} since it was due "
        f"{c.local(e.due)}.",
        [Line("Week", f"{c.local(e.week_from)} to {c.local(e.week_to)}"),
         Line("Clock", e.clock_id)], FAILURE,
        [_duty(c, e.permit, e.section), *_penalty(e.permit)])


def _action_due(c: _Ctx, e: CorrectiveActionDue) -> Content:
    return Content(
        f"corrective action {e.action_id} due, not resolved",
        f"The corrective action asked for by {e.inspector} on {c.local(e.opened_at)} was due "
        f"{c.local(e.due)} and no inspection has recorded it done.",
        [Line("Action", f"{e.action_id}: {e.text}"), Line("Due", c.local(e.due))], WARNING,
        [Line("To do", "repair, then record it: "
                       + c.inspect_command("--resolved", e.action_id))])


def _site_closed(c: _Ctx, e: SiteClosed) -> Content:
    facts = [Line("Final stabilization", c.local(e.closed_at))]
    if e.by:
        facts.append(Line("Recorded by", e.by))
    if e.notes:
        facts.append(Line("Notes", e.notes))
    return Content("site closed (final stabilization)",
                   "Final stabilization was recorded; routine inspection clocks end here. "
                   "Storms are still recorded.", facts, SUCCESS)


def _trap_facts(c: _Ctx, e: TrapFill | TrapCleanoutRequired) -> list[Line]:
    return [Line("Fill", f"{percent(e.fill_fraction, *c.fill_levels(e.trap, e.threshold))} "
                 "of design capacity "
                 f"(sediment {inches(e.depth_in)} deep)"),
            Line("Measured at", c.local(c.at))]


def _trap_fill(c: _Ctx, e: TrapFill) -> Content:
    # The warning level, and the clean-out level the fill is not yet at (§ 134-9A(1)).
    levels = (e.threshold,) + (c.fill_levels(e.trap)[1:] or (0.5,))
    return Content(
        f"sediment trap {e.trap} at {percent(e.fill_fraction, *levels)} of design capacity",
        f"Sediment trap {e.trap} has passed the warning level of "
        f"{percent(e.threshold)}; clean-out is required at {percent(levels[-1])}.",
        _trap_facts(c, e), INFO, [_duty_9a1()])


def _trap_cleanout(c: _Ctx, e: TrapCleanoutRequired) -> Content:
    duty = [_duty_9a1(), Line("To do", "remove the sediment from the trap; the fill drops back "
                              "on the next readings and the clean-out is recorded.")]
    facts = _trap_facts(c, e)
    if e.fault is not None:
        # Concluded at a faulty reading: the fill is older than this reading.
        facts[-1] = Line("Repeated at", c.local(c.at))
        facts.append(Line("Sensor", f"faulty ({_FAULT_WORDS.get(e.fault, e.fault)}): the fill "
                          "is the last valid reading's; check the trap by eye"))
    fill = percent(e.fill_fraction, *c.fill_levels(e.trap, e.threshold))
    if e.repeat <= 0:
        return Content(
            f"clean out sediment trap {e.trap}: {fill} of design capacity filled",
            f"Sediment trap {e.trap} has lost {fill} of its "
            "design capacity: the sediment must be removed.",
            facts, WARNING, duty)
    trap = next((t for t in c.site.traps if t.id == e.trap), None) if c.site else None
    # The event does not carry the first demand's time. Each repeat comes at least
    # ``cleanout_repeat_hours`` after the one before it, so the first demand was made
    # ``repeat`` intervals before this one or earlier (exactly then for a sensor that
    # reports on a regular schedule).
    since = "" if trap is None else " since " + c.local(
        c.at - round(e.repeat * trap.cleanout_repeat_hours * MS_PER_HOUR)) + " or earlier"
    return Content(
        f"clean out sediment trap {e.trap}: still at {fill} of "
        f"design capacity (repeat {e.repeat})",
        f"Sediment trap {e.trap} is still at {fill} of its design "
        f"capacity: clean-out has been demanded{since} (repeat {e.repeat}), and the sediment "
        "must be removed.",
        facts, WARNING, duty)


def _trap_cleaned(c: _Ctx, e: TrapCleaned) -> Content:
    return Content(
        f"sediment trap {e.trap} cleaned",
        f"Sediment trap {e.trap} went from {percent(e.fill_before, *c.fill_levels(e.trap))} "
        f"to {percent(e.fill_after, *c.fill_levels(e.trap))} of design capacity at "
        f"{c.local(c.at)}.",
        [], SUCCESS)


#: A trap sensor's fault in the words the pages use (``contract/sentences.py``).
_FAULT_WORDS = FAULT_WORDS


def _sensor_fault(c: _Ctx, e: SensorFault) -> Content:
    sensor = c.site.sensor(e.sensor) if c.site is not None else None
    trap = next((t for t in c.site.traps if t.id == e.trap), None) if c.site else None
    what = f"sensor {e.sensor}" + (f" over trap {e.trap}" if e.trap else "")
    if e.reason == "beyond_bottom" and e.distance_in is not None:
        height = sensor.sensor_height_in if sensor is not None else None
        reading = (f"{inches(e.distance_in)} from the sensor"
                   + (f", mounted {inches(height)} above the bottom" if height else ""))
        why = f"reads {reading}: past the trap bottom, a depth of {inches(e.value)}"
    elif e.reason == "beyond_bottom":
        why = f"reads a sediment depth of {inches(e.value)}: below the trap bottom"
    elif e.reason == "above_max_fill":
        limit = ("" if trap is None else f", more than {trap.max_fill_fraction:g} times the "
                 f"design depth of {inches(trap.design_depth_ft * 12)}")
        why = (f"reads {inches(e.value)} of sediment{limit}: not sediment (something in the "
               "beam, the lid, an animal?)")
    else:
        step = "" if sensor is None else f" (more than {inches(sensor.max_step_in_value)})"
        start = "" if e.last_valid_in is None else f"from {inches(e.last_valid_in)} "
        why = (f"jumped {start}to {inches(e.value)} between two readings{step} and did not "
               "stay there: sediment cannot move like that")
    facts = [Line("Since", c.local(e.since))]
    if e.last_valid_in is not None:
        facts.append(Line("Last valid depth", inches(e.last_valid_in)))
    return Content(
        f"sediment {what} faulty: {_FAULT_WORDS.get(e.reason, e.reason)}",
        f"Sediment {what} {why}. Such readings are kept but not used: the trap keeps "
        "its last valid fill, a standing clean-out demand keeps being repeated, and a trap "
        "filling meanwhile is not seen until the sensor reads true again.",
        facts, WARNING,
        [_duty_9a1(), Line("To do", "check the sensor (its mounting height and sensor_height_in, "
                           "the beam path, water or debris over the trap); until it reads "
                           "true, have the trap's fill checked by eye.")])


def _probes_suspect(c: _Ctx, e: ProbesSuspect) -> Content:
    return Content(
        f"turbidity probes of {e.pair} suspect: upstream above downstream for "
        f"{e.hours:g} hours",
        f"For {e.hours:g} hours the upstream (background) probe {e.upstream} has read more "
        f"than {ntu(e.suspect_delta_ntu)} above the downstream probe {e.downstream}. "
        "Background above the site should not be far muddier than the water below the "
        "discharge: the probes may be swapped (which hides every exceedance), or the "
        "upstream probe sits in a plume.",
        [Line("Upstream (background)", ntu(e.upstream_ntu)),
         Line("Downstream", ntu(e.downstream_ntu)), Line("Since", c.local(e.since))],
        WARNING,
        [_duty_8c(), Line("To do", "check which probe is where, and that both are clean and "
                          "submerged; look for a muddy inflow above the upstream probe.")])


#: Why a pair's contrast is unknown, in a sentence ({up}, {down}: the probes).
_UNKNOWN_WHY: Final = {
    "downstream_stale": "no readings from the downstream probe {down}",
    "downstream_pegged": "the downstream probe {down} at its full scale (fouled, buried in "
                         "sediment, or in a plume beyond its range)",
    "background_missing": "no usable background reading from the upstream probe {up} "
                          "(silent, too old, or at its full scale)",
}
_UNKNOWN_TODO: Final = {
    "downstream_stale": "check the downstream probe and its node (power, cable, radio); until "
                        "it reports, look at the water below the discharge and record what you "
                        "see in the log book.",
    "downstream_pegged": "clean the downstream probe and check that it is submerged and not "
                         "buried; look at the water below the discharge for a plume and record "
                         "what you see in the log book.",
    "background_missing": "get the upstream probe reporting (power, cable, radio, fouling); "
                          "until it does, compare the water above and below the discharge by "
                          "eye and record what you see in the log book.",
}


def _turbidity_unmonitored(c: _Ctx, e: TurbidityUnmonitored) -> Content:
    why = _UNKNOWN_WHY.get(e.reason, e.reason).format(up=e.upstream, down=e.downstream)
    since = ms_of(e.since)
    lasted = "For some time" if since is None else f"For {hours(c.at - since)}"
    return Content(
        f"turbidity at {e.pair} not monitored: § 134-8C cannot be checked",
        f"{lasted} the turbidity contrast at {e.pair} has been unknown: "
        f"{why}. Whether the site causes a visible contrast with natural conditions cannot be "
        "checked: a person must look at the water.",
        [Line("Unknown since", c.local(e.since)),
         Line("Still checked", still_checked(e.reason, e.absolute_ntu)),
         Line("Probes", f"upstream (background) {e.upstream}, downstream {e.downstream}")],
        WARNING, [_duty_8c(), Line("To do", _UNKNOWN_TODO.get(e.reason, "check the probes."))])


def _turbidity_monitored(c: _Ctx, e: TurbidityMonitored) -> Content:
    why = _UNKNOWN_WHY.get(e.reason, e.reason).format(up=e.upstream, down=e.downstream)
    since, known = ms_of(e.since), ms_of(e.known_at)
    lasted = "" if since is None or known is None else f" ({hours(known - since)})"
    return Content(
        f"turbidity at {e.pair} monitored again",
        f"The turbidity contrast at {e.pair} is known again from {c.local(e.known_at)}: "
        f"§ 134-8C is checked again, and a turbidity alert follows if the contrast exceeds "
        f"its limit. It had been unknown since {c.local(e.since)}{lasted}: {why}.",
        [Line("Unknown", f"{c.local(e.since)} to {c.local(e.known_at)}")], SUCCESS,
        [_duty_8c()])


def _turbidity(c: _Ctx, e: TurbidityContrast) -> Content:
    if e.basis == "absolute":
        # No background reading: the downstream level alone against the pair's
        # absolute limit; there is no upstream reading or difference to show.
        limit = f"{ntu(e.limit_ntu)} (absolute, used while no background reading is available)"
        facts = [Line("Downstream", ntu(e.downstream_ntu)),
                 Line("Upstream (background)", "no reading available"),
                 Line("Limit", limit), Line("Since", c.local(e.started_at))]
        if e.state == "cleared":
            facts[-1] = Line("Episode", f"{c.local(e.started_at)} to {c.local(c.at)}")
            down, top = number(e.downstream_ntu), number(e.limit_ntu)
            if down is not None and top is not None and down > top:
                # The engine also ends an absolute episode when a background comes
                # back: from then on the contrast with it decides.
                facts[1] = Line("Upstream (background)", "reporting again")
                return Content(f"turbidity at {e.pair}: background reading available again",
                               f"A background reading is available again at {e.pair}: "
                               "turbidity contrast is judged against it from now on, no "
                               f"longer against the absolute limit of {ntu(e.limit_ntu)}; "
                               "a new alert follows if the contrast exceeds its limit.",
                               facts, INFO, [_duty_8c()])
            return Content(f"turbidity at {e.pair} back below the absolute limit",
                           f"Turbidity below the discharge at {e.pair} is back below the "
                           f"absolute limit of {ntu(e.limit_ntu)} (no background reading "
                           "was available).", facts, SUCCESS, [_duty_8c()])
        return Content(
            f"turbidity {ntu(e.downstream_ntu)} at {e.pair}, no background reading",
            f"No background (upstream) reading was available for {e.pair}, and the "
            f"turbidity below the discharge has stayed above the absolute limit of "
            f"{ntu(e.limit_ntu)}: a visible contrast in the receiving water is likely.",
            facts, WARNING,
            [_duty_8c(), Line("To do", "check the discharge point and the erosion and sediment "
                              "controls above it; stabilise exposed soil; get the upstream "
                              "probe reporting so the contrast can be measured.")])
    facts = [Line("Downstream", ntu(e.downstream_ntu)),
             Line("Upstream (background)", ntu(e.upstream_ntu)),
             Line("Difference", f"{signed_ntu(e.delta_ntu)} (limit "
                  f"{ntu(e.limit_ntu)} over background)"),
             Line("Since", c.local(e.started_at))]
    if e.state == "cleared":
        facts[-1] = Line("Episode", f"{c.local(e.started_at)} to {c.local(c.at)}")
        return Content(f"turbidity contrast at {e.pair} cleared",
                       f"Turbidity below the discharge at {e.pair} is back within the "
                       "limit.", facts, SUCCESS, [_duty_8c()])
    return Content(
        f"turbidity {signed_ntu(e.delta_ntu)} over background at {e.pair}",
        f"Turbidity below the discharge at {e.pair} has stayed above the limit over "
        "background: a visible contrast in the receiving water is likely.",
        facts, WARNING,
        [_duty_8c(), Line("To do", "check the discharge point and the erosion and sediment "
                          "controls above it; stabilise exposed soil.")])


#: What goes unwatched while a sensor of each kind is silent (its family's words).
_SENSOR_NEED = {kind: spec.words for kind, spec in KINDS.items()}


def _sensor_stale(c: _Ctx, e: SensorStale) -> Content:
    need = _SENSOR_NEED.get(c.sensor_kind(e.sensor) or "", "its readings are missing")
    since = (f"since {c.local(e.last_seen)}" if e.last_seen is not None
             else "since monitoring began (it has never reported)")
    return Content(f"sensor {e.sensor} silent",
                   f"No message from sensor {e.sensor} {since}: {need}.",
                   [Line("To do", "check the node's power, radio and the broker.")])


def _sensor_recovered(c: _Ctx, e: SensorRecovered) -> Content:
    return Content(f"sensor {e.sensor} reporting again",
                   f"Sensor {e.sensor} is reporting again (last message "
                   f"{c.local(e.last_seen)}).", [], SUCCESS)


def _battery_low(c: _Ctx, e: BatteryLow) -> Content:
    return Content(f"low battery on {e.sensor}",
                   f"The battery of sensor {e.sensor} is low: {e.battery_v:.2f} V "
                   f"(limit {e.battery_low_v:.2f} V).",
                   [Line("To do", "replace or charge the battery before the node stops.")])


def _counter_reset(c: _Ctx, e: CounterReset) -> Content:
    return Content(f"rain gauge {e.sensor} counter reset",
                   f"The tip counter of rain gauge {e.sensor} went from "
                   f"{e.tips_before} to {e.tips_after} at "
                   f"{c.local(c.at)} (node restarted or reflashed); counting continues from "
                   "the new value.")


def _background_missing(c: _Ctx, e: BackgroundMissing) -> Content:
    return Content(f"no background turbidity for {e.pair}",
                   f"The upstream probe {e.sensor} has no reading recent enough to "
                   f"compare with the downstream probe of {e.pair}: turbidity contrast "
                   "cannot be checked (§ 134-8C).")


def _pegged(c: _Ctx, e: Pegged) -> Content:
    return Content(f"turbidity probe {e.sensor} pegged",
                   f"Turbidity probe {e.sensor} reads its full scale at {ntu(e.max_ntu)}: "
                   "the real turbidity may be higher, or the probe is fouled.")


def _storm_forecast(c: _Ctx, e: StormForecast) -> Content:
    chance = "" if e.probability is None else f" (chance of precipitation {e.probability:g} %)"
    window = f"{c.local(e.window_from)} to {c.local(e.window_to)}"
    forecast = inches(e.forecast_in, e.threshold_in)
    return Content(
        f"storm forecast: {forecast} within 24 hours",
        f"The forecast (NWS gridpoint {e.grid}, issued {c.local(e.issued_at)}) puts "
        f"{forecast} of rain on the site from {window}{chance}, at or above "
        f"the {inches(e.threshold_in)} of a storm that needs an inspection within 24 hours. "
        "Check the controls before the rain.",
        [Line("Forecast", f"{forecast}{chance}"), Line("Window", window)],
        WARNING,
        [_duty_9a2(), Line("To do", "check silt fence, inlet protection and traps before the "
                           "rain; a forecast opens no clock: the site gauge decides.")])


def _gauge_disagrees(c: _Ctx, e: GaugeDisagrees) -> Content:
    window = f"{c.local(e.window_from)} to {c.local(e.window_to)}"
    unknown = (f" ({e.reference_unknown_hours} hours unreported, so at least that)"
               if e.reference_unknown_hours else "")
    # The station is judged against the threshold, the gauge against a quarter of it.
    station, seen = inches(e.reference_in, e.threshold_in), inches(e.gauge_in,
                                                                   e.threshold_in / 4)
    gauge = (f"rain gauge {e.gauge} was silent in that time (stale), {seen} reported"
             if e.stale else f"rain gauge {e.gauge} saw {seen}")
    clock = ("weather.reference_opens_clock is set: this is a storm of the site, and its "
             "storm inspection clock is open (due 24 hours after the station reached the "
             "threshold)."
             if e.opens_clock else "It opens no clock: a station miles away is a second "
             "opinion, not the site's rain.")
    return Content(
        f"rain gauge {e.gauge} may be clogged or dead",
        f"The gauge may be clogged or dead: the station {e.reference} saw "
        f"{station}{unknown} from {window}, while {gauge}. {clock}",
        [Line("Reference", f"{e.reference}: {station}"),
         Line("Gauge", f"{e.gauge}: {seen}" + (" (stale)" if e.stale else "")),
         Line("Window", window)],
        WARNING,
        [_duty_9a2(), Line("To do", "check the gauge's funnel, bucket and battery; if it "
                           "rained on the site, have the controls inspected.")])


def _content(c: _Ctx) -> Content:
    """What the event's type says (each type's own renderer, by its typed body)."""
    match c.event.body:
        case StormStarted() as e:
            return _storm_started(c, e)
        case StormQualified() as e:
            return _storm_qualified(c, e)
        case StormEnded() as e:
            return _storm_ended(c, e)
        case InspectionRecorded() as e:
            return _inspection_recorded(c, e)
        case InspectionBackdated() as e:
            return _backdated(c, e)
        case InspectionMissed() as e:
            return _missed(c, e)
        case CorrectiveActionDue() as e:
            return _action_due(c, e)
        case SiteClosed() as e:
            return _site_closed(c, e)
        case InspectionDueSoon() as e:
            return _due_soon(c, e)
        case InspectionOverdue() as e:
            return _overdue(c, e)
        case ClockClosed() as e:
            return _clock_closed(c, e)
        case TrapFill() as e:
            return _trap_fill(c, e)
        case TrapCleanoutRequired() as e:
            return _trap_cleanout(c, e)
        case TrapCleaned() as e:
            return _trap_cleaned(c, e)
        case TurbidityContrast() as e:
            return _turbidity(c, e)
        case SensorStale() as e:
            return _sensor_stale(c, e)
        case SensorRecovered() as e:
            return _sensor_recovered(c, e)
        case BatteryLow() as e:
            return _battery_low(c, e)
        case CounterReset() as e:
            return _counter_reset(c, e)
        case BackgroundMissing() as e:
            return _background_missing(c, e)
        case Pegged() as e:
            return _pegged(c, e)
        case SensorFault() as e:
            return _sensor_fault(c, e)
        case ProbesSuspect() as e:
            return _probes_suspect(c, e)
        case TurbidityUnmonitored() as e:
            return _turbidity_unmonitored(c, e)
        case TurbidityMonitored() as e:
            return _turbidity_monitored(c, e)
        case StormForecast() as e:
            return _storm_forecast(c, e)
        case GaugeDisagrees() as e:
            return _gauge_disagrees(c, e)
    return _generic(c)


def _generic(c: _Ctx) -> Content:
    """A type without an alert text of its own: the sentence the pages say of it
    (``contract/sentences.py``), then its fields, so nothing is hidden."""
    try:
        words = sentence(c.event, c.site)
    except (TypeError, ValueError, KeyError, AttributeError):
        words = f"{c.event.type} at {c.local(c.at)}"
    return Content(words.split(":", 1)[0], words + ".",
                   [Line(k, str(v)) for k, v in c.event.body.to_json().items()])


# --------------------------------------------------------------------------- assembly


def render(alert: Alert) -> Message:
    """The title and the text and Markdown bodies of one alert."""
    c = _Ctx(alert)
    try:
        content = _content(c)
    except (TypeError, ValueError, KeyError, AttributeError):
        # An event this code misreads still goes out, with its raw fields: a
        # rendering bug must not hold an alert back.
        content = _generic(c)
    site = alert.site
    site_short = (site.name or site.id) if site is not None else c.event.site
    title = f"{site_short}: {content.headline}"
    notify_type = content.notify_type
    lead: list[str] = []
    if alert.previous is not None:
        title = f"[CORRECTION] {title}"
        lead.append(_correction_note(c, alert.previous))
    if alert.escalation is not None:
        title = f"[ESCALATED] {title}"
        lead.append(_escalation_note(c, alert.escalation))
        notify_type = FAILURE
    where = site_short
    if site is not None:
        where = f"{site.name} ({site.id})" if site.name else site.id
        if site.address:
            where += f", {site.address}"
    facts = [Line("Site", where), *content.facts]
    delay = alert.now_ms - c.at
    if delay > LATE_NOTE_MS and alert.escalation is None \
            and not isinstance(c.event.body, InspectionOverdue | InspectionDueSoon):
        facts.append(Line("Reported late", f"this happened {hours(delay)} before this message "
                          "(the data or its delivery was delayed)"))
    tail: list[Line] = []
    if alert.form_link:
        tail.append(Line("Inspection form", "", url=alert.form_link))
    if alert.grafana_url:
        tail.append(Line("Dashboard", "", url=grafana_link(
            alert.grafana_url, c.event.site, c.at, alert.now_ms)))
    tail.append(Line("Alert id", alert.alert_id))
    paragraphs = [*lead, content.summary]
    return Message(title, _text(paragraphs, facts, content.duty, tail),
                   _markdown(paragraphs, facts, content.duty, tail), notify_type)


def _correction_note(c: _Ctx, previous: Event) -> str:
    old, new = _due_of(previous), _due_of(c.event)
    if old is None and new is not None:
        return f"Update: the inspection clock has started; the deadline is {c.local(new)}."
    if old is not None and new is not None:
        return (f"Correction: the deadline moved EARLIER, from {c.local(old)} to "
                f"{c.local(new)}: late rain-gauge data show the storm qualified earlier.")
    return "Correction of an earlier alert with the same event."


def _due_of(event: Event) -> int | None:
    return ms_of(event.body.due) if isinstance(event.body, StormQualified) else None


def _escalation_note(c: _Ctx, esc: Escalation) -> str:
    error = f" Last error: {esc.last_error}." if esc.last_error else ""
    return (f"Escalated: stormwatch could not deliver this alert to '{esc.from_tag}' "
            f"({esc.attempts} attempts in {duration(max(0, c.now - esc.since_ms))}).{error} "
            "Please make sure the person responsible knows.")


def _text(paragraphs: list[str], facts: list[Line], duty: list[Line], tail: list[Line]) -> str:
    def line(item: Line) -> str:
        value = item.url if item.url else item.text
        return f"{item.label}: {value}" if item.label else value

    blocks = ["\n".join(paragraphs), "\n".join(line(f) for f in facts)]
    if duty:
        blocks.append("\n".join(line(d) for d in duty))
    blocks.append("\n".join(line(t) for t in tail))
    return "\n\n".join(b for b in blocks if b) + "\n"


def _markdown(paragraphs: list[str], facts: list[Line], duty: list[Line],
              tail: list[Line]) -> str:
    def line(item: Line) -> str:
        if item.url:
            # An autolink: its HTML keeps the address visible, so the plain-text
            # part Apprise derives from HTML (e-mail) still shows the link.
            value = f"<{item.url}>"
        elif item.quote:
            value = f"*{md_escape(item.text)}*"
        else:
            value = md_escape(item.text)
        return f"**{md_escape(item.label)}:** {value}" if item.label else value

    # Two trailing spaces: a hard line break in CommonMark, not only with nl2br.
    blocks = ["\n\n".join(md_escape(p) for p in paragraphs),
              "  \n".join(line(f) for f in facts)]
    blocks += [line(d) for d in duty]
    blocks.append("  \n".join(line(t) for t in tail))
    return "\n\n".join(b for b in blocks if b) + "\n"

"""Every event of the vocabulary as one sentence a person reads: the site page's log
book, the answer page, ``stormwatch logbook --format md`` and the report's rows.

Theory of operation
-------------------
An event is a record for programs (``trap_cleanout_required``,
``fill_fraction=0.503``, ``due=2026-12-03T16:30:00Z``); the qualified
professional on a muddy site reads "Sediment trap trap-1 is 50% full — clean
it out, § 134-9A(1)". Each type of ``events.EVENT_TYPES`` has one function
here (``SENTENCES``, filled by ``_says``; a test walks the registry so a new
type cannot go without one) that says

* what happened, with its numbers in units: depths and fills through
  ``figures.py``, never rounded across the threshold they are judged by;
* when, in the site's own zone (``clocknames.spoken``: ``Thu Dec 3 11:30 EST``),
  never UTC;
* the clock it concerns by name (``clocknames.clock_name``: "storm of Dec 2"),
  never by id;
* what to do, and the section of Chapter 134 that asks it: § 134-9A(2)
  inspections, § 134-9A(1) sediment traps, § 134-8C turbidity, § 134-12D each
  week of a missed inspection a separate violation.

A revision says so ("Revised: ..."), a retraction that the fact no longer holds
("Withdrawn: ..."). Ids and hashes are not in a sentence: the pages show them
apart, out of the way. The alerts (``sinks/notify/messages.py``) say more (a
quote of the law, the form's link) but name clocks and faults with these words.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Protocol, TypeVar
from zoneinfo import ZoneInfo

from . import events as ev
from .body import Body
from .clocknames import deadline, inspection_of, spoken
from .figures import depth_text, fill_text
from .permits import is_chapter_134, rule_words
from .unmonitored_words import reason_words

S_9A1, S_9A2, S_8C, S_12D = "§ 134-9A(1)", "§ 134-9A(2)", "§ 134-8C", "§ 134-12D"

#: A trap sensor's fault (``SensorFault.reason``) as a person reads it.
FAULT_WORDS: Final[dict[str, str]] = {
    "beyond_bottom": "reads past the trap bottom",
    "above_max_fill": "reads far above the design depth",
    "impossible_step": "jumped by more than sediment can move",
}

#: Why an informational storm opens no clock (``StormQualified.outside``).
_OUTSIDE: Final[dict[str, str]] = {
    "before_active_since": "before the site became active",
    "before_start": "before the site's readings show it active",
    "after_final_stabilization": "after final stabilization",
    "paused": "during an agreed pause of inspections",
}


class _Rain(Protocol):
    @property
    def threshold_in(self) -> float: ...


class SiteWords(Protocol):
    """What a sentence needs of a site (``config.SiteConfig`` is one): its zone, its
    storm threshold and each trap's levels (what a figure is printed beside)."""

    @property
    def zone(self) -> ZoneInfo: ...

    @property
    def rain(self) -> _Rain: ...

    @property
    def routine_inspection_days(self) -> float: ...

    def fill_levels(self, trap_id: str) -> tuple[float, ...]: ...


class _Ctx:
    """The site (or none: UTC, no levels) and the event, with what every sentence uses."""

    def __init__(self, event: ev.Event, site: SiteWords | None) -> None:
        self.event, self.site = event, site
        self.zone = site.zone if site is not None else ZoneInfo("UTC")

    def at(self, value: int | str | None = None) -> str:
        """A time of the event (its own time by default), as a sentence says it."""
        return spoken(self.event.at_ms if value is None else value, self.zone)

    def clock(self, clock_id: str, clock: str | None = None) -> str:
        return inspection_of(clock_id, self.zone, clock, self.days(clock_id))

    def days(self, clock_id: str) -> float:
        """The routine cadence of the clock's permit (``SiteConfig.cadence_days``), or of
        the site for one that knows no permits; the law's seven without a site."""
        if self.site is None:
            return 7.0
        cadence = getattr(self.site, "cadence_days", None)
        return float(cadence(clock_id)) if callable(cadence) else self.site.routine_inspection_days

    def fill(self, trap: str, fraction: float, *more: float) -> str:
        levels = (self.site.fill_levels(trap) if self.site is not None else ()) + more
        return fill_text(fraction, *levels)

    def rain(self, depth_in: float, threshold_in: float | None = None) -> str:
        if threshold_in is None and self.site is not None:
            threshold_in = self.site.rain.threshold_in
        return depth_text(depth_in, *(() if threshold_in is None else (threshold_in,)))


B = TypeVar("B", bound=Body)
Say = Callable[[B, _Ctx], str]
#: Each event type's sentence, by type name (``_says``).
SENTENCES: dict[str, Callable[[Body, _Ctx], str]] = {}


def _says(kind: type[B]) -> Callable[[Say[B]], Say[B]]:
    def register(fn: Say[B]) -> Say[B]:
        SENTENCES[kind.TYPE] = fn  # type: ignore[assignment]  # called with its own type
        return fn
    return register


def sentence(event: ev.Event, site: SiteWords | None = None) -> str:
    """The event as a person reads it (module docstring); a type without a sentence
    yet is said by its name and time, never by its raw fields."""
    c = _Ctx(event, site)
    say = SENTENCES.get(event.type)
    try:
        text = say(event.body, c) if say is not None else (
            f"{event.type.replace('_', ' ').capitalize()} at {c.at()}")
    except (TypeError, ValueError, KeyError, AttributeError):
        # A body this code misreads (an old row) is still shown, by its kind.
        text = f"{event.type.replace('_', ' ').capitalize()} at {c.at()}"
    if event.retracted:
        return f"Withdrawn (no longer holds): {text}"
    return f"Revised: {text}" if event.revision else text


# --------------------------------------------------------------------------- storms


@_says(ev.StormStarted)
def _storm_started(e: ev.StormStarted, c: _Ctx) -> str:
    return f"Rain began on gauge {e.gauge} at {c.at(e.started_at)}"


@_says(ev.StormQualified)
def _storm_qualified(e: ev.StormQualified, c: _Ctx) -> str:
    depth = c.rain(e.total_in, e.threshold_in)
    where = (f" at reference station {e.reference} (gauge {e.gauge} missed it)"
             if e.source == "reference" else "")
    head = f"Storm of {depth}{where} qualified {c.at(e.qualified_at)}"
    if e.informational:
        why = _OUTSIDE.get(e.outside or "", "the site's condition needs no storm inspection")
        return f"{head} — recorded only, no inspection deadline ({why})"
    rule = rule_words(e.permit, e.section, S_9A2)
    if e.due is None:
        return f"{head} — inspect within 24 hours after the rain stops, {rule}"
    early = (f" (may have been due as early as {c.at(e.due_not_before)}: the gauge was silent)"
             if e.due_not_before else "")
    return f"{head} — inspect by {c.at(e.due)}{early}, {rule}"


@_says(ev.StormEnded)
def _storm_ended(e: ev.StormEnded, c: _Ctx) -> str:
    result = "it qualified for an inspection" if e.qualified else "below the storm threshold"
    return (f"Storm on gauge {e.gauge} ended {c.at(e.ended_at)} after "
            f"{c.rain(e.total_in)}: {result}")


@_says(ev.StormForecast)
def _storm_forecast(e: ev.StormForecast, c: _Ctx) -> str:
    chance = "" if e.probability is None else f" ({e.probability:g} % chance)"
    return (f"Forecast of {c.rain(e.forecast_in, e.threshold_in)}{chance} from "
            f"{c.at(e.window_from)} to {c.at(e.window_to)} — check the controls before the "
            f"rain, {S_9A2}")


@_says(ev.GaugeDisagrees)
def _gauge_disagrees(e: ev.GaugeDisagrees, c: _Ctx) -> str:
    seen = "was silent" if e.stale else f"saw {c.rain(e.gauge_in, e.threshold_in / 4)}"
    opens = (f": counted as the site's storm, inspect within 24 hours, {S_9A2}"
             if e.opens_clock else ": check the gauge")
    return (f"Rain gauge {e.gauge} may be clogged or dead — station {e.reference} saw "
            f"{c.rain(e.reference_in, e.threshold_in)} from {c.at(e.window_from)} to "
            f"{c.at(e.window_to)} while the gauge {seen}{opens}")


@_says(ev.SnowEvent)
def _snow_event(e: ev.SnowEvent, c: _Ctx) -> str:
    return (f"Snow of {depth_text(e.total_in, e.threshold_in)} within "
            f"{e.window_hours:g} hours on gauge {e.sensor} by {c.at(e.qualified_at)}: its "
            "melt is a storm event's discharge — check the controls before the thaw")


# --------------------------------------------------------------------------- inspections


@_says(ev.InspectionRecorded)
def _inspection_recorded(e: ev.InspectionRecorded, c: _Ctx) -> str:
    names = list(e.inspectors or (e.inspector,))
    credential = next((cr for cr in e.credentials if cr), "")
    who = names[0] + (f" ({credential})" if credential else "") + (
        f" with {', '.join(names[1:])}" if len(names) > 1 else "")
    parts = [f"{e.kind.capitalize()} inspection by {who} at {c.at(e.inspected_at)}"]
    if e.backdated and e.entered_at:
        parts.append(f"entered late, {c.at(e.entered_at)}")
    if e.closes:
        parts.append("closes " + ", ".join(c.clock(x) for x in e.closes))
    # A condition is a word of the form (``needs_repair``), then the inspector's note.
    parts += [f"{f.get('practice', '?')}: {f.get('condition', '').replace('_', ' ')}"
              for f in e.findings]
    parts += [f"asks: {a.get('text') or a.get('id')}"
              + (f" by {deadline(a['due'], c.zone)}" if a.get("due") else "")
              for a in e.corrective_actions]
    if e.resolves:
        parts.append(f"resolves {len(e.resolves)} corrective action(s)")
    if e.photos:
        parts.append(f"{len(e.photos)} photo(s)")
    if e.notes:
        parts.append(f"notes: {e.notes}")
    return "; ".join(parts) + f", {S_9A2}"


@_says(ev.InspectionBackdated)
def _backdated(e: ev.InspectionBackdated, c: _Ctx) -> str:
    return (f"Inspection by {e.inspector} of {c.at(e.inspected_at)} entered only "
            f"{c.at(e.entered_at)} ({e.hours_late:.0f} h later)")


@_says(ev.InspectionDueSoon)
def _due_soon(e: ev.InspectionDueSoon, c: _Ctx) -> str:
    return (f"Reminder: {c.clock(e.clock_id, e.clock)} is due by {c.at(e.due)} "
            f"({e.hours_left:.1f} h left), {rule_words(e.permit, e.section, S_9A2)}")


@_says(ev.InspectionOverdue)
def _overdue(e: ev.InspectionOverdue, c: _Ctx) -> str:
    name = c.clock(e.clock_id, e.clock)
    # The first notice comes at the deadline itself: "0.0 h late" says nothing.
    late = f" ({e.hours_late:.1f} h late)" if e.hours_late >= 0.05 else ""
    rule = rule_words(e.permit, e.section, S_9A2)
    return f"OVERDUE: {name} was due by {c.at(e.due)}{late} — inspect now, {rule}"


@_says(ev.InspectionMissed)
def _missed(e: ev.InspectionMissed, c: _Ctx) -> str:
    return (f"Week {e.week} without {c.clock(e.clock_id, e.clock)} ({c.at(e.week_from)} to "
            f"{c.at(e.week_to)}): each week a separate violation, {_missed_rule(e)}")


def _missed_rule(e: ev.InspectionMissed) -> str:
    """§ 134-12D makes each missed week a violation of Chapter 134; under another
    permit the week is missed against that permit's own rule."""
    if is_chapter_134(e.permit):
        return S_12D
    return rule_words(e.permit, e.section, S_12D)


@_says(ev.ClockClosed)
def _clock_closed(e: ev.ClockClosed, c: _Ctx) -> str:
    how = "on time" if e.outcome == "met" else "LATE"
    name = c.clock(e.clock_id, e.clock)
    return (f"{name[0].upper()}{name[1:]} done {how} {c.at(e.inspected_at)} (due by "
            f"{c.at(e.due)}), {rule_words(e.permit, e.section, S_9A2)}")


@_says(ev.CorrectiveActionDue)
def _action_due(e: ev.CorrectiveActionDue, c: _Ctx) -> str:
    return (f"Corrective action not done by {deadline(e.due, c.zone)}: {e.text} (asked by "
            f"{e.inspector} {c.at(e.opened_at)})")


@_says(ev.CorrectiveActionSent)
def _action_sent(e: ev.CorrectiveActionSent, c: _Ctx) -> str:
    to = f" at {e.to}" if e.to else " by a link handed over"
    return f"Corrective action sent to the contractor{to} by {e.sent_by} {c.at()}: {e.text}"


@_says(ev.CorrectiveActionDone)
def _action_done(e: ev.CorrectiveActionDone, c: _Ctx) -> str:
    who = "the contractor" if e.done_by == "contractor" else e.done_by
    note = f" ({e.note})" if e.note else ""
    photos = f", {len(e.photos)} photo{'s' if len(e.photos) != 1 else ''}" if e.photos else ""
    return (f"Corrective action reported done by {who} {c.at()}{photos}: {e.text}{note};"
            " the next inspection verifies it, § 134-9A(2)")


@_says(ev.SiteClosed)
def _site_closed(e: ev.SiteClosed, c: _Ctx) -> str:
    by = f" by {e.by}" if e.by else ""
    return (f"Site closed at final stabilization {c.at(e.closed_at)}{by}: routine "
            "inspections end")


@_says(ev.CorrectiveActionOverdue)
def _action_overdue(e: ev.CorrectiveActionOverdue, c: _Ctx) -> str:
    return (f"OVERDUE: corrective action {e.text!r} was due by {c.at(e.due)} "
            f"({e.hours_late:.0f} h late), {rule_words(e.permit, e.section, S_9A2)}")


@_says(ev.SiteShutdown)
def _site_shutdown(e: ev.SiteShutdown, c: _Ctx) -> str:
    by = f" by {e.by}" if e.by else ""
    until = f" until {c.at(e.ended_at)}" if e.ended_at else ""
    return (f"Temporary shutdown from {c.at(e.started_at)}{until}{by}, written notice: "
            f"{e.notice!r}: the permits' shutdown cadence applies")


@_says(ev.TurbidityBenchmarkExceeded)
def _benchmark(e: ev.TurbidityBenchmarkExceeded, c: _Ctx) -> str:
    return (f"Dewatering turbidity at {e.sensor} averaged {e.mean_ntu:.1f} NTU over "
            f"{e.samples} samples from {c.at(e.week_from)} to {c.at(e.week_to)}, above the "
            f"{e.benchmark_ntu:g} NTU benchmark — corrective action, "
            f"{rule_words(e.permit, e.section, '')}")


# --------------------------------------------------------------------------- traps


@_says(ev.TrapFill)
def _trap_fill(e: ev.TrapFill, c: _Ctx) -> str:
    return (f"Sediment trap {e.trap} is {c.fill(e.trap, e.fill_fraction, e.threshold)} full "
            f"(warning level {fill_text(e.threshold)}) — plan the clean-out, {S_9A1}")


@_says(ev.TrapCleanoutRequired)
def _trap_cleanout(e: ev.TrapCleanoutRequired, c: _Ctx) -> str:
    fill = c.fill(e.trap, e.fill_fraction, e.threshold)
    still = "still " if e.repeat else ""
    fault = (f" (the last valid reading: the sensor {FAULT_WORDS.get(e.fault, e.fault)})"
             if e.fault else "")
    return f"Sediment trap {e.trap} is {still}{fill} full{fault} — clean it out, {S_9A1}"


@_says(ev.TrapCleaned)
def _trap_cleaned(e: ev.TrapCleaned, c: _Ctx) -> str:
    return (f"Sediment trap {e.trap} cleaned out: from {c.fill(e.trap, e.fill_before)} to "
            f"{c.fill(e.trap, e.fill_after)} full")


@_says(ev.SensorFault)
def _sensor_fault(e: ev.SensorFault, c: _Ctx) -> str:
    over = f" over trap {e.trap}" if e.trap else ""
    return (f"Sediment sensor {e.sensor}{over} {FAULT_WORDS.get(e.reason, e.reason)} "
            f"({e.value:g} in) since {c.at(e.since)}: the fill is not measured meanwhile, "
            f"{S_9A1}")


# --------------------------------------------------------------------------- turbidity


@_says(ev.TurbidityContrast)
def _turbidity(e: ev.TurbidityContrast, c: _Ctx) -> str:
    if e.state == "cleared":
        return (f"Turbidity at {e.pair} back within its limit (since {c.at(e.started_at)}), "
                f"{S_8C}")
    if e.basis == "absolute":
        return (f"Turbidity below {e.pair} is {e.downstream_ntu:g} NTU with no background "
                f"reading (limit {e.limit_ntu:g} NTU) since {c.at(e.started_at)} — check the "
                f"discharge, {S_8C}")
    delta = e.delta_ntu if e.delta_ntu is not None else e.downstream_ntu
    return (f"Turbidity at {e.pair} is {delta:g} NTU over background (limit "
            f"{e.limit_ntu:g} NTU) since {c.at(e.started_at)} — check the discharge and the "
            f"controls above it, {S_8C}")


@_says(ev.BackgroundMissing)
def _background_missing(e: ev.BackgroundMissing, c: _Ctx) -> str:
    return (f"No background reading from upstream probe {e.sensor} for {e.pair}: the "
            f"contrast cannot be checked, {S_8C}")


@_says(ev.Pegged)
def _pegged(e: ev.Pegged, c: _Ctx) -> str:
    return (f"Turbidity probe {e.sensor} ({e.pair}) at its full scale of {e.max_ntu:g} NTU: "
            "the water may be more turbid, or the probe fouled")


@_says(ev.ProbesSuspect)
def _probes_suspect(e: ev.ProbesSuspect, c: _Ctx) -> str:
    return (f"Turbidity probes of {e.pair} suspect: upstream {e.upstream_ntu:g} NTU above "
            f"downstream {e.downstream_ntu:g} NTU for {e.hours:g} h since {c.at(e.since)} "
            f"(swapped, or in a plume), {S_8C}")


@_says(ev.TurbidityUnmonitored)
def _unmonitored(e: ev.TurbidityUnmonitored, c: _Ctx) -> str:
    return (f"Turbidity at {e.pair} not monitored since {c.at(e.since)} "
            f"({reason_words(e.reason)}) — look at the water below the discharge, {S_8C}")


@_says(ev.TurbidityMonitored)
def _monitored(e: ev.TurbidityMonitored, c: _Ctx) -> str:
    return (f"Turbidity at {e.pair} monitored again from {c.at(e.known_at)} (unknown since "
            f"{c.at(e.since)}), {S_8C}")


# --------------------------------------------------------------------------- sensors


@_says(ev.SensorStale)
def _sensor_stale(e: ev.SensorStale, c: _Ctx) -> str:
    since = (f"since {c.at(e.last_seen)}" if e.last_seen is not None
             else "since monitoring began (never reported)")
    return f"Sensor {e.sensor} silent {since} — check its power and radio"


@_says(ev.SensorRecovered)
def _sensor_recovered(e: ev.SensorRecovered, c: _Ctx) -> str:
    return (f"Sensor {e.sensor} reporting again (silent from {c.at(e.stale_since)} to "
            f"{c.at(e.last_seen)})")


@_says(ev.BatteryLow)
def _battery_low(e: ev.BatteryLow, c: _Ctx) -> str:
    return (f"Battery of sensor {e.sensor} low: {e.battery_v:.2f} V (limit "
            f"{e.battery_low_v:.2f} V) — replace or charge it")


@_says(ev.CounterReset)
def _counter_reset(e: ev.CounterReset, c: _Ctx) -> str:
    return (f"Rain gauge {e.sensor} counter went from {e.tips_before} to {e.tips_after} "
            "(node restarted): counting continues")


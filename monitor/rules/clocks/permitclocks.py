"""What the clocks read of a permit: its storm facts, its own site rules, its deadlines.

Each permit of a site keeps its own clocks (config/README.md, "Permits"): its
storm rule qualifies the site's storm events at its own depth and window
(``rules/permits/storms.py``: the gauge qualifications it reads carry its
rule), its routine cadence and due rule replace the site's, and its storm
deadline may move to the close of the next business day for a storm outside
business hours (North Carolina, NCG01 Part III). The clock computation itself
(``clocks.py``, ``routine.py``) is the one Chapter 134 always had, run once per
permit on ``permit_site``: the site with the permit's numbers in place.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...config import SiteConfig
from ...contract.events import Fact, GaugeQualified, make_id
from ...contract.snow_events import SnowEvent
from ...contract.times import compact, hours_ms, parse_iso
from ...contract.weather_events import StormForecast
from ..permits.calendar import BusinessCalendar
from ..permits.duties import Permit


@dataclass(frozen=True, slots=True)
class PermitRules:
    """One permit as the clocks read it (``of``)."""

    permit: Permit
    #: The site with the permit's storm and routine numbers in place.
    site: SiteConfig
    #: The gauge rule whose qualifications the permit reads (None: the site's own).
    rule: str | None
    calendar: BusinessCalendar | None

    @classmethod
    def of(cls, site: SiteConfig, permit: Permit) -> PermitRules:
        storm, routine = permit.storm, permit.routine
        update: dict[str, object] = {}
        rule: str | None = None
        if storm is not None and storm.source == "gauge":
            rain = {"threshold_in": storm.threshold_in, "mode": storm.window,
                    "inspect_within_hours": storm.deadline_hours,
                    "clock_start": storm.clock_start}
            if any(getattr(site.rain, k) != v for k, v in rain.items()):
                update["rain"] = site.rain.model_copy(update=rain)
            if (storm.threshold_in, storm.window) != (site.rain.threshold_in, site.rain.mode):
                rule = storm.rule_key
        if routine is not None and (routine.interval_days, routine.due) != (
                site.routine_inspection_days, site.routine_due):
            # The site itself where the numbers are its own (Chapter 134): no copy.
            update["routine_inspection_days"] = routine.interval_days
            update["routine_due"] = routine.due
        calendar = (BusinessCalendar(site.calendar, site.zone)
                    if storm is not None and storm.outside_hours == "next_business_day"
                    else None)
        return cls(permit, site.model_copy(update=update) if update else site, rule, calendar)

    @property
    def key(self) -> str:
        return self.permit.key

    def cited(self, section: str | None) -> str | None:
        """The ``section`` of the permit's events: none when the site names no permits."""
        return section if self.permit.named else None

    def storm_section(self) -> str | None:
        return self.permit.storm.cite.section if self.permit.storm is not None else None

    def routine_section(self) -> str | None:
        return self.permit.routine.cite.section if self.permit.routine is not None else None

    def gauge_facts(self, facts: list[Fact]) -> list[Fact]:
        """The storm facts of the permit's rule: every storm fact but the qualifications
        made under another rule."""
        return [f for f in facts
                if not isinstance(f.body, GaugeQualified) or f.body.rule == self.rule]

    def storm_fact_id(self, site_id: str, gauge: str, started_at: int) -> str:
        """The id of the permit's ``storm_qualified`` of a storm (the primary permit's
        is the id it always had)."""
        if self.permit.primary:
            return make_id("storm_qualified", site_id, gauge, started_at)
        return make_id("storm_qualified", site_id, gauge, started_at, self.key)

    def storm_due(self, start_ms: int, due_ms: int) -> int:
        """The deadline of a storm clock started at ``start_ms``: ``due_ms`` (its hours
        after the start), or the close of the next business day for a storm outside
        business hours where the permit says so (NCG01 Part III)."""
        if self.calendar is None or self.calendar.in_hours(start_ms):
            return due_ms
        return self.calendar.next_business_close(start_ms)


@dataclass(frozen=True, slots=True)
class Trigger:
    """Something other than a measured storm that opens a permit's storm clock: a
    ``snow_event`` (snowmelt) or a ``storm_forecast``."""

    clock_id: str
    start_ms: int
    due_ms: int
    section: str


def snow_triggers(rules: PermitRules, facts: list[Fact]) -> list[Trigger]:
    """The snowmelt clocks of the permit's snow rule (EPA CGP 2022 Part 4.2): one per
    ``snow_event`` that reached the rule's depth, due ``deadline_hours`` after it
    qualified."""
    snow = rules.permit.snow
    if snow is None:
        return []
    out = []
    for fact in facts:
        body = fact.body
        if isinstance(body, SnowEvent) and body.total_in >= snow.threshold_in:
            start = parse_iso(body.qualified_at)
            cid = rules.permit.clock_id(
                f"snowmelt-{body.sensor}-{compact(parse_iso(body.started_at))}")
            out.append(Trigger(cid, start, start + hours_ms(snow.deadline_hours),
                               snow.cite.section))
    return out


def forecast_triggers(rules: PermitRules, facts: list[Fact]) -> list[Trigger]:
    """The clocks of a storm rule with ``source: forecast`` (a permit that asks for an
    inspection *before* a forecast storm): one per ``storm_forecast`` of at least the
    rule's depth whose probability reaches ``probability_min``, from when it was first
    forecast, due when the forecast storm's window begins (or ``deadline_hours`` after
    the forecast, when that window has begun already). A forecast that gives no
    probability opens the clock: an unknown chance is not a low one. The forecast is
    judged first at the site's own threshold (``rules/weather``), so a rule below the
    site's ``rain.threshold_in`` sees only the forecasts that reach that."""
    storm = rules.permit.storm
    if storm is None or storm.source != "forecast":
        return []
    out = []
    for fact in facts:
        body = fact.body
        if not isinstance(body, StormForecast) or body.forecast_in < storm.threshold_in:
            continue
        if (storm.probability_min is not None and body.probability is not None
                and body.probability < storm.probability_min):
            continue
        window = parse_iso(body.window_from)
        due = window if window > fact.at_ms else fact.at_ms + hours_ms(storm.deadline_hours)
        cid = rules.permit.clock_id(f"forecast-{body.source}-{compact(fact.at_ms)}")
        out.append(Trigger(cid, fact.at_ms, due, storm.cite.section))
    return out

"""What ``check-config`` says of a site's permits: the rules to verify and the duties
it cannot watch (config/README.md, "Permits").

A rule read only at second hand (``verified: false``) is said once, with its
words and where they were read, so the user checks it against the permit they
hold: never silently. A duty whose trigger needs a sensor the site lacks is
"not monitored", as a site without a rain gauge is (monitor/README.md, "The
rules"): a missing measurement is never a met duty.
"""

from __future__ import annotations

from ...config import Config, SiteConfig
from ...config.permits import permit_refs
from ...contract.permits import NO_DEWATERING, NO_FORECAST, NO_GAUGE, NO_SNOW_SENSOR
from .duties import BenchmarkDuty, Citation, Permit, SnowDuty, StormDuty, permits_of

VERIFY = "verify against your permit: "
#: New York's twice-a-week rule applies where more than this many acres are disturbed.
NY_PROFILE = "ny-gp-0-25-001"


def unmonitored(duty: object, site: SiteConfig, forecasts: bool) -> str | None:
    """Why the site cannot watch ``duty`` (the sensor its trigger needs, or for a
    forecast trigger the ``weather`` section and the site's ``location``), or None."""
    if isinstance(duty, StormDuty) and duty.source == "gauge" and not site.gauges():
        return NO_GAUGE
    if isinstance(duty, StormDuty) and duty.source == "forecast" and not (
            forecasts and site.location is not None):
        return NO_FORECAST
    if isinstance(duty, SnowDuty) and not any(s.kind == "snow" for s in site.sensors):
        return NO_SNOW_SENSOR
    if isinstance(duty, BenchmarkDuty) and not duty.sensors:
        return NO_DEWATERING
    return None


def verify_line(cite: Citation) -> str:
    """The notice of one unverified rule (module docstring)."""
    read = f" — read at {cite.read_at}" if cite.read_at else ""
    return f"{VERIFY}{cite.permit} {cite.section} ({cite.rule}): \"{cite.quote}\"{read}"


def to_verify(config: Config) -> list[str]:
    """One line per unverified rule the sites use, each once however many use it."""
    lines: dict[tuple[str, str, str], str] = {}
    for site in config.sites:
        for permit in permits_of(site):
            for cite in permit.unverified:
                lines.setdefault((cite.permit, cite.profile, cite.rule), verify_line(cite))
    return list(lines.values())


def _unwatched(site: SiteConfig, permit: Permit, forecasts: bool) -> list[str]:
    """The permit's duties the site cannot watch, each as a warning line."""
    where = f"sites.{site.id}.sensors"
    found = []
    storm = permit.storm
    why = unmonitored(storm, site, forecasts) if storm is not None else None
    # Chapter 134's storm duty without a gauge is warned by ``config/plausible.py``.
    if storm is not None and why == NO_GAUGE and permit.profile != "village-branch-134":
        found.append(f"{where}: {NO_GAUGE} ({permit.key} {storm.cite.section}: "
                     f"inspect after {storm.threshold_in:g} in of rain; add the site's gauge)")
    elif storm is not None and why == NO_FORECAST:
        found.append(f"sites.{site.id}.location: {NO_FORECAST} ({permit.key} "
                     f"{storm.cite.section}; set the weather section and the site's location)")
    if permit.snow is not None and unmonitored(permit.snow, site, forecasts):
        found.append(f"{where}: {NO_SNOW_SENSOR} ({permit.key} {permit.snow.cite.section}; "
                     "add a sensor of kind snow)")
    if permit.benchmark is not None and unmonitored(permit.benchmark, site, forecasts):
        found.append(f"{where}: {NO_DEWATERING} ({permit.key} "
                     f"{permit.benchmark.cite.section}; list the dewatering discharge's "
                     "turbidity probes as the permit's dewatering: where the site dewaters)")
    return found


def not_monitored(site: SiteConfig, forecasts: bool) -> list[str]:
    """Each duty of the site's permits it cannot watch, in words with its source
    (``snowmelt trigger not monitored: no snow sensor (epa-cgp-2022 CGP 2022 Part
    4.2)``), for ``status``: a missing measurement is never a met duty. Empty for a site
    that names no permits (``storm_duty`` says Chapter 134's)."""
    if not site.permits:
        return []
    out = []
    for permit in permits_of(site):
        for duty in (permit.storm, permit.snow, permit.benchmark):
            why = unmonitored(duty, site, forecasts) if duty is not None else None
            if duty is not None and why is not None:
                out.append(f"{why} ({permit.key} {duty.cite.section})")
    return out


def permit_warnings(config: Config) -> list[str]:
    """Every site's unwatched duties and unanswered choices, as ``path: message``."""
    found: list[str] = []
    for site in config.sites:
        for permit in permits_of(site):
            found += _unwatched(site, permit, config.weather is not None)
        for i, ref in enumerate(permit_refs(site.permits)):
            if ref.profile == NY_PROFILE and ref.disturbed_acres is None:
                large = next(r for r in ref.rule_book.rules
                             if r.applies_when.disturbed_acres_over is not None)
                acres = large.applies_when.disturbed_acres_over
                found.append(
                    f"sites.{site.id}.permits.{ref.id or i}.disturbed_acres: not set: the rule "
                    f"of two inspections a week where more than {acres:g} acres are "
                    f"disturbed at once ({large.section}) is assumed not to apply; "
                    "set disturbed_acres")
    return found

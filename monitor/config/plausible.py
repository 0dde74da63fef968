"""Values that validate but are unlikely to be meant: ``check-config``'s warnings.

The schema (``config.py``) refuses what cannot work: a negative depth, an
unknown time zone. Some values work and are still almost certainly mistakes,
and a mistake of that kind is silent in operation: a storm threshold of 12.7
(millimetres typed as inches) never opens an inspection clock; a tip of 0.2
in multiplies every storm by twenty; ``inspect_within_hours: 1440`` (minutes)
gives the inspector two months. ``check-config`` prints one line per value
here, ``warning: path.to.field: message`` (exit 0); ``--strict`` refuses them
(exit 2); ``run`` logs them at start.

Theory of operation
-------------------
Each check is a row of ``BOUNDS``: the field, the range a real site uses and
where that range comes from, and the unit people type by mistake for it.
When the value read in that other unit falls in the usual range, the warning
says so ("12.7 mm is 0.50 in"), because that is nearly always what happened.
The checks that are no range are written out below the table: a
configuration that sends alerts nowhere, rain gauges whose ``reporting``
leaves their health unknowable (``gauge_reporting``), and a Condition A–C
site without a rain gauge, whose storm duty stormwatch cannot watch
(``status``, ``report`` and the replay table say ``NO_GAUGE`` for it
instead of counting zero storms).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from ..contract.permits import NO_GAUGE
from . import Config, SiteConfig
from .base import say_number


@dataclass(frozen=True, slots=True)
class Bound:
    """The plausible range of one field of a section, and why."""

    section: str  #: "rain" (a site's rain:), "site", "gauge" (a rain sensor), "trap"
    field: str
    low: float | None
    high: float | None
    unit: str
    why: str
    #: The unit people type by mistake (as written after a number, and its name),
    #: how many of it make one ``unit``, and the range the value would then be
    #: usual in.
    other_unit: str
    other_name: str
    per_unit: float
    usual: tuple[float, float]


#: Chapter 134 § 134-9A(2): inspections "every seven days and within 24 hours of
#: any storm event producing 0.5 inch of precipitation or more". Tipping-bucket
#: rain gauges tip at 0.1 mm to 1 mm (0.004 in to 0.04 in; 0.01 in and 0.2 mm are
#: the common sizes). Sediment traps and basins on construction sites are a few
#: feet deep; the designs of the New York Blue Book stay well under 12 ft.
BOUNDS: tuple[Bound, ...] = (
    Bound("rain", "threshold_in", None, 0.5, "in",
          "above the 0.5 in of § 134-9A(2): storms the chapter counts would open no "
          "inspection clock", "mm", "millimetres", 25.4, (0.1, 0.5)),
    Bound("rain", "inspect_within_hours", None, 24, "hours",
          "later than the 24 hours of § 134-9A(2)", "minutes", "minutes", 60, (1, 24)),
    Bound("site", "routine_inspection_days", None, 7, "days",
          "less often than the seven days of § 134-9A(2)", "hours", "hours", 24, (1, 7)),
    Bound("gauge", "in_per_tip", 0.0039, 0.04, "in",
          "outside the 0.004-0.04 in (0.1-1 mm) per tip of tipping-bucket rain gauges: "
          "every storm would be scaled by the mistake", "mm", "millimetres", 25.4,
          (0.0039, 0.04)),
    Bound("trap", "design_depth_ft", None, 12, "ft",
          "deeper than sediment traps and basins are built (a few feet)", "in", "inches", 12,
          (0.5, 12)),
)


def storm_duty_unwatched(site: SiteConfig) -> bool:
    """Whether a site has the storm duty of § 134-9A(2) (Condition A, B or C of
    § 134-7B(2)) and no rain gauge to see its storms: no storm is ever detected, so
    none of its 24-hour inspections is ever asked for."""
    return site.clocks_apply and not site.gauges()


def _sections(site: SiteConfig) -> Iterator[tuple[str, str, object]]:
    """(section kind, path, model) of every section of a site the table looks at; list
    items are named by their ids, as ``check-config`` names them (``paths.py``)."""
    yield "site", f"sites.{site.id}", site
    yield "rain", f"sites.{site.id}.rain", site.rain
    for sensor in site.sensors:
        if sensor.kind == "rain" and sensor.in_per_tip is not None:
            yield "gauge", f"sites.{site.id}.sensors.{sensor.id}", sensor
    for trap in site.traps:
        yield "trap", f"sites.{site.id}.traps.{trap.id}", trap


def _check(bound: Bound, value: float) -> str | None:
    too_low = bound.low is not None and value < bound.low
    too_high = bound.high is not None and value > bound.high
    if not (too_low or too_high):
        return None
    message = f"{say_number(value)} {bound.unit} is {bound.why}"
    meant = value / bound.per_unit
    if bound.usual[0] <= meant <= bound.usual[1]:
        message += (f"; is it in {bound.other_name}? {say_number(value)} {bound.other_unit} "
                    f"is {say_number(meant)} {bound.unit}")
    return message


def warnings(config: Config) -> list[str]:
    """Every implausible value, each as ``path.to.field: message``."""
    found: list[str] = []
    for site in config.sites:
        found += _zone(site)
        for kind, path, model in _sections(site):
            for bound in BOUNDS:
                value = getattr(model, bound.field, None) if bound.section == kind else None
                if isinstance(value, int | float):
                    message = _check(bound, float(value))
                    if message is not None:
                        found.append(f"{path}.{bound.field}: {message}")
        found += gauge_reporting(site)
        if storm_duty_unwatched(site):
            found.append(
                f"sites.{site.id}.sensors: condition {site.condition} has the storm duty of"
                " § 134-9A(2) (inspect within 24 hours of every storm of 0.5 in or more), but"
                f" the site has no sensor of kind rain: {NO_GAUGE} (add the site's gauge)")
    if not config.notify.targets and config.notify.config_file is None:
        found.append("notify.targets: no notification target: alerts are kept in the log book "
                     "but reach nobody (add one, e.g. a mailto:// URL, or console:// to try)")
    if config.web is not None and config.notify.config_file is None and not any(
            t.url.partition(":")[0].lower() in ("mailto", "mailtos")
            for t in config.notify.targets):
        found.append("web: the field app cannot mail sign-in links: notify.targets has no"
                     " mail target (mailto:// or mailtos://); people whose sign-in ended"
                     " need `stormwatch user link` from you")
    return found


def gauge_reporting(site: SiteConfig) -> list[str]:
    """monitor/README.md, "The rules": an ``on_tip`` gauge is silent whenever it is dry, so without
    ``heartbeat_minutes`` a dead one cannot be told from a dry one (its health is
    ``unknown``); ``heartbeat_minutes`` on an ``interval`` gauge is never used."""
    found = []
    for sensor in site.sensors:
        path = f"sites.{site.id}.sensors.{sensor.id}"
        if sensor.on_tip and sensor.heartbeat_minutes is None:
            found.append(f"{path}.heartbeat_minutes: not set for an on_tip gauge: a dead gauge "
                         "cannot be told from a dry one, so its health shows unknown and it "
                         "never goes stale (set it to how often the gauge or its node sends "
                         "a status, with some margin, e.g. 90 for an hourly heartbeat)")
        elif sensor.kind == "rain" and not sensor.on_tip and sensor.heartbeat_minutes is not None:
            found.append(f"{path}.heartbeat_minutes: applies to reporting: on_tip only; this "
                         f"gauge reports every interval and is stale after "
                         f"stale_after_minutes ({say_number(sensor.stale_after_minutes)})")
    return found


#: Zones meant as "no local time": UTC under its names.
_UTC_NAMES = frozenset({"UTC", "Etc/UTC", "GMT", "Etc/GMT", "UCT", "Zulu", "Etc/Zulu"})


def _zone(site: SiteConfig) -> list[str]:
    """An ``EST``-style zone: valid (the tz database knows it), but a fixed offset
    without the daylight saving time of any place. A site in New York on ``EST``
    keeps standard time all summer, and every local time stormwatch prints (alerts,
    the log book, reports) is an hour off from March to November. A place's own
    name (``America/Phoenix``, which keeps no daylight saving time) is not warned."""
    name = site.timezone
    if name in _UTC_NAMES or ("/" in name and not name.startswith("Etc/")):
        return []
    zone, year = site.zone, 2026
    winter = datetime(year, 1, 15, tzinfo=zone).utcoffset()
    summer = datetime(year, 7, 15, tzinfo=zone).utcoffset()
    if winter != summer:
        return []
    return [f"sites.{site.id}.timezone: {name!r} is a fixed offset without daylight saving "
            "time: from spring to autumn every local time stormwatch prints would be an hour "
            "off for a place that keeps it; use the IANA name of the place (e.g. "
            "America/New_York)"]

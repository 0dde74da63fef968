"""The permits family: the duties of every rule book a site answers to.

A permit profile (``profiles/<id>.yaml``, or the user's ``custom`` file) is a
list of rules, each with its citation; ``duties.py`` resolves the ones that
apply to a site into its ``Permit`` duties; ``storms.py`` qualifies the site's
storms under each permit's own storm rule (timelines ``permit:<gauge>@<rule>``);
``benchmark.py`` averages each dewatering probe's daily turbidity by the week
against the permit's benchmark (timelines ``permit:benchmark@<probe>``);
``calendar.py`` counts business days and hours with the site's public holidays.
The clocks family opens and closes every permit's clocks from these duties.
"""

from __future__ import annotations

from typing import Final

from ...config import SensorConfig, SiteConfig
from ..family import Family, FoldInputs
from ..rain.sitestorms import MEAN_GAUGE
from . import benchmark, storms
from .storms import other_storm_rules


def folds(site: SiteConfig) -> dict[str, FoldInputs]:
    """The storm rules' gauge folds and the dewatering probes' benchmark folds."""
    return {**storms.folds(site), **benchmark.folds(site)}


def routes(site: SiteConfig, sensor: SensorConfig) -> tuple[str, ...]:
    """A gauge's readings go to its fold under each other storm rule (and the mean's);
    a dewatering probe's to its benchmark fold."""
    if sensor.kind != "rain":
        return benchmark.routes(site, sensor)
    names = (sensor.id,) + ((MEAN_GAUGE,) if site.rain.gauges == "mean" else ())
    return tuple(f"permit:{g}@{key}" for key in other_storm_rules(site) for g in names)


#: The default alert route of each of the family's event types (a variant as
#: ``type.variant``), [] = log book only (``sinks/notify/routing.py``).
ALERT_ROUTES: Final[dict[str, tuple[str, ...]]] = {
    # A corrective action past the permit's deadline is a violation of its own
    # (EPA CGP 2022 Part 5.2): the officer hears of it.
    "corrective_action_overdue": ("qp", "officer"),
    # Above the dewatering benchmark the permit asks for corrective action
    # (EPA CGP 2022 Part 3.3.1): the qualified professional acts on it.
    "turbidity_benchmark_exceeded": ("qp",),
    # The written notice of a temporary shutdown, for the log book and the officer.
    "site_shutdown": ("qp", "officer"),
}


FAMILY = Family(name="permits", group="permit",
                events=("corrective_action_overdue", "turbidity_benchmark_exceeded",
                        "site_shutdown"),
                folds=folds, routes=routes, alert_routes=ALERT_ROUTES)

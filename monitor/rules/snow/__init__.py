"""The snow family: snowfall that makes a snowmelt discharge a storm event.

``snow.py`` is the fold of one ``snow`` gauge: one ``snow_event`` when 3.25 in
or more fall within 24 hours (EPA CGP 2022 Part 4.2). The thresholds are fixed
for now; a permit will set them per site when the permits' duties are
configured. Timelines ``snow:<sensor>``; the health of a snow gauge is the
health family's, as for every kind.
"""

from __future__ import annotations

from typing import Final

from ...config import SensorConfig, SiteConfig
from ..family import Family, FoldInputs, PayloadField, SensorKindSpec
from .snow import SnowFold

SNOW = SensorKindSpec(
    fields=(PayloadField("snow_in", False, 0, 60.0, "new snowfall in inches since the "
                         "previous message; the US 24-hour record is about 76 in, and a "
                         "node publishes far more often than daily"),),
    required=(("snow_in",),),
    words="snow events cannot be detected while the snow gauge is silent",
    measurement="snow", noun="snow gauge(s)")


def folds(site: SiteConfig) -> dict[str, FoldInputs]:
    """One fold per snow gauge."""
    return {f"snow:{s.id}": (SnowFold(site.id, s.id), (s.id,), ())
            for s in site.sensors if s.kind == "snow"}


def routes(site: SiteConfig, sensor: SensorConfig) -> tuple[str, ...]:
    return (f"snow:{sensor.id}",) if sensor.kind == "snow" else ()


#: The default alert route of each of the family's event types (a variant as
#: ``type.variant``), [] = log book only (``sinks/notify/routing.py``).
ALERT_ROUTES: Final[dict[str, tuple[str, ...]]] = {
    # Snow whose melt is a storm event's discharge: the qualified professional checks
    # the controls before the thaw, like a forecast storm; no clock yet, no officer.
    "snow_event": ("qp",),
}


FAMILY = Family(name="snow", group="snow", kinds={"snow": SNOW}, events=("snow_event",),
                folds=folds, routes=routes, alert_routes=ALERT_ROUTES)

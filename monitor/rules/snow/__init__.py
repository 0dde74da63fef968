"""The snow family: snowfall that makes a snowmelt discharge a storm event.

``snow.py`` is the fold of one ``snow`` gauge: one ``snow_event`` when 3.25 in
or more fall within 24 hours (EPA CGP 2022 Part 4.2). The thresholds are fixed
for now; a permit will set them per site when the permits' duties are
configured. Timelines ``snow:<sensor>``; the health of a snow gauge is the
health family's, as for every kind.
"""

from __future__ import annotations

from ...config import SensorConfig, SiteConfig
from ...contract.figures import depth_text
from ...contract.sentences import SentenceContext
from ...contract.snow_events import SnowEvent
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


def _snow_event(e: SnowEvent, c: SentenceContext) -> str:
    return (f"Snow of {depth_text(e.total_in, e.threshold_in)} within "
            f"{e.window_hours:g} hours on gauge {e.sensor} by {c.at(e.qualified_at)}: its "
            "melt is a storm event's discharge — check the controls before the thaw")


FAMILY = Family(
    name="snow", group="snow", kinds={"snow": SNOW}, events=("snow_event",),
    folds=folds, routes=routes, sentences={"snow_event": _snow_event},
    # The qualified professional checks the controls before the thaw, as for a
    # forecast storm; no clock yet, so not the officer.
    alert_routes={"snow_event": ("qp",)})

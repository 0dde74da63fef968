"""Every rule family, one line each: what the engine and the shell iterate.

Adding a family is a folder under ``monitor/rules/`` that declares its
``Family`` in its ``__init__.py`` and one line here (monitor/README.md,
"Architecture"). The order is the order of the timelines in a site: gauges,
traps, pairs, then the health of every sensor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, get_args

from ..contract.inputs import SensorKind
from . import clocks, health, permits, rain, snow, traps, turbidity, weather
from .family import Family, SensorKindSpec

FAMILIES: Final[tuple[Family, ...]] = (
    rain.FAMILY,
    traps.FAMILY,
    turbidity.FAMILY,
    health.FAMILY,
    weather.FAMILY,
    clocks.FAMILY,
    snow.FAMILY,
    permits.FAMILY,
)

#: Every sensor kind with its family's declaration of it, in the order of the
#: contract's list (``SensorKind``), which is the order ``validate`` counts them in.
KINDS: Final[Mapping[str, SensorKindSpec]] = {
    kind: spec for kind in get_args(SensorKind)
    for family in FAMILIES for k, spec in family.kinds.items() if k == kind}

#: Every family's default alert routes, by route key.
ALERT_ROUTES: Final[Mapping[str, tuple[str, ...]]] = {
    key: tags for family in FAMILIES for key, tags in family.alert_routes.items()}

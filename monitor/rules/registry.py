"""Every rule family, one line each: what the engine and the shell iterate.

Adding a family is a folder under ``monitor/rules/`` that declares its
``Family`` in its ``__init__.py`` and one line here (monitor/README.md,
"Architecture"). The order is the order of the timelines in a site: gauges,
traps, pairs, then the health of every sensor.
"""

from __future__ import annotations

from typing import Final

from . import clocks, health, rain, traps, turbidity, weather
from .family import Family

FAMILIES: Final[tuple[Family, ...]] = (
    rain.FAMILY,
    traps.FAMILY,
    turbidity.FAMILY,
    health.FAMILY,
    weather.FAMILY,
    clocks.FAMILY,
)

"""The traps family: the fill of each sediment trap and its clean-outs (§ 134-9A(1)).

``traps.py`` is the fold of one trap, ``sediment.py`` makes a sensor's reading
one depth, ``falls.py`` finds the clean-outs. Timelines ``trap:<id>``; a
``sediment`` reading goes to the traps its sensor watches.
"""

from __future__ import annotations

from typing import Final

from ...config import SensorConfig, SiteConfig
from ..family import Family, FoldInputs, PayloadField, SensorKindSpec
from .traps import TrapFold

SEDIMENT = SensorKindSpec(
    fields=(
        PayloadField("depth_in", False, -1200.0, 1200.0, "sediment depth above the trap bottom "
                     "in inches (100 ft is no trap; < 0: a sensor_fault, "
                     "rules/traps/sediment.py)"),
        PayloadField("distance_in", False, 0, 1200.0,
                     "distance from the sensor face to the sediment surface in inches"),
    ),
    required=(("depth_in",), ("distance_in",)),
    words="trap fill cannot be tracked without this sensor (§ 134-9A(1))",
    measurement="sediment", noun="sediment sensor(s)",
    counted_when_absent=True)


def folds(site: SiteConfig) -> dict[str, FoldInputs]:
    """One fold per trap, reading the trap's sensor."""
    found: dict[str, FoldInputs] = {}
    for trap in site.traps:
        sensor = site.sensor(trap.sensor)
        assert sensor is not None
        found[f"trap:{trap.id}"] = (TrapFold(site.id, trap, sensor), (trap.sensor,), ())
    return found


def routes(site: SiteConfig, sensor: SensorConfig) -> tuple[str, ...]:
    return tuple(f"trap:{t.id}" for t in site.traps if t.sensor == sensor.id)


#: The default alert route of each of the family's event types (a variant as
#: ``type.variant``), [] = log book only (``sinks/notify/routing.py``).
ALERT_ROUTES: Final[dict[str, tuple[str, ...]]] = {
    "trap_fill": ("qp",),
    "trap_cleanout_required": ("qp",),
    "trap_cleaned": (),
    # A trap sensor reading what cannot be true: operations fixes the
    # sensor, and the qualified professional hears of it because § 134-9A(1) goes
    # unwatched meanwhile (the demand repeats on the last valid fill; a trap filling
    # further is not seen): the trap needs a look by eye.
    "sensor_fault": ("qp", "ops"),
}


FAMILY = Family(
    name="traps", group="trap", kinds={"sediment": SEDIMENT},
    events=("trap_fill", "trap_cleanout_required", "trap_cleaned", "sensor_fault"),
    folds=folds, routes=routes,
    alert_routes=ALERT_ROUTES)

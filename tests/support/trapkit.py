"""Sediment traps in tests.

A trap's box and its depth sensor (median of one or five, mounted at 60 in), the depth
and distance readings it reports, and a trap's fold run over them.
"""

from __future__ import annotations

from monitor.config import SensorConfig, TrapConfig
from monitor.contract.events import Fact
from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_MINUTE, parse_iso
from monitor.engine import Timeline
from monitor.rules.traps.traps import TrapFold

SITE = "branch-meadows"

T0 = parse_iso("2026-05-01T12:00:00Z")

# A 10 ft x 10 ft box, 4 ft (48 in) deep: fill = depth_in / 48, easy to check by eye.
BOX = TrapConfig(id="box", sensor="box-depth", shape="rectangular", bottom_length_ft=10,
                 bottom_width_ft=10, design_depth_ft=4, median_of=1)


BOX_SENSOR = SensorConfig(id="box-depth", kind="sediment")


def at(minutes: float) -> int:
    return T0 + round(minutes * MS_PER_MINUTE)


def depth(minutes: float, depth_in: float, sensor: str = "box-depth") -> Reading:
    return Reading(site=SITE, sensor=sensor, kind="sediment", ts_ms=at(minutes), depth_in=depth_in)


#: A laser range finder 60 in (152.4 cm) above the box bottom, reading whole centimetres
#: every 10 min, published as inches (cm / 2.54); the median of five. The fill of a
#: median of ``d`` cm is (152.4 - d) / 2.54 / 48 = (152.4 - d) / 121.92.
LASER_CM = (
    [62, 62, 63, 62, 61, 62, 62, 63, 62, 62, 61, 62]   # 0:00-1:50, 0.74 full
    + [68, 75, 81, 81, 82, 81]                         # 2:00 the excavator: a pass, a pause
    + [86, 89, 89, 90, 89]                             # 3:00 a pass, a 30-minute pause
    + [69]                                             # 3:50 its bucket in the beam
    + [95, 100, 104, 105]                              # 4:00 the last pass
    + [104, 105, 105, 106, 105, 104, 105, 105, 105, 104, 105, 105, 105, 106, 105, 105]
)


def run(fold: TrapFold, readings: list[Reading]) -> list[Fact]:
    tl = Timeline(fold)
    for r in readings:
        tl.insert(r)
    return sorted(tl.facts(), key=Fact.sort_key)


def distance(minutes: float, distance_in: float) -> Reading:
    return Reading(site=SITE, sensor="box-depth", kind="sediment", ts_ms=at(minutes),
                   distance_in=distance_in)


#: The box with the median of five readings.
BOX5 = BOX.model_copy(update={"median_of": 5})

#: A distance sensor mounted 60 in above the trap's bottom.
MOUNTED = SensorConfig(id="box-depth", kind="sediment", sensor_height_in=60)

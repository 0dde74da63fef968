"""The payload fields of sensors/README.md, "MQTT contract" by sensor kind: what a node may publish.

Kept here, not imported from the daemon, because the node is the other side
of the wire; ``tests/rules/test_registry.py`` checks these tables against the
daemon's (each rule family declares its kinds' fields, ``monitor/rules/``) and
``tests/test_node_*`` every payload against the daemon's own parser, so the two
cannot drift apart unnoticed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

SensorKind = Literal["rain", "turbidity", "sediment", "snow"]

#: Fields a reading of each kind may carry (besides ``ts`` and ``seq``).
FIELDS_BY_KIND: Final[Mapping[str, frozenset[str]]] = {
    "rain": frozenset({"tips_total", "precip_in", "battery_v"}),
    "turbidity": frozenset({"ntu", "temp_c", "battery_v"}),
    "sediment": frozenset({"depth_in", "distance_in", "battery_v"}),
    "snow": frozenset({"snow_in", "battery_v"}),
}

#: The measurement of each kind when a driver reads one value.
PRIMARY_FIELDS: Final[Mapping[str, str]] = {
    "rain": "tips_total",
    "turbidity": "ntu",
    "sediment": "depth_in",
    "snow": "snow_in",
}

#: Decimal places kept in a payload: more would only publish the ADC's noise.
DECIMALS: Final[Mapping[str, int]] = {
    "precip_in": 3, "ntu": 2, "temp_c": 2, "depth_in": 2, "distance_in": 2, "snow_in": 2,
    "battery_v": 3,
}

#: A reading of each kind is published only with one of these (sensors/README.md, "MQTT contract"
#: "required").
REQUIRED_ANY: Final[Mapping[str, frozenset[str]]] = {
    "rain": frozenset({"tips_total", "precip_in"}),
    "turbidity": frozenset({"ntu"}),
    "sediment": frozenset({"depth_in", "distance_in"}),
    "snow": frozenset({"snow_in"}),
}

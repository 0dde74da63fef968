"""The weather family: NWS forecasts and the reference gauges' check of the site's gauges.

``weather.py`` concludes ``storm_forecast`` and ``gauge_disagrees`` from the
weather book the engine keeps per site (no timelines: its inputs are the
site's forecasts and the reference observations, not sensor readings).
"""

from __future__ import annotations

from typing import Final

from ..family import Family

#: The default alert route of each of the family's event types (a variant as
#: ``type.variant``), [] = log book only (``sinks/notify/routing.py``).
ALERT_ROUTES: Final[dict[str, tuple[str, ...]]] = {
    # A storm in the forecast: the qualified professional checks the controls
    # before the rain (§ 134-9A(2) follows the storm); no clock, no officer.
    "storm_forecast": ("qp",),
    # The reference saw a storm the gauge did not: operations look at the gauge,
    # the qualified professional at the site (it may have rained there).
    "gauge_disagrees": ("qp", "ops"),
}


FAMILY = Family(name="weather", events=("storm_forecast", "gauge_disagrees"),
                alert_routes=ALERT_ROUTES)

"""The weather family: NWS forecasts and the reference gauges' check of the site's gauges.

``weather.py`` concludes ``storm_forecast`` and ``gauge_disagrees`` from the
weather book the engine keeps per site (no timelines: its inputs are the
site's forecasts and the reference observations, not sensor readings).
"""

from __future__ import annotations

from ..family import Family

FAMILY = Family(name="weather", events=("storm_forecast", "gauge_disagrees"))

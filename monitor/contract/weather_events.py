"""The weather events of monitor/README.md, "Weather": a forecast storm, and a gauge its reference
disagrees with. Bodies like the rest of the vocabulary (``events.py`` lists them
in ``EVENT_TYPES``); concluded by ``monitor/rules/weather/weather.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .body import Body


@dataclass(frozen=True, slots=True, kw_only=True)
class StormForecast(Body):
    """Ahead of § 134-9A(2): the forecast puts ``forecast_in`` (at least the site's
    ``threshold_in``) into the 24 hours ``window_from`` .. ``window_to``, so the
    controls can be checked before the rain. ``issued_at`` is the forecast issue it
    rests on (revised as issues update it, retracted when a later one no longer
    holds it); ``probability`` the highest chance of precipitation in the window,
    in percent as the source gives it (null when it gives none). Opens no clock."""

    TYPE: ClassVar[str] = "storm_forecast"
    source: str
    forecast_in: float
    window_from: str
    window_to: str
    issued_at: str
    probability: float | None
    grid: str
    threshold_in: float


@dataclass(frozen=True, slots=True, kw_only=True)
class GaugeDisagrees(Body):
    """The reference station ``reference`` saw ``reference_in`` (at least the site's
    ``threshold_in``) over the 24 hours ``window_from`` .. ``window_to`` while the
    site gauge was ``stale`` in them or saw ``gauge_in``, less than a quarter of it:
    the gauge may be clogged or dead. A station miles away is a second opinion, not
    the site's rain; ``opens_clock`` when ``weather.reference_opens_clock`` asks to
    treat it as the site's storm: then it also opens the § 134-9A(2) storm clock
    (a ``storm_qualified`` with ``source: reference``, ``rules/rain/sitestorms.py``)."""

    TYPE: ClassVar[str] = "gauge_disagrees"
    gauge: str
    gauge_in: float
    reference_in: float
    reference: str
    window_from: str
    window_to: str
    stale: bool
    threshold_in: float
    opens_clock: bool
    #: Clock hours of the window the station reported without a value: unknown, so
    #: ``reference_in`` is what it saw at least.
    reference_unknown_hours: int

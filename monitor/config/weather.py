"""The weather section: where a site is, and where its forecast and second opinion come from.

A site gauge can clog or die in the storm that matters, and a forecast lets the
qualified professional check the controls before the rain (§ 134-9A(2) asks for
an inspection after every storm of 0.5 inch; the forecast is what lets the
controls be checked *before* it). So a site may have a ``location`` (the point
the National Weather Service forecasts for), and the top-level ``weather:``
section says how to ask:

* ``nws.base_url`` and ``nws.user_agent`` (the API refuses clients that do not
  name a contact, so it is required);
* ``poll_minutes`` and ``forecast_hours`` (how often, and how far ahead "any 24
  hours" of the forecast is looked for);
* ``reference_stations``: the observation stations whose hourly precipitation
  is the gauge's second opinion. Stations are near *a site*, so the field is
  either a list (every site, the common one-site case) or a mapping from site
  id to its own list; it stays in ``weather:`` so the whole feature is
  configured in one place;
* ``reference_opens_clock``: whether a storm only the reference saw (the gauge
  stale or far below it) is to be treated as the site's: the disagreement then
  opens the § 134-9A(2) storm clock as a storm of the gauge would, due 24 hours
  after the reference reached the threshold, its events marked ``source:
  reference`` (one clock when the gauge saw the same storm). Off by default: a
  station miles away is a second opinion, not the site's rain.

Checks that span the file (a site without ``location`` while ``weather:`` is
set, a ``reference_stations`` key that names no site) are made by ``Config``
with ``weather_problems`` and reported at the field a user must edit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import Field, model_validator

from .base import Id, Model, PositiveFloat, Problem, raise_problems

#: An NWS observation station id: ``KBOS``, ``KMQE``, ``AR911`` (letters and digits).
StationId = Annotated[str, Field(pattern=r"^[A-Za-z0-9]{3,12}$")]


class Location(Model):
    """A site's point in WGS 84 degrees (what ``/points/{lat},{lon}`` takes)."""

    lat: Annotated[float, Field(ge=-90, le=90, allow_inf_nan=False)]
    lon: Annotated[float, Field(ge=-180, le=180, allow_inf_nan=False)]


class NwsConfig(Model):
    """The National Weather Service API (api.weather.gov)."""

    base_url: str = "https://api.weather.gov"
    #: Required: NWS refuses anonymous clients ("stormwatch (ops@example.org)").
    user_agent: str | None = None


class WeatherConfig(Model):
    """Forecasts and reference observations (top level ``weather:``)."""

    nws: NwsConfig = Field(default_factory=NwsConfig)
    poll_minutes: PositiveFloat = 60.0
    forecast_hours: Annotated[float, Field(ge=24, le=168, allow_inf_nan=False)] = 48.0
    reference_stations: list[StationId] | dict[Id, list[StationId]] = Field(
        default_factory=list)
    reference_opens_clock: bool = False

    @model_validator(mode="after")
    def _contact(self) -> WeatherConfig:
        if not (self.nws.user_agent or "").strip():
            raise_problems(type(self).__name__, [(
                ("nws", "user_agent"), "required: the NWS API refuses clients without a "
                "contact (e.g. \"stormwatch (ops@example.org)\")")], self)
        return self

    def stations_of(self, site_id: str) -> tuple[str, ...]:
        """The reference stations of one site (a list applies to every site)."""
        if isinstance(self.reference_stations, list):
            return tuple(self.reference_stations)
        return tuple(self.reference_stations.get(site_id, ()))


def weather_problems(data: Mapping[str, Any],
                     sites: Sequence[tuple[int, Mapping[str, Any]]]) -> list[Problem]:
    """With ``weather:`` set, every site needs a ``location`` (the forecast is for a
    point), and a ``reference_stations`` mapping may name configured sites only.
    Read from the raw input, so these show beside the field errors."""
    weather = data.get("weather")
    if not isinstance(weather, Mapping):
        return []
    problems: list[Problem] = []
    ids = []
    for i, site in sites:
        ids.append(site.get("id"))
        if site.get("location") is None:
            problems.append((("sites", i, "location"),
                             "required with weather: (the forecast is for a point: "
                             "{lat, lon})"))
    stations = weather.get("reference_stations")
    if isinstance(stations, Mapping):
        for key in stations:
            if key not in ids:
                problems.append((("weather", "reference_stations", key),
                                 f"{key!r} is not a configured site"))
    return problems

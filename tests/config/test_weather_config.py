"""The weather section: a site's location, the NWS contact, the reference stations.

Each mistake is one line at the field to edit, as ``check-config`` prints it.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from monitor.config.file import ConfigError, parse_config

from ..support.configdocs import document, site

WEATHER = {"nws": {"user_agent": "stormwatch (ops@example.org)"}}
POINT = {"lat": 41.05, "lon": -73.54}


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(copy.deepcopy(data), env={})
    return info.value.lines


def test_defaults_of_the_weather_section() -> None:
    config = parse_config(document(site(location=POINT), weather=WEATHER), env={})
    weather = config.weather
    assert weather is not None
    assert weather.nws.base_url == "https://api.weather.gov"
    assert weather.poll_minutes == 60 and weather.forecast_hours == 48
    assert weather.reference_stations == [] and weather.reference_opens_clock is False
    location = config.sites[0].location
    assert location is not None and (location.lat, location.lon) == (41.05, -73.54)


def test_without_the_section_weather_is_off_and_location_optional() -> None:
    config = parse_config(document(), env={})
    assert config.weather is None and config.sites[0].location is None


def test_a_site_without_location_is_an_error_with_weather() -> None:
    other = site(id="mill-road-lot", location=POINT)
    assert problems(document(site(), other, weather=WEATHER)) == [
        "sites.branch-meadows.location: required with weather: (the forecast is for a point: "
        "{lat, lon})"]


def test_no_user_agent_is_an_error() -> None:
    assert problems(document(site(location=POINT), weather={})) == [
        "weather.nws.user_agent: required: the NWS API refuses clients without a contact "
        "(e.g. \"stormwatch (ops@example.org)\")"]
    assert problems(document(site(location=POINT), weather={"nws": {"user_agent": " "}})) == [
        "weather.nws.user_agent: required: the NWS API refuses clients without a contact "
        "(e.g. \"stormwatch (ops@example.org)\")"]


def test_both_mistakes_at_once() -> None:
    lines = problems(document(site(), weather={}))
    assert sorted(lines) == [
        "sites.branch-meadows.location: required with weather: (the forecast is for a point: "
        "{lat, lon})",
        "weather.nws.user_agent: required: the NWS API refuses clients without a contact "
        "(e.g. \"stormwatch (ops@example.org)\")"]


def test_reference_stations_as_a_list_or_per_site() -> None:
    both = document(site(location=POINT), site(id="mill-road-lot", location=POINT),
                    weather={**WEATHER, "reference_stations": ["KHPN", "KBDR"]})
    weather = parse_config(both, env={}).weather
    assert weather is not None
    assert weather.stations_of("branch-meadows") == ("KHPN", "KBDR")
    assert weather.stations_of("mill-road-lot") == ("KHPN", "KBDR")
    per_site = document(site(location=POINT), site(id="mill-road-lot", location=POINT),
                        weather={**WEATHER, "reference_stations": {"mill-road-lot": ["KBDR"]}})
    weather = parse_config(per_site, env={}).weather
    assert weather is not None
    assert weather.stations_of("branch-meadows") == ()
    assert weather.stations_of("mill-road-lot") == ("KBDR",)


def test_a_reference_stations_key_must_be_a_site() -> None:
    data = document(site(location=POINT),
                    weather={**WEATHER, "reference_stations": {"branch-medows": ["KHPN"]}})
    assert problems(data) == [
        "weather.reference_stations.branch-medows: 'branch-medows' is not a configured site"]


@pytest.mark.parametrize(("location", "line"), [
    ({"lat": 91, "lon": 0}, "sites.branch-meadows.location.lat: must be at most 90 (got 91)"),
    ({"lat": 41}, "sites.branch-meadows.location.lon: required field is missing"),
])
def test_a_location_out_of_range(location: dict[str, Any], line: str) -> None:
    assert problems(document(site(location=location))) == [line]


def test_forecast_hours_below_a_day_is_an_error() -> None:
    data = document(site(location=POINT), weather={**WEATHER, "forecast_hours": 12})
    assert problems(data) == ["weather.forecast_hours: must be at least 24 hours (got 12 hours)"]

"""Storm clocks a permit opens without a measured storm: snowmelt (EPA CGP 2022 Part 4.2)
from a snow gauge, and a custom rule's forecast storm (config/README.md, "Permits").

Forecast numbers as in ``tests/support/weatherkit.py``: the issue at ``T0`` puts
0.512 in into the window T0+6h..T0+30h at a 70 % chance.
"""

from __future__ import annotations

from typing import Any

from monitor.config.file import parse_config
from monitor.contract.inputs import Inspection, Reading
from monitor.contract.times import MS_PER_HOUR, iso, parse_iso
from monitor.engine import Engine

from ..support.util import final, insp, site_config
from ..support.weatherkit import CHANCE, SITE, STORM, T0, issue

H = MS_PER_HOUR
EPA = {"profile": "epa-cgp-2022", "frequency": "biweekly_storm"}
SNOW_SITE: dict[str, Any] = {
    "sensors": [{"id": "rg1", "kind": "rain", "in_per_tip": 0.01}, {"id": "sn1", "kind": "snow"}],
    "turbidity_pairs": [], "traps": [], "active_since": "2026-11-25"}


def snow(at: str, inches: float) -> Reading:
    return Reading(site=SITE, sensor="sn1", kind="snow", ts_ms=parse_iso(at), snow_in=inches)


def test_snow_of_325_in_within_24_hours_opens_the_epa_snowmelt_clock() -> None:
    # 1.25 + 1.25 + 1.0 in: 3.50 in by Dec 2 06:00Z, which reaches 3.25 in; due 24 h later.
    items = [snow("2026-12-01T18:00:00Z", 1.25), snow("2026-12-02T00:00:00Z", 1.25),
             snow("2026-12-02T06:00:00Z", 1.0)]
    eng = Engine(site_config(**SNOW_SITE, permits=["village-branch-134", EPA]))
    for item in items:
        eng.apply(item)
    eng.tick(parse_iso("2026-12-03T07:00:00Z"))
    overdue = [e for e in final(eng, "inspection_overdue") if "snowmelt" in e["clock_id"]]
    assert overdue and overdue[0]["due"] == "2026-12-03T06:00:00Z"
    assert overdue[0]["permit"] == "epa-cgp-2022"
    assert overdue[0]["section"] == "CGP 2022 Part 4.2"
    assert overdue[0]["clock_id"] == "epa-cgp-2022/snowmelt-sn1-20261201T180000Z"
    # The village's Chapter 134 has no snow rule: no snowmelt clock of its own.
    assert all(e["permit"] == "epa-cgp-2022" for e in overdue)


def test_an_inspection_closes_the_snowmelt_clock() -> None:
    items: list[Reading | Inspection] = [
        snow("2026-12-01T18:00:00Z", 2.0), snow("2026-12-02T06:00:00Z", 1.5),
        insp(parse_iso("2026-12-02T15:00:00Z"))]
    eng = Engine(site_config(**SNOW_SITE, permits=[EPA]))
    for item in items:
        eng.apply(item)
    eng.tick(parse_iso("2026-12-04T00:00:00Z"))
    closed = [e for e in final(eng, "clock_closed") if "snowmelt" in e["clock_id"]]
    assert [(e["outcome"], e["inspected_at"]) for e in closed] == [
        ("met", "2026-12-02T15:00:00Z")]


COUNTY: dict[str, Any] = {
    "id": "county-ca", "title": "County rule, California style",
    "rules": [{"id": "before-storm", "section": "Part X", "quote": "inspect before a "
               "likely precipitation event", "source": "the user's permit", "verified": False,
               "storm": {"source": "forecast", "threshold_in": 0.5, "probability_min": 50}}]}


def forecast_config(probability_min: float) -> Any:
    county = {**COUNTY, "rules": [{**COUNTY["rules"][0], "storm": {
        **COUNTY["rules"][0]["storm"], "probability_min": probability_min}}]}
    return parse_config({"state_dir": "/tmp/stormwatch-test", "sites": [{
        "id": SITE, "timezone": "America/New_York", "condition": "B",
        "location": {"lat": 41.05, "lon": -73.54}, "active_since": "2026-04-01",
        "sensors": [{"id": "rg1", "kind": "rain", "in_per_tip": 0.01}],
        "permits": [{"profile": "custom", "id": "county-ca", "definition": county}]}],
        "weather": {"nws": {"user_agent": "test (ops@example.org)"}}}, env={})


def test_a_forecast_storm_opens_a_clock_due_when_its_window_begins() -> None:
    eng = Engine(forecast_config(50))
    eng.apply(issue(0, STORM, CHANCE))
    eng.tick(T0 + 7 * H)
    (overdue,) = [e for e in final(eng, "inspection_overdue") if e["hours_late"] == 0]
    assert overdue["clock_id"] == "forecast-nws-20260501T000000Z"
    assert overdue["due"] == iso(T0 + 6 * H)
    assert (overdue["permit"], overdue["section"]) == ("county-ca", "Part X")


def test_a_forecast_below_the_rules_chance_opens_none_and_a_withdrawn_one_closes_its_clock(
        ) -> None:
    eng = Engine(forecast_config(80))  # the chance is 70 %
    eng.apply(issue(0, STORM, CHANCE))
    eng.tick(T0 + 7 * H)
    assert final(eng, "inspection_overdue") == []
    eng = Engine(forecast_config(50))
    eng.apply(issue(0, STORM, CHANCE))
    eng.apply(issue(2, []))  # a later issue no longer holds the storm
    eng.tick(T0 + 7 * H)
    assert [e for e in final(eng, "inspection_overdue") if "forecast" in e["clock_id"]] == []

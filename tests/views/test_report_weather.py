"""The report's weather section: the period's storm forecasts (revised, retracted) and
gauge disagreements, from the engine's events in the log book.

Real store, the daemon's ``EngineHost``; the numbers are the engine tests'
(``tests/engine/test_weather*.py``): a forecast of 0.51 in in T0+6h .. T0+30h,
revised to 0.55 in, a second storm retracted by a dry issue, and KHPN seeing
0.79 in while rg1 was dead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monitor.config import Config
from monitor.config.file import parse_config
from monitor.contract.times import MS_PER_HOUR
from monitor.host.engine import EngineHost
from monitor.host.rows import journal_in
from monitor.store.opening import open_store
from monitor.views.report.build import build_report

from ..support.weatherkit import (
    CHANCE,
    REFERENCE,
    SITE,
    STORM,
    T0,
    counter,
    issue,
    nws_interval,
    observations,
)

H = MS_PER_HOUR


def weather_site(tmp_path: Path, **weather: Any) -> Config:
    return parse_config({"state_dir": str(tmp_path), "sites": [{
        "id": SITE, "condition": "B", "timezone": "America/New_York",
        "location": {"lat": 41.05, "lon": -73.54},
        "sensors": [{"id": "rg1", "kind": "rain", "in_per_tip": 0.01}]}],
        "weather": {"nws": {"user_agent": "test (ops@example.org)"},
                    "reference_stations": ["KHPN"], **weather}}, env={})


def feed(config: Config, items: list[Any]) -> None:
    with open_store(config) as store:
        host = EngineHost.restore(config, store)
        store.journal.commit([journal_in(i, topic=None, received_ms=None) for i in items])
        host.catch_up()


def report(config: Config) -> str:
    with open_store(config) as store:
        return build_report(config, store, SITE, T0 - 24 * H, T0 + 48 * H, T0 + 48 * H)


def test_the_report_lists_forecasts_and_disagreements(tmp_path: Path) -> None:
    config = weather_site(tmp_path, reference_opens_clock=True, forecast_hours=72)
    revised = [nws_interval(6, "PT6H", 5.0), *STORM[1:]]
    later = [nws_interval(48, "PT6H", 14.0)]  # a second storm (forecast_hours 72)
    feed(config, [*counter([], until_h=-1), issue(0, [*STORM, *later], CHANCE),
                  issue(1, [*revised, nws_interval(48, "PT6H", 1.0)], CHANCE),
                  *observations(REFERENCE)])
    html = report(config)
    section = html[html.index("<h2>Storm forecasts</h2>"):]
    # Revised by the issue of T0+1h (2026-04-30 21:00 EDT); the window from T0+6h; the
    # retracted one was issued at T0 (20:00 EDT); its first 24 h with 12.7 mm begin at
    # T0+30h, after the first storm's (2026-05-02 02:00 EDT).
    assert ("<td>2026-04-30 20:00 EDT</td><td>2026-05-02 02:00 EDT to 2026-05-03 02:00 EDT"
            "</td><td>0.55 in</td><td>90 %</td><td>nws OKX/33,37</td><td>retracted") in section
    assert "0.55 in" in section and "revised (1×)" in section and "70 %" in section
    assert "retracted (a later issue no longer forecast it)" in section
    assert "0.55 in" in section and "nws OKX/33,37" in section
    gauges = section[section.index("<h2>Gauge and reference stations</h2>"):]
    assert "KHPN" in gauges and "0.79 in" in gauges and "stale (silent)" in gauges
    assert "<td>yes</td>" in gauges
    # The storm the station opened a clock for is a storm of the period, said as such.
    storms = html[html.index("<h2>Storms</h2>"):].split("<h2>", 2)[1]
    assert "(by the reference station KHPN: gauge rg1 did not see it)" in storms


def test_a_period_without_weather_says_so(tmp_path: Path) -> None:
    config = weather_site(tmp_path)
    feed(config, counter([], until_h=1))
    html = report(config)
    assert "No storm forecast among the forecasts fetched for the period." in html
    assert "No disagreement between the gauge and the reference stations" in html

"""The daemon's weather poller against a local NWS server: what it fetched is journaled
(and applied by the engine host as rows another connection wrote), and ``status``
shows the source's state; a source down says so and concludes nothing."""

from __future__ import annotations

from pathlib import Path

from monitor.config import Config
from monitor.config.file import parse_config
from monitor.contract.times import parse_iso
from monitor.daemon.weatherpoll import WeatherPoller
from monitor.host.engine import EngineHost
from monitor.sources.nws import NwsClient, RateLimit
from monitor.store.opening import open_store
from monitor.views.status import build_status, format_status

from ..support.nwsserver import NwsServer, gridpoint, observations, point

T0 = parse_iso("2026-05-01T00:00:00Z")
GRID = "/gridpoints/OKX/33,37"
#: 13 mm over 06..12 UTC: 0.51 in in 24 hours, a storm forecast.
FORECAST = gridpoint("2026-05-01T00:00:00+00:00", [("2026-05-01T06:00:00+00:00/PT6H", 13.0)],
                     [("2026-05-01T00:00:00+00:00/PT12H", 60)])


def setup(tmp_path: Path, url: str) -> tuple[WeatherPoller, Config]:
    config = parse_config({"state_dir": str(tmp_path), "sites": [{
        "id": "branch-meadows", "condition": "B", "location": {"lat": 41.05, "lon": -73.54},
        "sensors": [{"id": "rg1", "kind": "rain"}]}],
        "weather": {"nws": {"base_url": url, "user_agent": "test (ops@example.org)"},
                    "reference_stations": ["KHPN"]}}, env={})
    assert config.weather is not None
    client = NwsClient(config.weather.nws, rate=RateLimit(0.0), sleep=lambda s: None,
                       attempts=2)
    return WeatherPoller(config, clock=lambda: T0 / 1000 + 1800, client=client), config


def test_what_is_fetched_is_journaled_applied_and_shown(tmp_path: Path) -> None:
    with NwsServer() as nws:
        nws.routes["/points/41.05,-73.54"] = [(200, {}, point())]
        nws.routes[GRID] = [(200, {}, FORECAST)]
        nws.routes["/stations/KHPN/observations"] = [(200, {}, observations("KHPN", [
            ("2026-04-30T23:51:00+00:00", None)]))]
        poller, config = setup(tmp_path, nws.url)
        with open_store(config) as store:
            poller.poll_once(store)
            poller.poll_once(store)  # the same issue again: one row
            rows = store.journal.after(0, limit=100)
            host = EngineHost.restore(config, store)
            host.catch_up()
            status = build_status(config, store, T0 + 3600_000)
    assert [r.body.get("weather") for r in rows] == ["forecast", "observation"]
    (event,) = [e for e in host.engine.current_events() if e.type == "storm_forecast"]
    assert event.to_json()["forecast_in"] == 0.512
    assert status["sites"]["branch-meadows"]["weather"] == {
        "source": "nws", "last_ok": "2026-05-01T00:30:00Z", "last_error": None}
    assert ("  weather (nws): ok, last fetched 2026-05-01 00:30 UTC"
            in format_status(config, status))


def test_a_source_down_is_shown_and_concludes_nothing(tmp_path: Path) -> None:
    with NwsServer() as nws:
        nws.routes["/points/41.05,-73.54"] = [(200, {}, point())]
        nws.routes[GRID] = [(503, {"Retry-After": "1"}, {"title": "Service Unavailable"})]
        poller, config = setup(tmp_path, nws.url)
        with open_store(config) as store:
            before = build_status(config, store, T0)
            poller.poll_once(store)
            rows = store.journal.after(0, limit=100)
            status = build_status(config, store, T0 + 3600_000)
    text = format_status(config, status)
    assert ("  weather (nws): UNREACHABLE since 2026-05-01 00:30 UTC: /gridpoints/OKX/33,37: "
            "HTTP 503 (after 2 attempts); last fetched never; storm forecast unknown") in text
    assert "no storm forecast" not in text
    assert before["sites"]["branch-meadows"]["weather"]["last_error"] == {
        "at": None, "reason": "not fetched yet"}
    assert rows == []
    assert status["sites"]["branch-meadows"]["weather"] == {
        "source": "nws", "last_ok": None, "last_error": {
            "at": "2026-05-01T00:30:00Z",
            "reason": f"{GRID}: HTTP 503 (after 2 attempts)"}}

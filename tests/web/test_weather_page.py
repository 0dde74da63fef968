"""The site page's weather: the storm forecast (when, how much, and the § 134-9A(2)
reason to look before the rain), an open gauge disagreement, and a weather source
that fails or was never fetched said as such, never as "no storm forecast".

The real app on a real state directory; the weather events come from the real
engine (``EngineHost``) fed a forecast issue and reference observations dated
around the wall clock the page judges by, and the source's state is what the
daemon's poller records.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from monitor.config import Config
from monitor.config.file import load_config
from monitor.contract.inputs import Forecast, ReferenceObservation
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE
from monitor.host.engine import EngineHost
from monitor.host.rows import journal_in
from monitor.store.opening import open_store
from monitor.store.sourcenotes import weather_meta_key

from ..support.webkit import QP, SITE, add_people, client_for, sign_in, write_web_config

H = MS_PER_HOUR
WEATHER = """\
weather:
  nws: {user_agent: "test (ops@example.org)"}
  reference_stations: [KHPN]
  reference_opens_clock: true
"""
#: The hour the tests are dated around (the page judges by the wall clock).
NOW = int(time.time() * 1000) // H * H


def weather_config(tmp_path: Path) -> Config:
    path = write_web_config(tmp_path, more=WEATHER)
    # Active since two days ago: its gauge is dead, not the site; without active_since a
    # site never heard from has not begun (no clock: the active period bounds them all).
    since = (datetime.fromtimestamp(NOW / 1000, timezone.utc) - timedelta(days=2)).date()
    text = path.read_text().replace(
        "    condition: B\n", "    condition: B\n    location: {lat: 41.05, lon: -73.54}\n"
        f"    active_since: {since}\n")
    path.write_text(text)
    return load_config(path, env={})


def client_with(tmp_path: Path, items: list[Any], source: dict[str, Any] | None) -> TestClient:
    config = weather_config(tmp_path)
    with open_store(config) as store:
        host = EngineHost.restore(config, store)
        store.journal.commit([journal_in(i, topic=None, received_ms=None) for i in items])
        host.catch_up()
        if source is not None:
            store.state.meta_set(weather_meta_key(SITE), json.dumps(source))
    add_people(tmp_path / "state")
    client: TestClient = client_for(config)
    sign_in(client, tmp_path / "state", QP)
    return client


#: Issued an hour ago: 14 mm (0.55 in) in the six hours from NOW+5h.
FORECAST = Forecast(SITE, "nws", "OKX/33,37", NOW - H, ((NOW + 5 * H, NOW + 11 * H, 14.0),),
                    ((NOW, NOW + 12 * H, 80.0),))
#: KHPN: 2 mm in each of the ten hours NOW-14h .. NOW-4h (0.79 in); rg1 never reported.
REFERENCE = [ReferenceObservation(SITE, "KHPN", NOW + (h - 14) * H + 51 * MS_PER_MINUTE, 2.0)
             for h in range(10)]
OK = {"last_ok": "2026-01-01T00:00:00Z", "last_error": None}


def page(client: TestClient) -> str:
    got = client.get(f"/sites/{SITE}")
    assert got.status_code == 200, got.text
    text: str = got.text
    return text[text.index("<h2>Weather</h2>"):text.index("<h2>Open findings")]


def test_the_forecast_and_the_disagreement_are_on_the_site_page(tmp_path: Path) -> None:
    client = client_with(tmp_path, [FORECAST, *REFERENCE], OK)
    html = page(client)
    clocks = client.get(f"/sites/{SITE}").text.split("<h2>Weather</h2>")[0]
    assert "Storm forecast: 0.55 in between" in html and "80 % chance" in html
    assert "Check the controls before the rain: § 134-9A(2)" in html
    assert "Gauge rg1 was silent while station KHPN saw 0.79 in" in html
    assert "the gauge may be clogged or dead" in html
    assert "storm inspection clock is open" in html
    assert "seen by reference station KHPN, not by the site's gauge" in clocks
    assert "unreachable" not in html and "No storm forecast" not in html


def test_no_storm_in_a_forecast_that_was_fetched(tmp_path: Path) -> None:
    dry = Forecast(SITE, "nws", "OKX/33,37", NOW - H, ((NOW, NOW + 6 * H, 1.0),))
    html = page(client_with(tmp_path, [dry], OK))
    assert "No storm forecast (0.5 in or more in 24 hours) in the forecast fetched" in html


@pytest.mark.parametrize(("source", "words"), [
    ({"last_ok": None, "last_error": {"at": "2026-01-01T00:00:00Z", "reason": "HTTP 503"}},
     "unreachable since"),
    (None, "not fetched yet"),
])
def test_a_failing_or_unknown_source_is_never_no_storm_forecast(
        tmp_path: Path, source: dict[str, Any] | None, words: str) -> None:
    html = page(client_with(tmp_path, [], source))
    assert words in html and "Storm forecast unknown" in html
    assert "No storm forecast" not in html

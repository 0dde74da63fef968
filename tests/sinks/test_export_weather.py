"""The exporter writes the weather inputs (measurement ``weather``) from the journaled
weather rows, idempotently, to the real InfluxDB 1.x server the other export tests
use: the forecast's precipitation per interval (tags ``source=forecast``, ``grid``)
and each station's ``precipitationLastHour`` (``source=reference``, ``station``),
a null hour written as unknown (no depth, ``known`` false), never as 0.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from monitor.contract.inputs import Forecast, ReferenceObservation
from monitor.contract.times import MS_PER_HOUR
from monitor.store import Store
from monitor.store.exportstate import CURSOR, EVENTS_CURSOR

from ..support.influxd import WEATHER, Influxd, export_config, fill_store, session
from ..support.util import SITE

pytest_plugins = ("tests.support.conftest_influx",)

H = MS_PER_HOUR


@pytest.mark.integration
def test_weather_rows_arrive_as_weather_points_once(influx_server: Influxd, influx_db: str,
                                                    tmp_path: Path) -> None:
    config = export_config(tmp_path, influx_server, influx_db, weather=WEATHER)
    t0 = (int(time.time() * 1000) // H - 30) * H
    # 12.7 mm over 6 h from t0 (0.5 in, 0.0833 in/h), then a revised issue that puts
    # 6.35 mm there: the same interval, the same point, the later value.
    first = Forecast(SITE, "nws", "OKX/33,37", t0, ((t0, t0 + 6 * H, 12.7),
                                                    (t0 + 6 * H, t0 + 12 * H, 0.0)))
    revised = Forecast(SITE, "nws", "OKX/33,37", t0 + H, ((t0, t0 + 6 * H, 6.35),))
    hours = [ReferenceObservation(SITE, "KHPN", t0 + h * H + 51 * 60_000, mm)
             for h, mm in enumerate((2.54, None, 0.0))]
    fill_store(config, [first, revised, *hours])
    with Store.in_dir(config.state_dir) as store:
        assert session(config, store).drain(60)
    q = 'SELECT * FROM "weather" WHERE "site" = \'{}\' AND "source" = \'{}\' ORDER BY time'
    forecast = influx_server.rows(q.format(SITE, "forecast"), influx_db)
    assert [(r["grid"], r["precip_mm"], round(r["precip_in_per_h"], 4), r["hours"])
            for r in forecast] == [("OKX/33,37", 6.35, 0.0417, 6.0), ("OKX/33,37", 0.0, 0.0, 6.0)]
    reference = influx_server.rows(q.format(SITE, "reference"), influx_db)
    assert [(r["station"], r["precip_last_hour_in"], r["known"]) for r in reference] == [
        ("KHPN", 0.1, True), ("KHPN", None, False), ("KHPN", 0.0, True)]
    # Exported again from the start (a cursor lost): the same points, nothing added.
    with Store.in_dir(config.state_dir) as store:
        store.state.set_cursors({CURSOR: 0, EVENTS_CURSOR: 0})
        assert session(config, store).drain(60)
    assert influx_server.rows(q.format(SITE, "forecast"), influx_db) == forecast
    assert influx_server.rows(q.format(SITE, "reference"), influx_db) == reference

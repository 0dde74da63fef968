"""The NWS source against a real HTTP server on localhost (``support/nwsserver.py``):
the documented shapes, a 503 with ``Retry-After``, a 500 then success, a 429, the
``User-Agent``, the cached point, nulls kept unknown, failures logged once an hour."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from monitor.config.weather import Location, NwsConfig
from monitor.contract.inputs import Forecast, ReferenceObservation
from monitor.contract.times import MS_PER_HOUR, parse_iso
from monitor.sources.nws import FailureLog, NwsClient, NwsError, RateLimit

from ..support.nwsserver import NwsServer, gridpoint, observations, point

T0 = parse_iso("2026-05-01T00:00:00Z")
H = MS_PER_HOUR
HERE = Location(lat=41.05, lon=-73.54)
GRID = "/gridpoints/OKX/33,37"
POINT = "/points/41.05,-73.54"
OBS = "/stations/KHPN/observations"

#: Mixed interval lengths, one value null (unknown: left out), as NWS gives them.
FORECAST = gridpoint("2026-05-01T00:00:00+00:00", [
    ("2026-05-01T06:00:00+00:00/PT6H", 4.0), ("2026-05-01T12:00:00+00:00/PT6H", 6.0),
    ("2026-05-01T18:00:00+00:00/PT1H", 3.0), ("2026-05-01T19:00:00+00:00/PT11H", None)],
    [("2026-05-01T00:00:00+00:00/PT12H", 30), ("2026-05-01T12:00:00+00:00/PT12H", 70)])


@pytest.fixture
def nws() -> Iterator[NwsServer]:
    with NwsServer() as server:
        server.routes[POINT] = [(200, {}, point())]
        server.routes[GRID] = [(200, {}, FORECAST)]
        yield server


def client(server: NwsServer, **kw: object) -> tuple[NwsClient, list[float]]:
    slept: list[float] = []
    c = NwsClient(NwsConfig(base_url=server.url, user_agent="stormwatch-test (ops@example.org)"),
                  rate=RateLimit(0.0), sleep=slept.append, jitter=lambda: 0.0,
                  wall=lambda: T0 / 1000, **kw)  # type: ignore[arg-type]
    return c, slept


def test_a_forecast_in_the_documented_shape(nws: NwsServer) -> None:
    c, _ = client(nws)
    f = c.forecast("branch-meadows", HERE)
    assert f == Forecast(
        site="branch-meadows", source="nws", grid="OKX/33,37", ts_ms=T0,
        precip=((T0 + 6 * H, T0 + 12 * H, 4.0), (T0 + 12 * H, T0 + 18 * H, 6.0),
                (T0 + 18 * H, T0 + 19 * H, 3.0)),
        probability=((T0, T0 + 12 * H, 30.0), (T0 + 12 * H, T0 + 24 * H, 70.0)))
    c.forecast("branch-meadows", HERE)
    assert nws.count(POINT) == 1 and nws.count(GRID) == 2  # the point is cached
    assert all(h.get("User-Agent") == "stormwatch-test (ops@example.org)"
               for _, h in nws.requests)


def test_observations_keep_null_as_unknown(nws: NwsServer) -> None:
    nws.routes[OBS] = [(200, {}, observations("KHPN", [
        ("2026-05-01T01:51:00+00:00", 2.0), ("2026-05-01T02:51:00+00:00", None)]))]
    c, _ = client(nws)
    assert c.observations("branch-meadows", "KHPN", T0) == [
        ReferenceObservation("branch-meadows", "KHPN", T0 + H + 51 * 60_000, 2.0),
        ReferenceObservation("branch-meadows", "KHPN", T0 + 2 * H + 51 * 60_000, None)]
    assert nws.requests[-1][0] == "/stations/KHPN/observations?start=2026-05-01T00%3A00%3A00Z"


def test_a_503_with_retry_after_is_waited_out(nws: NwsServer) -> None:
    nws.routes[GRID] = [(503, {"Retry-After": "7"}, {"title": "Service Unavailable"}),
                        (200, {}, FORECAST)]
    c, slept = client(nws)
    assert c.forecast("branch-meadows", HERE).ts_ms == T0
    assert slept == [7.0]  # Retry-After (7 s) beats the first backoff (1 s)


def test_a_500_then_success_backs_off_and_retries(nws: NwsServer) -> None:
    nws.routes[GRID] = [(500, {}, {}), (500, {}, {}), (200, {}, FORECAST)]
    c, slept = client(nws)
    assert c.forecast("branch-meadows", HERE).ts_ms == T0
    assert slept == [1.0, 2.0]  # 1 s, 2 s: doubling (jitter 0 here)


def test_backoff_is_capped_and_jittered(nws: NwsServer) -> None:
    nws.routes[GRID] = [(500, {}, {})]
    c, slept = client(nws, attempts=6, backoff_max_s=5.0)
    c.jitter = lambda: 1.0  # the most jitter: half of each wait
    with pytest.raises(NwsError, match=r"HTTP 500 \(after 6 attempts\)"):
        c.forecast("branch-meadows", HERE)
    assert slept == [0.5, 1.0, 2.0, 2.5, 2.5]


def test_a_429_with_a_long_retry_after_fails_now_with_one_line(nws: NwsServer) -> None:
    nws.routes[GRID] = [(429, {"Retry-After": "3600"}, {"title": "Too Many Requests"})]
    c, slept = client(nws)
    with pytest.raises(NwsError) as info:
        c.forecast("branch-meadows", HERE)
    assert str(info.value) == f"{GRID}: HTTP 429 (retry after 3600 s)" and slept == []


def test_a_refusal_is_not_retried(nws: NwsServer) -> None:
    nws.routes[GRID] = [(403, {}, {"title": "Forbidden"})]
    c, slept = client(nws)
    with pytest.raises(NwsError, match="HTTP 403"):
        c.forecast("branch-meadows", HERE)
    assert nws.count(GRID) == 1 and slept == []


def test_a_server_that_is_down_is_an_error_not_silence() -> None:
    with NwsServer() as server:
        url = server.url
    c = NwsClient(NwsConfig(base_url=url, user_agent="t"), rate=RateLimit(0.0),
                  sleep=lambda s: None, attempts=2)
    with pytest.raises(NwsError, match=r"ConnectError.*\(after 2 attempts\)"):
        c.forecast("branch-meadows", HERE)


def test_the_rate_limit_spaces_requests_across_callers() -> None:
    now = [0.0]
    slept: list[float] = []
    rate = RateLimit(0.5, clock=lambda: now[0], sleep=slept.append)
    rate.wait()
    rate.wait()
    rate.wait()
    assert slept == [0.5, 1.0]


def test_a_failure_is_logged_once_per_source_per_hour(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    failures = FailureLog(clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="stormwatch.weather"):
        for minute in range(0, 120, 5):
            now[0] = minute * 60.0
            failures.failed("nws", "HTTP 503")
        failures.ok("nws")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["weather source nws unreachable: HTTP 503"] * 2 + [
        "weather source nws reachable again"]

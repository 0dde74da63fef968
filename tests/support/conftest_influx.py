"""Fixtures for a real InfluxDB server (``tests/support/influxd.py``), for the export tests.

Test modules load them with ``pytest_plugins = ("tests.support.conftest_influx",)``
(tests/conftest.py is shared with other work and holds only the part both
need: the failure-report hook and the session-end ``stop_all``).

``influx_server`` is one started server per test module (starting one takes
about a second); ``influx_db`` is a fresh database on it for each test, so
tests sharing the server never see each other's points. ``make_influxd``
makes servers a test owns (to stop and restart them). Every server is
stopped at teardown, and its log tail is added to the report of a failed
test (by tests/conftest.py, which lists it with ``services_of``; its
``stop_all`` at session end stops servers too). Without
``/usr/bin/influxd`` the tests skip with the reason.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import pytest

from tests.conftest import services_of
from tests.support.influxd import MISSING_REASON, Influxd, influxd_available

_counter = itertools.count(1)

MakeInfluxd = Callable[..., Influxd]


def require_influxd() -> None:
    if not influxd_available():
        pytest.skip(MISSING_REASON)


@pytest.fixture(scope="module")
def influx_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Influxd]:
    require_influxd()
    server = Influxd(tmp_path_factory.mktemp("influxd"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def influx_db(influx_server: Influxd, request: pytest.FixtureRequest) -> str:
    """A new, empty database on the module's server; its name."""
    services_of(request).append(influx_server)
    name = f"t{next(_counter)}"
    influx_server.create_database(name)
    return name


@pytest.fixture
def make_influxd(request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeInfluxd]:
    require_influxd()
    made: list[Influxd] = []

    def make(*, start: bool = True) -> Influxd:
        server = Influxd(tmp_path_factory.mktemp("influxd"))
        services_of(request).append(server)
        made.append(server)
        return server.start() if start else server

    try:
        yield make
    finally:
        for server in made:
            server.stop()

"""Fixtures for a real InfluxDB server (``tests/influxd.py``), for the export tests.

Test modules load them with ``pytest_plugins = ("tests.conftest_influx",)``
(tests/conftest.py is shared with other work and stays as it is).

``influx_server`` is one started server per test module (starting one takes
about a second); ``influx_db`` is a fresh database on it for each test, so
tests sharing the server never see each other's points. ``make_influxd``
makes servers a test owns (to stop and restart them). Every server is
stopped at teardown, and its log tail is added to the report of a failed
test. Without ``/usr/bin/influxd`` the tests skip with the reason.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest

from tests.influxd import MISSING_REASON, Influxd, influxd_available, stop_all

_SERVERS = pytest.StashKey[list[Influxd]]()
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
    servers = request.node.stash.setdefault(_SERVERS, [])
    servers.append(influx_server)
    name = f"t{next(_counter)}"
    influx_server.create_database(name)
    return name


@pytest.fixture
def make_influxd(request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeInfluxd]:
    require_influxd()
    servers: list[Influxd] = request.node.stash.setdefault(_SERVERS, [])
    made: list[Influxd] = []

    def make(*, start: bool = True) -> Influxd:
        server = Influxd(tmp_path_factory.mktemp("influxd"))
        servers.append(server)
        made.append(server)
        return server.start() if start else server

    try:
        yield make
    finally:
        for server in made:
            server.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if report.failed:
        for server in item.stash.get(_SERVERS, []):
            report.sections.append((f"influxd log ({server.workdir})", server.log_tail()))
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    stop_all()


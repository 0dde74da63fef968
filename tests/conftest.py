"""Shared fixtures: real services the integration tests start themselves (monitor/README.md,
"Development").

``mosquitto`` is a started broker on a free port of 127.0.0.1, stopped at
teardown; ``make_mosquitto(**options)`` makes more, or one with options (see
``tests.support.services.Mosquitto``: ``allow_anonymous``, ``password_file``,
``acl_file``, ``extra_config``, ``max_queued_messages``, ``verbose``, and
``start=False`` to configure before starting). ``daemons`` closes the daemons a
test started (``tests.support.daemonkit``); ``http`` is a started alert receiver
(``tests.support.receivers``). When a test fails, the tail of
each of its brokers' logs is added to the report (and of any other service a
fixture lists with ``services_of``, as ``tests/support/conftest_influx.py`` does). Tests
skip, with the reason, where ``/usr/sbin/mosquitto`` is not installed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import properties
from tests.support.childproc import ChildService, stop_all
from tests.support.daemonkit import Daemons
from tests.support.diskfull import small_tmpfs
from tests.support.receivers import HttpReceiver
from tests.support.services import MISSING_REASON, Mosquitto, mosquitto_available

# In CI (the CI variable set, as every CI service does and `.ci/run` expects) the
# property tests draw their full number of examples, the same ones on every run: a red
# CI must be one anybody reproduces with `CI=true make test`, not a draw. Locally each
# run draws a share of them anew, which is how new counterexamples are found (and then
# kept as regression tests) without a minutes-long engine suite (tests/support/properties.py).
properties.load()

_SERVICES = pytest.StashKey[list[ChildService]]()

MakeMosquitto = Callable[..., Mosquitto]


def services_of(request: pytest.FixtureRequest) -> list[ChildService]:
    """The services the requesting test uses: their log tails go into its report if it fails."""
    services: list[ChildService] = request.node.stash.setdefault(_SERVICES, [])
    return services


def require_mosquitto() -> None:
    """Skip the calling test when the Mosquitto broker is not installed."""
    if not mosquitto_available():
        pytest.skip(MISSING_REASON)


@pytest.fixture
def make_mosquitto(request: pytest.FixtureRequest,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeMosquitto]:
    """A factory of brokers, each in its own temp dir; all are stopped at teardown.

    ``make_mosquitto(start=False, **options)`` returns it unstarted; the
    options are those of ``Mosquitto``.
    """
    require_mosquitto()
    brokers: list[Mosquitto] = []

    def make(*, start: bool = True, **options: Any) -> Mosquitto:
        broker = Mosquitto(tmp_path_factory.mktemp("mosquitto"), **options)
        brokers.append(broker)
        services_of(request).append(broker)
        return broker.start() if start else broker

    try:
        yield make
    finally:
        errors: list[Exception] = []
        for broker in brokers:
            try:
                broker.stop()
            except Exception as exc:  # stop them all, then report the first failure
                errors.append(exc)
        if errors:
            raise errors[0]


@pytest.fixture
def mosquitto(make_mosquitto: MakeMosquitto) -> Mosquitto:
    """A started broker with the defaults of ``Mosquitto`` (anonymous access allowed)."""
    return make_mosquitto()


#: Set by ``.ci/run``: a skip for a missing service or tool fails the test, so CI
#: cannot go green with the integration tests skipped.
REQUIRE_ENV = "STORMWATCH_REQUIRE_SERVICES"
#: Skips that stay skips under it: what no CI machine can offer (a permission
#: check is meaningless as root; a container that may not mount a filesystem).
ALLOWED_SKIPS = ("as root", "root reads", "root may", "cannot mount")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if report.skipped and os.environ.get(REQUIRE_ENV) == "1" and not hasattr(report, "wasxfail"):
        reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
        if not any(word in reason for word in ALLOWED_SKIPS):
            report.outcome = "failed"
            report.longrepr = f"skipped, but {REQUIRE_ENV}=1 requires it to run: {reason}"
    if report.failed:
        for service in item.stash.get(_SERVICES, []):
            report.sections.append((f"{service.name} log ({service.workdir})",
                                    service.log_tail()))
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    stop_all()  # a safety net: fixtures have stopped their brokers and servers already


@pytest.fixture
def daemons() -> Iterator[Daemons]:
    with Daemons() as made:
        yield made


@pytest.fixture
def http() -> Iterator[HttpReceiver]:
    with HttpReceiver() as receiver:
        yield receiver


@pytest.fixture
def small_state(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path/state`` (the daemon's state_dir in ``write_config``) on a 16 MiB tmpfs
    (the store's and the reliability suite's disk-full tests)."""
    with small_tmpfs(tmp_path / "state") as state:
        yield state

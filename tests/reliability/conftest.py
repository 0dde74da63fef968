"""Fixtures of the reliability suite, and its summary: one counts line per scenario.

``counts`` gives each test a ``ScenarioCounts`` (``tests/support/scenarios.py``) registered under
the test's name (``test_`` dropped); the test fills it in as it goes, and
``pytest_terminal_summary`` prints, after the run, one line per scenario::

    reliability: sigkill_during_storm published=2880 journaled=2880 exported=- alerted=1/1

pytest registers this conftest's hooks with the rest of the session's plugins
as soon as it collects the folder, so the lines appear both when the suite
runs on its own (``pytest tests/reliability``) and as part of the whole run
(``pytest tests``, ``make test``); checked both ways. Each line travels on its
test's teardown report (a user property), because under pytest-xdist (``make
test`` runs ``-n 2``) the tests run in worker processes and only the reports
reach the process that prints the summary. A run that collects nothing here
prints nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pytest

from tests.support.receivers import SmtpReceiver
from tests.support.scenarios import ScenarioCounts

SMTP_PASSWORD = "smtp-Rel1-4bility"

#: The user property of a scenario's report that carries its counts line.
COUNTS_PROPERTY = "reliability counts"


def scenario_name(request: pytest.FixtureRequest) -> str:
    name: str = request.node.name
    return name[len("test_"):] if name.startswith("test_") else name


@pytest.fixture
def counts(request: pytest.FixtureRequest) -> Iterator[ScenarioCounts]:
    """This scenario's counts, printed in the run's summary (failed or not)."""
    made = ScenarioCounts()
    try:
        yield made
    finally:
        request.node.user_properties.append((COUNTS_PROPERTY, made.line(scenario_name(request))))


def counts_lines(reports: Iterable[object]) -> list[str]:
    """The counts lines the reports carry, in the order the scenarios ended."""
    lines = []
    for report in reports:
        if isinstance(report, pytest.TestReport) and report.when == "teardown":
            lines += [str(value) for key, value in report.user_properties
                      if key == COUNTS_PROPERTY]
    return lines


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    reports = [report for of_one_kind in terminalreporter.stats.values()
               for report in of_one_kind]
    lines = counts_lines(sorted(reports, key=lambda r: getattr(r, "start", 0.0)))
    if not lines:
        return
    terminalreporter.section("reliability counts")
    for line in lines:
        terminalreporter.write_line(line)


@pytest.fixture
def smtp(monkeypatch: pytest.MonkeyPatch) -> Iterator[SmtpReceiver]:
    """A mail server asking for ``qp``'s login, not started: the test starts it.
    The daemon reads the password from ``${SMTP_PASSWORD}``."""
    monkeypatch.setenv("SMTP_PASSWORD", SMTP_PASSWORD)
    receiver = SmtpReceiver(login="qp", password=SMTP_PASSWORD)
    try:
        yield receiver
    finally:
        receiver.stop()

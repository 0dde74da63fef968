"""Fixtures of the reliability suite, and its summary: one counts line per scenario.

``counts`` gives each test a ``ScenarioCounts`` (``kit.py``) registered under
the test's name (``test_`` dropped); the test fills it in as it goes, and
``pytest_terminal_summary`` prints, after the run, one line per scenario::

    reliability: sigkill_during_storm published=2880 journaled=2880 exported=- alerted=1/1

pytest registers this conftest's hooks with the rest of the session's plugins
as soon as it collects the folder, so the lines appear both when the suite
runs on its own (``pytest tests/reliability``) and as part of the whole run
(``pytest tests``, ``make test``); checked both ways. A run that collects
nothing here prints nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.reliability.kit import ScenarioCounts
from tests.store.test_disk_full import small_state  # noqa: F401 - the fixture, shared
from tests.support.receivers import SmtpReceiver

SMTP_PASSWORD = "smtp-Rel1-4bility"

_COUNTS = pytest.StashKey[dict[str, ScenarioCounts]]()


def scenario_name(request: pytest.FixtureRequest) -> str:
    name: str = request.node.name
    return name[len("test_"):] if name.startswith("test_") else name


@pytest.fixture
def counts(request: pytest.FixtureRequest) -> ScenarioCounts:
    """This scenario's counts, printed in the run's summary."""
    made = ScenarioCounts()
    request.config.stash.setdefault(_COUNTS, {})[scenario_name(request)] = made
    return made


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    scenarios = config.stash.get(_COUNTS, {})
    if not scenarios:
        return
    terminalreporter.section("reliability counts")
    for name, made in scenarios.items():
        terminalreporter.write_line(made.line(name))


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

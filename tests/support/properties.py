"""How many examples the property tests draw: the full number in CI, a share locally.

Two hypothesis profiles (monitor/README.md, "Development"). ``ci`` (loaded when the
CI variable is set, as ``.ci/run`` sets it) draws each property test's full number of
examples, the same ones on every run, so a red CI is one anybody reproduces with
``CI=true make test``. ``dev`` (every other run) draws a share of them, new ones
on each run: a developer's many runs add up to the full search and more, and a
counterexample once found is replayed first from hypothesis' example database.
``HYPOTHESIS_PROFILE=ci`` runs the full number locally.
"""

from __future__ import annotations

import os

from hypothesis import settings

#: The profile a run without CI uses; the other is ``CI_PROFILE``.
DEV_PROFILE = "dev"
CI_PROFILE = "ci"
#: Locally a property test draws this share of its CI examples, never fewer than
#: ``MIN_DEV_EXAMPLES``: every one of them still checks the whole property, so
#: fewer examples search less per run, and no test loses an assertion.
DEV_SHARE = 8
MIN_DEV_EXAMPLES = 5

settings.register_profile(CI_PROFILE, derandomize=True)
settings.register_profile(DEV_PROFILE)


def profile_name() -> str:
    """The profile of this run: ``HYPOTHESIS_PROFILE``, else ``ci`` under CI, else ``dev``."""
    chosen = os.environ.get("HYPOTHESIS_PROFILE")
    if chosen in (CI_PROFILE, DEV_PROFILE):
        return chosen
    return CI_PROFILE if os.environ.get("CI") else DEV_PROFILE


def load() -> None:
    """Load this run's profile (``tests/conftest.py`` calls it once)."""
    settings.load_profile(profile_name())


def examples(in_ci: int) -> int:
    """A property test's ``max_examples``: ``in_ci`` under the ``ci`` profile, a share
    of it (``DEV_SHARE``, at least ``MIN_DEV_EXAMPLES``) under ``dev``."""
    if profile_name() == CI_PROFILE:
        return in_ci
    return min(in_ci, max(MIN_DEV_EXAMPLES, in_ci // DEV_SHARE))

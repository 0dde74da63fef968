"""One family of errors for everything a user can get wrong or a check can find.

Theory of operation
-------------------
Every error a person should read as one line (or a few ``path: message``
lines) is a ``StormwatchError``, raised where the problem is found, with the
words that say what to fix. ``cli.main`` is the one place that turns it into
output and an exit code, so no command converts errors by hand:

* ``UserError`` — exit 2: bad usage, a bad configuration, an input file or a
  path that cannot be used, an output that cannot be written. Its subclasses
  name where it comes from (``ConfigError``, ``CsvInputError``, ...).
* ``CheckFailed`` — exit 1: the command ran and what it checked is not in
  order (a log book row that cannot be read, a target that did not take a
  message).

A line is printed behind ``stormwatch COMMAND: `` unless the error's lines
already name their field (``prefixed = False``: a configuration's
``sites.branch-meadows.rain.threshold_in: ...`` lines read better bare). Errors that are
the program's own business (a broker that hangs up, InfluxDB refusing a
batch) are not in this family: they are retried and logged, never printed
as a user's mistake. ``sensors/`` (the node) keeps its own small family: it
installs without ``monitor/``.
"""

from __future__ import annotations

from typing import ClassVar

EXIT_OK, EXIT_CHECK_FAILED, EXIT_USAGE = 0, 1, 2


class StormwatchError(Exception):
    """An error for a person: ``lines`` to print, ``exit_code`` to exit with."""

    exit_code: ClassVar[int] = EXIT_USAGE
    #: Print each line behind ``stormwatch COMMAND:`` (``cli.main``).
    prefixed: ClassVar[bool] = True

    def __init__(self, *lines: str) -> None:
        super().__init__("\n".join(lines))
        self.lines = list(lines)


class UserError(StormwatchError):
    """Bad usage, configuration, input or path: exit 2."""

    exit_code = EXIT_USAGE


class CheckFailed(StormwatchError):
    """What the command checked is not in order: exit 1."""

    exit_code = EXIT_CHECK_FAILED


class OutputError(UserError):
    """Standard output did not take what the command wrote (its reason is the message)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"cannot write the output: {reason}")

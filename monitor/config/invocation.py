"""How to name this program in a command printed for a person to run.

Theory of operation
-------------------
Some output ends with commands to run next: ``stormwatch demo --keep`` prints
the ``status``, ``logbook`` and ``report`` commands that look at what it kept,
and ``logbook anchor`` the ``logbook verify --anchor`` command that checks the
log book later. A bare ``stormwatch …`` works only when ``stormwatch`` is on
``PATH``; after ``make demo`` or ``make test`` it lives in ``.venv/bin/``, and
on a server in ``/opt/stormwatch/.venv/bin/``, where a bare name is "command
not found". So a printed command names the executable that is running:

* ``stormwatch`` when that name on ``PATH`` is this very executable;
* otherwise its path, as it was typed when it was typed as a path
  (``.venv/bin/stormwatch`` from ``make demo``: the person is in that
  directory), else absolute (a systemd unit, a timer);
* ``python -m monitor.cli`` with this interpreter's path when no ``stormwatch``
  executable goes with it (run as a module, as the tests do).

A command that reads the configuration names the file too, absolute
(``command_for``): an alert's ``stormwatch inspect`` is read on a phone and
typed wherever the person is, and without ``--config`` it fails. Here, in the
configuration's layer, so the alert worker (a sink) can ask it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

PROGRAM = "stormwatch"


def running_executable() -> Path | None:
    """The ``stormwatch`` executable running now: ``sys.argv[0]`` when it is one, else
    the one installed beside this interpreter (a virtualenv's ``bin/``), else None."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == PROGRAM and argv0.is_file():
        return argv0
    beside = Path(sys.executable).parent / PROGRAM
    return beside if beside.is_file() else None


def _same_file(a: str | Path, b: str | Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def program() -> str:
    """What to print in place of ``stormwatch`` so that the command works as printed."""
    exe = running_executable()
    if exe is None:
        return f"{shlex.quote(sys.executable)} -m monitor.cli"
    on_path = shutil.which(PROGRAM)
    if on_path is not None and _same_file(on_path, exe):
        return PROGRAM
    if not exe.is_absolute() and exe.parent != Path("."):
        return shlex.quote(str(exe))  # typed as a path: the person stands where it works
    return shlex.quote(os.path.abspath(exe))


def command_for(config_path: str | Path | None, subcommand: str) -> str:
    """``PROGRAM SUBCOMMAND --config PATH``: a command that reads the configuration at
    ``config_path`` as typed on this machine, from any directory (the path absolute);
    ``--config FILE`` when the configuration was not read from a file."""
    path = shlex.quote(os.path.abspath(config_path)) if config_path is not None else "FILE"
    return f"{program()} {subcommand} --config {path}"

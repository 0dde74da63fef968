"""Commands of stormwatch run as processes against a state directory.

The commands that read the state, each run as ``stormwatch ARGS --config FILE``, and
what a refusal of an unusable state directory looks like; the roster of qualified
professionals the ``inspect`` commands read.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from .daemonkit import ROOT, SITE

#: Every command that reads the state, as (name, arguments after --config FILE).
READERS: list[tuple[str, tuple[str, ...]]] = [
    ("status", ("status",)),
    ("status --json", ("status", "--json")),
    ("logbook export", ("logbook", "--site", SITE)),
    ("logbook verify", ("logbook", "verify")),
    ("report", ("report", "--site", SITE, "--from", "2026-05-01", "--to", "2026-05-02")),
]


def stormwatch(cfg: Path, args: Sequence[str], *, out: Path | None = None,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``stormwatch ARGS --config CFG`` (and ``--out OUT`` for ``report``) as a process."""
    command, *rest = args
    extra = ["--out", str(out)] if command == "report" and out is not None else []
    return subprocess.run(
        [sys.executable, "-m", "monitor.cli", command, "--config", str(cfg), *rest, *extra],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg",
             **(env or {})})


def assert_refused(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    """Exit 2, nothing on stdout, one line on stderr holding ``words``, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert "Traceback" not in proc.stderr
    assert "OK" not in proc.stderr and "no open" not in proc.stderr


#: The qualified professionals of ``stormwatch inspect``: one with a contact, one without.
ROSTER = """\
qualified_professionals:
  - {name: J. Rivera, credential: CPESC 12345, contact: jr@example.org}
  - {name: A. Lee, credential: NY PE 098765}
"""

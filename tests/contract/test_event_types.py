"""The event contract (monitor/README.md, "Events") is checked by the type checker, and the JSON is
what it was.

Each event type is a frozen dataclass (``monitor/engine/events.py``): a rule
that builds one with a misspelt or missing field, or a consumer that reads a
field the type does not have, is a ``mypy --strict`` error, not a KeyError at
three in the morning. These tests run mypy on two small snippets, one right and
one wrong, so the check itself is shown to work both ways.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from monitor.contract.events import EVENT_FIELDS, EVENT_TYPES, Event, Fact

from ..support.util import SAMPLE_BODIES

ROOT = Path(__file__).resolve().parents[2]

GOOD = """
    from monitor.contract.events import Event, TrapCleanoutRequired

    def fill_percent(event: Event) -> float | None:
        body = event.body
        if isinstance(body, TrapCleanoutRequired):
            return body.fill_fraction * 100
        return None

    TrapCleanoutRequired(trap="trap-1", fill_fraction=0.5, depth_in=24.0,
                         sensor="trap1-depth", threshold=0.5, repeat=0)
"""

BAD = """
    from monitor.contract.events import Event, TrapCleanoutRequired

    def fill_percent(event: Event) -> float | None:
        body = event.body
        if isinstance(body, TrapCleanoutRequired):
            return body.fill_fraktion * 100
        return None

    TrapCleanoutRequired(trap="trap-1", fill_fraction=0.5, depth_in=24.0,
                         sensor="trap1-depth", threshhold=0.5, repeat=0)
"""


def mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(textwrap.dedent(source), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
         "--cache-dir", str(tmp_path / "cache"), str(snippet)],
        capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_mypy_accepts_the_right_fields(tmp_path: Path) -> None:
    result = mypy(tmp_path, GOOD)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_rejects_a_misspelt_field(tmp_path: Path) -> None:
    result = mypy(tmp_path, BAD)
    assert result.returncode == 1, result.stdout + result.stderr
    assert '"TrapCleanoutRequired" has no attribute "fill_fraktion"' in result.stdout
    assert 'Unexpected keyword argument "threshhold"' in result.stdout


@pytest.mark.parametrize("kind", sorted(EVENT_TYPES))
def test_the_json_round_trips(kind: str) -> None:
    event = Event(Fact("site-1", 1_777_636_800_000, "abc", SAMPLE_BODIES[kind]), 2)
    data = event.to_json()
    assert list(data)[:4] == ["type", "site", "at", "id"]
    required = {f.name for f in dataclasses.fields(EVENT_TYPES[kind])
                if f.default is dataclasses.MISSING}
    assert required <= set(data) <= {"type", "site", "at", "id", "revision", *EVENT_FIELDS[kind]}
    assert Event.from_json(data) == event


def test_optional_fields_appear_only_when_set() -> None:
    storm = SAMPLE_BODIES["storm_qualified"]
    assert "informational" not in storm.to_json() and storm.to_json()["clock_id"] == "storm-e1"
    recorded = SAMPLE_BODIES["inspection_recorded"].to_json()
    assert "notes" not in recorded and recorded["closes"] == ["storm-e1"]


def test_the_event_table_names_every_field_of_every_type() -> None:
    """The vocabulary table of the design document (monitor/README.md, "Events")."""
    readme = (ROOT / "monitor" / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Events\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 3 and cells[1].startswith("`") and cells[1].strip("`") in EVENT_TYPES:
            rows[cells[1].strip("`")] = cells[2]
    assert set(rows) == set(EVENT_TYPES)
    for kind, fields in EVENT_FIELDS.items():
        named = set(re.findall(r"`(\w+)`", rows[kind]))
        assert set(fields) <= named, (kind, set(fields) - named)

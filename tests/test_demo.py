"""``stormwatch demo`` end to end: embedded broker, real daemon, simulated site."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from monitor.demo import run_demo

pytestmark = pytest.mark.integration


def test_demo_tells_the_whole_story(tmp_path: Path) -> None:
    out = io.StringIO()
    assert run_demo(out, speed=3600, state_dir=tmp_path) == 0
    text = out.getvalue()
    for expected in ("storm_started", "storm_qualified          0.50 in: inspect by",
                     "turbidity_contrast       outfall-1 exceeded",
                     "trap_cleanout_required", "inspection_due_soon",
                     "inspection_recorded      by J. Rivera", "storm clock met"):
        assert expected in text, text
    assert "OVERDUE" not in text
    assert (tmp_path / "stormwatch.db").exists()

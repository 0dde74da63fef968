"""``stormwatch status`` as text says what ``--json`` says, read off the engine's answer."""

from __future__ import annotations

from typing import Any

from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE, iso
from monitor.engine import site_now
from monitor.views.status import format_status

from ..support.util import SITE, counter_series, run, ts


def _status(site: dict[str, Any], now_ms: int) -> dict[str, Any]:
    return {"generated_at": iso(now_ms), "sites": {SITE: {**site, "recorded_at": iso(now_ms)}},
            "journal": {"age_s": 1.0}, "ingest": {"accepted": 1, "rejected": {},
                                                 "journal_seq": 1, "applied_seq": 1},
            "daemon": {"age_s": 1.0, "stale": False, "state_written_at": iso(now_ms),
                       "wall_clock_step_s": None},
            "broker": {"state": "connected", "since": None}}


def test_a_clock_seconds_past_due_is_overdue_in_the_text_as_in_the_json() -> None:
    # Qualified at 10:50 (tip 50): due 10:50 the next day. Ten seconds after, hours_left
    # rounds to -0.0 h: the text must not say "0.0 h left" while --json says overdue.
    readings = counter_series(ts("10:00"), 120, {m: 1 for m in range(1, 61)})
    due = ts("10:50") + 24 * MS_PER_HOUR
    eng, _ = run(readings, due + 10_000)
    shown = site_now(eng, SITE, due + 10_000)
    (storm,) = [c for c in shown.open_clocks if c.clock == "storm"]
    assert (storm.hours_left, storm.overdue) == (-0.0, True)
    text = format_status(eng.config, _status(shown.to_json(), due + 10_000))
    line = next(ln for ln in text.splitlines() if ln.startswith("  clock storm"))
    assert line.endswith("due 2026-05-02 06:50 EDT, OVERDUE by 0 s"), line
    # An hour before due: hours left.
    early = site_now(eng, SITE, due - 60 * MS_PER_MINUTE)
    text = format_status(eng.config, _status(early.to_json(), due - 60 * MS_PER_MINUTE))
    assert "due 2026-05-02 06:50 EDT, 1.0 h left" in text


def test_a_node_deleting_on_puback_is_named_in_the_text() -> None:
    # status --json carries each sensor's node mode (from its newest status); the text
    # must say when a node no longer waits for the daemon's confirmation.
    readings = counter_series(ts("10:00"), 30, {})
    eng, _ = run(readings, ts("10:30"))
    shown = site_now(eng, SITE, ts("10:30")).to_json()
    sensor = "rg1"
    lines: dict[str | None, str] = {}
    for mode in (None, "journaled", "puback"):
        shown["sensors"][sensor]["confirm"] = mode
        text = format_status(eng.config, _status(shown, ts("10:30")))
        lines[mode] = next(ln for ln in text.splitlines()
                           if ln.startswith(f"  sensor {sensor}:"))
    assert lines["puback"].endswith(", NOT CONFIRMED: its node deletes readings on PUBACK")
    assert "NOT CONFIRMED" not in lines[None] + lines["journaled"]

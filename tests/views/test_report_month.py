"""A month of a site in the compliance report, checked by value.

May 2026 at a Condition B site: two storms (0.70 in and 0.61 in), the first
inspected on time, the second by an inspection entered three days after its
own time; a routine clock closed four days late (one missed week) and one
still overdue at the end (another); a corrective action asked for on May 3,
due May 6, resolved on May 20. The readings and inspections go through the
real engine host into a real SQLite store, ticked to June 1; the report is
the real command.
"""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest

from monitor.config.file import load_config
from monitor.contract.inputs import CorrectiveAction, Finding, Inspection, Reading
from monitor.contract.times import MS_PER_MINUTE, parse_iso
from monitor.host.engine import EngineHost
from monitor.host.rows import journal_in
from monitor.store.opening import open_store

from ..support.commandkit import stormwatch
from ..support.daemonkit import SITE, write_config
from ..support.reportkit import ACTIVE, H, gauge_readings, table_cells


def _site(tmp_path: Path, items: list[Reading | Inspection], now_ms: int) -> Path:
    path = write_config(tmp_path, 1, name=f"Branch Meadows\n{ACTIVE}")
    config = load_config(path, env={})
    items.sort(key=lambda it: it.ts_ms)
    with open_store(config) as store:
        host = EngineHost.restore(config, store, clock=lambda: now_ms / 1000)
        store.journal.commit([journal_in(it, topic=None, received_ms=None) for it in items])
        host.catch_up()
        host.tick()
    return path




@pytest.fixture
def month(tmp_path: Path) -> str:
    may3, may13 = parse_iso("2026-05-03T14:00:00Z"), parse_iso("2026-05-13T14:00:00Z")
    items: list[Reading | Inspection] = list(gauge_readings(
        parse_iso("2026-05-01T04:00:00Z"), parse_iso("2026-06-01T04:00:00Z"),
        [(may3, 70), (may13, 61)]))
    items += [
        Inspection(site=SITE, inspector="J. Rivera", ts_ms=may3 + 6 * H, kind="storm",
                   credentials=("CPESC 12345",), entered_ms=may3 + 7 * H,
                   findings=(Finding("silt-fence-north", "undermined at station 2+40"),),
                   corrective_actions=(CorrectiveAction(
                       "ca-1", "re-trench silt fence north", parse_iso("2026-05-07T04:00:00Z")),)),
        # Inspected on May 14, entered on May 17: backdated.
        Inspection(site=SITE, inspector="A. Lee", ts_ms=parse_iso("2026-05-14T12:00:00Z"),
                   kind="storm", credentials=("NY PE 098765",),
                   entered_ms=parse_iso("2026-05-17T12:00:00Z")),
        Inspection(site=SITE, inspector="J. Rivera", ts_ms=parse_iso("2026-05-20T14:00:00Z"),
                   credentials=("CPESC 12345",), resolves=("ca-1",),
                   entered_ms=parse_iso("2026-05-20T15:00:00Z")),
    ]
    cfg = _site(tmp_path, items, parse_iso("2026-06-01T04:00:00Z"))
    out = tmp_path / "may.html"
    proc = stormwatch(cfg, ("report", "--site", SITE, "--from", "2026-05-01", "--to",
                            "2026-05-31"), out=out)
    assert proc.returncode == 0, proc.stderr
    return out.read_text(encoding="utf-8")


def test_the_summary_counts_the_month(month: str) -> None:
    summary = dict((k, v) for k, v in table_cells(month, "Summary"))
    assert summary["Storms"] == "2 (2 qualified, ≥ 0.5 in)"
    assert summary["Storm inspections"] == "2 met, 0 late, 0 open (0 overdue)"
    assert summary["Routine inspections"] == "2 met, 1 late, 1 open (1 overdue)"
    assert summary["Weeks without a required inspection (§ 134-12D)"] == "2 (2 clock(s))"
    assert summary["Backdated inspections"] == "1"
    assert summary["Corrective actions"] == "1 opened, 1 resolved, 0 open at the end"


def test_the_tables_show_totals_times_credentials_and_actions(month: str) -> None:
    storms = table_cells(month, "Storms")
    assert [row[2] for row in storms] == ["0.70 in", "0.61 in"]
    assert [row[-1] for row in storms] == ["met", "met"]
    inspections = table_cells(month, "Inspections")
    assert [row[2] for row in inspections] == [
        "J. Rivera (CPESC 12345)", "A. Lee (NY PE 098765)", "J. Rivera (CPESC 12345)"]
    # Both times of the backdated one; the first names its finding and action.
    assert inspections[1][0] == "2026-05-14 08:00 EDT"
    assert inspections[1][1] == "2026-05-17 08:00 EDT BACKDATED"
    assert "silt-fence-north: undermined at station 2+40" in inspections[0][4]
    assert "asks ca-1: re-trench silt fence north" in inspections[0][4]
    assert "resolves ca-1" in inspections[2][4]
    (action,) = table_cells(month, "Corrective actions")
    assert action[0] == "ca-1" and action[3] == "2026-05-07 00:00 EDT"
    assert action[4] == "2026-05-20 10:00 EDT" and action[5] == "resolved late"
    (clock,) = table_cells(month, "Outstanding at the end of the period")
    # The clock by its local start (14:00 UTC is 10:00 EDT on May 20).
    assert clock[0] == "Routine inspection (every 7 calendar days): the week of May 20"
    assert clock[3].startswith("overdue by ")


def test_an_open_storm_shows_its_running_total(tmp_path: Path) -> None:
    """Qualified at 0.50 in and still raining at 0.61 in: the table shows 0.61 in."""
    start = parse_iso("2026-05-03T14:00:00Z")
    items: list[Reading | Inspection] = list(
        gauge_readings(start - 4 * H, start + 61 * MS_PER_MINUTE, [(start, 61)]))
    cfg = _site(tmp_path, items, start + 62 * MS_PER_MINUTE)
    out = tmp_path / "r.html"
    proc = stormwatch(cfg, ("report", "--site", SITE, "--from", "2026-05-03", "--to",
                            "2026-05-03"), out=out)
    assert proc.returncode == 0, proc.stderr
    (storm,) = table_cells(out.read_text(encoding="utf-8"), "Storms")
    assert storm[2] == "0.61 in (running)"


def test_every_time_and_clock_id_is_local_with_its_zone(month: str) -> None:
    """Storms, inspections, clocks closed and open: no UTC instant left in the text."""
    text = unescape(re.sub(r"<[^>]+>", " ", month))
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d|\d{8}T\d{6}Z", text)
    # The first inspection closed the routine clock begun at active_since (May 1, local
    # midnight) and the clock of the storm begun May 3 14:00 UTC: both named by their
    # local date.
    (first, *_) = table_cells(month, "Inspections")
    assert first[-1] == "week of May 1 (met), storm of May 3 (met)"

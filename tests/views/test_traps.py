"""What status, the report and replay show of a trap (monitor/README.md, "Sediment traps"):
a faulty trap never as a plain level, the fault and the repeat on the last valid fill.
The rules' side is in ``tests/engine/test_traps.py``.
"""

from __future__ import annotations

from pathlib import Path

from monitor.config.file import parse_config
from monitor.contract.events import Event
from monitor.host.engine import EngineHost
from monitor.host.rows import journal_in
from monitor.rules.traps.traps import TrapFold
from monitor.store.opening import open_store
from monitor.views.report.tables import trap_section
from monitor.views.status import build_status, format_status

from ..support.daemonkit import ROOT, cli
from ..support.trapkit import BOX5, MOUNTED, SITE, at, distance, run


def test_status_text_shows_a_faulty_trap_never_a_plain_level(tmp_path: Path) -> None:
    config = parse_config({"state_dir": str(tmp_path), "sites": [{
        "id": SITE, "timezone": "UTC", "condition": "none",
        "sensors": [{"id": "box-depth", "kind": "sediment", "sensor_height_in": 60}],
        "traps": [BOX5.model_dump(exclude_none=True)]}]}, env={})
    # Five readings of 12 in (0.25), then one past the bottom at 13:00.
    readings = [distance(10 * i, 48.0) for i in range(5)] + [distance(60, 61.0)]
    with open_store(config) as store:
        host = EngineHost.restore(config, store)
        store.journal.commit([journal_in(r, topic=None, received_ms=r.ts_ms)
                              for r in readings])
        host.catch_up()
        host.record_status()
        status = build_status(config, store, at(70))
    trap = status["sites"][SITE]["traps"]["box"]
    assert (trap["state"], trap["level"], trap["fill_fraction"]) == ("fault", "ok", 0.25)
    assert ("  trap box: SENSOR FAULT (beyond_bottom) since 2026-05-01 13:00 UTC; last valid "
            "fill 25% of design volume (ok): check the trap by eye") in \
        format_status(config, status).splitlines()


def test_the_report_table_shows_the_fault_and_the_repeat_on_the_last_valid_fill() -> None:
    readings = [distance(10 * i, 31.2) for i in range(5)]  # 28.8 in: 0.6
    readings += [distance(60 * h, 61.5) for h in range(1, 26)]
    box = BOX5.model_copy(update={"id": "box"})
    facts = run(TrapFold(SITE, box, MOUNTED), readings)
    html = trap_section([Event(f) for f in facts], lambda v: str(v))
    assert ("<td>box</td><td>sensor faulty</td><td>sensor box-depth faulty (beyond_bottom: "
            "-1.5 in): fill not measured</td>") in html
    assert ("<td>clean-out required (§ 134-9A(1))</td><td>60% (last valid; sensor faulty: "
            "beyond_bottom)</td>") in html


def test_the_replay_table_counts_a_sensor_fault_among_sensor_health(tmp_path: Path) -> None:
    """A trap sensor past the trap bottom is a finding of sensor health, not "no findings"."""
    rows = ["ts,site,sensor,depth_in"]
    rows += [f"2026-05-01T14:{m:02d}:00Z,branch-meadows,trap1-depth,10" for m in range(0, 25, 5)]
    rows.append("2026-05-01T14:25:00Z,branch-meadows,trap1-depth,-3")
    csv_path = tmp_path / "fault.csv"
    csv_path.write_text("\n".join(rows) + "\n")
    done = cli("replay", "--config", str(ROOT / "config" / "example.yaml"), "--input",
               str(csv_path), "--format", "table")
    assert done.returncode == 0, done.stderr
    health = [line for line in done.stdout.splitlines() if line.startswith("Sensor health:")]
    assert "sensor_fault 1" in health[0], health

"""The report marks a storm revealed after a silence and shows an on-tip gauge's health as
unknown (monitor/README.md, "The rules").
"""

from __future__ import annotations

from pathlib import Path

from monitor.host.engine import EngineHost
from monitor.host.rows import journal_in
from monitor.store.opening import open_store
from monitor.views.report.build import build_report

from ..support.reveals import SITE, T0, H, config, silent_gauge


def test_the_report_marks_the_storm_and_shows_an_on_tip_gauge_unknown(tmp_path: Path) -> None:
    cfg = config(str(tmp_path / "state"))
    readings = silent_gauge()
    with open_store(cfg) as store:
        # The report is made at 19:00, a minute after rg1's last reading.
        host = EngineHost.restore(cfg, store, clock=lambda: (T0 + 19 * H) / 1000)
        store.journal.commit([journal_in(r, topic=None, received_ms=None) for r in readings])
        host.catch_up()
        host.tick()
        html = build_report(cfg, store, SITE, T0 - H, T0 + 24 * H, T0 + 19 * H)
    assert ("Fri May 1, 2026" not in html)  # the report's own time format is used
    assert ("2026-05-01 19:00 EDT (rain revealed after a silence: may have qualified as "
            "early as 2026-05-01 09:00 EDT; inspection may have been due as early as "
            "2026-05-02 09:00 EDT)") in html
    assert ("<tr><td>rg2</td><td>rain</td><td>on_tip</td><td>unknown (reporting: on_tip "
            "without heartbeat_minutes: a dry gauge and a dead one look alike)</td>") in html
    assert "<tr><td>rg1</td><td>rain</td><td>interval</td><td>ok</td>" in html

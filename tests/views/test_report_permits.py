"""The report's duties table per permit (config/README.md, "Permits").

May 2026 of ``reportkit.plotted_month`` under Chapter 134 and EPA's biweekly option:
storms of 0.70 in on May 3 and 0.61 in on May 13 qualify under both permits (0.50 in
and 0.25 in); the inspection of May 3 16:00 EDT closes both permits' clocks of the
first, nothing closes the second's.
"""

from __future__ import annotations

from pathlib import Path

from monitor.config.file import load_config
from monitor.store.opening import open_store
from monitor.views.report.build import build_report

from ..support.daemonkit import SITE
from ..support.reportkit import FROM, TO, month_site, plotted_month, table_cells

PERMITS = ("    permits:\n      - village-branch-134\n"
           "      - {profile: epa-cgp-2022, frequency: biweekly_storm}\n")


def report(tmp_path: Path, more: str) -> str:
    config = load_config(month_site(tmp_path, more, plotted_month()), env={})
    with open_store(config) as store:
        return build_report(config, store, SITE, FROM, TO, TO)


def test_each_permit_has_its_duties_with_their_sources_and_outcomes(tmp_path: Path) -> None:
    html = report(tmp_path, PERMITS)
    section = html.split("<h2>Duties by permit", 1)[1].split("<h2>", 1)[0]
    village, epa = section.split("<h3>")[1:]
    assert village.startswith("Village of the Branch, Chapter 134")
    assert epa.startswith("EPA 2022 Construction General Permit (epa-cgp-2022)")
    rows = table_cells("<h2>x" + epa, "x")
    by_rule = {r[0]: r for r in rows}
    assert by_rule["storm-biweekly"][1:3] == [
        "CGP 2022 Part 4.2", "storm: 0.25 in within 24 h (event_24h) measured by the site's "
                             "gauges"]
    assert by_rule["storm-biweekly"][4:] == ["yes", "2 storm(s) qualified, 1 met, 0 late"]
    assert by_rule["corrective-action"][4] == "to verify"
    # No snow sensor, no dewatering probe: said so, never "0 met".
    assert by_rule["snow-biweekly"][5] == "snowmelt trigger not monitored: no snow sensor"
    assert by_rule["routine-biweekly"][2].startswith("routine: every 14 calendar days")
    village_rows = {r[0]: r for r in table_cells("<h2>x" + village, "x")}
    assert village_rows["storm"][5] == "2 storm(s) qualified, 1 met, 0 late"


def test_a_site_naming_no_permits_has_no_such_section(tmp_path: Path) -> None:
    assert "Duties by permit" not in report(tmp_path, "")

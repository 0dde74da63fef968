"""The report lists each corrective action past a permit's deadline, with its source.

The month of ``reportkit``: an inspection on May 3 2026 at 16:00 EDT asks for two
corrective actions, never resolved. Under EPA's permit each is due 7 calendar
days from discovery, at the end of May 10 (23:59:59.999 EDT; CGP 2022 Part 5.2),
and is still not done at the end of the month. A site under Chapter 134 alone
has no such deadline and no such section.
"""

from __future__ import annotations

from pathlib import Path

from monitor.config.file import load_config
from monitor.store.opening import open_store
from monitor.views.report.actionchain import PERMIT_HEADING
from monitor.views.report.build import build_report

from ..support.daemonkit import SITE
from ..support.reportkit import FROM, TO, month_site, table_cells

EPA = "    permits: [village-branch-134, epa-cgp-2022]\n"


def _report(path: Path) -> str:
    config = load_config(path, env={})
    with open_store(config) as store:
        return build_report(config, store, SITE, FROM, TO, TO)


def test_each_action_past_its_permit_deadline_is_listed_with_its_source(tmp_path: Path) -> None:
    assert table_cells(_report(month_site(tmp_path, EPA)), PERMIT_HEADING) == [
        ["ca-1: re-trench silt fence north", "2026-05-03 16:00 EDT, J. Rivera",
         "2026-05-10 23:59 EDT", "epa-cgp-2022, CGP 2022 Part 5.2", "not yet"],
        ["ca-2: seed the stockpile", "2026-05-03 16:00 EDT, J. Rivera",
         "2026-05-10 23:59 EDT", "epa-cgp-2022, CGP 2022 Part 5.2", "not yet"]]


def test_a_site_under_chapter_134_alone_has_no_such_section(tmp_path: Path) -> None:
    assert PERMIT_HEADING not in _report(month_site(tmp_path))

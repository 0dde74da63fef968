"""The report's turbidity table shows absolute findings and suspect probes
(monitor/README.md, "Turbidity"). The rules' side is in
``tests/engine/test_turbidity.py``.
"""

from __future__ import annotations

from monitor.contract.events import Event
from monitor.views.report.tables import turbidity_section

from ..support.turbiditykit import SUSPECT, UP_400, every_10, fold, minutely, of_type, run


def test_the_report_table_shows_absolute_findings_and_suspect_probes() -> None:
    # Once an absolute-basis row (no upstream NTU) crashed the report.
    facts = run(fold(upstream=UP_400), minutely(0, 15, 400.0, 300.0), now_minutes=16)
    suspect = of_type(run(fold(SUSPECT), every_10(480, 30.0, 10.0), now_minutes=481),
                      "probes_suspect")
    html = turbidity_section([Event(f) for f in facts + suspect], lambda v: str(v))
    assert ("<td>outfall-1</td><td><span class=\"exceeded\">exceeded</span></td>"
            "<td>absolute</td>") in html
    assert "<td>—</td><td>300</td><td>—</td><td>250</td>" in html
    assert ("<span class=\"probes suspect\">probes suspect</span></td><td>upstream above "
            "downstream for 6 h</td>") in html
    assert "<td>30</td><td>10</td><td>-20</td><td>10</td>" in html

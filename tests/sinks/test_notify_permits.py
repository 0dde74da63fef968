"""An alert of a permit's clock says the rule beside the deadline (config/README.md,
"Permits"): the permit, its section and its words; Chapter 134's alerts are as before."""

from __future__ import annotations

from typing import Any

from monitor.config.file import parse_config
from monitor.sinks.notify.messages import Alert, render

from ..support.notifykit import SITE_DOC, T0, H, notice, storm
from ..support.util import changed

PERMITS = ["village-branch-134", {"profile": "epa-cgp-2022", "frequency": "biweekly_storm"},
           {"profile": "tx-txr150000", "frequency": "biweekly_storm"}]


def permit_alert(event: Any, now: int = T0 + 1 * H) -> Alert:
    config = parse_config({"sites": [{**SITE_DOC, "permits": PERMITS}]}, env={})
    return Alert(f"{event.id}:{event.revision}", event, now, config.sites[0])


def test_an_epa_storm_alert_names_its_rule_and_quotes_it() -> None:
    event = changed(storm(permit="epa-cgp-2022", section="CGP 2022 Part 4.2"),
                    total_in=0.3, max_24h_in=0.3, threshold_in=0.25,
                    clock_id="epa-cgp-2022/storm-e1")
    m = render(permit_alert(event))
    assert "(EPA CGP 2022 Part 4.2)" in m.title
    assert "within 24 hours of a 0.25 in storm, EPA CGP 2022 Part 4.2" in m.text
    assert "0.25 inches or more of rain within a 24-hour period" in m.text
    assert "§ 134-9A(2)" not in m.text


def test_an_unverified_rule_says_to_verify_it() -> None:
    event = notice("inspection_overdue", "o", T0, due=T0, permit="tx-txr150000",
                   section="TXR150000 (inspections; part not read)",
                   clock_id="tx-txr150000/storm-e1")
    m = render(permit_alert(event, now=T0 + 4 * H))
    assert "Texas TXR150000" in m.title
    assert "verify against your permit" in m.text
    assert "134-12D" not in m.text  # the village's penalty is not Texas'


def test_a_chapter_134_alert_is_unchanged_by_permits() -> None:
    plain = render(permit_alert(storm()))
    named = render(permit_alert(storm(permit="village-branch-134", section="§ 134-9A(2)")))
    assert plain.title == named.title and "§ 134-9A(2)" in named.text

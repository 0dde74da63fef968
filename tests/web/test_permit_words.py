"""The field app says which rule each deadline comes from (config/README.md, "Permits"):
at a site under Chapter 134 and EPA's biweekly option, a 0.60 in storm shows two
inspections owed, the EPA one named so and with its section beside the deadline; the
form tells routine maintenance from a corrective action, with each one's deadline."""

from __future__ import annotations

import re
from pathlib import Path

from monitor.contract.events import InspectionRecorded
from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_MINUTE, parse_iso
from monitor.store.opening import open_store

from ..support.webkit import QP, SITE, client_for, recorded_web_site, sign_in

NOW_MS = parse_iso("2026-12-03T16:30:00Z")
PERMITS = ("    permits:\n      - village-branch-134\n"
           "      - {profile: epa-cgp-2022, frequency: biweekly_storm}\n")


def test_the_site_page_names_each_permits_inspection_and_its_section(tmp_path: Path) -> None:
    start = NOW_MS - 6 * 60 * MS_PER_MINUTE
    storm = [Reading(SITE, "rg1", "rain", start + m * MS_PER_MINUTE, tips_total=min(m, 60))
             for m in range(120)]
    _, config = recorded_web_site(
        tmp_path, lambda text: text.replace("    condition: B\n", "    condition: B\n" + PERMITS,
                                            1), storm, now_ms=NOW_MS)
    client = client_for(config)
    sign_in(client, tmp_path / "state", QP)
    page = client.get(f"/sites/{SITE}").text
    text = " ".join(re.sub(r"<[^>]+>", " ", page).split())
    assert "Storm of Dec 3 : storm inspection due Fri Dec 4 06:20 EST" in text
    assert "Storm of Dec 3 (EPA) : storm inspection due Fri Dec 4 05:55 EST" in text
    assert ("EPA CGP 2022 Part 4.2: \u201cwithin 24 hours of the occurrence of ... a storm "
            "event that produces 0.25 inches or more of rain") in text
    assert "14 days from Dec 3 (EPA) : routine inspection due Thu Dec 17 23:59 EST" in text
    assert "§ 134-9A(2): \u201c" in text


def test_the_form_records_maintenance_with_its_deadline_words(tmp_path: Path) -> None:
    """Under EPA's permit the form asks whether an action is a corrective action (7
    calendar days, Part 5.2) or routine maintenance (the close of the next business day,
    Part 2.1.4.b), and records maintenance as such."""
    _, config = recorded_web_site(
        tmp_path, lambda text: text.replace("    condition: B\n", "    condition: B\n" + PERMITS,
                                            1), [], now_ms=NOW_MS)
    client = client_for(config)
    csrf = sign_in(client, tmp_path / "state", QP)
    html = client.get(f"/sites/{SITE}/inspect").text
    assert ("Routine maintenance: the close of the next business day (EPA CGP 2022 Part "
            "2.1.4.b)") in html
    assert "Corrective action: 7 calendar days (EPA CGP 2022 Part 5.2)" in html
    key = html.split('name="idempotency_key" value="')[1].split('"')[0]
    form = {"csrf": csrf, "idempotency_key": key, "inspector": QP, "kind": "routine",
            "ca_text": ["clean the inlet filter", "replace the silt fence"],
            "ca_due": ["", ""], "ca_kind": ["maintenance", "corrective"],
            "certified": "on"}
    got = client.post(f"/sites/{SITE}/inspect", data=form)
    assert got.status_code == 201, got.text
    with open_store(config, readonly=True) as store:
        (rec,) = [e.body for e in store.events.current(SITE)
                  if isinstance(e.body, InspectionRecorded)]
    assert [(a["text"], a.get("kind")) for a in rec.corrective_actions] == [
        ("clean the inlet filter", "maintenance"), ("replace the silt fence", None)]

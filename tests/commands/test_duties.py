"""``stormwatch duties``: each duty of a site's permits with its source, trigger, deadline
rule and state now (config/README.md, "Permits"), through the command line's ``main``."""

from __future__ import annotations

import json
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from monitor.cli import main
from monitor.config.file import load_config
from monitor.store.opening import open_store

CONFIG = """\
state_dir: {state}
notify: {{targets: [{{url: "console://"}}]}}
sites:
  - id: mill-lot
    timezone: America/New_York
    condition: B
    sensors:
      - {{id: rg1, kind: rain, in_per_tip: 0.01}}
    permits:
{permits}
    business_days: {{country: US, subdiv: NC}}
"""
TWO = """\
      - village-branch-134
      - {profile: epa-cgp-2022, frequency: biweekly_storm}
"""
COUNTY = """\
id: county-x
title: County X grading ordinance
rules:
  - id: before-storm
    section: "County X Code sec. 12-4"
    quote: "inspect before any storm forecast at 0.5 in or more"
    source: "https://example.org/county-x/12-4"
    read_at: "the county's web page"
    verified: false
    storm: {source: forecast, probability_min: 50, threshold_in: 0.5}
"""


def write(tmp_path: Path, permits: str = TWO) -> Path:
    path = tmp_path / "site.yaml"
    path.write_text(CONFIG.format(state=tmp_path / "state", permits=permits))
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def duties_json(capsys: pytest.CaptureFixture[str], cfg: Path) -> dict[str, Any]:
    code, out, err = run(capsys, "duties", "--config", str(cfg), "--site", "mill-lot", "--json")
    assert code == 0, err
    shown: dict[str, Any] = json.loads(out)
    return shown


def test_a_site_under_the_village_and_epa_lists_both_permits_duties(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shown = duties_json(capsys, write(tmp_path))
    assert shown["site"] == "mill-lot"
    assert [p["permit"] for p in shown["permits"]] == ["village-branch-134", "epa-cgp-2022"]
    village, epa = shown["permits"]
    assert [(d["duty"], d["section"]) for d in village["duties"]] == [
        ("routine", "§ 134-9A(2)"), ("storm", "§ 134-9A(2)")]
    storm = next(d for d in epa["duties"] if d["duty"] == "storm")
    assert storm["section"] == "CGP 2022 Part 4.2" and storm["verified"] is True
    assert storm["trigger"] == ("storm: 0.25 in within 24 h (event_24h) measured by the "
                                "site's gauges")
    assert storm["deadline"] == "24 h after the storm qualifies"
    # The daemon never ran: no database, so no state, never "no open clock".
    assert storm["state"] == {"status": "no state yet"}
    routine = next(d for d in epa["duties"] if d["duty"] == "routine")
    assert routine["trigger"] == ("routine: every 14 calendar days (due at the end of the "
                                  "local day)")
    maintenance = next(d for d in epa["duties"] if d["duty"] == "maintenance")
    assert maintenance["deadline"] == ("the close of the next business day from discovery; "
                                       "business hours 07:00-17:00 (US-NC holidays)")
    action = next(d for d in epa["duties"] if d["duty"] == "corrective_action")
    assert (action["deadline"], action["verified"]) == ("7 calendar days from discovery", False)
    snow = next(d for d in epa["duties"] if d["duty"] == "snow")
    assert snow["state"] == {"status": "not monitored",
                             "reason": "snowmelt trigger not monitored: no snow sensor"}


def test_the_text_names_sources_and_fits_a_phone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "duties", "--config", str(write(tmp_path)), "--site", "mill-lot")
    assert code == 0, err
    assert "epa-cgp-2022 — EPA 2022 Construction General Permit" in out
    assert "  storm (storm-biweekly), CGP 2022 Part 4.2" in out
    # Part 5.2 was read at second hand.
    assert "TO VERIFY against your permit" in " ".join(out.split())
    assert "no state yet" in out
    # Every line fits 64 columns, the headings too (the village's title is 58 long).
    assert max(len(line) for line in out.splitlines()) <= 64


def test_an_inspection_opens_the_primary_permits_routine_clock(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    zone = ZoneInfo("America/New_York")
    # Noon two days ago in New York: the inspection must be recent to be recorded.
    day = datetime.now(zone).date() - timedelta(days=2)
    cfg = write(tmp_path)
    cfg.write_text(cfg.read_text().replace(
        "condition: B\n", f"condition: B\n    active_since: {day - timedelta(days=1)}\n"))
    with open_store(load_config(cfg)):
        pass  # the database the daemon would have created
    at = datetime.combine(day, time(12), zone)
    code, _, err = run(capsys, "inspect", "--config", str(cfg), "--site", "mill-lot",
                       "--inspector", "J. Rivera", "--at", at.isoformat())
    assert code == 0, err
    shown = duties_json(capsys, cfg)
    routine = shown["permits"][0]["duties"][0]
    assert routine["duty"] == "routine"
    (clock,) = routine["state"]["clocks"]
    # Seven calendar days on: due at the end of that local day (§ 134-9A(2)).
    end = datetime.combine(day + timedelta(days=8), time(0), zone) - timedelta(milliseconds=1)
    assert routine["state"]["status"] == "open"
    assert clock["due"] == end.astimezone(UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")
    assert clock["overdue"] is False and 4 * 24 < clock["hours_left"] < 6 * 24
    assert "/" not in clock["clock_id"]  # the primary permit's clocks have plain ids
    assert shown["permits"][0]["duties"][1]["state"] == {"status": "none open", "clocks": []}


def test_a_site_without_a_gauge_says_the_storm_duty_is_not_monitored(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = write(tmp_path)
    cfg.write_text(cfg.read_text().replace(
        "    sensors:\n      - {id: rg1, kind: rain, in_per_tip: 0.01}\n", ""))
    epa = duties_json(capsys, cfg)["permits"][1]
    storm = next(d for d in epa["duties"] if d["duty"] == "storm")
    assert storm["state"] == {"status": "not monitored",
                              "reason": "storm duty not monitored: no rain gauge"}


def test_a_custom_profile_files_rule_is_a_duty(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "permits").mkdir()
    (tmp_path / "permits" / "county-x.yaml").write_text(COUNTY)
    cfg = write(tmp_path, TWO + "      - {profile: custom, id: county-x, "
                               "file: permits/county-x.yaml}\n")
    county = duties_json(capsys, cfg)["permits"][2]
    assert (county["permit"], county["title"]) == ("county-x", "County X grading ordinance")
    (duty,) = county["duties"]
    assert duty["section"] == "County X Code sec. 12-4" and duty["verified"] is False
    assert duty["trigger"] == ("storm: 0.5 in forecast by the NWS with a probability of 50 % "
                               "or more")
    assert duty["source"] == "https://example.org/county-x/12-4 (read at: the county's web page)"
    # No weather section: no forecast is fetched, so the trigger is not watched.
    assert duty["state"] == {"status": "not monitored", "reason": (
        "forecast trigger not monitored: no weather forecast for the site")}


def test_an_unknown_site_is_refused_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "duties", "--config", str(write(tmp_path)), "--site", "nope")
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        "stormwatch duties: --site: unknown site 'nope' (configured: mill-lot)"]


def test_an_open_corrective_action_and_maintenance_have_their_permit_deadlines(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """EPA CGP 2022 Part 5.2: 7 calendar days from discovery; Part 2.1.4.b: the close of
    the next business day. Found 5 days ago: the maintenance is overdue, the corrective
    action not yet."""
    zone = ZoneInfo("America/New_York")
    day = datetime.now(zone).date() - timedelta(days=5)
    cfg = write(tmp_path)
    with open_store(load_config(cfg)):
        pass
    at = datetime.combine(day, time(12), zone)
    code, _, err = run(capsys, "inspect", "--config", str(cfg), "--site", "mill-lot",
                       "--inspector", "J. Rivera", "--at", at.isoformat(),
                       "--corrective-action", "replace the silt fence",
                       "--maintenance", "clean the inlet filter")
    assert code == 0, err
    duties = {d["rule"]: d for d in duties_json(capsys, cfg)["permits"][1]["duties"]}
    (fix,) = duties["corrective-action"]["state"]["actions"]
    end = datetime.combine(day + timedelta(days=8), time(0), zone) - timedelta(milliseconds=1)
    assert (fix["text"], fix["due"]) == ("replace the silt fence", end.astimezone(UTC).isoformat(
        timespec="milliseconds").replace("+00:00", "Z"))
    assert fix["overdue"] is False
    (upkeep,) = duties["maintenance"]["state"]["actions"]
    assert upkeep["text"] == "clean the inlet filter" and upkeep["due"] < fix["due"]
    assert upkeep["overdue"] is True
    code, out, _ = run(capsys, "duties", "--config", str(cfg), "--site", "mill-lot")
    text = " ".join(out.split())
    assert "(replace the silt fence): due" in text and "(clean the inlet filter): due" in text
    assert text.count("OVERDUE") == 1


def test_a_snowmelt_clock_is_the_snow_duties_not_the_storm_duties(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """3.5 in of snow by 06:00 yesterday (UTC): EPA's snowmelt clock (CGP 2022 Part 4.2) is
    open, shown under the snow rule; the storm rule has no clock."""
    from monitor.contract.inputs import Reading
    from monitor.contract.times import parse_iso
    from monitor.host.engine import EngineHost
    from monitor.host.rows import journal_in

    cfg = write(tmp_path)
    cfg.write_text(cfg.read_text().replace(
        "      - {id: rg1, kind: rain, in_per_tip: 0.01}\n",
        "      - {id: rg1, kind: rain, in_per_tip: 0.01}\n      - {id: sn1, kind: snow}\n"))
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    snow = [Reading("mill-lot", "sn1", "snow", parse_iso(
        (now - timedelta(hours=h)).isoformat()), snow_in=inches)
        for h, inches in ((30, 2.0), (26, 1.5))]
    config = load_config(cfg)
    with open_store(config) as store:
        host = EngineHost.restore(config, store, clock=lambda: now.timestamp())
        store.journal.commit([journal_in(r, topic=None, received_ms=None) for r in snow])
        host.catch_up()
        host.tick()
        host.record_status()
    duties = {d["rule"]: d for d in duties_json(capsys, cfg)["permits"][1]["duties"]}
    (clock,) = duties["snow-biweekly"]["state"]["clocks"]
    assert clock["clock_id"].startswith("epa-cgp-2022/snowmelt-sn1-")
    assert duties["storm-biweekly"]["state"] == {"status": "none open", "clocks": []}

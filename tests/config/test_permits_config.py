"""A site's permits in the configuration: custom profile files read beside the file, the
business calendar checked against the holidays package, and what ``check-config`` says
the user must verify or cannot have watched (config/README.md, "Permits")."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.cli import main
from monitor.config.file import load_config
from monitor.rules.permits.duties import permits_of

CONFIG = """\
state_dir: {state}
notify: {{targets: [{{url: "console://"}}]}}
sites:
  - id: mill-lot
    timezone: America/Chicago
    condition: B
    sensors:
      - {{id: rg1, kind: rain, in_per_tip: 0.01}}
{extra}"""
COUNTY = """\
id: county-x
title: County X grading ordinance
rules:
  - id: weekly
    section: "County X Code sec. 12-3"
    quote: "inspect every seven days"
    source: "https://example.org/county-x/12-3"
    verified: true
    routine: {every_days: 7}
  - id: before-storm
    section: "County X Code sec. 12-4"
    quote: "inspect before any storm forecast at 0.5 in or more"
    source: "https://example.org/county-x/12-4"
    verified: true
    storm: {source: forecast, probability_min: 50, threshold_in: 0.5}
"""
CUSTOM = """\
    permits:
      - village-branch-134
      - {profile: epa-cgp-2022, frequency: weekly}
      - {profile: custom, id: county-x, file: permits/county-x.yaml}
"""
#: Where a problem of the custom file is said: the permit's file, and the file named.
AT_FILE = "sites.mill-lot.permits.county-x.file (permits/county-x.yaml)"


def write(tmp_path: Path, extra: str, county: str | None = None) -> Path:
    path = tmp_path / "site.yaml"
    path.write_text(CONFIG.format(state=tmp_path / "state", extra=extra))
    if county is not None:
        (tmp_path / "permits").mkdir(exist_ok=True)
        (tmp_path / "permits" / "county-x.yaml").write_text(county)
    return path


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    code = main(["check-config", *args])
    return code, capsys.readouterr().err.splitlines()


def test_a_custom_profile_file_is_read_beside_the_configuration(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, CUSTOM, COUNTY))
    (site,) = config.sites
    profile = site.permits[2].rule_book
    assert (profile.id, [r.id for r in profile.rules]) == ("county-x", ["weekly", "before-storm"])
    county = permits_of(site)[2]
    assert county.key == "county-x" and not county.primary
    assert county.storm is not None and county.storm.source == "forecast"
    assert (county.storm.threshold_in, county.storm.probability_min) == (0.5, 50)
    assert county.clock_id("storm-1") == "county-x/storm-1"


def test_a_missing_custom_file_is_one_line_at_the_permit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = check(capsys, str(write(tmp_path, CUSTOM)))
    assert code == 2
    assert err == [f"{AT_FILE}: cannot read (No such file or directory)"]


def test_a_bad_rule_in_the_custom_file_names_the_file_and_the_rule(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = COUNTY.replace("threshold_in: 0.5}", "threshold_in: 0}").replace(
        "verified: true\n    routine", "routine")
    code, err = check(capsys, str(write(tmp_path, CUSTOM, bad)))
    assert code == 2
    assert err == [f"{AT_FILE}: rules.0.verified: required field is missing",
                   f"{AT_FILE}: rules.1.storm.threshold_in: must be at least 0.01 in (got 0 in)"]


def test_a_custom_file_with_a_key_twice_is_refused_with_its_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = check(capsys, str(write(tmp_path, CUSTOM, COUNTY + "id: again\n")))
    assert code == 2
    assert err == [f"{AT_FILE}:16:1: invalid YAML: found duplicate key 'id'"]


def test_an_unknown_holiday_country_or_subdivision_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = check(capsys, str(write(tmp_path, "    business_days: {country: XX}\n")))
    assert code == 2
    assert err == ["sites.mill-lot.business_days.country: 'XX' is not a country the holidays "
                   "package knows: use its ISO 3166 code in capitals (US, CA, GB)"]
    code, err = check(capsys, str(write(
        tmp_path, "    business_days: {country: US, subdiv: ZZ}\n")))
    assert code == 2
    assert len(err) == 1
    assert err[0].startswith("sites.mill-lot.business_days.subdiv: 'ZZ' is not a subdivision "
                             "of US the holidays package knows (AK, AL, ")
    code, _ = check(capsys, str(write(tmp_path, "    business_days: {country: US, subdiv: NC}\n")))
    assert code == 0


TEXAS = """\
    permits:
      - {profile: tx-txr150000, frequency: biweekly_storm}
  - id: river-lot
    timezone: America/Chicago
    condition: B
    sensors:
      - {id: rg2, kind: rain, in_per_tip: 0.01}
    permits:
      - {profile: tx-txr150000, frequency: biweekly_storm}
"""


def test_each_unverified_rule_in_use_is_said_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = check(capsys, str(write(tmp_path, TEXAS)))
    assert code == 0
    verify = [line for line in err if line.startswith("verify against your permit: ")]
    # Two sites under the 14-day option: its routine and its storm rule, once each.
    assert verify == [
        'verify against your permit: tx-txr150000 TXR150000 (inspections; part not read) '
        '(routine-biweekly): "once every 14 days and after a rain event of 0.5 inches or '
        'greater (the choice can only change at the beginning of the month)" — read at City '
        'of Odessa and Earthworks summaries',
        'verify against your permit: tx-txr150000 TXR150000 (inspections; part not read) '
        '(storm-biweekly): "within 24 hours of the end of a storm event of 0.5 inches or '
        'greater" — read at City of Odessa and Earthworks summaries']
    assert err == verify  # nothing else to say of this configuration
    # Nothing in the file answers them: --strict does not refuse them.
    assert check(capsys, "--strict", str(write(tmp_path, TEXAS)))[0] == 0


UNWATCHED = """\
    permits:
      - {profile: epa-cgp-2022, frequency: biweekly_storm}
      - ny-gp-0-25-001
"""


def test_duties_the_site_cannot_watch_are_warned(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = write(tmp_path, UNWATCHED)
    cfg.write_text(cfg.read_text().replace(
        "    sensors:\n      - {id: rg1, kind: rain, in_per_tip: 0.01}\n", ""))
    code, err = check(capsys, str(cfg))
    assert code == 0
    warned = [line for line in err if line.startswith("warning: ") and "§ 134-9A" not in line]
    assert warned == [
        "warning: sites.mill-lot.sensors: storm duty not monitored: no rain gauge "
        "(epa-cgp-2022 CGP 2022 Part 4.2: inspect after 0.25 in of rain; add the site's gauge)",
        "warning: sites.mill-lot.sensors: snowmelt trigger not monitored: no snow sensor "
        "(epa-cgp-2022 CGP 2022 Part 4.2; add a sensor of kind snow)",
        "warning: sites.mill-lot.sensors: turbidity benchmark not monitored: no dewatering "
        "sensors (epa-cgp-2022 CGP 2022 Part 3.3.1, 5.2.2; list the dewatering discharge's "
        "turbidity probes as the permit's dewatering: where the site dewaters)",
        "warning: sites.mill-lot.permits.1.disturbed_acres: not set: the rule of two "
        "inspections a week where more than 5 acres are disturbed at once (GP-0-25-001 "
        "Part IV.C) is assumed not to apply; set disturbed_acres"]
    assert check(capsys, "--strict", str(cfg))[0] == 2


def test_a_snow_sensor_and_dewatering_probes_watch_those_duties(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    extra = """\
      - {id: snow1, kind: snow}
      - {id: dw1, kind: turbidity}
    permits:
      - {profile: epa-cgp-2022, frequency: biweekly_storm, dewatering: [dw1]}
      - {profile: ny-gp-0-25-001, disturbed_acres: 3}
"""
    code, err = check(capsys, str(write(tmp_path, extra)))
    assert code == 0
    assert [line for line in err if line.startswith("warning: ")] == []


def test_a_forecast_trigger_without_forecasts_is_warned(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = check(capsys, str(write(tmp_path, CUSTOM, COUNTY)))
    assert code == 0
    assert [line for line in err if "location" in line] == [
        "warning: sites.mill-lot.location: forecast trigger not monitored: no weather forecast "
        "for the site (county-x County X Code sec. 12-4; set the weather section and the "
        "site's location)"]


def test_the_summary_states_each_permits_triggers(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", str(write(tmp_path, CUSTOM, COUNTY))]) == 0
    out = capsys.readouterr().out
    # EPA's weekly option has no storm trigger (Part 4.2).
    assert ("permits village-branch-134 (every 7 days, storms of 0.50 in by event_total); "
            "epa-cgp-2022 (every 7 days); county-x (every 7 days, storms of 0.50 in by "
            "forecast) with a 6 h dry gap") in out
    assert "at each permit's cadence" in out

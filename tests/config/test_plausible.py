"""``check-config``'s warnings about values that validate but are unlikely to be meant,
and numbers said as people write them.

Each of the issue's cases (12.7 in, a 0.2 in tip, 1440 hours, a 48 ft trap, no
notification target) is a warning naming the field, with the likely unit
mistake when the value fits one; ``--strict`` refuses them.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.config.base import say_number, say_quantity
from monitor.config.file import ConfigError, parse_config
from monitor.config.plausible import BOUNDS, warnings

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "config" / "example.yaml"

SITE: dict[str, Any] = {
    "id": "branch-meadows", "timezone": "America/New_York", "condition": "B",
    "sensors": [{"id": "rg1", "kind": "rain", "in_per_tip": 0.01},
                {"id": "trap1-depth", "kind": "sediment"}],
    "traps": [{"id": "trap-1", "sensor": "trap1-depth", "shape": "rectangular",
               "bottom_length_ft": 20, "bottom_width_ft": 10, "design_depth_ft": 4}],
}
DOCUMENT: dict[str, Any] = {"notify": {"targets": [{"url": "console://"}]}, "sites": [SITE]}


def document(**edits: Any) -> dict[str, Any]:
    """The sound document with ``edits`` at dotted paths (``sites.0.rain.threshold_in``)."""
    data = copy.deepcopy(DOCUMENT)
    for path, value in edits.items():
        node: Any = data
        *parents, last = path.split("__")
        for key in parents:
            node = node[int(key)] if key.isdigit() else node.setdefault(key, {})
        node[int(last) if last.isdigit() else last] = value
    return data


def warned(**edits: Any) -> list[str]:
    return warnings(parse_config(document(**edits), env={}))


def test_a_sound_configuration_and_the_example_have_no_warning() -> None:
    assert warned() == []
    assert warnings(parse_config(yaml.safe_load(EXAMPLE.read_text()), env={})) == []


@pytest.mark.parametrize(("edit", "value", "words"), [
    ("sites__0__rain__threshold_in", 12.7,
     ["sites.branch-meadows.rain.threshold_in: 12.7 in is above the 0.5 in of § 134-9A(2)",
      "is it in millimetres? 12.7 mm is 0.5 in"]),
    ("sites__0__sensors__0__in_per_tip", 0.2,
     ["sites.branch-meadows.sensors.rg1.in_per_tip: 0.2 in is outside",
      "is it in millimetres? 0.2 mm is 0.007874 in"]),
    ("sites__0__rain__inspect_within_hours", 1440,
     ["sites.branch-meadows.rain.inspect_within_hours: 1440 hours is later than the 24 hours",
      "is it in minutes? 1440 minutes is 24 hours"]),
    ("sites__0__routine_inspection_days", 14,
     ["sites.branch-meadows.routine_inspection_days: 14 days is less often than the seven days"]),
    ("sites__0__traps__0__design_depth_ft", 48,
     ["sites.branch-meadows.traps.trap-1.design_depth_ft: 48 ft is deeper", "is it in inches? "
                                                                            "48 in is 4 ft"]),
])
def test_each_implausible_value_is_one_warning_at_its_field(edit: str, value: float,
                                                            words: list[str]) -> None:
    (line,) = warned(**{edit: value})
    for word in words:
        assert word in line, (word, line)


def test_a_hint_is_given_only_when_the_other_unit_fits() -> None:
    (line,) = warned(sites__0__rain__threshold_in=0.75)  # not 0.03 in in millimetres
    assert "mm" not in line
    (line,) = warned(sites__0__sensors__0__in_per_tip=0.001)  # a tip of 0.025 mm: too small
    assert "0.001 in is outside" in line and "millimetres" not in line


def test_no_notification_target_is_a_warning() -> None:
    (line,) = warned(notify={})
    assert line.startswith("notify.targets: no notification target")
    # An Apprise configuration file is a target list too.
    assert warned(notify={"config_file": "/etc/stormwatch/apprise.yaml"}) == []


def test_every_bound_names_a_real_field() -> None:
    config = parse_config(document(), env={})
    site = config.sites[0]
    models = {"site": site, "rain": site.rain, "gauge": site.sensors[0], "trap": site.traps[0]}
    for bound in BOUNDS:
        assert hasattr(models[bound.section], bound.field), bound


# --------------------------------------------------------------------------- the command


def check_config(tmp_path: Path, data: dict[str, Any], *flags: str
                 ) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "site.yaml"
    path.write_text(yaml.safe_dump(data))
    return subprocess.run([sys.executable, "-m", "monitor.cli", "check-config", str(path),
                           *flags], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})


def test_check_config_warns_exit_0_and_strict_refuses(tmp_path: Path) -> None:
    data = document(sites__0__rain__threshold_in=12.7, sites__0__traps__0__design_depth_ft=48,
                    notify={})
    proc = check_config(tmp_path, data)
    assert proc.returncode == 0 and proc.stdout.startswith("OK: ")
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith("warning: ") for line in lines), lines
    assert {line.split(":")[1].strip() for line in lines} == {
        "sites.branch-meadows.rain.threshold_in",
        "sites.branch-meadows.traps.trap-1.design_depth_ft",
        "notify.targets"}

    strict = check_config(tmp_path, data, "--strict")
    assert strict.returncode == 2 and strict.stdout == ""
    assert strict.stderr.strip().splitlines() == [line.removeprefix("warning: ")
                                                  for line in lines]
    assert "Traceback" not in strict.stderr
    assert check_config(tmp_path, document(), "--strict").returncode == 0


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(("value", "said"), [
    (0.5, "0.5"), (12.7, "12.7"), (24.0, "24"), (1 / 60, "0.01667"), (0.00001, "0.00001"),
    (0.2 / 25.4, "0.007874"), (65535, "65535"),
])
def test_numbers_are_said_as_people_write_them(value: float, said: str) -> None:
    assert say_number(value) == said


@pytest.mark.parametrize(("value", "field", "said"), [
    (1 / 60, "dry_gap_hours", "1 minute"), (6, "dry_gap_hours", "6 hours"),
    (1, "inspect_within_hours", "1 hour"), (0.5, "stale_after_minutes", "30 seconds"),
    (0.01, "threshold_in", "0.01 in"), (4, "design_depth_ft", "4 ft"), (3, "warn_fraction", "3"),
])
def test_quantities_are_said_in_the_unit_of_their_field(value: float, field: str,
                                                        said: str) -> None:
    assert say_quantity(value, field) == said


@pytest.mark.parametrize(("edit", "value", "line"), [
    ("sites__0__rain__dry_gap_hours", 0.001,
     "sites.branch-meadows.rain.dry_gap_hours: must be at least 1 minute (got 3.6 seconds)"),
    ("sites__0__rain__threshold_in", 0.001,
     "sites.branch-meadows.rain.threshold_in: must be at least 0.01 in (got 0.001 in)"),
    ("sites__0__sensors__0__stale_after_minutes", 0,
     "sites.branch-meadows.sensors.rg1.stale_after_minutes: must be more than 0 minutes (got 0 "
     "minutes)"),
    ("sites__0__traps__0__warn_fraction", 1.5,
     "sites.branch-meadows.traps.trap-1.warn_fraction: must be at most 1 (got 1.5)"),
    ("broker", {"port": 70000}, "broker.port: must be at most 65535 (got 70000)"),
])
def test_bounds_are_said_in_the_fields_unit(edit: str, value: Any, line: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(document(**{edit: value}), env={})
    assert caught.value.lines == [line]
    assert "0.016666" not in str(caught.value) and "greater than" not in str(caught.value)


def test_a_bound_inside_a_check_that_spans_fields_is_said_too() -> None:
    # A trap whose own check also fails: pydantic's context must survive the merge.
    with pytest.raises(ConfigError) as caught:
        parse_config(document(sites__0__traps__0__bottom_width_ft=0,
                              sites__0__traps__0__sensor="rg1"), env={})
    assert "sites.branch-meadows.traps.trap-1.bottom_width_ft: must be more than 0 ft (got 0 ft)" \
        in caught.value.lines


@pytest.mark.parametrize("zone, warned_for", [("EST", True), ("Etc/GMT+5", True), ("MST", True),
                                              ("America/New_York", False), ("UTC", False),
                                              ("America/Phoenix", False), ("EST5EDT", False)])
def test_a_fixed_offset_zone_without_daylight_saving_time_is_warned(zone: str,
                                                                   warned_for: bool) -> None:
    """``EST`` is a valid tz name, but it keeps standard time all summer: a site in New
    York on it would print every local time an hour off from March to November."""
    found = [w for w in warned(sites__0__timezone=zone) if ".timezone:" in w]
    if warned_for:
        assert found == [f"sites.branch-meadows.timezone: {zone!r} is a fixed offset without "
                         "daylight saving time: from spring to autumn every local time "
                         "stormwatch prints would be an hour off for a place that keeps it; "
                         "use the IANA name of the place (e.g. America/New_York)"]
    else:
        assert found == []

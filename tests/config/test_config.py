"""Configuration: the reference example, the rules' defaults, and one clear line per mistake.

Every error line is checked as the exact text ``check-config`` prints, because
the path in it is what tells a user which line of the file to edit.
"""

from __future__ import annotations

import copy
import re
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, ValidationError

from monitor.config import Config, SensorConfig, SiteConfig, TrapConfig
from monitor.config.file import ConfigError, load_config, parse_config

from ..support.configdocs import document, site
from ..support.daemonkit import cli

EXAMPLE = Path(__file__).resolve().parents[2] / "config" / "example.yaml"






def problems(data: dict[str, Any], env: dict[str, str] | None = None) -> list[str]:
    """The lines ``check-config`` would print for ``data``; it must be invalid."""
    with pytest.raises(ConfigError) as info:
        parse_config(copy.deepcopy(data), env={} if env is None else env)
    assert str(info.value) == "\n".join(info.value.lines)
    return info.value.lines


# --------------------------------------------------------------------------- the example


def test_example_validates_with_no_environment_and_no_files() -> None:
    config = load_config(EXAMPLE, env={})
    meadows = config.site("branch-meadows")
    assert meadows is not None and meadows.condition == "B" and meadows.clocks_apply
    assert [s.id for s in meadows.sensors] == ["rg1", "tb-up", "tb-down", "trap1-depth"]
    assert meadows.turbidity_pairs[0].upstream == "tb-up"
    assert meadows.traps[0].shape == "trapezoidal"
    lot = config.site("mill-road-lot")
    assert lot is not None and lot.condition == "none" and not lot.clocks_apply
    assert lot.traps[0].shape == "stage_storage"
    assert config.influx is not None and config.influx.bucket == "stormwater"


def _fields(model: type[BaseModel]) -> set[str]:
    """Every field name of a model and of the models nested in it, as the YAML spells
    it (its alias: ``from`` for ``from_``)."""
    names: set[str] = set()
    for name, info in model.model_fields.items():
        names.add(info.alias or name)
        for arg in [info.annotation, *typing.get_args(info.annotation)]:
            for inner in [arg, *typing.get_args(arg)]:
                if isinstance(inner, type) and issubclass(inner, BaseModel):
                    names |= _fields(inner)
    return names


def test_example_documents_every_option() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    missing = sorted(name for name in _fields(Config)
                     if not re.search(rf"^\s*(#\s*)?(- )?{name}:", text, re.MULTILINE))
    assert missing == []


def test_example_keeps_secrets_out_of_validated_values() -> None:
    # ${VAR} only in comments: check-config runs on the example in CI with no
    # environment, and an unset variable is an error.
    for line in EXAMPLE.read_text(encoding="utf-8").splitlines():
        if "${" in line:
            assert line.lstrip().startswith("#"), line


# --------------------------------------------------------------------------- the rules' defaults


def test_every_section_4_default_is_in_force_when_omitted() -> None:
    config = parse_config(document(), env={})
    s = config.sites[0]
    rain = s.rain
    assert rain.threshold_in == 0.5              # § 134-9A(2): 0.5 inch
    assert rain.mode == "event_total"            # The law's plain reading
    assert rain.dry_gap_hours == 6
    assert rain.clock_start == "qualified"
    assert rain.gauges == "any"
    assert rain.inspect_within_hours == 24       # § 134-9A(2): within 24 hours
    assert rain.remind_before_hours == [6, 1]
    assert rain.overdue_repeat_hours == 4
    assert s.routine_inspection_days == 7        # § 134-9A(2): every seven days
    assert s.lateness_days == 7                  # the MQTT contract's lateness bound
    assert all(sensor.stale_after_minutes == 15 for sensor in s.sensors)
    pair = s.turbidity_pairs[0]
    assert pair.rule == "wa-173-201a"
    assert pair.delta_ntu is None
    assert pair.sustain_minutes == 10
    assert pair.clear_minutes == 30
    assert pair.max_skew_minutes == 10
    assert pair.background_max_age_minutes == 60
    assert pair.absolute_ntu == 250
    trap = s.traps[0]
    assert trap.warn_fraction == 0.4
    assert trap.cleanout_fraction == 0.5         # § 134-9A(1): reduced by 50 %
    assert trap.median_of == 5
    assert trap.cleanout_repeat_hours == 24
    assert all(sensor.counter_bits is None for sensor in s.sensors)
    assert config.broker.topic_prefix == "stormwatch/v1"   # § 3
    assert config.influx is None


# --------------------------------------------------------------------------- ${VAR}


def test_env_interpolation_fills_strings() -> None:
    data = document(broker={"host": "${MQTT_HOST}", "port": "${MQTT_PORT}"},
                    notify={"targets": [{"url": "mailtos://u:${SMTP_PASSWORD}@mail.example.org"}]})
    config = parse_config(data, env={"MQTT_HOST": "mqtt.example.org", "MQTT_PORT": "8883",
                                     "SMTP_PASSWORD": "s3cret"})
    assert config.broker.host == "mqtt.example.org"
    assert config.broker.port == 8883
    assert config.notify.targets[0].url == "mailtos://u:s3cret@mail.example.org"


def test_unset_variable_is_one_error_at_its_path() -> None:
    # Not also "port: not an integer" for the empty placeholder.
    data = document(broker={"port": "${MQTT_PORT}"},
                    notify={"targets": [{"url": "mailtos://u:${SMTP_PASSWORD}@mail.example.org"}]})
    assert problems(data) == [
        "broker.port: environment variable MQTT_PORT is not set",
        "notify.targets.0.url: environment variable SMTP_PASSWORD is not set",
    ]


# --------------------------------------------------------------------------- one line per mistake


def test_unknown_field() -> None:
    data = document(site(rain={"thresold_in": 0.5}))
    assert problems(data) == ["sites.branch-meadows.rain.thresold_in: unknown field; did you "
                              "mean threshold_in?"]


def _edit(path: str, value: Any) -> dict[str, Any]:
    """The example document with the value at dotted ``path`` replaced."""
    data = document()
    *parents, last = path.split(".")
    node: Any = data
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return data


@pytest.mark.parametrize(("path", "value", "line"), [
    ("sites.0.turbidity_pairs.0.upstream", "rg1",
     "sites.branch-meadows.turbidity_pairs.outfall-1.upstream: 'rg1' is a rain sensor, not a "
     "turbidity sensor"),
    ("sites.0.turbidity_pairs.0.downstream", "tb-dwn",
     "sites.branch-meadows.turbidity_pairs.outfall-1.downstream: 'tb-dwn' is not a sensor of "
     "this site "
     "(its turbidity sensors: tb-down, tb-up)"),
    ("sites.0.turbidity_pairs.0.downstream", "tb-up",
     "sites.branch-meadows.turbidity_pairs.outfall-1.downstream: must be a different sensor "
     "from upstream"),
    ("sites.0.traps.0.sensor", "tb-down",
     "sites.branch-meadows.traps.trap-1.sensor: 'tb-down' is a turbidity sensor, not a "
     "sediment sensor"),
    ("sites.0.sensors.0", {"id": "tb-up", "kind": "turbidity"},
     "sites.branch-meadows.sensors.1.id: duplicate id 'tb-up' (also at sensors.0)"),
    ("sites.0.timezone", "Eastern",
     "sites.branch-meadows.timezone: unknown time zone 'Eastern' (use an IANA name such as "
     "America/New_York)"),
    ("sites.0.timezone", "America",   # a directory of the tz database, once a traceback
     "sites.branch-meadows.timezone: unknown time zone 'America' (use an IANA name such as "
     "America/New_York)"),
    ("sites.0.traps.0.bottom_width_ft", 0,
     "sites.branch-meadows.traps.trap-1.bottom_width_ft: must be more than 0 ft (got 0 ft)"),
    ("sites.0.traps.0.design_depth_ft", -4,
     "sites.branch-meadows.traps.trap-1.design_depth_ft: must be more than 0 ft (got -4 ft)"),
    ("sites.0.traps.0.side_slope", None,
     "sites.branch-meadows.traps.trap-1.side_slope: required for shape trapezoidal"),
    ("sites.0.traps.0", {"id": "riser", "sensor": "trap1-depth", "shape": "cylindrical",
                         "design_depth_ft": 3},
     "sites.branch-meadows.traps.riser.diameter_ft: required for shape cylindrical"),
    ("sites.0.traps.0.warn_fraction", 0.5,
     "sites.branch-meadows.traps.trap-1.warn_fraction: must be below cleanout_fraction (0.5)"),
    ("sites.0.traps.0.cleanout_fraction", 0.3,
     "sites.branch-meadows.traps.trap-1.warn_fraction: must be below cleanout_fraction (0.3)"),
    ("sites.0.turbidity_pairs.0.rule", "delta_ntu",
     "sites.branch-meadows.turbidity_pairs.outfall-1.delta_ntu: required when rule is delta_ntu"),
    ("sites.0.turbidity_pairs.0.delta_ntu", 5,
     "sites.branch-meadows.turbidity_pairs.outfall-1.delta_ntu: applies to rule delta_ntu "
     "only, not to wa-173-201a"),
    ("sites.0.id", "Branch Meadows",
     "sites.0.id: 'Branch Meadows' is not a valid id: use 1 to 63 characters of a-z, 0-9, "
     "'-' and '_', starting with a letter or digit"),
    ("sites.0.sensors.1", {"id": "tb-up", "kind": "turbidity", "in_per_tip": 0.01},
     "sites.branch-meadows.sensors.tb-up.in_per_tip: applies to rain sensors only, not to a "
     "turbidity sensor"),
    ("sites.0.sensors.3", {"id": "trap1-depth", "kind": "sediment", "max_ntu": 4000},
     "sites.branch-meadows.sensors.trap1-depth.max_ntu: applies to turbidity sensors only, not "
     "to a sediment sensor"),
    # The sensor-fault, re-arm and suspect-probe fields.
    ("sites.0.sensors.0", {"id": "rg1", "kind": "rain", "max_step_in": 12},
     "sites.branch-meadows.sensors.rg1.max_step_in: applies to sediment sensors only, not to a "
     "rain sensor"),
    ("sites.0.traps.0.max_fill_fraction", 0.9,
     "sites.branch-meadows.traps.trap-1.max_fill_fraction: must be at least 1 (got 0.9)"),
    ("sites.0.traps.0.rearm_hours", -1,
     "sites.branch-meadows.traps.trap-1.rearm_hours: must be at least 0 hours (got -1 hour)"),
    ("sites.0.turbidity_pairs.0.suspect_delta_ntu", 0,
     "sites.branch-meadows.turbidity_pairs.outfall-1.suspect_delta_ntu: must be more than 0 "
     "NTU (got 0 NTU)"),
    ("sites.0.rain", {"mode": "daily"},
     "sites.branch-meadows.rain.mode: Input should be 'event_24h', 'event_total' or 'rolling_24h'"),
    ("sites.0.condition", "D", "sites.branch-meadows.condition: Input should be 'A', 'B', 'C' "
                               "or 'none'"),
    ("sites.0.traps.0.design_depth_ft", None, "sites.branch-meadows.traps.trap-1.design_depth_ft: "
     "Input should be a valid number"),
    ("sites.0.sensors.0", {"id": "rg1"}, "sites.branch-meadows.sensors.rg1.kind: required "
                                         "field is missing"),
    ("sites.0", "branch-meadows", "sites.0: must be a mapping of fields (key: value)"),
    ("broker", {"port": 70000}, "broker.port: must be at most 65535 (got 70000)"),
    ("influx", {"url": "http://127.0.0.1:8086"}, "influx.bucket: required for api v2"),
    ("influx", {"api": "v1"}, "influx.database: required for api v1"),
])
def test_each_mistake_is_one_line_at_the_field_to_edit(path: str, value: Any, line: str) -> None:
    assert problems(_edit(path, value)) == [line]


def test_a_pair_of_an_ntu_and_an_fnu_probe_is_refused(tmp_path: Path) -> None:
    # White light (NTU) and infrared (FNU) read the same water differently, so
    # their difference is no contrast; one unit is fine, and unit is a turbidity field.
    fnu = [{"id": "rg1", "kind": "rain"}, {"id": "tb-up", "kind": "turbidity", "unit": "FNU"},
           {"id": "tb-down", "kind": "turbidity"}, {"id": "trap1-depth", "kind": "sediment"}]
    mixed = document(site(sensors=fnu))
    line = ("sites.branch-meadows.turbidity_pairs.outfall-1: upstream 'tb-up' reads FNU and "
            "downstream 'tb-down' reads NTU: a pair compares like units only (NTU and FNU "
            "disagree on the same water); use two probes of one unit")
    assert problems(mixed) == [line]
    both = copy.deepcopy(fnu)
    both[2]["unit"] = "FNU"
    assert parse_config(document(site(sensors=both)), env={}).sites[0].sensors[2].unit == "FNU"
    assert problems(_edit("sites.0.sensors.0", {"id": "rg1", "kind": "rain", "unit": "FNU"})) == [
        "sites.branch-meadows.sensors.rg1.unit: applies to turbidity sensors only, not to a "
        "rain sensor"]
    # check-config says so and exits 2.
    path = tmp_path / "mixed.yaml"
    path.write_text(yaml.safe_dump(mixed), encoding="utf-8")
    proc = cli("check-config", str(path))
    assert (proc.returncode, proc.stdout + proc.stderr) == (2, line + "\n")


def test_pair_naming_a_sensor_of_another_site() -> None:
    other = {"id": "mill-road-lot",
             "sensors": [{"id": "lot-tb", "kind": "turbidity"}],
             "turbidity_pairs": [{"id": "outfall-2", "upstream": "tb-up", "downstream": "lot-tb"}]}
    assert problems(document(site(), other)) == [
        "sites.mill-road-lot.turbidity_pairs.outfall-2.upstream: 'tb-up' is not a sensor of "
        "this site "
        "(its turbidity sensors: lot-tb)",
    ]


def test_duplicate_site_ids() -> None:
    assert problems(document(site(), site())) == [
        "sites.1.id: duplicate id 'branch-meadows' (also at sites.0)",
    ]


def test_duplicate_pair_and_trap_ids() -> None:
    pairs = [{"id": "outfall-1", "upstream": "tb-up", "downstream": "tb-down"}] * 2
    data = document(site(turbidity_pairs=pairs))
    assert problems(data) == [
        "sites.branch-meadows.turbidity_pairs.1.id: duplicate id 'outfall-1' (also at "
        "turbidity_pairs.0)",
    ]


def test_dimensions_of_another_shape_are_an_error() -> None:
    data = _edit("sites.0.traps.0.shape", "rectangular")
    assert problems(data) == ["sites.branch-meadows.traps.trap-1.side_slope: does not apply to "
                              "shape rectangular"]
    data = _edit("sites.0.traps.0.shape", "cylindrical")
    assert problems(data) == [
        "sites.branch-meadows.traps.trap-1.bottom_length_ft: does not apply to shape cylindrical",
        "sites.branch-meadows.traps.trap-1.bottom_width_ft: does not apply to shape cylindrical",
        "sites.branch-meadows.traps.trap-1.side_slope: does not apply to shape cylindrical",
        "sites.branch-meadows.traps.trap-1.diameter_ft: required for shape cylindrical",
    ]


@pytest.mark.parametrize(("table", "lines"), [
    ([[0, 0], [2, 300], [1.5, 400], [4, 900]],
     ["sites.branch-meadows.traps.pond-1.stage_storage.2: depth 1.5 ft must be greater than "
      "the row before (2)"]),
    ([[0, 0], [1, 300], [2, 300], [4, 900]],
     ["sites.branch-meadows.traps.pond-1.stage_storage.2: volume 300 cf must be greater than "
      "the row before (300)"]),
    ([[1, 100], [4, 900]],
     ["sites.branch-meadows.traps.pond-1.stage_storage.0: the first row must be [0, 0] (the "
      "trap bottom)"]),
    ([[0, 0]], ["sites.branch-meadows.traps.pond-1.stage_storage: needs at least two "
                "[depth_ft, volume_cf] rows"]),
    ([[0, 0], [3, 600]],
     ["sites.branch-meadows.traps.pond-1.design_depth_ft: 4 ft lies beyond the stage_storage table "
      "(last row at 3 ft)"]),
    ([[0, 0], [4, -1]], ["sites.branch-meadows.traps.pond-1.stage_storage.1.1: must be at "
                         "least 0 (got -1)"]),
])
def test_stage_storage_table(table: list[list[float]], lines: list[str]) -> None:
    trap = {"id": "pond-1", "sensor": "trap1-depth", "shape": "stage_storage",
            "stage_storage": table, "design_depth_ft": 4}
    assert problems(document(site(traps=[trap]))) == lines


def test_a_valid_stage_storage_table() -> None:
    trap = {"id": "pond-1", "sensor": "trap1-depth", "shape": "stage_storage",
            "stage_storage": [[0, 0], [1, 850], [2, 1900], [4, 4600]], "design_depth_ft": 3.5}
    config = parse_config(document(site(traps=[trap])), env={})
    assert config.sites[0].traps[0].stage_storage == [(0, 0), (1, 850), (2, 1900), (4, 4600)]


def test_three_mistakes_give_exactly_three_lines() -> None:
    # Two of them in one site: an invalid sensor field must not hide the
    # site's cross-reference check.
    data = document(site(rain={"threshold_in": 0}))
    data["sites"][0]["sensors"][1]["in_per_tip"] = 0.01
    data["sites"][0]["traps"][0]["sensor"] = "rg1"
    assert problems(data) == [
        "sites.branch-meadows.rain.threshold_in: must be at least 0.01 in (got 0 in)",
        "sites.branch-meadows.sensors.tb-up.in_per_tip: applies to rain sensors only, not to a "
        "turbidity sensor",
        "sites.branch-meadows.traps.trap-1.sensor: 'rg1' is a rain sensor, not a sediment sensor",
    ]


def test_an_invalid_sensor_kind_is_reported_once() -> None:
    # The pair naming it is not blamed too.
    data = _edit("sites.0.sensors.1", {"id": "tb-up", "kind": "turbdity"})
    assert problems(data) == [
        "sites.branch-meadows.sensors.tb-up.kind: "
        "Input should be 'rain', 'turbidity', 'sediment' or 'snow'",
    ]


def test_checks_also_apply_to_configs_built_in_code() -> None:
    depth = SensorConfig(id="d", kind="rain")
    riser = TrapConfig(id="t", sensor="d", shape="cylindrical", diameter_ft=2, design_depth_ft=3)
    with pytest.raises(ValidationError) as info:
        SiteConfig(id="a", sensors=[depth], traps=[riser])
    assert [e["loc"] for e in info.value.errors()] == [("traps", 0, "sensor")]
    ok = SiteConfig(id="a")
    with pytest.raises(ValidationError) as info:
        Config(sites=[ok, ok])
    assert [e["loc"] for e in info.value.errors()] == [("sites", 1, "id")]


def test_no_sites() -> None:
    assert problems({"state_dir": "/tmp/x"}) == ["sites: required field is missing"]


def test_not_a_mapping() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(["sites"], env={})
    assert info.value.lines == ["(top): the configuration must be a mapping"]


# --------------------------------------------------------------------------- files


def _load_lines(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    return info.value.lines


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    assert _load_lines(path) == [f"{path}: cannot read (No such file or directory)"]


def test_invalid_yaml_is_one_line_with_its_position(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("sites:\n  - id: a\n    sensors: [rg1,\n", encoding="utf-8")
    (line,) = _load_lines(path)
    assert line.startswith(f"{path}:4:1: invalid YAML: ")
    assert "\n" not in line


def test_duplicate_yaml_key_is_an_error(tmp_path: Path) -> None:
    # PyYAML alone keeps the last one silently: a second threshold_in would win.
    path = tmp_path / "dup.yaml"
    path.write_text("sites:\n  - id: a\n    rain:\n      threshold_in: 0.5\n"
                    "      threshold_in: 2\n", encoding="utf-8")
    assert _load_lines(path) == [f"{path}:5:7: invalid YAML: found duplicate key 'threshold_in'"]


def test_empty_and_non_mapping_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing yet\n", encoding="utf-8")
    assert _load_lines(empty) == [f"{empty}: the file is empty"]
    listing = tmp_path / "list.yaml"
    listing.write_text("- id: a\n", encoding="utf-8")
    assert _load_lines(listing) == [
        f"{listing}: the top level must be a mapping of sections (broker, sites, ...), not a list"]


def test_binary_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"\xff\xfe\x00")
    assert _load_lines(path) == [f"{path}: not UTF-8 text (byte 0)"]


def test_load_config_reports_validation_errors(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("sites:\n  - id: a\n    rain: {thresold_in: 1}\n", encoding="utf-8")
    assert _load_lines(path) == ["sites.a.rain.thresold_in: unknown field; did you mean "
                                 "threshold_in?"]


# --------------------------------------------------------------------------- STORMWATCH_* overrides


def test_environment_overrides_the_file() -> None:
    data = document(state_dir="/srv/a", broker={"host": "file-host", "port": 1883},
                    influx={"url": "http://file:8086", "bucket": "b"}, log_format="text")
    env = {"STORMWATCH_STATE_DIR": "/var/lib/stormwatch",
           "STORMWATCH_BROKER__HOST": "mqtt.example.org",
           "STORMWATCH_BROKER__PORT": "8883",
           "STORMWATCH_INFLUX__URL": "http://influx:8086",
           "STORMWATCH_LOG_FORMAT": "json"}
    config = parse_config(data, env=env)
    assert config.state_dir == "/var/lib/stormwatch"
    assert config.broker.host == "mqtt.example.org"
    assert config.broker.port == 8883
    assert config.influx is not None and config.influx.url == "http://influx:8086"
    assert config.influx.bucket == "b"           # the rest of the section stays
    assert config.log_format == "json"


def test_environment_can_create_a_section() -> None:
    env = {"STORMWATCH_INFLUX__URL": "http://influx:8086", "STORMWATCH_INFLUX__BUCKET": "sw",
           "STORMWATCH_BROKER__TLS__CA_FILE": "/etc/ca.pem"}
    config = parse_config(document(), env=env)
    assert config.influx is not None and config.influx.bucket == "sw"
    assert config.broker.tls is not None and config.broker.tls.ca_file == "/etc/ca.pem"


def test_override_errors_name_the_variable() -> None:
    env = {"STORMWATCH_BROKER__PORT": "mqtt", "STORMWATCH_BROKER__HSOT": "x",
           "STORMWATCH_LOG_FORMAT": "xml", "STORMWATCH_INFLUX__URL": "http://influx:8086"}
    assert problems(document(), env) == [
        "broker.port: Input should be a valid integer, unable to parse string as an integer "
        "(from STORMWATCH_BROKER__PORT)",
        "broker.hsot: unknown field; did you mean host? (from STORMWATCH_BROKER__HSOT)",
        "influx.bucket: required for api v2 (from STORMWATCH_INFLUX__URL)",
        "log_format: Input should be 'text' or 'json' (from STORMWATCH_LOG_FORMAT)",
    ]


def test_lists_and_whole_sections_are_not_overridden() -> None:
    env = {"STORMWATCH_SITES__0__ID": "x", "STORMWATCH_BROKER": "mqtt.example.org"}
    assert problems(document(), env) == [
        "broker: STORMWATCH_BROKER cannot replace a whole section; set one field, "
        "e.g. STORMWATCH_BROKER__<FIELD>",
        "sites.0.id: cannot be set from the environment (STORMWATCH_SITES__0__ID); "
        "set it in the file",
    ]


def test_other_stormwatch_variables_are_not_settings() -> None:
    config = parse_config(document(), env={"STORMWATCH_CONFIG": "/etc/stormwatch.yaml",
                                           "STORMWATCH_DEBUG": "1"})
    assert config.state_dir == "/var/lib/stormwatch"


def test_an_override_replaces_an_unset_reference() -> None:
    data = document(broker={"port": "${MQTT_PORT}"})
    config = parse_config(data, env={"STORMWATCH_BROKER__PORT": "1884"})
    assert config.broker.port == 1884


def test_overrides_come_from_os_environ_by_default(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("state_dir: /srv/file\nsites:\n  - id: a\n", encoding="utf-8")
    monkeypatch.setenv("STORMWATCH_STATE_DIR", "/srv/env")
    assert load_config(path).state_dir == "/srv/env"
    assert load_config(path, env={}).state_dir == "/srv/file"


def test_override_names_are_case_insensitive() -> None:
    config = parse_config(document(), env={"stormwatch_broker__host": "mqtt.example.org"})
    assert config.broker.host == "mqtt.example.org"

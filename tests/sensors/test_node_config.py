"""The node's configuration and ``stormwatch-node check-config`` (sensors/README.md, "Sensor node").

Bad values: one ``path.to.field: message`` line per problem, exit 2, no
traceback; the password is read from its file and never printed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from sensors.config import (
    Ads1115Sensor,
    CsvSensor,
    GpioSensor,
    MaxbotixSensor,
    ModbusSensor,
    NodeConfig,
    Register,
)
from sensors.configfile import ConfigError, load_config, parse_config

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "config" / "node.example.yaml"


def node_cli(*args: str, timeout_s: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sensors.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=timeout_s,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def _good(tmp_path: Path) -> str:
    (tmp_path / "mqtt.pw").write_text("s3cret-Pa55\n")
    (tmp_path / "card.csv").write_text("ts,tips_total\n")
    return f"""\
broker: {{host: gateway.local, port: 8883, client_id: node-branch-meadows-1,
          username: branch-meadows.node-1, password_file: {tmp_path / 'mqtt.pw'}}}
site: branch-meadows
buffer: {{path: {tmp_path / 'buffer.db'}, max_mb: 64}}
sensors:
  - {{id: rg1, kind: rain, driver: gpio, pin: 17, min_tip_interval_s: 1.0, every_s: 60}}
  - {{id: tb-down, kind: turbidity, driver: ads1115, address: 0x48, channel: 0,
     calibration: [[0.0, 0.0], [2.5, 1000.0]], every_s: 60}}
  - {{id: trap1-depth, kind: sediment, driver: maxbotix, port: /dev/ttyAMA0, pings: 5,
     min_range_in: 12, max_range_in: 200, every_s: 300}}
  - {{id: sonde, kind: turbidity, driver: modbus, port: /dev/ttyUSB0, slave: 1, register: 0,
     every_s: 60}}
  - {{id: rg2, kind: rain, driver: csv, file: {tmp_path / 'card.csv'}, speed: max}}
"""


def test_the_design_example_is_valid_and_check_config_says_ok(tmp_path: Path) -> None:
    path = tmp_path / "node.yaml"
    path.write_text(_good(tmp_path))
    config = load_config(path)
    assert config.status_every_s == 60 and config.buffer.max_mb == 64
    assert isinstance(config.sensors[1], Ads1115Sensor) and config.sensors[1].address == 0x48
    assert isinstance(config.sensors[3], ModbusSensor)
    assert config.sensors[3].register_map()["ntu"].address == 0
    result = node_cli("check-config", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("OK: node node-branch-meadows-1 of site branch-meadows")
    assert "s3cret" not in result.stdout + result.stderr


def test_bad_values_one_line_each_exit_2_no_traceback(tmp_path: Path) -> None:
    path = tmp_path / "node.yaml"
    path.write_text("""\
broker: {host: x, port: 99999, password: inline}
site: Branch Meadows
buffer: {max_mb: 0}
sensors:
  - {id: rg1, kind: rain, driver: gpio}
  - {id: rg1, kind: turbidity, driver: ads1115, calibration: [[2.0, 5], [1.0, 10]]}
  - {id: trap1, kind: rain, driver: maxbotix, port: /dev/ttyAMA0, min_range_in: 1,
     max_range_in: 2}
  - {id: x, kind: rain, driver: onewire}
  - {id: y, kind: sediment, driver: modbus, port: /dev/ttyUSB0, registers: {ntu: {address: 1}}}
  - {id: z, kind: rain, driver: csv, file: card.csv, speed: slow}
status_every_s: -5
""")
    result = node_cli("check-config", str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and result.stdout == ""
    lines = result.stderr.splitlines()
    assert all(re.match(r"^[a-z_0-9.]+: \S", line) for line in lines), lines
    fields = [line.split(":")[0] for line in lines]
    for expected in ("broker.port", "broker.password", "site", "buffer.max_mb",
                     "sensors.0.pin", "sensors.1.calibration", "sensors.1.id", "sensors.2.kind",
                     "sensors.3.driver", "sensors.4.registers", "sensors.5.speed",
                     "status_every_s"):
        assert expected in fields, (expected, lines)
    assert "'rg1' is also the id of sensors.0" in result.stderr


def test_yaml_problems_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "node.yaml"
    path.write_text("site: a\nsite: b\nsensors: []\n")
    result = node_cli("check-config", str(path))
    assert (result.returncode, result.stderr.count("\n")) == (2, 1)
    assert "key 'site' given twice" in result.stderr
    result = node_cli("check-config", str(tmp_path / "missing.yaml"))
    assert result.returncode == 2 and "cannot read" in result.stderr
    with pytest.raises(ConfigError) as err:
        parse_config(["not", "a", "mapping"])
    assert err.value.lines == ["(top): must be a mapping of fields (broker, site, sensors ...)"]


def test_files_the_node_needs_are_checked(tmp_path: Path) -> None:
    text = _good(tmp_path)
    (tmp_path / "mqtt.pw").chmod(0)
    (tmp_path / "card.csv").unlink()
    path = tmp_path / "node.yaml"
    path.write_text(text.replace(str(tmp_path / "buffer.db"), "/nonexistent/dir/buffer.db"))
    result = node_cli("check-config", str(path))
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert any(line.startswith("sensors.4.file: ") for line in lines)
    assert any(line.startswith("buffer.path: directory /nonexistent/dir") for line in lines)
    if os.geteuid() != 0:  # root reads a 0000 file all the same
        assert any(line.startswith("broker.password_file: cannot read") for line in lines)
    # Running with an unreadable configuration is refused the same way.
    result = node_cli("--config", str(tmp_path / "missing.yaml"))
    assert result.returncode == 2 and "Traceback" not in result.stderr


def _names(model: type[BaseModel]) -> set[str]:
    names: set[str] = set()
    for name, field in model.model_fields.items():
        names.add(field.alias or name)
        for sub in (field.annotation, *getattr(field.annotation, "__args__", ())):
            if isinstance(sub, type) and issubclass(sub, BaseModel):
                names |= _names(sub)
    return names


def test_the_example_file_documents_every_option() -> None:
    """``config/node.example.yaml`` is valid and names every field of every model."""
    config = load_config(EXAMPLE)
    assert {getattr(s, "driver", None) for s in config.sensors} == {
        "gpio", "ads1115", "maxbotix", "modbus", "csv"}
    text = EXAMPLE.read_text()
    models: list[type[BaseModel]] = [NodeConfig, GpioSensor, Ads1115Sensor, MaxbotixSensor,
                                     ModbusSensor, CsvSensor, Register]
    missing = sorted(n for m in models for n in _names(m)
                     if not re.search(rf"(^|[\s{{,#]){re.escape(n)}:", text, re.MULTILINE))
    assert missing == []


def test_every_kind_of_the_contract_is_checked_by_each_driver_not_crashed_on() -> None:
    """A kind the daemon learnt (``snow``) is refused by a driver that cannot read it, or
    needs its own field: one line naming the field, never a KeyError."""
    base = {"broker": {"host": "x"}, "site": "branch-meadows"}
    for sensor, where, words in (
            ({"id": "sn", "kind": "snow", "driver": "modbus", "port": "/dev/ttyUSB0",
              "registers": {"battery_v": {"address": 1}}}, "sensors.0", "needs snow_in"),
            ({"id": "sn", "kind": "snow", "driver": "sim", "start_s": 0, "end_s": 60},
             "sensors.0.kind", "cannot be read by the sim driver")):
        with pytest.raises(ConfigError) as err:
            parse_config(base | {"sensors": [sensor]})
        assert any(line.startswith(where) and words in line for line in err.value.lines), \
            err.value.lines
    ok = parse_config(base | {"sensors": [{"id": "sn", "kind": "snow", "driver": "modbus",
                                           "port": "/dev/ttyUSB0", "register": 3}]})
    assert ok.sensors[0].kind == "snow"

"""One error family: every error a person reads is a ``StormwatchError``, and ``cli.main``
is the one place that maps it to output and an exit code."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from monitor import cli
from monitor.errors import CheckFailed, StormwatchError, UserError

ROOT = Path(__file__).resolve().parents[2]

#: Exceptions that are the program's own business, never printed as a user's mistake.
INTERNAL = {
    "monitor.sinks.influx.writers.Unavailable": "InfluxDB down: the exporter retries",
    "monitor.sinks.influx.writers.Rejected": "a batch InfluxDB refused: bisected, dead-lettered",
    "monitor.sources.parse._DuplicateKeyError": "inside JSON parsing: becomes invalid_json",
    "monitor.web.app.BodyTooLarge": "a request body past its bound: answered 413 by the app",
    "monitor.web.auth.Refused": "a refused web request: answered with its 4xx and JSON error",
}


def exception_classes() -> list[str]:
    found = []
    for path in sorted((ROOT / "monitor").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                cls = getattr(importlib.import_module(module), node.name, None)
                if isinstance(cls, type) and issubclass(cls, BaseException):
                    found.append(f"{module}.{node.name}")
    return found


def test_every_error_of_monitor_is_in_the_family() -> None:
    outside = []
    for name in exception_classes():
        module, _, cls_name = name.rpartition(".")
        cls = getattr(importlib.import_module(module), cls_name)
        if not issubclass(cls, StormwatchError) and name not in INTERNAL:
            outside.append(name)
    assert outside == []
    assert len(exception_classes()) > 12  # the walk found them


def test_cli_maps_the_family_to_exit_codes(capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(error: StormwatchError) -> int:
        monkeypatch.setattr("monitor.commands.files.cmd_check_config",
                            lambda args: (_ for _ in ()).throw(error))
        return cli.main(["check-config", "x.yaml"])

    assert fail(UserError("--site: unknown site 'x'")) == 2
    assert capsys.readouterr().err == "stormwatch check-config: --site: unknown site 'x'\n"
    assert fail(CheckFailed("row 3 was edited")) == 1
    assert capsys.readouterr().err == "stormwatch check-config: row 3 was edited\n"


def test_a_configuration_error_is_its_lines_bare(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("state_dir: /tmp/x\nsites:\n  - {id: a, timezone: Nowhere/City}\n")
    assert cli.main(["check-config", str(bad)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("sites.") for line in err), err

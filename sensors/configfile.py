"""The node's configuration file: YAML, one error line per problem, the files it names.

``load_config(path)`` reads and validates (``config.py``); every problem,
all at once, becomes one ``path.to.field: message`` line of ``ConfigError``
for ``stormwatch-node check-config`` to print. YAML is read with a loader
that refuses a key given twice (PyYAML would keep the last silently).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .config import DRIVERS, ID_PATTERN, CsvSensor, NodeConfig, duplicate_ids


class ConfigError(Exception):
    """Every problem of one configuration file, each as ``path.to.field: message``."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice (PyYAML silently keeps the last)."""


def _mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    keys: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in keys:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} given twice", key_node.start_mark)
        keys.add(key)
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


#: What pydantic puts in an error's path for a member of a plain union (``int | str``).
_UNION_TAGS = frozenset({"int", "str", "float", "bool", "none", "list", "dict", "tuple"})


def _error_line(err: Mapping[str, Any]) -> str:
    loc = [str(p) for p in err.get("loc", ())]
    # A discriminated union puts the driver name into the path: sensors.0.gpio.pin.
    if len(loc) > 2 and loc[0] == "sensors" and loc[2] in DRIVERS:
        del loc[2]
    # Other unions add their member's name ("int", "constrained-float"): not a field.
    loc = [p for p in loc if p not in _UNION_TAGS and (p.isidentifier() or p.isdigit())]
    kind = err.get("type")
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    if kind == "extra_forbidden":
        msg = "unknown field"
    elif kind == "missing":
        msg = "required field is missing"
    elif kind in ("union_tag_not_found", "union_tag_invalid"):
        loc.append("driver")
        msg = f"must be one of {', '.join(DRIVERS)}"
    elif kind == "string_pattern_mismatch" and (err.get("ctx") or {}).get("pattern") == ID_PATTERN:
        msg = (f"{err.get('input')!r} is not a valid id: 1 to 63 characters of a-z, 0-9, "
               "'-' and '_', starting with a letter or digit")
    # A check of the whole model may name its own field ("sensors.3.id: ...").
    head, sep, rest = msg.partition(": ")
    if sep and " " not in head and "." in head:
        return msg
    if sep and " " not in head and head.isidentifier():
        loc.append(head)
        msg = rest
    return f"{'.'.join(loc) or '(top)'}: {msg}"


def parse_config(data: Any) -> NodeConfig:
    """Validate a parsed YAML document; raise ``ConfigError`` with every problem."""
    if not isinstance(data, dict):
        raise ConfigError(["(top): must be a mapping of fields (broker, site, sensors ...)"])
    try:
        return NodeConfig.model_validate(data)
    except ValidationError as exc:
        lines = [_error_line(e) for e in exc.errors()] + duplicate_ids(data.get("sensors"))
        # One line per field: a union's members each say why they did not fit.
        first = {line.split(": ", 1)[0]: line for line in reversed(lines)}
        raise ConfigError([line for line in dict.fromkeys(lines)
                           if first[line.split(": ", 1)[0]] == line]) from None


def load_config(path: str | Path) -> NodeConfig:
    """Read and validate the node's YAML file; ``ConfigError`` on any problem."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}"]
                          ) from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError([f"{path}: not valid YAML{where}: {problem}"]) from None
    return parse_config(data)


def read_password(config: NodeConfig) -> str | None:
    """The broker password from ``broker.password_file``; ``ConfigError`` if unreadable."""
    path = config.broker.password_file
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8").rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise ConfigError([f"broker.password_file: cannot read {path}: {reason}"]) from None


def check_files(config: NodeConfig) -> list[str]:
    """Problems with files the node will need (``check-config`` and start-up)."""
    problems: list[str] = []
    try:
        read_password(config)
    except ConfigError as exc:
        problems += exc.lines
    if config.broker.tls is not None and not config.broker.tls.ca_file.is_file():
        problems.append(f"broker.tls.ca_file: {config.broker.tls.ca_file} is not a file")
    for i, sensor in enumerate(config.sensors):
        if isinstance(sensor, CsvSensor) and not sensor.file.is_file():
            problems.append(f"sensors.{i}.file: {sensor.file} is not a file")
    parent = config.buffer.path.parent
    if not parent.is_dir():
        problems.append(f"buffer.path: directory {parent} does not exist")
    return problems

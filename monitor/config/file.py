"""The configuration file: YAML, ``${ENV_VAR}``, secrets, environment overrides, errors.

Loading is ``load_config(path)`` (or ``parse_config(data)`` for a parsed
document) into the models of ``config.py``. It runs in four steps, each
collecting problems rather than stopping at the first, so ``check-config`` can
print them all at once as ``ConfigError.lines``, one ``path.to.field: message``
per problem:

1. YAML is read with a loader that refuses duplicate keys (PyYAML would
   silently keep the last one); so is each ``custom`` permit's profile file,
   read into the permit (``_read_profiles``).
2. ``${VAR}`` references in strings are replaced; an unset variable is an
   error at the path of the string that names it.
3. ``STORMWATCH_*`` environment variables override the file (see
   ``_apply_env_overrides``); errors in an overridden value name the variable.
4. pydantic validates (``config.py``).

Secrets never sit inline: strings may use ``${ENV_VAR}`` interpolation and
passwords and tokens come from ``*_file`` fields (``read_secret``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Hashable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import UserError
from . import ENV_PREFIX, ID_PATTERN, Config
from .base import bound_message
from .paths import named_path, nearest_field
from .permits import Profile


class ConfigError(UserError):
    """Every problem of one configuration file, each as ``path.to.field: message``."""

    prefixed = False

    def __init__(self, lines: list[str]) -> None:
        super().__init__(*lines)


_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _interpolate(node: Any, path: str, env: Mapping[str, str],
                 unset: list[tuple[str, str]]) -> Any:
    """Replace ``${VAR}`` in every string; note each unset variable as (path, name)."""
    if isinstance(node, dict):
        return {k: _interpolate(v, f"{path}.{k}" if path else str(k), env, unset)
                for k, v in node.items()}
    if isinstance(node, list):
        return [_interpolate(v, f"{path}.{i}" if path else str(i), env, unset)
                for i, v in enumerate(node)]
    if isinstance(node, str):
        def sub(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in env:
                unset.append((path, name))
                return ""
            return env[name]

        return _ENV_REF.sub(sub, node)
    return node


def _apply_env_overrides(data: dict[str, Any], env: Mapping[str, str],
                         errors: list[str]) -> dict[str, str]:
    """Set ``STORMWATCH_SECTION__FIELD=value`` over the file; return {path: variable}.

    ``STORMWATCH_STATE_DIR`` sets ``state_dir``, ``STORMWATCH_BROKER__PORT`` sets
    ``broker.port`` (``__`` separates levels; names are case-insensitive). The
    value is a string that pydantic converts like a YAML scalar. A missing
    section is created (``STORMWATCH_INFLUX__URL`` alone turns export on).
    Variables whose first part is not a top-level field (e.g. a
    ``STORMWATCH_CONFIG`` of some wrapper) are not settings and are left alone;
    lists (``sites``, ``notify.targets``) are set in the file only.

    A plain merge rather than pydantic-settings: a ``BaseSettings`` ``Config``
    would read the process environment wherever code builds one, and its
    errors would not name the variable. Here overrides pass through the same
    validation and error lines as the file, and callers may pass ``env``.
    """
    applied: dict[str, str] = {}
    for var in sorted(env):
        if not var.upper().startswith(ENV_PREFIX):
            continue
        keys = var[len(ENV_PREFIX):].lower().split("__")
        if keys[0] not in Config.model_fields:
            continue
        problem = _set_path(data, keys, env[var], var, applied)
        if problem:
            errors.append(f"{'.'.join(keys)}: {problem}")
    return applied


def _set_path(data: dict[str, Any], keys: list[str], value: str, var: str,
              applied: dict[str, str]) -> str | None:
    """Put ``value`` at ``keys`` in ``data``, creating sections; a problem, or None."""
    node: Any = data
    model: type[BaseModel] | None = Config
    for depth, key in enumerate(keys):
        path = ".".join(keys[:depth + 1])
        field = model.model_fields.get(key) if model is not None else None
        annotation = field.annotation if field is not None else None
        kinds = [annotation, *get_args(annotation)]  # X | None: X and None
        if any(get_origin(k) in (list, dict) for k in kinds) or not isinstance(node, dict):
            return f"cannot be set from the environment ({var}); set it in the file"
        section = next((k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)),
                       None)
        if depth == len(keys) - 1:
            if section is not None:
                return f"{var} cannot replace a whole section; set one field, e.g. {var}__<FIELD>"
            node[key] = value
            applied[path] = var
            return None
        if node.get(key) is None:
            node[key] = {}
            applied.setdefault(path, var)
        node, model = node[key], section
    return None


def _under(path: str, prefixes: Iterable[str]) -> str | None:
    """The longest prefix (a path) that ``path`` equals or lies under, if any."""
    found = [p for p in prefixes if path == p or path.startswith(p + ".")]
    return max(found, key=len) if found else None


def _format_error(err: Mapping[str, Any]) -> tuple[str, str]:
    """One pydantic error as (``path.to.field``, readable message)."""
    path = ".".join(str(p) for p in err.get("loc", ()))
    kind = err.get("type")
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    if kind == "extra_forbidden":
        msg = "unknown field"
    elif kind == "missing":
        msg = "required field is missing"
    elif kind in ("model_type", "model_attributes_type", "dict_type"):
        msg = "must be a mapping of fields (key: value)"
    elif kind == "string_pattern_mismatch" and (err.get("ctx") or {}).get("pattern") == ID_PATTERN:
        msg = (f"{err.get('input')!r} is not a valid id: use 1 to 63 characters of a-z, 0-9, "
               "'-' and '_', starting with a letter or digit")
    else:
        # A bound in the field's unit: "at least 1 minute", not pydantic's
        # "greater than or equal to 0.016666666666666666".
        field = next((str(p) for p in reversed(err.get("loc", ())) if isinstance(p, str)), "")
        msg = bound_message(str(kind), err.get("ctx"), field, err.get("input")) or msg
    return path or "(top)", msg


def parse_config(data: Any, env: Mapping[str, str] | None = None) -> Config:
    """Validate an already-parsed YAML document; raise ``ConfigError`` with every problem.

    ``env`` (default ``os.environ``) supplies both ``${VAR}`` interpolation and
    the ``STORMWATCH_*`` overrides.
    """
    if not isinstance(data, dict):
        raise ConfigError(["(top): the configuration must be a mapping"])
    env = os.environ if env is None else env
    unset: list[tuple[str, str]] = []
    data = _interpolate(data, "", env, unset)
    errors: list[str] = []
    overridden = _apply_env_overrides(data, env, errors)
    unset = [(path, name) for path, name in unset if _under(path, overridden) is None]
    errors = [f"{path}: environment variable {name} is not set" for path, name in unset] + errors
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        unset_paths = {path for path, _ in unset}
        for err in exc.errors():
            path, msg = _format_error(err)
            if _under(path, unset_paths) is not None:
                continue  # the placeholder left by an unset variable, reported above
            source = _under(path, overridden)
            if err.get("type") == "extra_forbidden":
                near = nearest_field(Config, tuple(err.get("loc", ())))
                msg += f"; did you mean {near}?" if near else ""
            errors.append(f"{named_path(path, data)}: {msg}"
                          + (f" (from {overridden[source]})" if source else ""))
        raise ConfigError(errors) from None
    if errors:
        raise ConfigError(errors)
    return config


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that rejects duplicate keys, which PyYAML resolves silently to the last."""

    def construct_mapping(self, node: yaml.MappingNode,
                          deep: bool = False) -> dict[Hashable, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found duplicate key {key!r}", key_node.start_mark)
            if isinstance(key, Hashable):
                seen.add(key)
        return super().construct_mapping(node, deep)


def _read_yaml(p: Path, where: str) -> Any:
    """The YAML document of file ``p``; a ``ConfigError`` whose line begins ``where``."""
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{where}: cannot read ({exc.strerror})"]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{where}: not UTF-8 text (byte {exc.start})"]) from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{mark.line + 1}:{mark.column + 1}:" if mark is not None else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise ConfigError([f"{where}:{at} invalid YAML: {problem}"]) from None


def load_config(path: str | Path, env: Mapping[str, str] | None = None) -> Config:
    """Read, interpolate, override from the environment and validate a YAML file.

    Each ``custom`` permit's ``file`` is read first (``_read_profiles``), and its
    problems are reported with the configuration's own, all at once.
    """
    p = Path(path)
    data = _read_yaml(p, str(p))
    if data is None:
        raise ConfigError([f"{p}: the file is empty"])
    if not isinstance(data, dict):
        raise ConfigError([f"{p}: the top level must be a mapping of sections "
                           f"(broker, sites, ...), not a {type(data).__name__}"])
    problems = _read_profiles(data, p.parent)
    try:
        config = parse_config(data, env)
    except ConfigError as exc:
        raise ConfigError(problems + list(exc.lines)) from None
    if problems:
        raise ConfigError(problems)
    return config


def _custom_refs(data: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, mapping) of every ``custom`` permit of every site that names a ``file``."""
    sites = data.get("sites")
    for i, site in enumerate(sites if isinstance(sites, list) else []):
        permits = site.get("permits") if isinstance(site, dict) else None
        for j, ref in enumerate(permits if isinstance(permits, list) else []):
            if (isinstance(ref, dict) and ref.get("profile") == "custom"
                    and isinstance(ref.get("file"), str)):
                yield f"sites.{i}.permits.{j}.file", ref


def _read_profiles(data: dict[str, Any], folder: Path) -> list[str]:
    """Read each ``custom`` permit's profile file (relative to the configuration's
    folder) into its ``definition``, validated as a built-in profile is; return the
    problems, each at the permit's ``file`` with the file named, so the line says
    which file to open and where in it (config/README.md, "Permits")."""
    problems: list[str] = []
    for path, ref in _custom_refs(data):
        where = f"{named_path(path, data)} ({ref['file']})"
        if "definition" in ref:
            problems.append(f"{where}: give the rules in the file or inline as "
                            "definition, not both")
            continue
        try:
            text = _read_yaml(folder / ref["file"], where)
        except ConfigError as exc:
            problems += exc.lines
            continue
        try:
            ref["definition"] = Profile.model_validate(text)
        except ValidationError as exc:
            problems += [f"{where}: {field}: {msg}"
                         for field, msg in map(_format_error, exc.errors())]
    return problems


def read_secret(path: str | None) -> str | None:
    """Read a ``*_file`` secret, stripping the trailing newline editors leave."""
    if path is None:
        return None
    return Path(path).read_text(encoding="utf-8").rstrip("\r\n")

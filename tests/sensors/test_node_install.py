"""The node installs with what it imports, and nothing of the daemon.

Two distributions ship the package ``sensors``: the project (``pip install
.``, the daemon with everything) and the node alone (``pip install
./sensors``, ``sensors/pyproject.toml``, for a Raspberry Pi). These tests
hold the node's requirements to its imports, in both directions (a module it
imports that no requirement brings is an ImportError on the Pi; a requirement
it never imports is a wasted install there), and the two distributions to
each other. ``make check-node-install`` (run by ``.ci/run``) installs the node
for real into a fresh virtualenv and checks that pandas and the rest of the
daemon's libraries are not there.
"""

from __future__ import annotations

import ast
import re
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import tomllib
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / "sensors"

# What the daemon runs and a node must not be made to install.
DAEMON_ONLY = {"pandas", "matplotlib", "influxdb-client", "apprise", "amqtt"}


def pyproject(path: Path) -> dict[str, Any]:
    with path.open("rb") as file:
        data: dict[str, Any] = tomllib.load(file)
    return data


def canonical(name: str) -> str:
    """A distribution's name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(lines: list[str]) -> dict[str, Requirement]:
    return {canonical(req.name): req for req in map(Requirement, lines)}


def third_party_imports() -> set[str]:
    """The top-level modules outside the standard library that ``sensors/`` imports
    anywhere (inside functions too: the drivers import their libraries lazily)."""
    found: set[str] = set()
    for path in sorted(NODE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"__future__", "sensors"}


def with_dependencies(names: set[str]) -> set[str]:
    """``names`` and every distribution they require, as installed here (no extras)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for line in metadata.requires(name) or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(canonical(req.name))
    return seen


NODE_PROJECT = pyproject(NODE / "pyproject.toml")["project"]
ROOT_PROJECT = pyproject(ROOT / "pyproject.toml")["project"]
NODE_REQUIRES = requirements(NODE_PROJECT["dependencies"])


def test_every_module_the_node_imports_comes_with_its_requirements() -> None:
    providers = metadata.packages_distributions()
    reachable = with_dependencies(set(NODE_REQUIRES))
    imported = third_party_imports()
    assert {"paho", "pydantic", "yaml", "gpiozero", "serial", "minimalmodbus",
            "adafruit_ads1x15", "board", "busio"} <= imported  # the scan sees them
    missing = {module: providers.get(module) for module in imported
               if not {canonical(d) for d in providers.get(module, [])} & reachable}
    assert not missing, f"imported by sensors/ but no requirement brings it: {missing}"


def test_every_requirement_of_the_node_is_imported_by_it() -> None:
    providers = metadata.packages_distributions()
    imported_from = {canonical(dist) for module in third_party_imports()
                     for dist in providers.get(module, [])}
    assert set(NODE_REQUIRES) - imported_from == set()


def test_the_node_requires_nothing_of_the_daemon() -> None:
    assert not with_dependencies(set(NODE_REQUIRES)) & DAEMON_ONLY
    assert not third_party_imports() & {"monitor", "pandas", "matplotlib", "influxdb_client",
                                        "apprise", "amqtt"}


def test_the_project_brings_what_the_node_requires_with_the_same_versions() -> None:
    """``pip install .`` runs the node too (the demo, the simulator), its ``node`` extra
    the hardware and the tests the drivers: the same lines as the node's own."""
    core = requirements(ROOT_PROJECT["dependencies"])
    extras = ROOT_PROJECT["optional-dependencies"]
    hardware = requirements(extras["node"])
    tests = requirements(extras["test"])
    assert set(core) >= DAEMON_ONLY
    for name, req in NODE_REQUIRES.items():
        where = core if name in core else hardware
        assert str(where.get(name)) == str(req), (name, where.get(name))
        if name in hardware:
            assert str(tests.get(name)) == str(req), (name, tests.get(name))
    assert set(hardware) <= set(NODE_REQUIRES)


def test_both_distributions_have_the_node_script_and_one_version() -> None:
    assert NODE_PROJECT["scripts"] == {"stormwatch-node": "sensors.cli:main"}
    assert ROOT_PROJECT["scripts"]["stormwatch-node"] == "sensors.cli:main"
    assert NODE_PROJECT["version"] == ROOT_PROJECT["version"]
    assert NODE_PROJECT["requires-python"] == ROOT_PROJECT["requires-python"]


def test_the_node_distribution_lists_every_package_of_sensors() -> None:
    """``sensors/pyproject.toml`` names its packages (its directory is the package):
    a new subpackage must be added there, or the Pi would not get it."""
    packages = {".".join(("sensors", *path.parent.relative_to(NODE).parts))
                for path in NODE.rglob("__init__.py") if "build" not in path.parts}
    assert set(pyproject(NODE / "pyproject.toml")["tool"]["setuptools"]["packages"]) == packages


def test_every_directory_of_python_code_is_a_package() -> None:
    """The project finds its packages without namespace packages (so that a node
    build in ``sensors/build/`` is not shipped too): a directory of modules without
    an ``__init__.py`` would silently be left out of ``pip install .``."""
    lacking = sorted(str(path.parent.relative_to(ROOT))
                     for top in ("monitor", "sensors") for path in (ROOT / top).rglob("*.py")
                     if "build" not in path.parts and not (path.parent / "__init__.py").exists())
    assert lacking == []


def test_the_documented_install_line_is_the_one_ci_checks() -> None:
    readme = (NODE / "README.md").read_text(encoding="utf-8")
    install = readme.split("\n### Install\n", 1)[1].split("\n### ", 1)[0]
    block = re.findall(r"```sh\n(.*?)```", install, re.DOTALL)[0]
    assert re.search(r"^\S+/bin/pip install \./sensors$", block, re.MULTILINE), block
    unit = (ROOT / "deploy" / "systemd" / "stormwatch-node.service").read_text()
    header = unit.split("\n[Unit]\n", 1)[0]
    assert re.search(r"^#\s+\S+/bin/pip install \./sensors$", header, re.MULTILINE), header
    assert "/bin/pip\" install -q ./sensors)" in (ROOT / ".ci" / "node-install").read_text()
    assert re.search(r"^make check-node-install$", (ROOT / ".ci" / "run").read_text(),
                     re.MULTILINE)
    assert "'.[node]'" not in block and "'.[node]'" not in header

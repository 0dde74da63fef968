"""The shape of the code base: data flows one way, so the import graph has no cycle.

Sources (MQTT ingest, CSV replay) → journal → engine → sinks (events, outbox,
InfluxDB), with shared plumbing below all of them (``host``, ``store``,
``config``, the engine itself). A cycle means some module reaches back up; an
import inside a function does not hide one here: every ``import`` anywhere in
a module counts, and so does the package ``__init__`` that Python runs before
any of its modules.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def module_graph(package: str = "monitor") -> dict[str, set[str]]:
    """Each module of ``package`` and the modules of it that it imports (anywhere)."""
    modules: dict[str, tuple[Path, bool]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        modules[".".join(parts)] = (path, is_package)

    def with_parents(name: str) -> set[str]:
        parts = name.split(".")
        return {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & modules.keys()

    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    imported |= with_parents(alias.name)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    base = ".".join(here[:len(here) - node.level + 1] +
                                    ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                imported |= with_parents(base)
                for alias in node.names:
                    # ``from . import clocks`` imports the module ``clocks``.
                    imported |= with_parents(f"{base}.{alias.name}")
        # A module's own packages are imported before it; they are not edges.
        graph[name] = imported - with_parents(name)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path (first node repeated at the end), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


#: The layers of ``monitor/``, lowest first: a module may import its own package and
#: the layers below its own, never one above, and never a sibling in its own layer
#: (``monitor/README.md``, "Architecture", has a paragraph on each). The contract is at
#: the bottom (the vocabulary everything shares), the command line at the top. What
#: comes in (``sources``) sits below what goes out: ``replay`` and ``backtest`` read
#: files through the sources' own readers. The sinks and the views are siblings: each
#: turns the engine's results into something, and neither may lean on the other, so
#: what both need (the message value type, the exporter's cursors, the sources' notes
#: in the state directory) lives lower down. The field app is above both: it sends
#: mail through the notifier and renders the report.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("monitor.errors",),                   # the one error family
    ("monitor.contract",),                 # events, inputs, times, route keys, reject reasons
    ("monitor.config",),                   # the schema, the file, the warnings
    ("monitor.logs",),                     # log lines with secrets kept out
    ("monitor.rules",),                    # the rule families and their registry: pure
    ("monitor.engine",),                   # the machinery that drives them: pure, no I/O
    ("monitor.ingest",),                   # what a message must hold to become an input
    ("monitor.store",),                    # the state directory
    ("monitor.host",),                     # the engine kept in step with the journal
    ("monitor.sources",),                  # what comes in: MQTT, CSV, the simulator, the ACL
    ("monitor.sinks", "monitor.views"),    # what goes out; read-only answers
    ("monitor.web",),                      # the field app: pages and API over the views
    ("monitor.daemon",),                   # the loop, the demo
    ("monitor.commands",),                 # the command families
    ("monitor.cli",),                      # the parser and the exit codes
)


def layer_of(module: str) -> tuple[int, str] | None:
    """The tier in ``LAYERS`` of the package ``module`` belongs to, and that package
    (None: the top package)."""
    found = [(i, p) for i, tier in enumerate(LAYERS) for p in tier
             if module == p or module.startswith(p + ".")]
    return found[-1] if found else None


def arrows_against_layers(graph: dict[str, set[str]]) -> list[str]:
    """Every import that points up, or sideways into a sibling package of its tier."""
    wrong = []
    for name, imported in sorted(graph.items()):
        here = layer_of(name)
        for target in sorted(imported):
            there = layer_of(target)
            if target == "monitor" or there is None:
                continue
            if here is None or there[0] > here[0] or (there[0] == here[0]
                                                      and there[1] != here[1]):
                wrong.append(f"{name} -> {target}")
    return wrong


def test_every_module_of_monitor_has_a_layer() -> None:
    assert [m for m in module_graph() if m != "monitor" and layer_of(m) is None] == []


def test_imports_keep_to_the_layers() -> None:
    graph = module_graph()
    assert "monitor.engine.core" in graph and "monitor.host.engine" in graph  # the walk found them
    assert arrows_against_layers(graph) == []
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_the_checks_see_an_arrow_up_and_a_cycle_through_an_import_in_a_function() -> None:
    # The checks themselves must be able to fail: the cycle the daemon once had.
    graph = {"monitor.daemon.loop": {"monitor.sinks.registry"},
             "monitor.sinks.registry": {"monitor.sinks.influx.influx"},
             "monitor.sinks.influx.influx": {"monitor.daemon.loop"}}
    assert find_cycle(graph) == ["monitor.daemon.loop", "monitor.sinks.registry",
                                 "monitor.sinks.influx.influx", "monitor.daemon.loop"]
    assert arrows_against_layers(graph) == ["monitor.sinks.influx.influx -> monitor.daemon.loop"]
    assert arrows_against_layers({"monitor.config.schema": {"monitor.sinks.notify.routing"}})
    # Sideways: a view leaning on a sink, or the host on a source.
    assert arrows_against_layers({"monitor.views.logbook": {"monitor.sinks.notify.messages"}})
    assert arrows_against_layers({"monitor.host.inspections": {"monitor.sources.parse"}})
    assert not arrows_against_layers({"monitor.views.replay": {"monitor.sources.filerows"}})


def test_the_engine_imports_no_io() -> None:
    """Sans-I/O: the engine and the rule families import the contract and the
    configuration's schema only (with the permits' vocabulary, whose built-in
    profiles are package data put into the configuration when it is validated:
    the engine reads their rules, never a file)."""
    graph = module_graph()
    for name, imported in graph.items():
        if name.startswith(("monitor.engine", "monitor.rules")):
            outside = {m for m in imported if not m.startswith(("monitor.engine",
                                                                "monitor.rules",
                                                                "monitor.contract"))
                       and m not in ("monitor", "monitor.config", "monitor.config.schema",
                                     "monitor.config.siterules", "monitor.config.base",
                                     "monitor.config.permits")}
            assert not outside, (name, outside)


def test_importing_the_engine_loads_no_shell_and_no_heavy_library() -> None:
    """In a fresh interpreter: the engine (what a rule test or a notebook imports) brings
    neither the alerting, the store, the sources or sinks, nor pandas or matplotlib."""
    code = ("import sys, monitor.engine.core, monitor.engine.summary, monitor.engine.series; "
            "print('\\n'.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=True)
    loaded = done.stdout.split()
    shell = [m for m in loaded if m.startswith(("monitor.sinks", "monitor.store",
                                                "monitor.sources", "monitor.host",
                                                "monitor.daemon", "monitor.views",
                                                "monitor.commands", "pandas", "matplotlib",
                                                "paho", "apprise", "influxdb_client"))]
    assert shell == [], shell
    assert "monitor.engine.core" in loaded  # the check looked at the right interpreter


def test_the_node_imports_nothing_of_the_daemon() -> None:
    """``sensors/`` runs on a Raspberry Pi with its own small install: it must not need
    ``monitor/`` (``stormwatch simulate`` may import the node, never the other way)."""
    found = []
    for path in sorted((ROOT / "sensors").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom)
                     and not node.level else [])
            found += [f"{path.relative_to(ROOT)}: {n}" for n in names
                      if n == "monitor" or n.startswith("monitor.")]
    assert found == []


#: Modules allowed past the size limit, and why.
LONG_MODULES = {
    "monitor/sinks/notify/messages.py": "the alert texts of every event type, one table of wording",
    "monitor/commands/helptext.py": "the long help of every command, one table of wording",
}
MAX_MODULE_LINES = 520
MAX_PUBLIC_METHODS = 20


def test_modules_and_classes_stay_small() -> None:
    """One job per module, a few per class: a newcomer reads one file to find a thing."""
    long_ones = []
    crowded = []
    for path in sorted((ROOT / "monitor").rglob("*.py")):
        name = str(path.relative_to(ROOT))
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > MAX_MODULE_LINES and name not in LONG_MODULES:
            long_ones.append(f"{name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                public = [n.name for n in node.body if isinstance(n, ast.FunctionDef)
                          and not n.name.startswith("_")]
                if len(public) > MAX_PUBLIC_METHODS:
                    crowded.append(f"{name}: {node.name} has {len(public)} public methods")
    assert long_ones == [] and crowded == []


#: Functions allowed past ``MAX_FUNCTION_LINES``, and why each must be one piece
#: (``path:Class.function``). An entry whose function has become short, or is gone,
#: fails the test too, so the table says only what is true.
LONG_FUNCTIONS: dict[str, str] = {
}
MAX_FUNCTION_LINES = 60


def function_lengths(*packages: str) -> dict[str, int]:
    """Every function and method of ``packages`` (``path:Class.name``, nested ones as
    ``outer.inner``) and its lines, from ``def`` to its last line."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    found[f"{where}:{name}"] = (child.end_lineno or child.lineno) - child.lineno + 1
                visit(child, f"{name}.", where)
            else:
                visit(child, prefix, where)

    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            visit(ast.parse(path.read_text(encoding="utf-8")), "", str(path.relative_to(ROOT)))
    return found


def long_functions(lengths: dict[str, int], allowed: dict[str, str]) -> list[str]:
    """What the function table gets wrong: a long function it does not list, and an
    entry for a function that is no longer long (or no longer there)."""
    unlisted = [f"{name}: {n} lines (split it at a seam, or say in LONG_FUNCTIONS why it"
                " must be one piece)" for name, n in sorted(lengths.items())
                if n > MAX_FUNCTION_LINES and name not in allowed]
    stale = [f"{name}: listed in LONG_FUNCTIONS but "
             + (f"{lengths[name]} lines now" if name in lengths else "not found")
             for name in sorted(allowed) if lengths.get(name, 0) <= MAX_FUNCTION_LINES]
    return unlisted + stale


def test_functions_stay_at_their_seams() -> None:
    """A function a reader takes in at once: over ~60 lines it does several things, and
    each should be a function of its own, unless ``LONG_FUNCTIONS`` says why not."""
    lengths = function_lengths("monitor", "sensors")
    assert "monitor/rules/clocks/settle.py:settle" in lengths  # the walk found them
    assert "monitor/daemon/loop.py:Daemon._run" in lengths  # methods by class
    assert long_functions(lengths, LONG_FUNCTIONS) == []


def test_the_function_check_names_a_long_one_and_a_stale_entry() -> None:
    lengths = {"monitor/a.py:f": 61, "monitor/a.py:g": 60, "monitor/b.py:C.h": 200}
    assert long_functions(lengths, {"monitor/b.py:C.h": "one table", "monitor/a.py:g": "x",
                                    "monitor/c.py:gone": "y"}) == [
        "monitor/a.py:f: 61 lines (split it at a seam, or say in LONG_FUNCTIONS why it must be"
        " one piece)",
        "monitor/a.py:g: listed in LONG_FUNCTIONS but 60 lines now",
        "monitor/c.py:gone: listed in LONG_FUNCTIONS but not found"]


#: What may import the modules behind the engine's public face (``monitor/engine/__init__.py``).
ENGINE_INSIDE = ("monitor.engine", "monitor.rules", "tests.engine", "tests.rules")
#: Those modules: the shell reads their names from ``monitor.engine``.
BEHIND_THE_FACE = ("monitor.engine.", "monitor.rules.readout")


def imports_behind_the_face(root: Path = ROOT) -> list[str]:
    """Every import, outside the engine, the rules and their tests, of a module
    behind the engine's public face."""
    found = []
    for folder in ("monitor", "tests", "bench"):
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            if name.startswith(ENGINE_INSIDE):
                continue
            package = parts[:-1]
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                targets = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                           [".".join(package[:len(package) - node.level + 1]
                                     + ([node.module] if node.module else []))
                            if node.level else node.module or ""]
                           if isinstance(node, ast.ImportFrom) else [])
                found += [f"{name} -> {t}" for t in targets
                          if t.startswith(BEHIND_THE_FACE) or t == "monitor.rules.readout"]
    return found


def test_the_shell_uses_the_engines_public_face() -> None:
    assert imports_behind_the_face() == []


def test_the_face_check_sees_imports_behind_the_face(tmp_path: Path) -> None:
    (tmp_path / "monitor" / "views").mkdir(parents=True)
    (tmp_path / "monitor" / "views" / "x.py").write_text(
        "from ..engine.core import Engine\nfrom ..engine import Engine as E\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "y.py").write_text("from monitor.rules.readout import SiteNow\n")
    assert imports_behind_the_face(tmp_path) == [
        "monitor.views.x -> monitor.engine.core", "tests.y -> monitor.rules.readout"]
# ----------------------------------------------------------------------------- the tests' shape


def imports_of(path: Path) -> set[str]:
    """The modules a file of ``tests/`` imports anywhere (relative imports resolved; for
    ``from package import name`` both the package and ``package.name``)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    here = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = (".".join(here[:len(here) - node.level + 1] +
                             ([node.module] if node.module else []))
                    if node.level else node.module or "")
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def names_a_test_module(name: str) -> bool:
    """Whether ``name`` is a test module of ``tests/`` or a name in one (``tests.support``
    and the ``conftest`` modules are not test modules)."""
    parts = name.split(".")
    return (parts[0] == "tests" and len(parts) > 1 and parts[1] != "support"
            and any(p.startswith("test_") for p in parts[1:3]))


def imports_between_tests(paths: list[Path]) -> list[str]:
    """Every import of a test module by another file of ``tests/``."""
    return [f"{path.relative_to(ROOT)} -> {name}" for path in paths
            for name in sorted(imports_of(path)) if names_a_test_module(name)]


def test_no_test_module_imports_another() -> None:
    """What two test files share lives in ``tests/support/`` (fixtures may live in a
    ``conftest.py``): a test module is read, moved and deleted on its own."""
    paths = sorted((ROOT / "tests").rglob("*.py"))
    assert ROOT / "tests" / "engine" / "test_rain.py" in paths  # the walk found them
    assert imports_between_tests(paths) == []
    helpers = [str(p.relative_to(ROOT)) for p in paths if p.parent.name != "support"
               and not p.name.startswith("test_")
               and p.name not in ("conftest.py", "__init__.py")]
    assert helpers == [], "helpers shared by tests belong in tests/support/"


#: What a test of the engine may import of the project: the engine, the rule families,
#: and what they stand on (``monitor/README.md``, "Architecture"), and the support
#: modules that import no more than that themselves.
ENGINE_TEST_IMPORTS = ("monitor.engine", "monitor.rules", "monitor.contract", "monitor.config",
                       "monitor.errors")


def beyond_the_engine(name: str) -> bool:
    """Whether an engine test may not import module ``name``: the project's modules
    beyond ``ENGINE_TEST_IMPORTS``, the node's, and test modules."""
    top = name.split(".")[0]
    if top == "monitor":
        return name != "monitor" and not any(name == p or name.startswith(p + ".")
                                             for p in ENGINE_TEST_IMPORTS)
    return top == "sensors" or (top == "tests" and not name.startswith("tests.support"))


def shell_imports(path: Path, seen: set[Path] | None = None) -> list[str]:
    """What ``path`` imports of the project beyond ``ENGINE_TEST_IMPORTS``, directly or
    through the ``tests/support`` modules it imports."""
    seen = set() if seen is None else seen
    seen.add(path)
    wrong = []
    for name in sorted(imports_of(path)):
        if beyond_the_engine(name):
            wrong.append(f"{path.relative_to(ROOT)}: {name}")
        elif name.startswith("tests.support."):
            support = ROOT / "tests" / "support" / f"{name.split('.')[2]}.py"
            if support.exists() and support not in seen:
                wrong += shell_imports(support, seen)
    return wrong


def test_engine_tests_import_no_shell() -> None:
    """``tests/engine`` tests the rules as the engine sees them: a test that goes
    through the host, the store, a view, a sink or the command line lives in the folder
    of that layer (``tests/host``, ``tests/views``, ...), so the engine's tests run in
    seconds and fail only for the engine."""
    paths = sorted((ROOT / "tests" / "engine").glob("*.py"))
    assert ROOT / "tests" / "engine" / "test_rain.py" in paths  # the walk found them
    assert [w for p in paths for w in shell_imports(p)] == []


def test_the_test_checks_see_a_shared_helper_and_the_shell() -> None:
    # The checks themselves must be able to fail: an import from another test module,
    # a relative import resolved, and the host and store imported by a support module.
    assert names_a_test_module("tests.engine.test_weather.T0")
    assert not names_a_test_module("tests.support.weatherkit.T0")
    assert not names_a_test_module("tests.conftest.MakeMosquitto")
    assert "tests.support.util" in imports_of(ROOT / "tests" / "engine" / "test_rain.py")
    assert [beyond_the_engine(m) for m in ("monitor.engine.core", "monitor.engineroom",
                                           "monitor.views.status", "sensors.node",
                                           "tests.engine.test_rain", "pandas")] == [
        False, True, True, True, True, False]
    assert "tests/support/reportkit.py: monitor.host.engine" in shell_imports(
        ROOT / "tests" / "support" / "reportkit.py")

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


def test_the_import_graph_of_monitor_has_no_cycle() -> None:
    graph = module_graph()
    assert "monitor.engine.core" in graph and "monitor.host" in graph  # the walk found them
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_the_check_sees_a_cycle_through_an_import_in_a_function() -> None:
    # The check itself must be able to fail: the cycle the daemon had before.
    graph = {"monitor.daemon": {"monitor.workers"}, "monitor.workers": {"monitor.export.influx"},
             "monitor.export.influx": {"monitor.daemon"}}
    assert find_cycle(graph) == ["monitor.daemon", "monitor.workers", "monitor.export.influx",
                                 "monitor.daemon"]


def test_the_engine_imports_no_io() -> None:
    """Sans-I/O (DESIGN § 2): the engine imports nothing of the shell."""
    graph = module_graph()
    for name, imported in graph.items():
        if name.startswith("monitor.engine"):
            # The configuration's models are the engine's input too.
            outside = {m for m in imported if not m.startswith("monitor.engine")
                       and m not in ("monitor", "monitor.config")}
            assert not outside, (name, outside)


#: Modules allowed past the size limit, and why.
LONG_MODULES = {
    "monitor/notify/messages.py": "the alert texts of every event type, one table of wording",
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

"""``make bench`` and ``make bench-quick``: every benchmark of bench/, and their ratio lines.

``bench/run.py`` lists the benchmarks with the arguments of the full and the
quick run; these tests keep that list complete (a new script in bench/ is
run by both targets or the test says so), keep every argument one the script
accepts, and check that the runner gathers each script's ``ratio:`` lines and
reports a failed script without stopping at it. Nothing here runs a
benchmark or looks at a time.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


def load_runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run", BENCH / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # for its dataclasses
    spec.loader.exec_module(module)
    return module


RUNNER = load_runner()


def is_script(path: Path) -> bool:
    """Whether the file runs as a program (``if __name__ == "__main__":``)."""
    return 'if __name__ == "__main__":' in path.read_text(encoding="utf-8")


def accepted_flags(path: Path) -> set[str]:
    """The options the script's argument parser declares."""
    flags: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            flags |= {arg.value for arg in node.args
                      if isinstance(arg, ast.Constant) and isinstance(arg.value, str)}
    return flags


def test_every_benchmark_script_is_run_by_both_targets() -> None:
    scripts = {p.name for p in BENCH.glob("*.py") if is_script(p)} - {"run.py"}
    listed = [b.script for b in RUNNER.BENCHMARKS]
    assert len(scripts) >= 6
    assert sorted(listed) == sorted(scripts)
    assert len(set(listed)) == len(listed)


@pytest.mark.parametrize("benchmark", RUNNER.BENCHMARKS, ids=lambda b: b.script)
def test_the_arguments_are_options_of_the_script(benchmark: Any) -> None:
    flags = accepted_flags(BENCH / benchmark.script)
    for args in (benchmark.full, benchmark.quick):
        assert {a for a in args if a.startswith("--")} <= flags, (args, flags)
    assert benchmark.quick, "a quick run must make the benchmark smaller"


@pytest.mark.parametrize("benchmark", RUNNER.BENCHMARKS, ids=lambda b: b.script)
def test_every_script_prints_a_ratio_line(benchmark: Any) -> None:
    source = (BENCH / benchmark.script).read_text(encoding="utf-8")
    assert re.search(r"""print\(f?["']ratio: """, source) or re.search(
        r"""= \(?f["']ratio: """, source), benchmark


def test_the_runner_gathers_ratio_lines_and_goes_on_after_a_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "good.py").write_text(
        "import sys\nprint('table', sys.argv[1:])\nprint('ratio: fast 2.0x the loop')\n"
        "print('ratio: slow 9.5x')\n")
    (tmp_path / "broken.py").write_text(
        "import sys\nprint('ratio: half done 1.1x')\nsys.exit(3)\n")
    (tmp_path / "silent.py").write_text("print('no ratios here')\n")
    monkeypatch.setattr(RUNNER, "BENCH", tmp_path)
    monkeypatch.setattr(RUNNER, "BENCHMARKS", (
        RUNNER.Benchmark("broken.py", full=(), quick=("--tiny",)),
        RUNNER.Benchmark("good.py", full=("--big",), quick=("--tiny",)),
        RUNNER.Benchmark("silent.py", full=(), quick=()),
    ))
    assert RUNNER.main(["--quick"]) == 1
    out = capsys.readouterr()
    summary = out.out.split("==== ratios", 1)[1].splitlines()
    assert summary[0] == " (bench-quick; against baselines run in the same session, see " \
                         "bench/README.md)"
    assert re.fullmatch(r"bench/broken\.py --tiny \(\d+ s; FAILED, exit 3\)", summary[1])
    assert summary[2] == "  half done 1.1x"
    assert re.fullmatch(r"bench/good\.py --tiny \(\d+ s\)", summary[3])
    assert summary[4:6] == ["  fast 2.0x the loop", "  slow 9.5x"]
    assert re.fullmatch(r"bench/silent\.py \(\d+ s\)", summary[6])
    assert summary[7:] == ["  (no ratio line)"]
    assert "table ['--tiny']" in out.out  # each script's own output is shown too
    assert "failed: broken.py" in out.err

    assert RUNNER.main(["good.py"]) == 0
    assert "table ['--big']" in capsys.readouterr().out


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize(("target", "command"), [("bench", "bench/run.py"),
                                                 ("bench-quick", "bench/run.py --quick")])
def test_the_make_targets_run_the_runner(target: str, command: str) -> None:
    # Under `make test` this runs inside make: a sub-make inherits MAKEFLAGS and
    # MAKELEVEL and prints "Entering/Leaving directory" around its commands.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    dry = subprocess.run(["make", "--no-print-directory", "-n", target,
                          "VENV=/nonexistent/venv"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[-1].endswith(command), dry.stdout


def test_the_readme_shows_what_each_target_runs() -> None:
    readme = (BENCH / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## `make bench` and `make bench-quick`\n", 1)[1]
    rows = {line.split("|")[1].strip(" `"): line for line in section.split("\n## ", 1)[0]
            .splitlines() if line.startswith("| `")}
    assert set(rows) == {b.script for b in RUNNER.BENCHMARKS}
    for b in RUNNER.BENCHMARKS:
        for args in (b.full, b.quick):
            command = " ".join((f"bench/{b.script}", *args))
            assert f"`{command}`" in rows[b.script], (command, rows[b.script])

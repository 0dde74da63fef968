"""The documentation cannot rot: what it shows runs, what it lists exists.

* The README's quick start runs as written, command by command, against the
  repository (a temporary state directory where one is written).
* ``config/README.md``'s reference names every field of the configuration's
  pydantic models, with its default, and no field that does not exist.
* The user docs carry their own account: no reference to the team's design
  document (a file a user of the repository does not have), no "§ 5"-style section numbers of it, no
  issue
  numbers; the chapter's sections (§ 134-…) are quoted instead.
* Links between the docs are relative and lead somewhere (file and heading).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from monitor.cli import build_parser
from monitor.config import Config
from monitor.config.base import say_number

ROOT = Path(__file__).resolve().parents[2]

#: The documents people read, by audience (README.md links them all).
USER_DOCS = ["README.md", "config/README.md", "deploy/README.md", "sensors/README.md",
             "monitor/README.md", "bench/README.md", "deploy/mosquitto/README.md",
             "deploy/grafana/README.md"]


def read(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- the quick start


def quick_start() -> list[str]:
    """The commands of the README's quick start block (``sh``, under "Quick start")."""
    section = read("README.md").split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_the_readme_is_one_screen_of_what_a_newcomer_needs() -> None:
    text = read("README.md")
    assert text.count("\n") <= 200
    for section in ("§ 134-9A(2)", "§ 134-9A(1)", "§ 134-8C", "## Quick start",
                    "make test", ".venv/bin/"):
        assert section in text, section
    commands = quick_start()
    assert commands and all(c.startswith((".venv/bin/", "make ")) for c in commands), commands


def _venv_bin() -> Path:
    """The programs of the interpreter running the tests: ``.venv/bin`` in a clone
    after ``make test``, another virtualenv when the tests run from elsewhere."""
    return Path(sys.executable).parent


def test_every_quick_start_command_runs_as_written(tmp_path: Path) -> None:
    """Each line as a shell runs it from the repository's root; ``.venv/bin/`` is the
    virtualenv running the tests, the state directory a temporary one. ``make``
    lines are checked with ``make -n`` (the target exists and what it runs is
    the README's ``.venv/bin/`` program): running them here would install
    packages, and ``make test`` would run this test again."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg",
           "HOME": str(tmp_path), "STORMWATCH_STATE_DIR": str(tmp_path / "state")}
    ran = 0
    for command in quick_start():
        words = shlex.split(command)
        if words[0] == "make":
            if shutil.which("make") is None:
                continue
            dry = subprocess.run(["make", "-n", *words[1:], f"VENV={_venv_bin().parent}"],
                                 cwd=ROOT, capture_output=True, text=True, timeout=60)
            assert dry.returncode == 0, (command, dry.stderr)
            continue
        program = Path(words[0])
        assert program.parent == Path(".venv/bin"), command
        words[0] = str(_venv_bin() / program.name)
        assert Path(words[0]).is_file(), f"{command}: no {program.name} in {_venv_bin()}"
        proc = subprocess.run(words, cwd=ROOT, capture_output=True, text=True, timeout=300,
                              env=env)
        assert proc.returncode == 0, (command, proc.stdout[-2000:], proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr, (command, proc.stderr)
        ran += 1
    assert ran >= 2


def test_the_quick_start_replay_reads_the_shipped_sample() -> None:
    (replay,) = [c for c in quick_start() if " replay " in f" {c} "]
    for word in shlex.split(replay):
        if word.endswith((".csv", ".yaml")):
            assert (ROOT / word).is_file(), word
    assert "config/sample-readings.csv" in replay


def test_the_readme_lists_every_command_once() -> None:
    names = [name.split(" ", 1)[1].removesuffix(" --help") for name, _ in _help_texts()
             if name.count(" ") == 2]  # "stormwatch NAME --help": the commands
    assert "replay" in names and "site" in names
    section = read("README.md").split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    for name in names:
        assert f"`stormwatch {name}" in section, name
    assert "`stormwatch-node" in section


# --------------------------------------------------------------------------- the reference


def _models_in(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The configuration model inside a field's type (``X``, ``X | None``, ``list[X]``)
    and whether it is a list of them."""
    origin = typing.get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    if origin is list:
        model, _ = _models_in(typing.get_args(annotation)[0])
        return model, model is not None
    if origin in (typing.Union, types.UnionType) or origin is typing.Annotated:
        for arg in typing.get_args(annotation):
            model, many = _models_in(arg)
            if model is not None:
                return model, many
    return None, False


def schema_fields(model: type[BaseModel] = Config, prefix: str = ""
                  ) -> Iterator[tuple[str, FieldInfo, bool]]:
    """Every field of the configuration, walked from ``Config`` through ``model_fields``:
    (dotted path with ``[]`` for lists, its FieldInfo, whether it holds a section)."""
    for name, field in model.model_fields.items():
        path = prefix + (field.alias or name)
        inner, many = _models_in(field.annotation)
        yield path, field, inner is not None
        if inner is not None:
            yield from schema_fields(inner, path + ("[]." if many else "."))


def said(value: Any) -> str:
    """A default as the reference writes it."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return say_number(float(value))
    if isinstance(value, list):
        return "[" + ", ".join(said(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {said(v)}" for k, v in value.items()) + "}"
    return str(value)


def default_of(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    return said(field.get_default(call_default_factory=True))


#: The unit a field's name promises, said as the reference's unit column says it.
UNITS = {"_in": "in", "_ft": "ft", "_hours": "hours", "_minutes": "minutes", "_days": "days",
         "_s": "seconds", "_ntu": "NTU", "_v": "V", "_mb": "MiB", "_fraction": "fraction"}


def reference_rows() -> dict[str, list[str]]:
    """The rows of the reference tables of config/README.md: field → cells."""
    section = read("config/README.md").split("\n## Reference\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"`[a-z_\[\].]+`", cells[0]):
            field = cells[0].strip("`")
            assert field not in rows, f"{field} twice"
            rows[field] = cells[1:]
    return rows


def test_the_reference_names_every_field_and_no_other() -> None:
    fields = {path: (info, section) for path, info, section in schema_fields()}
    rows = reference_rows()
    leaves = {path for path, (_, section) in fields.items() if not section}
    assert sorted(leaves - rows.keys()) == [], "fields the reference does not name"
    assert sorted(rows.keys() - fields.keys()) == [], "rows naming no field"


def test_the_reference_gives_each_default_and_unit() -> None:
    fields = {path: info for path, info, _ in schema_fields()}
    wrong = []
    for path, (unit, default, _meaning) in reference_rows().items():
        info = fields[path]
        if not info.is_required() and isinstance(
                info.get_default(call_default_factory=True), BaseModel):
            continue  # a section built by its factory: its own fields carry the defaults
        expected = default_of(info)
        if default != expected and not default.startswith(expected + " "):
            wrong.append(f"{path}: default {default!r}, the schema says {expected!r}")
        name = path.rsplit(".", 1)[-1]
        for suffix, word in UNITS.items():
            if name.endswith(suffix) and unit != word:
                wrong.append(f"{path}: unit {unit!r}, its name says {word!r}")
    assert wrong == []


def test_the_reference_check_can_fail() -> None:
    """A field the schema lacks and one it has, seen by the same walk."""
    paths = {path for path, _, _ in schema_fields()}
    assert "sites[].traps[].cleanout_repeat_hours" in paths
    assert "sites[].pauses[].from" in paths  # by its alias, as a file writes it
    assert "sites[].rain" in paths and "sites[].rain.threshold_in" in paths
    assert "sites[].thresold_in" not in paths


# --------------------------------------------------------------------------- their own account


#: The team's design document by name (spelt in two pieces here, so that this file
#: does not name it), issue numbers (also in pieces), and "§ 5" (a section
#: of the design, not of the chapter, whose sections are § 134-…).
TEAM_DOC = "DES" + "IGN"
FORBIDDEN = re.compile(rf"\b{TEAM_DOC}\b|\b[Ii]ssues? ?#?\d+|§ ?(?!134-)\d+")


def _help_texts() -> Iterator[tuple[str, str]]:
    parser = build_parser()
    yield "stormwatch --help", parser.format_help()
    stack = [("stormwatch", parser)]
    while stack:
        name, p = stack.pop()
        for action in p._actions:
            choices = getattr(action, "choices", None)
            if isinstance(choices, dict):
                for sub_name, sub in choices.items():
                    yield f"{name} {sub_name} --help", sub.format_help()
                    stack.append((f"{name} {sub_name}", sub))


def test_user_docs_carry_their_own_account() -> None:
    found = []
    texts = [(name, read(name)) for name in USER_DOCS]
    texts.append(("config/example.yaml", read("config/example.yaml")))
    texts.append(("config/node.example.yaml", read("config/node.example.yaml")))
    texts += list(_help_texts())
    from sensors.cli import _CHECK_DESCRIPTION, _DESCRIPTION, _EPILOG
    texts.append(("stormwatch-node --help", _DESCRIPTION + _EPILOG + _CHECK_DESCRIPTION))
    for name, text in texts:
        for match in FORBIDDEN.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{name}:{line}: {match[0]!r}")
    assert found == []


def test_the_forbidden_pattern_sees_what_it_must() -> None:
    for bad in (f"{TEAM_DOC} § 5", f"see {TEAM_DOC}.md", "(is" "sue 8)", "is" "sue 13, Build 4",
                "§ 10 has"):
        assert FORBIDDEN.search(bad), bad
    for fine in ("§ 134-9A(2)", "§ 134-12D", "design capacity", "design storm"):
        assert not FORBIDDEN.search(fine), fine


# --------------------------------------------------------------------------- links


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation out, spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return {slug(m[1]) for m in re.finditer(r"^#{1,6} (.+)$", text, re.MULTILINE)}


def test_links_between_the_docs_are_relative_and_lead_somewhere() -> None:
    broken = []
    for name in USER_DOCS:
        here = ROOT / name
        text = re.sub(r"```.*?```", "", here.read_text(encoding="utf-8"), flags=re.DOTALL)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            if target.startswith("/"):
                broken.append(f"{name}: {target} is not relative")
                continue
            file_part, _, anchor = target.partition("#")
            path = (here.parent / file_part).resolve() if file_part else here
            if not path.exists():
                broken.append(f"{name}: {target}: no such file")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                broken.append(f"{name}: {target}: no such heading")
    assert broken == []


def test_every_readme_section_before_the_split_lives_somewhere() -> None:
    """The headings the README had when it was one file for four audiences."""
    homes = {
        "Replay input": "config/README.md", "Configuration": "config/README.md",
        "Alerts": "config/README.md", "Targets and routes": "config/README.md",
        "What reaches a phone": "config/README.md", "Apprise notes": "config/README.md",
        "Deployment": "deploy/README.md", "Clocks": "deploy/README.md",
        "What the broker can still lose": "deploy/README.md",
        "Security notes": "deploy/README.md",
        "What the log book proves, and what it does not": "deploy/README.md",
        "Several daemons on one broker": "deploy/README.md",
        "InfluxDB and Grafana": "deploy/README.md",
        "The whole stack with docker compose": "deploy/README.md",
        "Raspberry Pi: InfluxDB 1.8": "deploy/README.md",
        "MQTT contract": "sensors/README.md", "Topics": "sensors/README.md",
        "Payloads": "sensors/README.md", "QoS, sessions, ACL": "sensors/README.md",
        "Sensor node": "sensors/README.md", "Wiring": "sensors/README.md",
        "Calibration and what is not published": "sensors/README.md",
        "What the node does offline": "sensors/README.md",
        "Adding a sensor": "sensors/README.md", "Status": "sensors/README.md",
        "Events": "monitor/README.md", "Architecture": "monitor/README.md",
        "Development": "monitor/README.md", "Performance": "bench/README.md",
        "Quick start": "README.md",
    }
    missing = []
    for heading, home in homes.items():
        text = read(home)
        if not re.search(rf"^#+ .*{re.escape(heading)}", text, re.MULTILINE):
            missing.append(f"{heading} (in {home})")
    assert missing == []


@pytest.mark.parametrize("name", USER_DOCS)
def test_no_doc_points_at_a_file_that_is_gone(name: str) -> None:
    """Paths in code spans (`deploy/systemd/stormwatch.service`) exist."""
    here = ROOT / name
    gone = []
    generated = ("deploy/secrets/",)  # written by deploy/compose/setup.sh, never committed
    for span in re.findall(r"`((?:\.\./)*(?:config|deploy|tests|bench|monitor|sensors)/"
                           r"[\w./-]+)`", here.read_text(encoding="utf-8")):
        if span.startswith(generated):
            continue
        candidates = [ROOT / span, (here.parent / span)]
        if "*" in span or not any(os.path.exists(c) for c in candidates):
            if "*" in span and any((ROOT).glob(span)):
                continue
            gone.append(span)
    assert gone == []


# --------------------------------------------------------------------------- the node's example


def _sh_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, re.DOTALL)


def test_the_node_example_fails_off_a_pi_as_the_sensors_readme_says(tmp_path: Path) -> None:
    """`check-config config/node.example.yaml` names the four files missing here; the
    copy the README makes of it, pointing at files that exist, passes."""
    section = read("sensors/README.md").split("\n### Trying `check-config`\n", 1)[1]
    section = section.split("\n### ", 1)[0]
    first, recipe = _sh_blocks(section)
    assert first.strip() == ".venv/bin/stormwatch-node check-config config/node.example.yaml"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    if not Path("/var/lib/stormwatch-node").exists():  # not a set-up Pi
        proc = subprocess.run([str(_venv_bin() / "stormwatch-node"), "check-config",
                               "config/node.example.yaml"], cwd=ROOT, capture_output=True,
                              text=True, timeout=60, env=env)
        assert proc.returncode == 2, proc.stderr
        fields = [line.split(":", 1)[0] for line in proc.stderr.splitlines()]
        assert fields == ["broker.password_file", "broker.tls.ca_file", "sensors.4.file",
                          "buffer.path"], proc.stderr
        for field in fields:
            assert f"`{field}: " in section, field
    script = recipe.replace("/tmp/node-try", str(tmp_path / "node-try")).replace(
        ".venv/bin/", f"{_venv_bin()}/")
    proc = subprocess.run(["/bin/sh", "-ec", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("OK: node node-branch-meadows-1 "), proc.stdout


#: Where the code, its tests and its deployment live: every text file there.
CODE_FOLDERS = ("monitor", "sensors", "tests", "bench", "deploy", "config", "docs", ".ci")
#: What a working tree holds beside the repository's own files (caches, builds).
NOT_OURS = ("__pycache__", "build", "dist")


def _repository_text(folders: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    """Each text file of ``folders`` (and the top level's docs and build files) with its
    text; caches, builds and hidden folders inside them are passed over."""
    paths = [*ROOT.glob("*.md"), ROOT / "Makefile", ROOT / "pyproject.toml"]
    for folder in folders:
        paths += [p for p in (ROOT / folder).rglob("*") if p.is_file() and not any(
            part.startswith(".") or part in NOT_OURS or part.endswith(".egg-info")
            for part in p.relative_to(ROOT / folder).parts)]
    for path in sorted(paths):
        try:
            yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a picture


def test_the_repository_carries_its_own_design() -> None:
    """No file points at the team's design document, which a clone does not have, and
    no code or test names an issue: the design is monitor/README.md, the law is
    Chapter 134, and a comment says why, not which ticket asked."""
    issue = re.compile(r"\b[Ii]ssues? ?#?\d+")
    found = []
    for name, text in _repository_text(CODE_FOLDERS):
        for match in re.finditer(rf"\b{TEAM_DOC}\b|{issue.pattern}", text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{name}:{line}: {match[0]!r}")
    assert found == []

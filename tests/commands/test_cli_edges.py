"""The command line at its edges, as a new user meets it.

Every case runs the real ``stormwatch`` as a process and asks of a refusal
what README.md, "Commands" asks: exit 2, exactly one line on stderr (naming what is
wrong), no traceback. And what should work does: a CSV saved by Excel as
"CSV UTF-8", a closed pipe, the demo's kept state with the configuration it
wrote, times in the site's local time.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from monitor.config.file import load_config
from monitor.contract.times import iso
from monitor.daemon.demo import CONFIG_NAME, MAX_SPEED, MIN_SPEED, write_demo_config
from monitor.daemon.demo import SITE as DEMO_SITE
from monitor.store.opening import open_store
from monitor.store.statedir import state_dir_problem

from ..support.commandkit import READERS, stormwatch
from ..support.daemonkit import ROOT, SITE, write_config

#: The site's local time as every human-facing output prints it.
LOCAL_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d E[SD]T")
#: ISO 8601 UTC, as the store keeps it (what people should no longer read).
UTC_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
#: Clock ids hold a UTC time, but they are ids, not times to read.
CLOCK_ID = re.compile(r"\b(routine|storm)-[^\s,;|)]+")


def times_read(text: str) -> str:
    """``text`` without its clock ids: what is left are the times people read."""
    return CLOCK_ID.sub("<clock>", text)


def run(*args: str, stdin: bytes | None = None, stdout: int | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``stormwatch ARGS`` as a process; stderr captured as text."""
    proc = subprocess.run(
        [sys.executable, "-m", "monitor.cli", *args], input=stdin, cwd=ROOT, timeout=120,
        stdout=subprocess.PIPE if stdout is None else stdout, stderr=subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg",
             **(env or {})})
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, (proc.stdout or b"").decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"))


def refused(proc: subprocess.CompletedProcess[str], *words: str) -> str:
    """Exit 2, one line on stderr holding every word, no traceback; the line."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-500:], proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


# --------------------------------------------------------------------------- 1. replay input

#: A storm of 0.60 in (0.01 in per tip), one reading every 10 minutes.
STORM = ["ts,site,sensor,tips_total"] + [
    f"2026-05-01T{10 + m // 60:02d}:{m % 60:02d}:00Z,{SITE},rg1,{min(m // 10 * 6, 60)}"
    for m in range(0, 180, 10)]


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    return write_config(tmp_path, 1)


def storm_csv(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_a_byte_that_is_not_utf8_names_the_file_its_offset_and_line(cfg: Path,
                                                                     tmp_path: Path) -> None:
    text = ("\n".join(STORM) + "\n").encode()
    at = text.index(b"\n", text.index(b"\n") + 1) + 1 + 5  # line 3, sixth byte
    bad = storm_csv(tmp_path, "latin1.csv", text[:at] + b"\xe9" + text[at:])
    for command in ("replay", "backtest"):
        line = refused(run(command, "--config", str(cfg), "--input", str(bad)),
                       str(bad), "not UTF-8", "0xe9", f"offset {at}", "line 3")
        assert line.startswith(f"stormwatch {command}: ")
    # Standard input has no offset to name, and no traceback either.
    refused(run("replay", "--config", str(cfg), "--input", "-",
                stdin=text[:at] + b"\xe9" + text[at:]), "standard input", "not UTF-8")


def test_a_csv_with_a_byte_order_mark_is_read_as_without(cfg: Path, tmp_path: Path) -> None:
    """Excel's "CSV UTF-8" starts the file with EF BB BF; the header's first column is
    still ``ts``, and both commands give exactly the events of the plain file."""
    text = ("\r\n".join(STORM) + "\r\n").encode()  # Excel writes CRLF too
    plain = storm_csv(tmp_path, "plain.csv", text)
    excel = storm_csv(tmp_path, "excel.csv", b"\xef\xbb\xbf" + text)
    for command in ("replay", "backtest"):
        want = run(command, "--config", str(cfg), "--input", str(plain))
        got = run(command, "--config", str(cfg), "--input", str(excel))
        assert want.returncode == got.returncode == 0, (want.stderr, got.stderr)
        assert got.stdout == want.stdout and "qualified" in got.stdout
        assert "\ufeff" not in got.stderr
    piped = run("replay", "--config", str(cfg), "--input", "-", stdin=b"\xef\xbb\xbf" + text)
    assert piped.returncode == 0 and piped.stdout == run(
        "replay", "--config", str(cfg), "--input", str(plain)).stdout


def test_a_repeated_column_is_refused_naming_it(cfg: Path, tmp_path: Path) -> None:
    body = "ts,site,sensor,tips_total,tips_total\n2026-05-01T10:00:00Z,branch-meadows,rg1,1,5\n"
    dup = storm_csv(tmp_path, "dup.csv", body.encode())
    for command in ("replay", "backtest"):
        refused(run(command, "--config", str(cfg), "--input", str(dup)),
                "tips_total", "columns 4 and 5")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_full_output_is_one_line(cfg: Path, tmp_path: Path) -> None:
    data = storm_csv(tmp_path, "storm.csv", ("\n".join(STORM) + "\n").encode())
    for args in (("replay", "--config", str(cfg), "--input", str(data)),
                 ("replay", "--config", str(cfg), "--input", str(data), "--format", "table"),
                 ("backtest", "--config", str(cfg), "--input", str(data)),
                 ("acl", "--config", str(cfg)),
                 ("check-config", str(ROOT / "config" / "example.yaml"))):
        with open("/dev/full", "wb") as full:
            refused(run(*args, stdout=full.fileno()), "cannot write the output",
                    "No space left")


def test_a_closed_pipe_is_not_an_error(cfg: Path, tmp_path: Path) -> None:
    """``replay ... | head``: the reader leaves early; exit 0 and nothing on stderr."""
    rows = ["ts,site,sensor,tips_total"]
    tips = 0
    for hour in range(24 * 60):  # a storm every 12 hours for two months: ~500 events
        tips += 60 if hour % 12 == 0 else 0
        rows.append(f"{1777600800 + hour * 3600},{SITE},rg1,{tips}")
    data = storm_csv(tmp_path, "long.csv", ("\n".join(rows) + "\n").encode())
    proc = subprocess.Popen(
        [sys.executable, "-m", "monitor.cli", "replay", "--config", str(cfg), "--input",
         str(data)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(100)
    proc.stdout.close()
    assert proc.wait(timeout=120) == 0
    assert proc.stderr.read() == b""


# --------------------------------------------------------------------------- 2. acl --out


def test_acl_out_into_a_missing_folder_or_a_directory(cfg: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "folder" / "stormwatch.acl"
    refused(run("acl", "--config", str(cfg), "--out", str(missing)),
            "--out", str(missing), f"no folder {missing.parent}")
    refused(run("acl", "--config", str(cfg), "--out", str(tmp_path)), "--out", "directory")
    (tmp_path / "afile").write_text("x")
    refused(run("acl", "--config", str(cfg), "--out", str(tmp_path / "afile" / "acl")),
            "--out", "is a file")
    ok = run("acl", "--config", str(cfg), "--out", str(tmp_path / "stormwatch.acl"))
    assert ok.returncode == 0 and (tmp_path / "stormwatch.acl").read_text().startswith("#")


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_acl_out_without_permission(cfg: Path, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    refused(run("acl", "--config", str(cfg), "--out", str(locked / "acl")),
            "--out", "Permission denied")


# --------------------------------------------------------------------------- 3. state_dir

#: Every command that uses the state directory, as arguments after ``--config FILE``.
STATE_COMMANDS: list[tuple[str, ...]] = [
    *(args for _, args in READERS),
    ("inspect", "--site", SITE, "--inspector", "J. Rivera"),
    ("site", "close", "--site", SITE),
    ("run",),
]


def with_config(cfg: Path, args: tuple[str, ...], tmp_path: Path) -> list[str]:
    """``args`` with ``--config`` put where each command takes it."""
    head = 2 if args[0] == "site" else 1
    extra = ["--out", str(tmp_path / "r.html")] if args[0] == "report" else []
    return [*args[:head], "--config", str(cfg), *args[head:], *extra]


@pytest.mark.parametrize("where", ["state_dir", "its parent"])
def test_a_file_in_the_way_of_state_dir_is_one_line_naming_it(cfg: Path, tmp_path: Path,
                                                              where: str) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("my notes\n")
    state = blocker if where == "state_dir" else blocker / "state"
    for args in STATE_COMMANDS:
        started = time.monotonic()
        proc = run(*with_config(cfg, args, tmp_path), env={"STORMWATCH_STATE_DIR": str(state)})
        line = refused(proc, "state_dir", str(blocker), "is a file")
        assert proc.stdout == "", args
        assert time.monotonic() - started < 30, (args, "refused at once, not after a wait")
        assert line.startswith(f"stormwatch {args[0]}"), line
    assert blocker.read_text() == "my notes\n"
    assert not (tmp_path / "r.html").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into any directory")
def test_a_state_dir_without_write_permission_is_refused_by_writers(cfg: Path) -> None:
    config = load_config(cfg, env={})
    open_store(config).close()
    state = Path(config.state_dir)
    state.chmod(0o500)
    try:
        for args in STATE_COMMANDS[-3:]:
            refused(run(*with_config(cfg, args, cfg.parent)), "state_dir", str(state),
                    "permission")
    finally:
        state.chmod(0o700)


def test_the_permission_checks_as_a_user_would_meet_them(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests run as root, who may do anything: the checks themselves, with the
    file system's answer replaced by a user's."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "stormwatch.db").write_bytes(b"")
    denied: set[int] = set()
    monkeypatch.setattr(os, "access", lambda path, mode: not mode & sum(denied))
    assert state_dir_problem(state, write=True) is None
    denied.add(os.W_OK)
    assert state_dir_problem(state, write=False) is None
    assert state_dir_problem(state, write=True) == (
        f"no permission to write in the directory {state}")
    denied.add(os.X_OK)
    assert state_dir_problem(state, write=False) == (
        f"cannot read the database {state / 'stormwatch.db'}: no permission to enter {state}")


# --------------------------------------------------------------------------- 4. demo


def test_demo_on_an_unusable_state_dir_fails_at_once(tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    for state in (blocker, blocker / "state"):
        started = time.monotonic()
        refused(run("demo", "--state-dir", str(state)), "--state-dir", str(blocker))
        assert time.monotonic() - started < 10, "no 20 s wait for a daemon that cannot start"


@pytest.mark.parametrize("speed", ["1e9", "20000", "3601", "0.5", "0", "-1", "nan", "inf"])
def test_demo_speed_outside_its_range_is_refused(speed: str) -> None:
    started = time.monotonic()
    refused(run("demo", "--speed", speed), "--speed", f"{MIN_SPEED:g} to {MAX_SPEED:g}")
    assert time.monotonic() - started < 10, "refused before the broker starts"


def test_demo_speed_range_is_the_one_documented() -> None:
    helptext = " ".join(run("demo", "--help").stdout.split())
    assert f"{MIN_SPEED:g} to {MAX_SPEED:g}" in helptext
    assert MIN_SPEED <= 1800 <= MAX_SPEED  # the default


def test_the_kept_demo_configuration_reads_its_database(tmp_path: Path) -> None:
    path = write_demo_config(1883, tmp_path)
    assert path == tmp_path / CONFIG_NAME
    config = load_config(path, env={})
    assert Path(config.state_dir) == tmp_path.resolve() and config.site(DEMO_SITE) is not None
    check = run("check-config", str(path))
    assert check.returncode == 0 and check.stderr == "", check.stderr


# --------------------------------------------------------------------------- 6. local time


def test_inspect_and_the_log_book_speak_local_time(cfg: Path) -> None:
    open_store(load_config(cfg, env={})).close()
    at = iso(round(time.time() * 1000) - 3_600_000)
    proc = stormwatch(cfg, ("inspect", "--site", SITE, "--inspector", "J. Rivera", "--at", at,
                            "--corrective-action", "re-trench the silt fence"))
    assert proc.returncode == 0, proc.stderr
    assert LOCAL_TIME.search(proc.stdout), proc.stdout
    assert not UTC_TIME.search(times_read(proc.stdout)), proc.stdout

    md = stormwatch(cfg, ("logbook", "--site", SITE, "--format", "md")).stdout
    assert "America/New_York" in md and LOCAL_TIME.search(md)
    assert not UTC_TIME.search(times_read(md)), md

    rows = list(csv.DictReader(io.StringIO(stormwatch(cfg, ("logbook", "--site", SITE)).stdout)))
    (rec,) = [r for r in rows if r["type"] == "inspection_recorded"]
    # The machine columns stay UTC for programs; people read the local ones.
    assert UTC_TIME.fullmatch(rec["recorded_at"]) and rec["at"] == at
    assert LOCAL_TIME.fullmatch(rec["recorded_local"]) and LOCAL_TIME.fullmatch(rec["at_local"])
    assert "inspected_at=" in rec["details"] and not UTC_TIME.search(times_read(rec["details"]))


# --------------------------------------------------------------------------- 7. first minutes

#: The replay sample that ships beside config/example.yaml (the README's quick start
#: replays it, config/README.md describes it).
SAMPLE = ROOT / "config" / "sample-readings.csv"


def test_the_shipped_sample_with_the_example_config_is_sensible() -> None:
    """It gave 147 overdue notices (``active_since`` a month before the sample): now a
    storm that qualifies and the inspection that meets its clock."""
    proc = run("replay", "--config", str(ROOT / "config" / "example.yaml"), "--input", "-",
               stdin=SAMPLE.read_bytes())
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    kinds = [e["type"] for e in events]
    assert "inspection_overdue" not in kinds and "inspection_missed" not in kinds
    assert kinds.count("storm_qualified") == 1
    assert sorted((e["clock"], e["outcome"]) for e in events if e["type"] == "clock_closed") \
        == [("routine", "met"), ("storm", "met")]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_installs_the_runtime_only() -> None:
    dry = subprocess.run(["make", "-n", "demo", "VENV=/nonexistent/venv"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    installs = [line for line in dry.stdout.splitlines() if "pip install" in line]
    assert installs and all("[test]" not in line for line in installs), dry.stdout


def test_the_license_is_an_spdx_string() -> None:
    """The table form (``{text = "MIT"}``) makes setuptools warn on every install."""
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^license = "MIT"$', text, re.MULTILINE), "license = {text = ...}?"

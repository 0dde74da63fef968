"""The command line as a user meets it: exit codes, one-line errors, replay output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..support.smallsite import SMALL, storm_csv, write_config

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "config" / "example.yaml"


def stormwatch(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "monitor.cli", *args], capture_output=True,
                          text=True, input=stdin, cwd=ROOT, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})






def test_check_config_example_is_valid() -> None:
    out = stormwatch("check-config", str(EXAMPLE))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("OK: ")
    assert "branch-meadows" in out.stdout


def test_check_config_three_mistakes_three_lines(tmp_path: Path) -> None:
    path = write_config(tmp_path, """\
sites:
  - id: branch-meadows
    timezone: Mars/Olympus_Mons
    rain: {threshold_in: -0.5}
    sensors:
      - {id: rg1, kind: rain}
      - {id: tb-down, kind: turbidity}
    turbidity_pairs: [{id: outfall-1, upstream: rg1, downstream: tb-down}]
""")
    out = stormwatch("check-config", str(path))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 3, lines
    assert any(line.startswith("sites.branch-meadows.timezone: ") for line in lines)
    assert any(line.startswith("sites.branch-meadows.rain.threshold_in: ") for line in lines)
    assert any(line.startswith("sites.branch-meadows.turbidity_pairs.outfall-1.upstream: ")
               for line in lines)
    assert "Traceback" not in out.stderr


def test_check_config_missing_file_is_one_line(tmp_path: Path) -> None:
    out = stormwatch("check-config", str(tmp_path / "nope.yaml"))
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1
    assert "Traceback" not in out.stderr




def test_replay_jsonl_contract(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, SMALL.format(state=tmp_path))
    csv_path = tmp_path / "in.csv"
    csv_path.write_text(storm_csv())
    out = stormwatch("replay", "--config", str(cfg), "--input", str(csv_path), "--format",
                     "jsonl")
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    for e in events:
        assert {"type", "site", "at", "id", "revision"} <= e.keys()
    assert [e["at"] for e in events] == sorted(e["at"] for e in events)
    (q,) = [e for e in events if e["type"] == "storm_qualified"]
    # 2026-05-01T00:00Z + 60 min baseline; tip 50 falls in minute 109 -> 01:49Z.
    assert q["qualified_at"] == "2026-05-01T01:49:00Z"
    assert q["due"] == "2026-05-02T01:49:00Z"
    assert q["total_in"] == 0.5
    (closed,) = [e for e in events if e["type"] == "clock_closed" and e["clock"] == "storm"]
    assert closed["outcome"] == "met"
    ended = [e for e in events if e["type"] == "storm_ended"]
    assert ended and ended[0]["total_in"] == 0.6


def test_replay_is_order_and_duplicate_invariant(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, SMALL.format(state=tmp_path))
    text = storm_csv()
    header, *rows = text.splitlines()
    import random

    rng = random.Random(3)
    messy = rows + rng.sample(rows, 200)
    rng.shuffle(messy)
    (tmp_path / "a.csv").write_text(text)
    (tmp_path / "b.csv").write_text("\n".join([header, *messy]) + "\n")

    def final(name: str) -> list[dict[str, object]]:
        out = stormwatch("replay", "--config", str(cfg), "--input", str(tmp_path / name))
        assert out.returncode == 0, out.stderr
        return [{k: v for k, v in json.loads(line).items() if k != "revision"}
                for line in out.stdout.splitlines()]

    assert final("b.csv") == final("a.csv")


def test_replay_table_and_rejects(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, SMALL.format(state=tmp_path))
    csv_path = tmp_path / "in.csv"
    csv_path.write_text(storm_csv() + "2026-05-01T05:00:00Z,branch-meadows,rg9,5,,\n"
                        "2026-05-01T05:00:00Z,branch-meadows,tb-up,,-3,\n")
    out = stormwatch("replay", "--config", str(cfg), "--input", str(csv_path), "--format",
                     "table")
    assert out.returncode == 0, out.stderr
    assert "Storms (1, 1 qualifying)" in out.stdout
    assert "2026-04-30 21:49 EDT" in out.stdout  # qualified 01:49Z, in local time
    assert "2026-05-01 21:49 EDT" in out.stdout  # due 24 h later
    assert "unknown_sensor 1" in out.stderr and "negative_value 1" in out.stderr


def test_replay_table_says_when_turbidity_could_not_be_checked(tmp_path: Path) -> None:
    # Every 10 minutes for 5 hours from 00:00 UTC, tb-down only until 00:20.
    # Stale 15 minutes later (00:35 UTC, 20:35 EDT), unknown two hours: said at 22:35 EDT.
    cfg = write_config(tmp_path, SMALL.format(state=tmp_path))
    rows = ["ts,site,sensor,tips_total,ntu,inspector"]
    for i in range(30):
        t = f"2026-05-01T{i // 6:02d}:{i % 6 * 10:02d}:00Z"
        rows += [f"{t},branch-meadows,rg1,0,,", f"{t},branch-meadows,tb-up,,8.0,"]
        if i < 3:
            rows.append(f"{t},branch-meadows,tb-down,,9.0,")
    csv_path = tmp_path / "in.csv"
    csv_path.write_text("\n".join(rows) + "\n")
    out = stormwatch("replay", "--config", str(cfg), "--input", str(csv_path), "--format",
                     "table")
    assert out.returncode == 0, out.stderr
    assert ("2026-04-30 22:35 EDT   outfall-1  NOT MONITORED: contrast unknown since "
            "2026-04-30 20:35 EDT (no readings from the downstream probe)") in out.stdout


@pytest.mark.parametrize("body, message", [
    ("ts,sensor\n1,rg1\n", "CSV header lacks column(s): site"),
])
def test_replay_bad_input_is_one_line(tmp_path: Path, body: str, message: str) -> None:
    cfg = write_config(tmp_path, SMALL.format(state=tmp_path))
    csv_path = tmp_path / "in.csv"
    csv_path.write_text(body)
    out = stormwatch("replay", "--config", str(cfg), "--input", str(csv_path))
    assert out.returncode == 2
    assert message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_replay_missing_input_file(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, SMALL.format(state=tmp_path))
    out = stormwatch("replay", "--config", str(cfg), "--input", str(tmp_path / "none.csv"))
    assert out.returncode == 2
    assert "cannot read" in out.stderr and "Traceback" not in out.stderr


def test_replay_depth_per_interval_without_seq(tmp_path: Path) -> None:
    # Recorded series often have only a depth per interval; duplicated rows still count once.
    cfg = write_config(tmp_path, SMALL.format(state=tmp_path))
    rows = ["ts,site,sensor,precip_in"]
    rows += [f"2026-05-01T{h:02d}:00:00Z,branch-meadows,rg1,0.10" for h in range(0, 6)]
    rows += rows[1:3]  # two duplicated rows
    rows += ["2026-05-01T18:00:00Z,branch-meadows,rg1,0"]
    (tmp_path / "p.csv").write_text("\n".join(rows) + "\n")
    out = stormwatch("replay", "--config", str(cfg), "--input", str(tmp_path / "p.csv"))
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    (q,) = [e for e in events if e["type"] == "storm_qualified"]
    assert q["qualified_at"] == "2026-05-01T04:00:00Z"  # 5 x 0.10 in
    (end,) = [e for e in events if e["type"] == "storm_ended"]
    assert end["total_in"] == 0.6


def test_backtest_finds_the_storms_replay_finds(tmp_path: Path) -> None:
    """``backtest`` (vectorised, storms only) and ``replay`` agree on one gauge's storms,
    and refuse the same rows for the same reasons."""
    cfg = write_config(tmp_path, SMALL.format(state=tmp_path / "state"))
    lines = ["ts,site,sensor,tips_total,ntu"]
    total = 0
    for m in range(20 * 60):
        total += 1 if 60 <= m < 120 or 600 <= m < 610 else 0
        lines.append(f"{1777608000 + m * 60},branch-meadows,rg1,{total},")
        lines.append(f"{1777608000 + m * 60},branch-meadows,tb-up,,8.5")
    lines += ["2026-05-01T05:00:30Z,branch-meadows,rg1,-3,", "nonsense,branch-meadows,rg1,7,",
              "2026-05-01T05:00:30Z,branch-meadows,rg9,7,"]
    csv = tmp_path / "in.csv"
    csv.write_text("\n".join(lines) + "\n")

    out = stormwatch("backtest", "--config", str(cfg), "--input", str(csv))
    assert out.returncode == 0, out.stderr
    storms = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(s["started_at"], s["qualified_at"], s["total_in"]) for s in storms] == [
        ("2026-05-01T05:00:00Z", "2026-05-01T05:49:00Z", 0.6),
        ("2026-05-01T14:00:00Z", None, 0.1)]
    # The rows replay refuses, for replay's reasons (a counter of -3 is negative_value).
    assert out.stderr.splitlines()[0] == (
        "backtest: 2403 rows, 3 rejected (bad_timestamp 1, negative_value 1, unknown_sensor 1)")

    replay = stormwatch("replay", "--config", str(cfg), "--input", str(csv))
    assert replay.stderr.splitlines()[0] == "replay" + out.stderr.splitlines()[0][len("backtest"):]
    events = [json.loads(line) for line in replay.stdout.splitlines()]
    assert [e["started_at"] for e in events if e["type"] == "storm_started"] == [
        s["started_at"] for s in storms]
    assert [e["qualified_at"] for e in events if e["type"] == "storm_qualified"] == [
        "2026-05-01T05:49:00Z"]

    table = stormwatch("backtest", "--config", str(cfg), "--input", str(csv), "--format", "table")
    assert table.returncode == 0 and "2026-05-01 01:49 EDT" in table.stdout  # local time

    missing = stormwatch("backtest", "--config", str(cfg), "--input", str(tmp_path / "no.csv"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert "Traceback" not in missing.stderr


def test_backtest_ends_a_storm_where_replay_does_and_prints_local_times() -> None:
    """The sample's storm ends (an inspection the next day moves time on) in both, and
    the backtest table says its times in the site's zone, as replay's table does."""
    args = ["--config", str(ROOT / "config" / "example.yaml"),
            "--input", str(ROOT / "config" / "sample-readings.csv")]
    def cli(*argv: str) -> str:
        done = subprocess.run([sys.executable, "-m", "monitor.cli", *argv], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout
    ended = [e for e in map(json.loads, cli("replay", *args).splitlines())
             if e["type"] == "storm_ended"]
    rows = [json.loads(line) for line in cli("backtest", *args).splitlines()]
    assert [r["ended_at"] for r in rows] == [e["ended_at"] for e in ended] \
        == ["2026-05-01T14:20:00Z"]
    table = cli("backtest", *args, "--format", "table").splitlines()
    assert table[1].split() == ["branch-meadows", "rg1", "2026-05-01", "10:10", "EDT",
                                "2026-05-01", "10:20", "EDT", "0.51", "0.51", "2026-05-01",
                                "10:20", "EDT"]

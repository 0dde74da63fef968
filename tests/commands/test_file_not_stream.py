"""A file is not a stream: ``replay`` and ``backtest`` read it whole.

Through the real command line, with the wall clock fixed by libfaketime (the
rows' future bound is the clock at the time of the run, which the command
reads and the rules do not). Each case is worked by hand in its comments: the
gauge is 0.01 in a tip, the storm rule ``event_total`` at 0.50 in with a 6 h
dry gap, the site in New York (EDT, UTC-4, in May).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from monitor.contract.times import parse_iso

from ..support.daemonkit import cli, frozen_clock
from ..support.smallsite import SMALL

#: The wall clock of every run (libfaketime): a row dated after 2026-12-01 12:05 is future.
NOW_MS = parse_iso("2026-12-01T12:00:00Z")
SITE = "branch-meadows"


def stormwatch(*args: str) -> subprocess.CompletedProcess[str]:
    """``stormwatch ARGS`` with the wall clock standing at ``NOW_MS``."""
    return cli(*args, timeout_s=120, env=frozen_clock(NOW_MS))


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    path = tmp_path / "site.yaml"
    # A site in New York: rg1 (0.01 in a tip), tb-up and tb-down.
    path.write_text(SMALL.format(state=tmp_path / "state"), encoding="utf-8")
    return path


def write(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def ten_minute_counter(days: int, stamp: Any = None) -> list[str]:
    """``rg1``'s counter every 10 minutes from 2026-05-01T00:00Z for ``days`` days: 10 tips
    in each of the steps k = 61..66 (10:10Z to 11:00Z), 60 tips (0.60 in) in all.
    ``stamp(k)`` spells step k's time (default ISO UTC)."""
    rows, total = [], 0
    for k in range(days * 144):
        total += 10 if 61 <= k <= 66 else 0
        hours, minutes = divmod(k * 10, 60)
        day, hour = divmod(hours, 24)
        ts = stamp(k) if stamp else f"2026-05-{1 + day:02d}T{hour:02d}:{minutes:02d}:00Z"
        rows.append(f"{ts},{SITE},rg1,{total}")
    return rows


def events(out: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def of(found: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in found if e["type"] == kind]


def without_revision(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "revision"} for e in found]


# --------------------------------------------------------------------------- any order


def test_a_newest_first_export_gives_what_the_ascending_one_gives(cfg: Path,
                                                                  tmp_path: Path) -> None:
    # Ten days of rows; the storm is on the first day: 50 tips (0.50 in) by step 65,
    # 10:50Z; 60 tips by 11:00Z, then dry. Newest first, the first row is 2026-05-10
    # 23:50Z, and read as a stream every row more than 7 days (1008 steps) older than
    # it, steps 0..430, was too old: the storm with them.
    rows = ten_minute_counter(10)
    ascending = write(tmp_path / "up.csv", "ts,site,sensor,tips_total", rows)
    newest_first = write(tmp_path / "down.csv", "ts,site,sensor,tips_total", rows[::-1])

    up = events(stormwatch("replay", "--config", str(cfg), "--input", str(ascending)))
    down = stormwatch("replay", "--config", str(cfg), "--input", str(newest_first))
    assert down.stderr == ""  # nothing refused
    assert without_revision(events(down)) == without_revision(up)
    (q,) = of(events(down), "storm_qualified")
    assert (q["gauge"], q["started_at"], q["qualified_at"], q["total_in"]) == (
        "rg1", "2026-05-01T10:10:00Z", "2026-05-01T10:50:00Z", 0.5)
    (end,) = of(events(down), "storm_ended")
    assert (end["ended_at"], end["total_in"]) == ("2026-05-01T11:00:00Z", 0.6)

    (storm,) = events(stormwatch("backtest", "--config", str(cfg), "--input", str(newest_first)))
    assert (storm["started_at"], storm["qualified_at"], storm["ended_at"], storm["total_in"]) == (
        "2026-05-01T10:10:00Z", "2026-05-01T10:50:00Z", "2026-05-01T11:00:00Z", 0.6)

    # --arrival-order: the rows as a daemon would have met them, today's behaviour.
    arrived = stormwatch("replay", "--config", str(cfg), "--input", str(newest_first),
                         "--arrival-order")
    assert of(events(arrived), "storm_qualified") == []
    assert arrived.stderr.splitlines()[0] == "replay: 1440 rows, 431 rejected (too_old 431)"


def test_a_typo_in_a_year_is_refused_alone(cfg: Path, tmp_path: Path) -> None:
    # Two days of the counter; step 54 (09:00Z on May 1, before the rain) typed as 2027,
    # a turbidity row, and the inspection the next morning at 06:30 EDT (10:30Z), within
    # the 24 h of the storm qualified at 10:50Z. Read as a stream, the 2027 row was the
    # newest and every row after it "too old": no storm, no inspection, exit 0.
    rows = ten_minute_counter(2)
    rows[54] = rows[54].replace("2026-05-01", "2027-05-01")
    csv = write(tmp_path / "typo.csv", "ts,site,sensor,tips_total,ntu,inspector", [
        f"{r},," for r in rows] + [f"2026-05-01T12:00:00Z,{SITE},tb-up,,4.2,",
                                   f"2026-05-02T06:30:00-04:00,{SITE},inspection,,,J. Rivera"])
    for command in ("replay", "backtest"):
        out = stormwatch(command, "--config", str(cfg), "--input", str(csv))
        assert out.returncode == 0, out.stderr
        lines = out.stderr.splitlines()
        assert lines[0] == f"{command}: 290 rows, 1 rejected (future_timestamp 1)"
        assert lines[1].startswith("  row 56: future_timestamp: ts: ")
        assert lines[2].startswith("  future_timestamp: later than the time of this run")
    found = events(stormwatch("replay", "--config", str(cfg), "--input", str(csv)))
    (q,) = of(found, "storm_qualified")
    assert q["qualified_at"] == "2026-05-01T10:50:00Z"
    (closed,) = [e for e in of(found, "clock_closed") if e["clock"] == "storm"]
    assert (closed["inspected_at"], closed["outcome"]) == ("2026-05-02T10:30:00Z", "met")
    table = stormwatch("replay", "--config", str(cfg), "--input", str(csv), "--format", "table")
    assert "Storms (1, 1 qualifying)" in table.stdout
    assert "rejected 1 (future_timestamp 1)" in table.stdout


# --------------------------------------------------------------------------- no zone


def local_stamp(k: int) -> str:
    """Step k as a logger on New York's clock writes it, without an offset (EDT in May:
    10:10Z is 06:10)."""
    hours, minutes = divmod(k * 10 - 4 * 60, 60)
    day, hour = divmod(hours, 24)
    return f"2026-{'04-30' if day < 0 else f'05-{1 + day:02d}'}T{hour % 24:02d}:{minutes:02d}:00"


def test_times_without_an_offset_are_refused_unless_a_zone_is_given(cfg: Path,
                                                                    tmp_path: Path) -> None:
    # One day of the counter on the logger's local clock. backtest read such times as
    # UTC (a storm 4 h off, at 06:50Z); replay refused them. Both refuse them now, and
    # with the zone both find the storm at 06:50 EDT = 10:50Z.
    csv = write(tmp_path / "local.csv", "ts,site,sensor,tips_total",
                ten_minute_counter(1, local_stamp))
    for command in ("replay", "backtest"):
        out = stormwatch(command, "--config", str(cfg), "--input", str(csv))
        assert out.returncode == 1 and out.stdout == ""
        lines = out.stderr.splitlines()
        assert lines[0] == f"{command}: 144 rows, 144 rejected (no_timezone 144)"
        assert lines[1] == ("  row 2: no_timezone: ts: '2026-04-30T20:00:00' has no UTC offset"
                            " (Z or +hh:mm)")
        assert "--timezone ZONE" in lines[-2]
        assert lines[-1] == (f"stormwatch {command}: {csv}: no row taken: every one of its 144"
                             " rows was refused")
    for zone in ("America/New_York", "site"):
        found = events(stormwatch("replay", "--config", str(cfg), "--input", str(csv),
                                  "--timezone", zone))
        (q,) = of(found, "storm_qualified")
        assert (q["started_at"], q["qualified_at"]) == ("2026-05-01T10:10:00Z",
                                                        "2026-05-01T10:50:00Z")
        (storm,) = events(stormwatch("backtest", "--config", str(cfg), "--input", str(csv),
                                     "--timezone", zone))
        assert (storm["started_at"], storm["qualified_at"]) == (q["started_at"],
                                                                q["qualified_at"])


def test_a_local_time_the_clocks_repeat_or_skip_is_refused(cfg: Path, tmp_path: Path) -> None:
    # New York's clocks go back at 02:00 EDT on 2026-11-01 (01:30 comes twice) and
    # forward at 02:00 EST on 2026-03-08 (02:30 never comes).
    csv = write(tmp_path / "dst.csv", "ts,site,sensor,ntu", [
        f"2026-11-01T00:30:00,{SITE},tb-up,3.0", f"2026-11-01T01:30:00,{SITE},tb-up,3.1",
        f"2026-11-01T02:30:00,{SITE},tb-up,3.2", f"2026-03-08T02:30:00,{SITE},tb-up,3.3"])
    out = stormwatch("replay", "--config", str(cfg), "--input", str(csv), "--timezone", "site")
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines()[:3] == [
        "replay: 4 rows, 2 rejected (no_timezone 2)",
        "  row 3: no_timezone: ts: '2026-11-01T01:30:00' comes twice in America/New_York (the"
        " hour the clocks go back): give its offset",
        "  row 5: no_timezone: ts: '2026-03-08T02:30:00' never comes in America/New_York (the"
        " hour the clocks skip): give its offset"]


def test_a_zone_that_is_none_is_one_line(cfg: Path, tmp_path: Path) -> None:
    csv = write(tmp_path / "x.csv", "ts,site,sensor,ntu", [f"2026-05-01T00:00:00Z,{SITE},tb-up,3"])
    for command in ("replay", "backtest"):
        out = stormwatch(command, "--config", str(cfg), "--input", str(csv),
                         "--timezone", "Mars/Olympus_Mons")
        assert out.returncode == 2 and out.stdout == ""
        assert out.stderr == (f"stormwatch {command}: --timezone: 'Mars/Olympus_Mons' is neither"
                              " an IANA time zone (America/New_York; Etc/GMT+5 for a logger on"
                              " standard time all year) nor 'site'\n")


def test_a_file_that_gives_nothing_exits_1(cfg: Path, tmp_path: Path) -> None:
    empty = write(tmp_path / "empty.csv", "ts,site,sensor,tips_total", [])
    for command in ("replay", "backtest"):
        out = stormwatch(command, "--config", str(cfg), "--input", str(empty))
        assert (out.returncode, out.stdout) == (1, "")
        assert out.stderr == (f"stormwatch {command}: {empty}: no row taken: it has no rows"
                              " below its header\n")


# --------------------------------------------------------------------------- backtest reads it


def per_tip_rows(column: bool) -> tuple[str, list[str]]:
    """45 tips 2 minutes apart from 12:00Z (0.45 in); the 1st, 6th ... 26th each followed
    1 s later by a double tip (6); one more tip 2 s after the last (a real one): 46 tips,
    0.46 in, 52 rows. With a ``tips`` column of 1, or without any counter column."""
    times = []
    for k in range(45):
        times.append(12 * 3600 + k * 120)
        if k % 5 == 0 and k <= 25:
            times.append(12 * 3600 + k * 120 + 1)
    times.append(12 * 3600 + 44 * 120 + 2)
    stamps = [f"2026-05-01T{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}Z" for s in times]
    if column:
        return "ts,site,sensor,tips", [f"{t},{SITE},rg1,1" for t in stamps]
    return "ts,site,sensor,ntu", [f"{t},{SITE},rg1," for t in stamps]


@pytest.mark.parametrize("column", [True, False], ids=["tips-column", "rows-without-counter"])
def test_backtest_reads_a_per_tip_export_as_replay_does(cfg: Path, tmp_path: Path,
                                                        column: bool) -> None:
    # backtest said "skipped bad_value 52", no storms, exit 0. The 6 double tips are
    # dropped (debounce_s 1): 46 tips, 0.46 in, a storm from 12:00Z that does not
    # qualify and is still open at the last tip (the file's end).
    header, rows = per_tip_rows(column)
    csv = write(tmp_path / "tips.csv", header, rows)
    out = stormwatch("backtest", "--config", str(cfg), "--input", str(csv))
    (storm,) = events(out)
    assert (storm["started_at"], storm["ended_at"], storm["qualified"], storm["total_in"]) == (
        "2026-05-01T12:00:00Z", None, False, 0.46)
    assert out.stderr.splitlines()[0] == (
        f"backtest: {SITE}/rg1: 52 per-tip row(s), 6 double tip(s) dropped (debounce_s)")
    played = events(stormwatch("replay", "--config", str(cfg), "--input", str(csv)))
    (started,) = of(played, "storm_started")
    assert started["started_at"] == storm["started_at"] and of(played, "storm_qualified") == []
    # Reversed (newest first), the same tips are the doubles: the same storm.
    backwards = write(tmp_path / "back.csv", header, rows[::-1])
    assert events(stormwatch("backtest", "--config", str(cfg), "--input", str(backwards))) == [
        storm]

    # Counted (debounce_s 0), the doubles make it 0.50 in at the 50th, 13:26Z.
    cfg.write_text(cfg.read_text().replace("in_per_tip: 0.01", "in_per_tip: 0.01, debounce_s: 0"))
    (counted,) = events(stormwatch("backtest", "--config", str(cfg), "--input", str(csv)))
    assert (counted["qualified_at"], counted["q_total_in"]) == ("2026-05-01T13:26:00Z", 0.5)


def test_what_backtest_cannot_take_is_one_line_and_exit_2(cfg: Path, tmp_path: Path) -> None:
    mixed = write(tmp_path / "mixed.csv", "ts,site,sensor,tips_total,precip_in", [
        f"2026-05-01T10:00:00Z,{SITE},rg1,100,", f"2026-05-01T10:10:00Z,{SITE},rg1,,0.2"])
    out = stormwatch("backtest", "--config", str(cfg), "--input", str(mixed))
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == (f"stormwatch backtest: gauge rg1 of site {SITE} has counter rows"
                          " (tips_total) and depth rows (precip_in, or a row per tip): backtest"
                          " takes one form a gauge (replay reads both)\n")
    assert stormwatch("replay", "--config", str(cfg), "--input", str(mixed)).returncode == 0
    no_rain = write(tmp_path / "turbid.csv", "ts,site,sensor,ntu",
                    [f"2026-05-01T10:00:00Z,{SITE},tb-up,3.5"])
    out = stormwatch("backtest", "--config", str(cfg), "--input", str(no_rain))
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == (f"stormwatch backtest: {no_rain}: no rain row of a configured gauge"
                          " among the 1 rows taken: backtest finds storms only (replay reads"
                          " the rest)\n")

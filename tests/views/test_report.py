"""``stormwatch report`` (README.md, "Commands"): an HTML compliance report with inline plots."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from monitor.config.file import load_config
from monitor.contract.inputs import Inspection, Reading
from monitor.contract.times import MS_PER_MINUTE, iso, parse_iso
from monitor.host.engine import EngineHost
from monitor.host.rows import journal_in
from monitor.store.opening import open_store
from monitor.views.report.build import engine_series

from ..support.daemonkit import write_config

ROOT = Path(__file__).resolve().parents[2]
SITE = "branch-meadows"


START = parse_iso("2026-05-01T12:00:00Z")


def _write_config(tmp_path: Path) -> Path:
    # The daemon tests' site; the name tests HTML escaping. No broker is used.
    return write_config(tmp_path, 1883, name="Branch Meadows <Subdivision>",
                        address="1 Meadow Lane, Branch NY")


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    """A state directory holding a 0.6 in storm, trap and turbidity readings and an
    inspection, run through the real engine (no broker)."""
    path = _write_config(tmp_path)
    config = load_config(path, env={})
    items: list[Reading | Inspection] = []
    total = 0
    for m in range(600):  # a counter every minute for 10 h; 60 tips in minutes 60..119
        if 60 <= m < 120:
            total += 1
        items.append(Reading(site=SITE, sensor="rg1", kind="rain",
                             ts_ms=START + m * MS_PER_MINUTE, tips_total=total))
    for i, depth in enumerate((6.0, 6.5, 7.0, 9.0, 10.0, 10.5)):
        items.append(Reading(site=SITE, sensor="trap1-depth", kind="sediment",
                             ts_ms=START + i * 90 * MS_PER_MINUTE, depth_in=depth))
    for i, (up, down) in enumerate(((5.0, 6.0), (5.0, 12.0), (6.0, 20.0), (5.0, 7.0))):
        ts = START + (60 + i * 30) * MS_PER_MINUTE
        items.append(Reading(site=SITE, sensor="tb-up", kind="turbidity", ts_ms=ts, ntu=up))
        items.append(Reading(site=SITE, sensor="tb-down", kind="turbidity", ts_ms=ts + 1000,
                             ntu=down))
    items.append(Inspection(site=SITE, inspector="J. Rivera, CPESC",
                            ts_ms=parse_iso("2026-05-02T10:00:00Z"), kind="storm",
                            notes="silt fence <east> repaired"))
    items.sort(key=lambda it: it.ts_ms)
    with open_store(config) as store:
        host = EngineHost.restore(config, store)
        store.journal.commit([journal_in(it, topic=None, received_ms=None) for it in items])
        host.catch_up()
    return path


def _report(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "monitor.cli", "report", "--config", str(cfg), *args],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"})


def test_report_has_storm_inspection_and_plots(cfg: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    proc = _report(cfg, "--site", SITE, "--from", "2026-05-01", "--to", "2026-05-03",
                   "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    html = out.read_text(encoding="utf-8")
    assert "Branch Meadows &lt;Subdivision&gt;" in html
    assert "<Subdivision>" not in html
    assert "silt fence &lt;east&gt; repaired" in html
    assert "0.60 in" in html
    # Tip 50 falls in minute 109: qualified 13:49 UTC, due 24 h later, shown in New York time.
    due = datetime.fromtimestamp(parse_iso("2026-05-02T13:49:00Z") / 1000,
                                 tz=ZoneInfo("America/New_York"))
    assert due.strftime("%Y-%m-%d %H:%M %Z") == "2026-05-02 09:49 EDT"
    assert "2026-05-02 09:49 EDT" in html
    assert '<span class="met">met</span>' in html
    assert html.count("data:image/png;base64,") >= 3  # rain, trap fill, turbidity
    assert "§ 134-9A(2)" in html and "§ 134-9A(1)" in html and "§ 134-8C" in html


def test_period_without_the_storm(cfg: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    proc = _report(cfg, "--site", SITE, "--from", "2026-06-01T00:00:00-04:00",
                   "--to", "2026-06-02", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "No storms in the period." in out.read_text(encoding="utf-8")


def test_no_database_is_refused_and_no_report_written(tmp_path: Path) -> None:
    cfg = _write_config(tmp_path)
    out = tmp_path / "r.html"
    proc = _report(cfg, "--site", SITE, "--from", "2026-05-01", "--to", "2026-05-01",
                   "--out", str(out))
    # An empty report would read as "nothing happened".
    assert proc.returncode == 2, proc.stderr
    assert "no database" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize(("args", "words"), [
    (("--site", "nowhere", "--from", "2026-05-01", "--to", "2026-05-02"), "unknown site"),
    (("--site", SITE, "--from", "2026-13-01", "--to", "2026-05-02"), "--from"),
    (("--site", SITE, "--from", "2026-05-01", "--to", "yesterday"), "--to"),
    (("--site", SITE, "--from", "2026-05-03", "--to", "2026-05-01"), "not before"),
])
def test_bad_usage_is_exit_2_one_line(cfg: Path, tmp_path: Path, args: tuple[str, ...],
                                      words: str) -> None:
    proc = _report(cfg, *args, "--out", str(tmp_path / "r.html"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and words in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "r.html").exists()


def test_unwritable_out_is_exit_2(cfg: Path, tmp_path: Path) -> None:
    proc = _report(cfg, "--site", SITE, "--from", "2026-05-01", "--to", "2026-05-02",
                   "--out", str(tmp_path / "missing-dir" / "r.html"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "--out" in proc.stderr


def test_the_plots_show_what_the_alerts_were_decided_on(tmp_path: Path) -> None:
    """A trap with a one-off echo and a pair whose upstream probe falls silent: the
    report's series are the engine's own (after the median; paired only with a
    usable background), so a plot cannot contradict an alert."""
    path = _write_config(tmp_path)
    config = load_config(path, env={})
    items: list[Reading | Inspection] = []
    depths = [20.0, 20.5, 21.0, 60.0, 21.5, 22.0, 31.0, 32.0, 33.0, 33.5, 34.0]  # 60: an echo
    for i, depth in enumerate(depths):
        items.append(Reading(site=SITE, sensor="trap1-depth", kind="sediment",
                             ts_ms=START + i * 10 * MS_PER_MINUTE, depth_in=depth))
    for m in range(0, 180, 5):
        ts = START + m * MS_PER_MINUTE
        if m < 60:  # the upstream probe stops after an hour
            items.append(Reading(site=SITE, sensor="tb-up", kind="turbidity", ts_ms=ts, ntu=5.0))
        items.append(Reading(site=SITE, sensor="tb-down", kind="turbidity", ts_ms=ts + 1000,
                             ntu=25.0 if 30 <= m < 60 else 6.0))
    items.sort(key=lambda it: it.ts_ms)
    with open_store(config) as store:
        host = EngineHost.restore(config, store)
        store.journal.commit([journal_in(it, topic=None, received_ms=None) for it in items])
        host.catch_up()
        host.engine.tick(START + 4 * 60 * MS_PER_MINUTE)
        events = [e.to_json() for e in host.engine.current_events()]
        series = engine_series(config, store, SITE, START, START + 6 * 60 * MS_PER_MINUTE)

    traps = {s.ts_ms: s for s in series.traps["trap-1"]}
    echo_at = START + 3 * 10 * MS_PER_MINUTE
    # The 39 in step to 60 is held, then (back at 21.5 in) a sensor fault: it
    # never reaches the median, so the plot has no point at it.
    assert echo_at not in traps
    assert traps[echo_at + 10 * MS_PER_MINUTE].depth_in == 20.75  # median of 20 .. 21.5
    assert [(e["type"], e["at"], e["value"]) for e in events if e["type"] == "sensor_fault"] \
        == [("sensor_fault", iso(echo_at), 60.0)]
    fill_alerts = [e for e in events if e["type"] in ("trap_fill", "trap_cleanout_required")]
    assert fill_alerts
    for alert in fill_alerts:
        sample = traps[parse_iso(alert["at"])]
        assert round(sample.fill_fraction, 4) == alert["fill_fraction"]
        assert sample.depth_in == alert["depth_in"]

    contrast = {s.ts_ms: s for s in series.contrast["outfall-1"]}
    (exceeded,) = [e for e in events if e["type"] == "turbidity_contrast"
                   and e["state"] == "exceeded"]
    plotted = contrast[parse_iso(exceeded["at"])]
    assert (plotted.upstream_ntu, plotted.delta_ntu, plotted.limit_ntu) == (
        exceeded["upstream_ntu"], exceeded["delta_ntu"], exceeded["limit_ntu"])
    # An hour after the upstream probe went quiet there is no background: the plot
    # has a gap there, as the rule has no contrast (it raised background_missing).
    late = [s for t, s in contrast.items() if t > START + 125 * MS_PER_MINUTE]
    assert late and all(not s.background and s.delta_ntu is None for s in late)
    assert any(e["type"] == "background_missing" for e in events)


def test_the_turbidity_section_says_when_the_contrast_could_not_be_checked(
        tmp_path: Path) -> None:
    """The downstream probe silent for 13 hours is a line of the turbidity
    section (not monitored, then monitored again), and still unknown at the time of
    the report is a line of its own."""
    path = _write_config(tmp_path)
    config = load_config(path, env={})
    # Every 10 minutes for a day from May 1 12:00 UTC; tb-down silent 13:00 to 02:00.
    # Its stale_after_minutes is 600 in this configuration: last reading 12:50, stale
    # 22:50, unknown two hours later at 00:50 UTC May 2 (20:50 EDT May 1), known again
    # at 02:00 UTC (22:00 EDT). Its last reading, May 2 11:50 UTC, is stale 600 minutes
    # later, 21:50 UTC (17:50 EDT): long before this report is made.
    items = []
    for i in range(24 * 6):
        t = START + i * 10 * MS_PER_MINUTE
        items += [Reading(site=SITE, sensor="rg1", kind="rain", ts_ms=t, tips_total=0),
                  Reading(site=SITE, sensor="tb-up", kind="turbidity", ts_ms=t, ntu=5.0)]
        if not parse_iso("2026-05-01T13:00:00Z") <= t < parse_iso("2026-05-02T02:00:00Z"):
            items.append(Reading(site=SITE, sensor="tb-down", kind="turbidity", ts_ms=t,
                                 ntu=6.0))
    with open_store(config) as store:
        host = EngineHost.restore(config, store)
        store.journal.commit([journal_in(it, topic=None, received_ms=None) for it in items])
        host.catch_up()
    out = tmp_path / "report.html"
    proc = _report(path, "--site", SITE, "--from", "2026-05-01", "--to", "2026-05-03",
                   "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    html = out.read_text(encoding="utf-8")
    section = html.split("<h2>Turbidity episodes</h2>", 1)[1].split("<h2>", 1)[0]
    assert ("<td>2026-05-01 20:50 EDT</td><td>outfall-1</td><td><span class=\"not monitored"
            "\">not monitored</span></td><td>contrast unknown (no readings from the "
            "downstream probe); still checked: nothing of the pair</td><td>2026-05-01 18:50 "
            "EDT</td>") in section
    assert ("<td>2026-05-01 22:00 EDT</td><td>outfall-1</td><td><span class=\"monitored "
            "again\">monitored again</span></td><td>contrast unknown 2026-05-01 18:50 EDT to "
            "2026-05-01 22:00 EDT (no readings from the downstream probe)</td>") in section
    assert ("At the time of this report the contrast at outfall-1 is unknown since "
            "2026-05-02 17:50 EDT (no readings from the downstream probe): § 134-8C is not "
            "being checked.") in section

"""The report asks the engine: what it plots, totals and concludes is what the alerts saw.

A ``gauges: mean`` site is judged on the mean of its live gauges: the report's
storms, running totals and rain plot are the mean gauge's, not one real gauge
that alone would have qualified. A storm's outcome is judged at the instant
the engine judged the clocks, like the open clocks beside it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.config import Config
from monitor.config.file import load_config
from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE, parse_iso
from monitor.engine import hourly_rain, judged_rain
from monitor.host.engine import EngineHost
from monitor.host.rows import journal_in
from monitor.store.opening import open_store
from monitor.views.report.build import build_report, engine_series

from ..support.daemonkit import SITE, write_config
from ..support.reportkit import table_cells

START = parse_iso("2026-05-01T12:00:00Z")
MEAN_SITE = """\
broker: {{host: 127.0.0.1, port: 1, client_id: test}}
state_dir: {state}
sites:
  - id: {site}
    name: Two Gauges
    timezone: America/New_York
    condition: B
    rain: {{gauges: mean}}
    sensors:
      - {{id: g1, kind: rain, in_per_tip: 0.01, stale_after_minutes: 600}}
      - {{id: g2, kind: rain, in_per_tip: 0.01, stale_after_minutes: 600}}
"""


def _mean_site(tmp_path: Path, minutes: int, tick_ms: int) -> tuple[Config, list[str]]:
    """g1 tips 60 times (0.60 in) in minutes 60..119 while g2, live, stays dry: the mean of
    the two is 0.30 in, below the 0.5 in threshold. Returns the config and the types of
    the engine's events (the alerts)."""
    path = tmp_path / "stormwatch.yaml"
    path.write_text(MEAN_SITE.format(state=tmp_path / "state", site=SITE))
    config = load_config(path, env={})
    items = []
    total = 0
    for m in range(minutes):
        total += 1 if 60 <= m < 120 else 0
        at = START + m * MS_PER_MINUTE
        items.append(Reading(site=SITE, sensor="g1", kind="rain", ts_ms=at, tips_total=total))
        items.append(Reading(site=SITE, sensor="g2", kind="rain", ts_ms=at + 1000,
                             tips_total=0))
    with open_store(config) as store:
        host = EngineHost.restore(config, store, clock=lambda: tick_ms / 1000)
        store.journal.commit([journal_in(it, topic=None, received_ms=None) for it in items])
        host.catch_up()
        host.tick()
        types = [e.type for e in host.engine.current_events()]
    return config, types


def test_a_mean_site_reports_the_storm_its_alerts_were_decided_on(tmp_path: Path) -> None:
    config, alerts = _mean_site(tmp_path, 300, START + 20 * MS_PER_HOUR)
    site = config.sites[0]
    # The rule: the mean storm (0.30 in) did not qualify, so no alert and no clock.
    assert "storm_qualified" not in alerts and "storm_ended" in alerts
    with open_store(config) as store:
        series = engine_series(config, store, SITE, START, START + 24 * MS_PER_HOUR)
        html = build_report(config, store, SITE, START, START + 24 * MS_PER_HOUR,
                            START + 20 * MS_PER_HOUR)
    # The plot's data is the mean gauge's: 0.005 in per tip of g1, 0.30 in in 13:00 UTC.
    judged = judged_rain(site, series.storms)
    assert list(judged) == ["mean"]
    assert [(h, round(inch, 6)) for h, inch in hourly_rain(judged["mean"]) if inch] == [
        (START + MS_PER_HOUR, 0.3)]
    assert 'alt="Hourly rain and storm running total as the storm rule judged it (gauges: ' \
           'mean); highest storm total: mean of the live gauges 0.30 in; threshold 0.5 in; ' \
           'time axis: local date and time, America/New_York (EDT)"' \
           in html
    # One storm of the site, the mean's, not qualified; g1's own 0.60 in is not the site's.
    summary = dict((k, v) for k, v in table_cells(html, "Summary"))
    assert summary["Storms"] == "1 (0 qualified, ≥ 0.5 in)"
    assert summary["Storm inspections"] == "0 met, 0 late, 0 open (0 overdue)"
    (storm,) = table_cells(html, "Storms")
    assert (storm[2], storm[4], storm[-1]) == ("0.30 in", "—", "not qualified")
    assert "informational" not in html


def test_an_open_storm_of_a_mean_site_shows_the_means_running_total(tmp_path: Path) -> None:
    # Still raining at the end of the data (minute 99): 40 tips of g1, a mean of 0.20 in.
    config, alerts = _mean_site(tmp_path, 100, START + 100 * MS_PER_MINUTE)
    assert "storm_started" in alerts and "storm_ended" not in alerts
    with open_store(config) as store:
        html = build_report(config, store, SITE, START, START + 24 * MS_PER_HOUR,
                            START + 100 * MS_PER_MINUTE)
    (storm,) = table_cells(html, "Storms")
    assert (storm[1], storm[2]) == ("—", "0.20 in (running)")


@pytest.mark.parametrize("engine_ahead_h", [30, 0])
def test_a_storms_outcome_is_judged_when_the_engine_judged_its_clock(
        tmp_path: Path, engine_ahead_h: int) -> None:
    """A demo's engine runs 30 h ahead of the report's wall clock: the storm's clock, due
    24 h after it qualified, is overdue where the engine judged it, so the storms table,
    the summary and the duties owed all say overdue (and all say open without the lead)."""
    path = write_config(tmp_path, 1)
    config = load_config(path, env={})
    total, items = 0, []
    for m in range(220):  # 0.60 in in minutes 60..119; tip 50 at minute 109
        total += 1 if 60 <= m < 120 else 0
        items.append(Reading(site=SITE, sensor="rg1", kind="rain",
                             ts_ms=START + m * MS_PER_MINUTE, tips_total=total))
    qualified = START + 109 * MS_PER_MINUTE
    wall = qualified + 2 * MS_PER_HOUR
    engine_now = wall + engine_ahead_h * MS_PER_HOUR
    with open_store(config) as store:
        host = EngineHost.restore(config, store, clock=lambda: engine_now / 1000)
        store.journal.commit([journal_in(it, topic=None, received_ms=None) for it in items])
        host.catch_up()
        host.tick()
        overdue_alerts = [e for e in host.engine.current_events()
                          if e.type == "inspection_overdue"]
        html = build_report(config, store, SITE, START, START + 48 * MS_PER_HOUR, wall)
    word = "overdue" if engine_ahead_h else "open"
    assert bool(overdue_alerts) == bool(engine_ahead_h)
    (storm,) = table_cells(html, "Storms")
    assert storm[-1] == word
    summary = dict((k, v) for k, v in table_cells(html, "Summary"))
    assert summary["Storm inspections"] == (
        f"0 met, 0 late, 1 open ({1 if engine_ahead_h else 0} overdue)")
    clock = next(c for c in table_cells(html, "Outstanding at the end of the period")
                 if c[0].startswith("Storm inspection"))
    assert clock[3] == ("overdue by 8.0 h" if engine_ahead_h else "open, 22.0 h left")

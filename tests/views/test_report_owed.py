"""The report a qualified professional would sign: what is still owed, by name.

May 2026 at a Condition B site, active from May 1, ticked to June 1 04:00 UTC
(the end of the period): one inspection on May 3 (16:00 EDT) asking for two
corrective actions and never followed by another; a sediment trap at 53 % of
its design volume from May 10 on, never cleaned; a turbidity exceedance on
May 30 that never cleared. Every one of these is listed at the end of the
period with what, since when, due, how late and its section, every time in
New York time, the turbidity episode with its peak; and a report made before
its events (a demo's clock) says so.
"""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest

from monitor.config import Config
from monitor.config.file import load_config
from monitor.contract.times import parse_iso
from monitor.store.opening import open_store
from monitor.views.report.build import build_report
from monitor.views.report.tables import LocalTime

from ..support.daemonkit import SITE
from ..support.reportkit import FROM, TO, month_site, table_cells


@pytest.fixture
def site(tmp_path: Path) -> Config:
    return load_config(month_site(tmp_path), env={})


def _report(config: Config, now_ms: int = TO) -> str:
    with open_store(config) as store:
        return build_report(config, store, SITE, FROM, TO, now_ms)


def test_every_duty_outstanding_at_the_end_is_listed(site: Config) -> None:
    owed = table_cells(_report(site), "Outstanding at the end of the period")
    assert owed == [
        ["Corrective action ca-1: re-trench silt fence north (asked by J. Rivera)",
         "2026-05-03 16:00 EDT", "2026-05-07 00:00 EDT", "overdue by 25.0 days",
         "§ 134-9A(1)"],
        # Due at the end of the local day 7 calendar days after the inspection's (May 10
        # 23:59:59.999 EDT); the period's last instant (June 1 00:00 EDT less 1 ms) is
        # 21 days later, in the fourth week missed (weeks from May 10, 17, 24 and 31).
        ["Routine inspection (every 7 calendar days): the week of May 3",
         "2026-05-03 16:00 EDT", "2026-05-10 23:59 EDT",
         "overdue by 21.0 days; 4 week(s) missed (§ 134-12D: each a separate violation)",
         "§ 134-9A(2)"],
        ["Remove sediment from trap trap-1: clean-out demanded and not done; 53% of design "
         "volume at its last reading (2026-05-20 08:00 EDT), clean-out at 50%",
         "2026-05-10 12:00 EDT", "—", "overdue (standing since 21.5 days)", "§ 134-9A(1)"],
        ["Turbidity contrast at outfall-1 exceeded and not cleared (against background)",
         "2026-05-30 10:05 EDT", "—", "overdue (standing since 37.9 h)", "§ 134-8C"],
        ["Corrective action ca-2: seed the stockpile (asked by J. Rivera)",
         "2026-05-03 16:00 EDT", "2026-06-10 00:00 EDT", "open, 9.0 days left", "§ 134-9A(1)"],
    ]


def test_a_turbidity_episode_gives_its_peak(site: Config) -> None:
    html = _report(site)
    section = html.split("<h2>Turbidity episodes</h2>", 1)[1].split("</table>", 1)[0]
    (episode,) = table_cells("<h2>E" + section, "E")
    # Pair, state, basis, started, detected, Δ at detection, peak at, up, down, Δ, limit.
    assert episode[:3] == ["outfall-1", "exceeded", "background"]
    assert episode[3] == "2026-05-30 10:05 EDT"
    assert episode[6:11] == ["2026-05-30 10:20 EDT", "5", "50", "45", "5"]
    assert episode[5] != "45"  # detected before the peak: the difference then was less
    assert episode[11] == "not cleared"


def test_every_time_shown_is_local_with_its_zone(site: Config) -> None:
    text = unescape(re.sub(r"<[^>]+>", " ", _report(site)))
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d|\d{8}T\d{6}Z", text)
    assert "the week of May 3" in text


def test_a_report_generated_before_its_events_says_so(site: Config) -> None:
    ahead = _report(site, now_ms=parse_iso("2026-05-15T12:00:00Z"))
    rows = dict(row for row in _header_rows(ahead))
    assert rows["Generated at"] == "2026-05-15 08:00 EDT"
    assert rows["Generated before its events"].startswith(
        "this report was generated at 2026-05-15 08:00 EDT, before 2026-06-01 00:00 EDT")
    assert "Generated before its events" not in dict(_header_rows(_report(site)))
    # A node's clock a few seconds fast is not a report made before its events.
    assert "Generated before its events" not in dict(_header_rows(
        _report(site, now_ms=TO - 30_000)))


def test_a_period_not_yet_ended_is_judged_where_the_engine_judged_it(site: Config) -> None:
    with open_store(site) as store:
        html = build_report(site, store, SITE, FROM, parse_iso("2026-07-01T04:00:00Z"), TO)
    section = html.split("<h2>Outstanding at the end of the period</h2>", 1)[1]
    assert section.startswith(
        "<p>Duties still owed as of 2026-06-01 00:00 EDT, where the engine last judged the "
        "site: the period ends 2026-07-01 00:00 EDT.</p>")
    # The same duties as at June 1: ca-2 still has 9 days left.
    assert table_cells(html, "Outstanding at the end of the period")[-1][3] == "open, 9.0 days left"


def _header_rows(html: str) -> list[tuple[str, str]]:
    head = html.split("<h2>", 1)[0]
    return [(unescape(re.sub(r"<[^>]+>", "", a)), unescape(re.sub(r"<[^>]+>", "", b)))
            for a, b in re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", head)]


def test_plot_time_axes_name_dates_and_the_zone(site: Config) -> None:
    html = _report(site)
    assert "<p>Time axes: local date and time, America/New_York (EDT).</p>" in html
    alts = re.findall(r'<img alt="([^"]*)"', html)
    assert len(alts) == 2  # trap and turbidity (no rain readings: no rain plot)
    assert all(a.endswith("time axis: local date and time, America/New_York (EDT)")
               for a in alts)
    # A period across the end of daylight time names both abbreviations.
    local = LocalTime(site.sites[0])
    assert local.zone_words(parse_iso("2026-10-31T12:00:00Z"),
                            parse_iso("2026-11-02T12:00:00Z")) == "America/New_York (EDT/EST)"

"""Two consecutive weekly reports over one month of data.

A report for ``[from, to)`` counts only the events of the period, judges what
is owed at ``to`` (never at the time it is generated, a month later), counts a
storm in the period in which it qualified, and its summary and its duties
table read one list, so they agree.

May 2026 at a Condition B site in New York, active from May 1 (a Friday):

* routine inspection by J. Rivera on Tue May 5, 10:00 EDT (14:00 UTC): it meets
  the first routine clock (begun May 1 00:00 EDT, due a week later) and starts
  the next, due a week after May 5 10:00 EDT;
* a storm from Sun May 10, 21:30 EDT: one tip (0.01 in) every 2 minutes, so
  the 50th tip, 98 minutes after the first, is 0.50 in at 23:08 EDT: it
  qualifies late on the last evening of week 1 (May 11 03:08 UTC: already the
  next day in UTC), due 24 h later, May 11 23:08 EDT; it rains on to tip 60
  (23:28 EDT), then ten more tips from 00:10 to 00:28 EDT on May 11, within the
  6-hour dry gap: one storm of 0.70 in that ends in week 2;
* storm inspection by J. Rivera on Mon May 11, 15:00 EDT (19:00 UTC): it meets the
  storm clock and the routine clock of May 5, and starts the next routine
  clock; nothing after it to the end of the month.

Week 1 is May 4 to May 10 (ends May 11 00:00 EDT), week 2 May 11 to May 17
(ends May 18 00:00 EDT); both are generated on the same day, long after.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import unescape
from pathlib import Path

import pytest

from monitor.config import Config
from monitor.contract.inputs import Inspection, Reading
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE, parse_iso
from monitor.store.opening import open_store
from monitor.views.report.build import build_report, parse_bound

from ..support.commandkit import stormwatch
from ..support.reportkit import table_cells
from ..support.webkit import OFFICER, SITE, client_for, recorded_web_site, sign_in

H, M = MS_PER_HOUR, MS_PER_MINUTE
WEEK_1, WEEK_2 = ("2026-05-04", "2026-05-10"), ("2026-05-11", "2026-05-17")
#: The sections a person reads the period's facts from.
SECTIONS = ("Summary", "Outstanding at the end of the period", "Storms", "Inspections",
            "Corrective actions")


def month_items() -> list[Reading | Inspection]:
    start, end = parse_iso("2026-05-01T04:00:00Z"), parse_iso("2026-06-01T04:00:00Z")
    tips = [parse_iso("2026-05-11T01:30:00Z") + 2 * k * M for k in range(60)]
    tips += [parse_iso("2026-05-11T04:10:00Z") + 2 * k * M for k in range(10)]
    # The gauge's counter every 4 hours when dry (well inside its 600-minute
    # stale_after), and at each tip.
    items: list[Reading | Inspection] = []
    total = 0
    for at in sorted(set(range(start, end, 4 * H)) | set(tips)):
        total += at in tips
        items.append(Reading(site=SITE, sensor="rg1", kind="rain", ts_ms=at, tips_total=total))
    routine, storm = parse_iso("2026-05-05T14:00:00Z"), parse_iso("2026-05-11T19:00:00Z")
    items.append(Inspection(site=SITE, inspector="J. Rivera", ts_ms=routine, kind="routine",
                            entered_ms=routine + H))
    items.append(Inspection(site=SITE, inspector="J. Rivera", ts_ms=storm, kind="storm",
                            entered_ms=storm + H))
    return sorted(items, key=lambda it: it.ts_ms)


@dataclass(frozen=True)
class Month:
    """The site's configuration file, as loaded, and the directory it lives in."""

    path: Path
    config: Config
    tmp: Path


@pytest.fixture(scope="module")
def month(tmp_path_factory: pytest.TempPathFactory) -> Month:
    """The site's month recorded through the real engine host, ticked to June 1."""
    tmp = tmp_path_factory.mktemp("periods")
    path, config = recorded_web_site(tmp, lambda text: text.replace(
        "    condition: B\n", "    condition: B\n    active_since: 2026-05-01\n", 1),
        month_items(), parse_iso("2026-06-01T04:00:00Z"))
    return Month(path, config, tmp)


def _sections(html: str) -> dict[str, list[list[str]]]:
    return {name: table_cells(html, name) for name in SECTIONS}


def _by_html(month: Month, week: tuple[str, str]) -> str:
    config = month.config
    site = config.sites[0]
    with open_store(config) as store:
        return build_report(config, store, SITE, parse_bound(week[0], site, end=False),
                            parse_bound(week[1], site, end=True),
                            parse_iso("2026-12-03T09:00:00Z"))


def _by_cli(month: Month, week: tuple[str, str]) -> str:
    out = month.tmp / f"{week[0]}.html"
    proc = stormwatch(month.path, ("report", "--site", SITE, "--from", week[0],
                                      "--to", week[1]), out=out)
    assert proc.returncode == 0, proc.stderr
    return out.read_text(encoding="utf-8")


def _by_web(month: Month, week: tuple[str, str]) -> str:
    client = client_for(month.config)
    sign_in(client, month.tmp / "state", OFFICER)
    got = client.get(f"/sites/{SITE}/report?from={week[0]}&to={week[1]}")
    assert got.status_code == 200, got.text[:500]
    text: str = got.text
    return text


def _text(html: str) -> str:
    """What a person reads of the page (its body, without the markup)."""
    return unescape(re.sub(r"<[^>]+>", " ", html.split("<body>", 1)[1]))


def _summary(html: str) -> dict[str, str]:
    return dict((k, v) for k, v in table_cells(html, "Summary"))


def test_week_1_counts_the_storm_it_qualified_in_and_judges_at_its_end(
        month: Month) -> None:
    html = _by_html(month, WEEK_1)
    summary = _summary(html)
    assert summary["Storms"] == "1 (1 qualified, ≥ 0.5 in)"
    # At May 11 00:00 EDT the storm clock (due 23:08 EDT that day) is open, not yet
    # met: J. Rivera inspects 15 hours later, in week 2.
    assert summary["Storm inspections"] == "0 met, 0 late, 1 open (0 overdue)"
    # The routine clock of May 1 met on May 5; that of May 5 open and not yet due
    # (a week after May 5): not the clock of May 11 overdue at the generation time.
    assert summary["Routine inspections"] == "1 met, 0 late, 1 open (0 overdue)"
    assert summary["Weeks without a required inspection (§ 134-12D)"] == "0 (0 clock(s))"
    # The storm as it stood at the end of the week: still raining (its last tip, of
    # the 70, came at 00:28 EDT the next day), 60 tips counted: 0.60 in so far.
    (storm,) = table_cells(html, "Storms")
    assert storm == ["2026-05-10 21:30 EDT", "—", "0.60 in (running)", "0.60 in",
                     "2026-05-10 23:08 EDT", "2026-05-11 23:08 EDT", "—", "open"]
    owed = table_cells(html, "Outstanding at the end of the period")
    # Routine clock of May 5 10:00 EDT, then the storm clock: due 23:08 EDT, 23 h 8 min
    # after the end of the week (23.13 h).
    assert [row[0] for row in owed] == [
        "Routine inspection (every 7 calendar days): the week of May 5",
        "Storm inspection (within 24 hours of the storm): the storm of May 10"]
    assert owed[0][2].startswith("2026-05-12 ") and owed[0][3].startswith("open, ")
    assert owed[1][1:4] == ["2026-05-10 23:08 EDT", "2026-05-11 23:08 EDT", "open, 23.1 h left"]
    # One list: the summary's open clocks are the rows of the duties table.
    assert summary["Storm inspections"].endswith(
        f"{sum('Storm inspection' in r[0] for r in owed)} open (0 overdue)")
    assert summary["Routine inspections"].endswith(
        f"{sum('Routine inspection' in r[0] for r in owed)} open (0 overdue)")
    # Nothing was overdue at the end of the week (the summary's "(0 overdue)" aside).
    assert "OVERDUE" not in _text(html).upper().replace("(0 OVERDUE)", "")


def test_week_2_does_not_count_the_storm_again_and_counts_the_inspection(
        month: Month) -> None:
    html = _by_html(month, WEEK_2)
    summary = _summary(html)
    # The storm qualified in week 1: counted there, not here, though its rain ran on
    # past midnight into week 2.
    assert summary["Storms"] == "0 (0 qualified, ≥ 0.5 in)"
    assert table_cells(html, "Storms") == []
    # The storm clock and the routine clock of May 5 were met on May 11, in week 2;
    # the routine clock that inspection started is open at May 18 00:00 EDT, due a week after
    # May 11 15:00 EDT: not yet overdue then.
    assert summary["Storm inspections"] == "1 met, 0 late, 0 open (0 overdue)"
    assert summary["Routine inspections"] == "1 met, 0 late, 1 open (0 overdue)"
    (owed,) = table_cells(html, "Outstanding at the end of the period")
    assert owed[0] == "Routine inspection (every 7 calendar days): the week of May 11"
    assert owed[2].startswith("2026-05-18 ") and owed[3].startswith("open, ")
    (inspection,) = table_cells(html, "Inspections")
    assert inspection[0] == "2026-05-11 15:00 EDT"
    # The clocks by name (the local date of their storm or week), as every page says them.
    assert "storm of May 10 (met)" in inspection[-1]
    assert "week of May 5 (met)" in inspection[-1]


def test_each_storm_is_counted_once_across_the_two_weeks(month: Month) -> None:
    counts = [_summary(_by_html(month, week))["Storms"].split()[0] for week in (WEEK_1, WEEK_2)]
    assert counts == ["1", "0"]


def test_the_html_the_command_and_the_field_app_agree(month: Month) -> None:
    """Each says what the hand-worked weeks say: the storm in week 1 only, the storm clock
    open at the end of week 1 and met in week 2."""
    expected = {WEEK_1: ("1 (1 qualified, ≥ 0.5 in)", "0 met, 0 late, 1 open (0 overdue)"),
                WEEK_2: ("0 (0 qualified, ≥ 0.5 in)", "1 met, 0 late, 0 open (0 overdue)")}
    for week, (storms, inspections) in expected.items():
        html = _sections(_by_html(month, week))
        summary = {k: v for k, v in html["Summary"]}
        assert (summary["Storms"], summary["Storm inspections"]) == (storms, inspections)
        assert _sections(_by_cli(month, week)) == html
        assert _sections(_by_web(month, week)) == html


def test_the_field_app_refuses_a_period_that_ends_before_it_begins(
        month: Month) -> None:
    client = client_for(month.config)
    sign_in(client, month.tmp / "state", OFFICER)
    got = client.get(f"/sites/{SITE}/report?from=2026-05-17&to=2026-05-11")
    assert got.status_code == 422, got.text[:300]
    assert "is not before" in got.text


def test_the_report_lists_no_clock_as_open_at_the_time_it_was_generated(
        month: Month) -> None:
    """The routine clock of May 11, open and overdue by December, is no fact of week 1."""
    assert "routine-2026-05-11" not in _text(_by_html(month, WEEK_1))

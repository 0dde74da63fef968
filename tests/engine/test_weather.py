"""The weather rules (monitor/README.md, "Weather"), with hand-computed expectations.

Site threshold 0.5 in = 12.7 mm. ``T0`` is 2026-05-01T00:00Z; intervals and hours
are offsets from it. Each case says how its numbers were worked out.
"""

from __future__ import annotations

import itertools
from typing import Any

from monitor.config import SiteConfig, WeatherConfig
from monitor.config.file import parse_config
from monitor.contract.events import GaugeDisagrees, StormForecast, make_id
from monitor.contract.inputs import Forecast, ReferenceObservation
from monitor.contract.times import MS_PER_MINUTE, parse_interval
from monitor.rules.weather.weather import (
    GaugeRecord,
    WeatherBook,
    disagreement_truth,
    forecast_truth,
)

from ..support.configdocs import document, site
from ..support.weatherkit import CHANCE, STORM, T0, H, issue, nws_interval


def configured(**weather: Any) -> tuple[SiteConfig, WeatherConfig]:
    config = parse_config(document(site(location={"lat": 41.05, "lon": -73.54}), weather={
        "nws": {"user_agent": "test (ops@example.org)"}, "reference_stations": ["KHPN"],
        **weather}), env={})
    assert config.weather is not None
    return config.sites[0], config.weather








def truth_of(*forecasts: Forecast) -> dict[str, Any]:
    s, w = configured()
    book = WeatherBook()
    for f in forecasts:
        book.add(f)
    return forecast_truth(s, w, book)




def test_iso_intervals_as_nws_gives_them() -> None:
    assert parse_interval("2026-05-01T06:00:00+00:00/PT6H") == (T0 + 6 * H, T0 + 12 * H)
    assert parse_interval("2026-05-01T06:00:00+00:00/P1DT6H") == (T0 + 6 * H, T0 + 36 * H)
    assert parse_interval("2026-05-01T06:00:00-04:00/PT1H") == (T0 + 10 * H, T0 + 11 * H)


def test_a_forecast_that_reaches_the_threshold() -> None:
    truth = truth_of(issue(0, STORM, CHANCE))
    fid = make_id("storm_forecast", "branch-meadows", "nws", T0, T0 + 6 * H)
    assert list(truth) == [fid]
    fact = truth[fid]
    assert fact.at_ms == T0 and fact.site == "branch-meadows"
    assert fact.body == StormForecast(
        source="nws", forecast_in=0.512, window_from="2026-05-01T06:00:00Z",
        window_to="2026-05-02T06:00:00Z", issued_at="2026-05-01T00:00:00Z", probability=70,
        grid="OKX/33,37", threshold_in=0.5)


def test_an_interval_is_spread_evenly_over_its_hours() -> None:
    # 7 mm at 2..3 and 12 mm over 20..32. Start 2: 7 + 12 * 6/12 = 13 mm (0.512 in);
    # start 8 (= 32 - 24): 12 mm, and start 20: 12 mm, both below 12.7.
    truth = truth_of(issue(0, [nws_interval(2, "PT1H", 7.0), nws_interval(20, "PT12H", 12.0)]))
    (fact,) = truth.values()
    assert isinstance(fact.body, StormForecast)
    assert (fact.body.window_from, fact.body.window_to, fact.body.forecast_in) == (
        "2026-05-01T02:00:00Z", "2026-05-02T02:00:00Z", 0.512)
    assert fact.body.probability is None  # the source gave no chance: null, not 0


def test_a_forecast_below_the_threshold_concludes_nothing() -> None:
    # 4 + 5 + 3 = 12 mm < 12.7 mm in any 24 hours.
    below = [nws_interval(6, "PT6H", 4.0), nws_interval(12, "PT6H", 5.0),
             nws_interval(18, "PT1H", 3.0)]
    assert truth_of(issue(0, below, CHANCE)) == {}


def test_only_the_next_forecast_hours_count() -> None:
    # 13 mm over 44..50: within 0..48 at most its part 44..48, 13 × 4/6 = 8.7 mm.
    late = [nws_interval(44, "PT6H", 13.0)]
    assert truth_of(issue(0, late)) == {}
    # Issued at +2 h, the next 48 hours end at 50: the window 26..50 holds all 13 mm.
    (fact,) = truth_of(issue(2, late)).values()
    assert isinstance(fact.body, StormForecast)
    assert (fact.body.window_from, fact.body.forecast_in) == ("2026-05-02T02:00:00Z", 0.512)


def test_a_later_issue_revises_the_same_storm() -> None:
    # The 6 h interval at 6 goes from 4 to 5 mm: 5 + 6 + 3 = 14 mm = 0.551 in.
    revised = [nws_interval(6, "PT6H", 5.0), *STORM[1:]]
    truth = truth_of(issue(0, STORM, CHANCE), issue(1, revised, CHANCE))
    fid = make_id("storm_forecast", "branch-meadows", "nws", T0, T0 + 6 * H)
    assert list(truth) == [fid]
    body = truth[fid].body
    assert isinstance(body, StormForecast)
    assert (body.forecast_in, body.issued_at, truth[fid].at_ms) == (
        0.551, "2026-05-01T01:00:00Z", T0)


def test_a_later_issue_that_no_longer_holds_it_retracts_it() -> None:
    dry = [nws_interval(6, "PT6H", 1.0), nws_interval(12, "PT6H", 1.0)]
    assert truth_of(issue(0, STORM), issue(1, dry)) == {}


def test_a_storm_already_under_way_is_not_retracted_by_a_later_issue() -> None:
    # Issued at +7 h, after the window began at +6 h: the later issue cannot speak
    # of the whole window, so the storm stays as forecast.
    dry = [nws_interval(7, "PT6H", 1.0)]
    truth = truth_of(issue(0, STORM), issue(7, dry))
    (fact,) = truth.values()
    assert isinstance(fact.body, StormForecast) and fact.body.issued_at == "2026-05-01T00:00:00Z"


def test_issue_order_and_duplicates_do_not_matter() -> None:
    revised = [nws_interval(6, "PT6H", 5.0), *STORM[1:]]
    issues = [issue(0, STORM, CHANCE), issue(1, revised, CHANCE), issue(0, STORM, CHANCE)]
    results = [truth_of(*order) for order in itertools.permutations(issues)]
    assert all(r == results[0] for r in results) and len(results[0]) == 1


def test_asking_after_each_issue_gives_what_one_fold_over_all_gives() -> None:
    """The book folds each new issue onto the last (a season of hourly issues must not
    be refolded from its first each hour); asked after every issue, in issue order
    and out of it, the answer is the fold over all of them from scratch."""
    s, w = configured()
    revised = [nws_interval(6, "PT6H", 5.0), *STORM[1:]]
    dry = [nws_interval(30, "PT6H", 1.0)]
    later = [nws_interval(40, "PT6H", 8.0), nws_interval(46, "PT6H", 6.0)]
    issues = [issue(0, STORM, CHANCE), issue(1, revised, CHANCE), issue(7, dry),
              issue(30, later), issue(31, dry)]
    for order in (issues, [issues[0], issues[2], issues[1], issues[4], issues[3]]):
        book = WeatherBook()
        for f in order:
            book.add(f)
            forecast_truth(s, w, book)
        assert book.fold is not None and book.fold[1] == (issues[-1].ts_ms, "nws")
        assert forecast_truth(s, w, book) == truth_of(*issues)
    assert len(truth_of(*issues)) == 1  # the storm at 6 h stays; the one at 40 h retracted


# --------------------------------------------------------------------------- gauge disagrees

STATION = "KHPN"


def hours(values: dict[int, float | None]) -> list[ReferenceObservation]:
    """Observations at :51 of each hour (the routine METAR time)."""
    return [ReferenceObservation("branch-meadows", STATION, T0 + h * H + 51 * MS_PER_MINUTE, mm)
            for h, mm in values.items()]


def gauge(rain: dict[float, float], *, until_h: float = 34, from_h: float = -30,
          stale_after_minutes: float | None = 15) -> GaugeRecord:
    """A gauge that reports every 10 minutes from ``from_h`` to ``until_h``; ``rain``
    gives inches at some of those times (hours from T0)."""
    messages = []
    t = T0 + round(from_h * H)
    while t <= T0 + round(until_h * H):
        messages.append((t, rain.get((t - T0) / H, 0.0)))
        t += 10 * MS_PER_MINUTE
    stale = None if stale_after_minutes is None else round(stale_after_minutes * MS_PER_MINUTE)
    return GaugeRecord("rg1", tuple(messages), stale)


def disagreements(observations: list[ReferenceObservation], record: GaugeRecord,
                  **weather: Any) -> dict[str, Any]:
    s, w = configured(**weather)
    book = WeatherBook()
    for o in observations:
        book.add(o)
    return disagreement_truth(s, w, book, [record])


#: 2 mm in each of the hours 0..9: 20 mm = 0.787 in. The first 24 hours that reach
#: 12.7 mm end with hour 6 (7 × 2 = 14 mm; ending with hour 5: 12 mm); the largest
#: window ends with hour 9 (T0+10h), 20 mm.
STORM_HOURS: dict[int, float | None] = {h: 2.0 for h in range(10)}


def test_a_gauge_that_reads_a_tenth_of_the_reference() -> None:
    # 0.01 in at 0.5, 1.5 .. 7.5 h: 0.08 in in the window T0-14h..T0+10h, 10 % of
    # 0.787 in (and 0.07 in = 1.78 mm < 3.5 mm, a quarter of 14 mm, at the first).
    record = gauge({h + 0.5: 0.01 for h in range(8)})
    truth = disagreements(hours(STORM_HOURS), record)
    fid = make_id("gauge_disagrees", "branch-meadows", "rg1", T0 - 17 * H)
    assert list(truth) == [fid]
    assert truth[fid].at_ms == T0 + 7 * H
    assert truth[fid].body == GaugeDisagrees(
        gauge="rg1", gauge_in=0.08, reference_in=0.787, reference="KHPN",
        window_from="2026-04-30T10:00:00Z", window_to="2026-05-01T10:00:00Z", stale=False,
        threshold_in=0.5, opens_clock=False, reference_unknown_hours=0)


def test_a_gauge_that_agrees_concludes_nothing() -> None:
    # 0.07 in per hour for 10 hours: 0.7 in = 17.8 mm, far above a quarter of 20 mm.
    record = gauge({h + 0.5: 0.07 for h in range(10)})
    assert disagreements(hours(STORM_HOURS), record) == {}


def test_a_stale_gauge_during_a_reference_storm() -> None:
    # The gauge's last message is at T0-1h: stale (15 minutes) in every window.
    truth = disagreements(hours(STORM_HOURS), gauge({}, until_h=-1),
                          reference_opens_clock=True)
    (fact,) = truth.values()
    assert isinstance(fact.body, GaugeDisagrees)
    assert (fact.body.stale, fact.body.gauge_in, fact.body.reference_in,
            fact.body.opens_clock) == (True, 0.0, 0.787, True)


def test_a_reference_below_the_threshold_concludes_nothing() -> None:
    # 6 × 2 = 12 mm < 12.7 mm, even against a dead gauge.
    assert disagreements(hours({h: 2.0 for h in range(6)}), gauge({}, until_h=-1)) == {}


def test_a_null_hour_is_unknown_not_dry() -> None:
    # Hours 3 and 4 unreported (null), 2 mm in the other hours 0..11: 20 mm known, in
    # the window ending with hour 11 (T0-12h..T0+12h), 2 hours unknown.
    values: dict[int, float | None] = {h: 2.0 for h in range(12)}
    values[3] = values[4] = None
    (fact,) = disagreements(hours(values), gauge({}, until_h=-1)).values()
    assert isinstance(fact.body, GaugeDisagrees)
    assert (fact.body.reference_in, fact.body.reference_unknown_hours, fact.body.window_to) == (
        0.787, 2, "2026-05-01T12:00:00Z")
    # Only nulls: nothing is known, nothing is concluded (not "a dry day").
    assert disagreements(hours({h: None for h in range(12)}), gauge({}, until_h=-1)) == {}


def test_the_same_hour_twice_counts_once_and_a_null_never_erases_a_value() -> None:
    special = ReferenceObservation("branch-meadows", STATION, T0 + 6 * H + 20 * MS_PER_MINUTE,
                                   1.0)
    null = ReferenceObservation("branch-meadows", STATION, T0 + 6 * H + 55 * MS_PER_MINUTE, None)
    base = hours(STORM_HOURS)
    expected = disagreements(base, gauge({}, until_h=-1))
    for extra in itertools.permutations([special, null, *base[6:7]]):
        assert disagreements([*base, *extra], gauge({}, until_h=-1)) == expected
    (fact,) = expected.values()
    assert isinstance(fact.body, GaugeDisagrees) and fact.body.reference_in == 0.787


def test_an_on_tip_gauge_without_heartbeat_is_not_judged_stale() -> None:
    # It sent nothing: 0 in is below a quarter, so it disagrees, but never as stale.
    (fact,) = disagreements(hours(STORM_HOURS), GaugeRecord("rg1", (), None)).values()
    assert isinstance(fact.body, GaugeDisagrees) and fact.body.stale is False

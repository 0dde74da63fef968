"""Every permit a site answers to keeps its own clocks (config/README.md, "Permits").

Hand-computed: the site is in New York's zone (EST in December, EDT in July);
rain falls at 0.01 in a minute through ``precip_in`` readings, so a storm of n
hundredths starting at t qualifies under an ``event_total``/``event_24h`` rule
of d inches at minute 100·d − 1.
"""

from __future__ import annotations

from typing import Any

from monitor.contract.times import MS_PER_MINUTE, iso, parse_iso
from monitor.engine import Engine

from ..support.util import SITE, final, insp, rain, site_config

VILLAGE_AND_EPA = ["village-branch-134", {"profile": "epa-cgp-2022",
                                          "frequency": "biweekly_storm"}]


def hundredths(start: str, n: int, seq0: int = 0) -> list[Any]:
    t0 = parse_iso(start)
    return [rain("rg1", t0 + i * MS_PER_MINUTE, 0.01, seq0 + i) for i in range(n)]


def engine(items: list[Any], now: str, **site: Any) -> Engine:
    eng = Engine(site_config(**site))
    for item in items:
        eng.apply(item)
    eng.tick(parse_iso(now))
    return eng


def by_permit(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["permit"]: e for e in events}


def test_a_060_storm_opens_one_clock_per_permit_and_one_inspection_closes_both() -> None:
    # 0.60 in from Dec 1 15:00 UTC: EPA's 0.25 in at 15:24, the village's 0.50 in at 15:49.
    items = hundredths("2026-12-01T15:00:00Z", 60) + [insp(parse_iso("2026-12-02T09:00:00Z"),
                                                           kind="storm")]
    eng = engine(items, "2026-12-03T00:00:00Z", permits=VILLAGE_AND_EPA,
                 active_since="2026-11-25")
    storms = by_permit(final(eng, "storm_qualified"))
    assert set(storms) == {"village-branch-134", "epa-cgp-2022"}
    assert storms["village-branch-134"]["qualified_at"] == "2026-12-01T15:49:00Z"
    assert storms["village-branch-134"]["due"] == "2026-12-02T15:49:00Z"
    assert storms["village-branch-134"]["section"] == "§ 134-9A(2)"
    assert storms["epa-cgp-2022"]["qualified_at"] == "2026-12-01T15:24:00Z"
    assert storms["epa-cgp-2022"]["due"] == "2026-12-02T15:24:00Z"
    assert storms["epa-cgp-2022"]["section"] == "CGP 2022 Part 4.2"
    assert storms["epa-cgp-2022"]["clock_id"].startswith("epa-cgp-2022/storm-")
    closed = [e for e in final(eng, "clock_closed") if e["clock"] == "storm"]
    assert {(e["permit"], e["outcome"]) for e in closed} == {
        ("village-branch-134", "met"), ("epa-cgp-2022", "met")}
    recorded = final(eng, "inspection_recorded")
    assert len(recorded) == 1
    assert set(recorded[0]["closes"]) >= {storms["village-branch-134"]["clock_id"],
                                          storms["epa-cgp-2022"]["clock_id"]}


def test_a_030_storm_opens_only_the_epa_clock() -> None:
    eng = engine(hundredths("2026-12-01T15:00:00Z", 30), "2026-12-01T20:00:00Z",
                 permits=VILLAGE_AND_EPA, active_since="2026-11-25")
    storms = final(eng, "storm_qualified")
    assert [(e["permit"], e["total_in"]) for e in storms] == [("epa-cgp-2022", 0.25)]


def test_under_each_threshold_no_storm_clock_and_at_it_one() -> None:
    """Each built-in profile's storm depth, under and at it (NY has no rain trigger)."""
    cases = [("village-branch-134", 0.5), ({"profile": "epa-cgp-2022",
                                            "frequency": "biweekly_storm"}, 0.25),
             ({"profile": "tx-txr150000", "frequency": "biweekly_storm"}, 0.5),
             ("nc-ncg01", 1.0), ("ny-gp-0-25-001", None)]
    for ref, depth in cases:
        for n in ((24, 25) if depth is None else (round(depth * 100) - 1, round(depth * 100))):
            eng = engine(hundredths("2026-12-01T15:00:00Z", n), "2026-12-03T00:00:00Z",
                         permits=[ref], active_since="2026-11-25")
            qualified = [e for e in final(eng, "storm_qualified") if not e.get("informational")]
            expected = 0 if depth is None or n < round(depth * 100) else 1
            assert len(qualified) == expected, (ref, n, qualified)


def test_the_biweekly_routine_clock_counts_14_calendar_days() -> None:
    # Active from Nov 25 (local midnight): the first routine clock of EPA's biweekly option
    # is due at the end of Dec 9 local (EST), the village's at the end of Dec 2.
    eng = engine([], "2026-12-10T12:00:00Z", permits=VILLAGE_AND_EPA,
                 active_since="2026-11-25")
    overdue = {e["permit"]: e for e in final(eng, "inspection_overdue")
               if e["clock"] == "routine" and e["hours_late"] == 0}
    assert overdue["village-branch-134"]["due"] == "2026-12-03T04:59:59.999Z"
    assert overdue["epa-cgp-2022"]["due"] == "2026-12-10T04:59:59.999Z"
    assert overdue["epa-cgp-2022"]["section"] == "CGP 2022 Part 4.2"


def test_north_carolina_storm_ending_thursday_evening_before_a_friday_holiday_is_due_monday(
        ) -> None:
    # 1.00 in from Thu Jul 2 2026 19:00 EDT (23:00 UTC) to 20:39 EDT: the storm ends (its
    # last rain, clock_start: event_end) outside business hours; Fri Jul 3 is the observed
    # Independence Day, so the next business day is Mon Jul 6: due at its close, 17:00 EDT.
    eng = engine(hundredths("2026-07-02T23:00:00Z", 100), "2026-07-04T12:00:00Z",
                 permits=["nc-ncg01"], business_days={"country": "US", "subdiv": "NC"},
                 active_since="2026-06-01")
    storms = final(eng, "storm_qualified")
    assert len(storms) == 1 and storms[0]["permit"] == "nc-ncg01"
    assert storms[0]["due"] == "2026-07-06T21:00:00Z"
    assert storms[0]["section"] == "NCG01 Part III"


def test_north_carolina_storm_ending_in_business_hours_keeps_24_hours() -> None:
    # 1.00 in ending Tue Jul 7 2026 11:39 EDT (inside 07:00-17:00): due 24 h after its end.
    eng = engine(hundredths("2026-07-07T14:00:00Z", 100), "2026-07-08T12:00:00Z",
                 permits=["nc-ncg01"], business_days={"country": "US", "subdiv": "NC"},
                 active_since="2026-06-01")
    [storm] = final(eng, "storm_qualified")
    assert storm["due"] == iso(parse_iso("2026-07-07T15:39:00Z") + 24 * 3_600_000)


def test_new_york_twice_a_week_needs_two_full_days_between() -> None:
    # Over 5 acres: two inspections in each 7 days, at least 2 full calendar days apart,
    # so each clock is due within 4 days. Inspected Mon Dec 7 10:00 EST; one on Tue Dec 8
    # does not close the next clock (no full day between); Thu Dec 10 does.
    items = [insp(parse_iso(t)) for t in ("2026-12-07T15:00:00Z", "2026-12-08T15:00:00Z",
                                          "2026-12-10T15:00:00Z")]
    eng = engine(items, "2026-12-12T00:00:00Z", active_since="2026-12-07",
                 permits=[{"profile": "ny-gp-0-25-001", "disturbed_acres": 8}])
    closed = sorted((e["inspected_at"], e["due"]) for e in final(eng, "clock_closed"))
    assert closed == [("2026-12-07T15:00:00Z", "2026-12-12T04:59:59.999Z"),
                      ("2026-12-10T15:00:00Z", "2026-12-12T04:59:59.999Z")]


def test_a_site_without_permits_has_no_permit_fields() -> None:
    eng = engine(hundredths("2026-12-01T15:00:00Z", 60), "2026-12-03T00:00:00Z",
                 active_since="2026-11-25")
    [storm] = final(eng, "storm_qualified")
    assert "permit" not in storm and storm["clock_id"].startswith("storm-")


def test_a_season_under_four_permits_settles_and_restores_alike() -> None:
    """60 days of a gauge every 5 minutes, a storm every 5 days, an inspection every 3
    (some skipped), a shutdown: every permit's chain settles (memory stays a few
    inspections and clocks, each chain with its own anchor), and an engine restored
    from a snapshot two thirds in ends with the same events."""
    import json

    from monitor.contract.inputs import Inspection, Reading, ShutdownNotice
    from monitor.engine.window import MemoryWindow

    config = site_config(
        sensors=[{"id": "rg1", "kind": "rain", "in_per_tip": 0.01}], turbidity_pairs=[],
        traps=[], active_since="2026-04-01",
        permits=["village-branch-134", {"profile": "epa-cgp-2022", "frequency":
                                        "biweekly_storm"}, "nc-ncg01",
                 {"profile": "ny-gp-0-25-001", "disturbed_acres": 8}])
    t0 = parse_iso("2026-04-01T04:00:00Z")
    items: list[Any] = []
    tips = 0
    for m in range(0, 60 * 24 * 60, 5):
        day = m // 1440
        if day % 5 == 1 and 600 <= m % 1440 < 700 + 100 * (day % 3):
            tips += 1
        items.append(Reading(SITE, "rg1", "rain", t0 + m * MS_PER_MINUTE, tips_total=tips))
        if m % (1440 * 3) == 720 and day % 9:
            items.append(Inspection(site=SITE, inspector="J. Rivera", ts_ms=t0 + m * 60_000))
    items += [ShutdownNotice(SITE, t0 + 30 * 86_400_000, "winter works stop"),
              ShutdownNotice(SITE, t0 + 45 * 86_400_000, resume=True)]
    items.sort(key=lambda i: i.ts_ms)

    def run(cut: int | None = None) -> Engine:
        eng = Engine(config, MemoryWindow())
        for k, item in enumerate(items):
            if k == cut:
                eng = Engine.restore(config, json.loads(json.dumps(eng.dump())))
            eng.apply(item)
            if isinstance(item, Reading) and item.ts_ms % 3_600_000 == 0:
                eng.tick(item.ts_ms)
        return eng

    whole = run()
    se = whole.site_engine(SITE)
    assert len(se.inspections) <= 3 and len(se.clocks.clocks) <= 16
    assert se.anchor is not None
    assert set(se.anchors) == {"epa-cgp-2022", "nc-ncg01", "ny-gp-0-25-001"}
    resumed = run(cut=len(items) * 2 // 3)
    assert sorted(e.to_json()["id"] for e in resumed.current_events()) == sorted(
        e.to_json()["id"] for e in whole.current_events())
    assert [e.to_json() for e in resumed.current_events()] == [
        e.to_json() for e in whole.current_events()]


def test_north_carolinas_business_days_are_north_carolinas_unless_the_site_says() -> None:
    # Good Friday (Apr 3 2026) is a North Carolina holiday, not a federal one. The storm
    # ends Thu Apr 2 20:39 EDT, outside business hours: with no business_days set, the
    # permit's state calendar makes it due Mon Apr 6 17:00 EDT; the site that sets the
    # US calendar alone has it due Fri Apr 3 17:00 EDT.
    rows = hundredths("2026-04-02T23:00:00Z", 100)
    eng = engine(rows, "2026-04-03T12:00:00Z", permits=["nc-ncg01"], active_since="2026-03-01")
    assert [e["due"] for e in final(eng, "storm_qualified")] == ["2026-04-06T21:00:00Z"]
    eng = engine(rows, "2026-04-03T12:00:00Z", permits=["nc-ncg01"], active_since="2026-03-01",
                 business_days={"country": "US"})
    assert [e["due"] for e in final(eng, "storm_qualified")] == ["2026-04-03T21:00:00Z"]

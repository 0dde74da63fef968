"""The engine's typed answer about a site (``rules/readout.py``, ``engine/summary.py``).

The daemon records ``SiteSummary.to_json()`` and ``status`` reads it back; the
site object of ``status --json`` is ``SiteNow.to_json()``. Both are contracts:
a summary must read back as it was written (and one written by an older
version with the meaning it had), and the status object must keep its keys.
"""

from __future__ import annotations

import json
from typing import Any

from monitor.contract.inputs import CorrectiveAction, Inspection, Reading
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE, iso
from monitor.engine.summary import at_now, is_overdue, judged_at, status_at, summarize
from monitor.rules.readout import (
    ClockSummary,
    FaultSummary,
    PairSummary,
    SensorSummary,
    SiteNow,
    SiteSummary,
    TrapSummary,
)

from ..support.util import SITE, counter_series, run, ts

H = MS_PER_HOUR


def _busy_site() -> tuple[Any, int]:
    """A qualifying storm (an open storm clock), an inspection asking for a corrective
    action, a trap past clean-out and then faulty, a pair over its limit, a node status."""
    items: list[Reading | Inspection] = list(counter_series(ts("10:00"), 120,
                                                            {m: 1 for m in range(1, 61)}))
    for i, depth in enumerate((33.0, 33.5, 34.0, 34.5, 35.0, 99.0)):
        items.append(Reading(site=SITE, sensor="trap1-depth", kind="sediment",
                             ts_ms=ts("09:00") + i * 10 * MS_PER_MINUTE, depth_in=depth))
    for m in range(0, 30, 2):
        at = ts("09:00") + m * MS_PER_MINUTE
        items.append(Reading(site=SITE, sensor="tb-up", kind="turbidity", ts_ms=at, ntu=5.0))
        items.append(Reading(site=SITE, sensor="tb-down", kind="turbidity", ts_ms=at + 1000,
                             ntu=30.0))
    items.append(Reading(site=SITE, sensor="tb-up", kind="status", ts_ms=ts("11:00"),
                         battery_v=3.7, buffered=4, dropped=1))
    items.append(Inspection(site=SITE, inspector="J. Rivera", ts_ms=ts("08:00"), kind="routine",
                            corrective_actions=(CorrectiveAction("ca-1", "fix the fence",
                                                                 ts("12:00")),)))
    items.sort(key=lambda it: it.ts_ms)
    eng, _ = run(items, ts("12:30"), active_since="2026-04-20")
    return eng, ts("12:30")


def test_a_recorded_summary_reads_back_as_it_was() -> None:
    eng, now = _busy_site()
    summary = summarize(eng, SITE)
    text = json.dumps(summary.to_json(), separators=(",", ":"))
    again = SiteSummary.from_json(json.loads(text))
    assert again == summary
    assert json.dumps(again.to_json(), separators=(",", ":")) == text
    # What the recorded JSON says, by attribute.
    (storm,) = [c for c in summary.clocks if c.clock == "storm"]
    assert storm.event_id == "rg1-20260501T100100Z" and storm.closed_ms is None
    assert summary.traps["trap-1"].state == "fault"
    assert summary.traps["trap-1"].level == "cleanout"
    assert summary.traps["trap-1"].sensor_fault == FaultSummary("above_max_fill", ts("09:50"))
    assert summary.turbidity["outfall-1"].state == "exceeded"
    assert (summary.sensors["tb-up"].buffered, summary.sensors["tb-up"].dropped) == (4, 1)
    assert [a.id for a in summary.corrective_actions] == ["ca-1"]

    shown = status_at(summary, now)
    assert at_now(json.loads(text), now) == shown.to_json()
    assert SiteNow.from_json(json.loads(json.dumps(shown.to_json()))) == shown
    (action,) = shown.corrective_actions
    assert action.overdue  # due 12:00, now 12:30


def test_a_summary_recorded_by_an_older_version_reads_with_the_old_meanings() -> None:
    # Before sensor faults (no ``level``), on_tip health (no ``judged``), node buffers,
    # settled missed weeks, corrective actions and closure were recorded.
    old = {"version": 1, "name": "Old", "condition": "B",
           "clocks": [{"clock_id": "routine-x", "clock": "routine",
                       "started_at": "2026-05-01T04:00:00Z", "due": "2026-05-08T04:00:00Z"}],
           "last_inspection": None,
           "traps": {"trap-1": {"fill_fraction": 0.55, "depth_in": 30.0, "state": "cleanout"}},
           "turbidity": {"outfall-1": {"state": "ok", "delta_ntu": 1.0}},
           "sensors": {"rg1": {"kind": "rain", "last_seen": "2026-05-09T04:00:00Z",
                               "battery_v": None, "stale_after_minutes": 15.0,
                               "readings": 3}}}
    summary = SiteSummary.from_json(old)
    assert summary.clocks == (ClockSummary("routine-x", "routine", ts("2026-05-01T04:00:00Z"),
                                           ts("2026-05-08T04:00:00Z")),)
    assert summary.traps["trap-1"] == TrapSummary(0.55, 30.0, "cleanout", "cleanout")
    assert summary.turbidity["outfall-1"] == PairSummary("ok", delta_ntu=1.0)
    assert summary.sensors["rg1"] == SensorSummary("rain", ts("2026-05-09T04:00:00Z"), None,
                                                   15.0, judged=True, readings=3)
    assert (summary.event_time_ms, summary.missed_weeks_settled, summary.closed_ms,
            summary.corrective_actions) == (None, 0, None, ())
    # Read at the wall clock (no event time recorded), a day and a half after due.
    wall = ts("2026-05-09T16:00:00Z")
    assert judged_at(old, wall) == wall
    shown = status_at(summary, wall)
    (clock,) = shown.open_clocks
    assert (clock.hours_left, clock.overdue, clock.missed_weeks) == (-36.0, True, 1)
    assert shown.missed_weeks == 1
    assert shown.sensors["rg1"].stale is True and shown.sensors["rg1"].health == "stale"


def test_the_status_site_object_keeps_its_keys() -> None:
    """The keys of README.md, "Commands" and those added since, in their order (``status
    --json``)."""
    eng, now = _busy_site()
    site = status_at(summarize(eng, SITE), now).to_json()
    assert list(site) == ["name", "condition", "open_clocks", "last_inspection", "traps",
                          "turbidity", "sensors", "missed_weeks", "corrective_actions",
                          "closed_at"]
    storm = next(c for c in site["open_clocks"] if c["clock"] == "storm")
    routine = next(c for c in site["open_clocks"] if c["clock"] == "routine")
    assert list(storm) == ["clock_id", "clock", "started_at", "due", "event_id", "hours_left",
                           "overdue"]
    assert list(routine) == ["clock_id", "clock", "started_at", "due", "hours_left", "overdue",
                             "missed_weeks"]
    assert list(site["traps"]["trap-1"]) == ["fill_fraction", "depth_in", "state", "level",
                                             "sensor_fault"]
    assert site["traps"]["trap-1"]["sensor_fault"] == {"reason": "above_max_fill",
                                                       "since": iso(ts("09:50"))}
    # Why the contrast is unknown (null while known), and the downstream probe's
    # staleness, which a recorded summary is judged by later.
    assert list(site["turbidity"]["outfall-1"]) == [
        "state", "basis", "delta_ntu", "limit_ntu", "upstream_ntu", "downstream_ntu", "at",
        "started_at", "unknown", "stale_after_minutes"]
    assert list(site["sensors"]["tb-up"]) == ["last_seen", "stale", "health", "battery_v",
                                              "kind", "readings", "buffered", "dropped"]
    # Keys are added (the steps of an action), never renamed or removed.
    assert list(site["corrective_actions"][0]) == ["id", "text", "due", "opened_at",
                                                   "inspector", "resolved_at", "resolved_by",
                                                   "state", "sent_at", "sent_by", "sent_to",
                                                   "done_at", "done_by", "done_note",
                                                   "verified_at", "overdue"]


def test_overdue_is_after_due_not_at_it() -> None:
    # Closed on or before due is met (monitor/README.md, "The rules"): at due itself the clock is
    # not late.
    due = ts("12:00")
    assert (is_overdue(due, due - 1), is_overdue(due, due), is_overdue(due, due + 1)) == (
        False, False, True)
    assert not is_overdue(None, due + 100 * H)

"""A clock is listed only once it exists (monitor/README.md, "The rules").

A pause planned for next year made ``replay --format table`` list next year's
routine clock as OPEN today (the README's own sample showed it). No view
(the engine's clocks, ``status``, the replay table) lists a clock whose start
is after the view's *now*.
"""

from __future__ import annotations

from monitor.engine.summary import at_now, site_status, site_summary

from ..support.util import SITE, inspection, run, ts

PAUSED = {"active_since": "2026-05-01",
          "pauses": [{"from": "2027-01-04", "to": "2027-02-28", "reason": "winter"}]}


def _site_with_a_pause_next_year(now_ms: int):  # type: ignore[no-untyped-def]
    return run([inspection(ts("2026-05-02T13:30:00Z"), kind="routine")], now_ms=now_ms,
               **PAUSED)[0]


def test_next_years_routine_clock_does_not_exist_today() -> None:
    eng = _site_with_a_pause_next_year(ts("2026-05-03T00:00:00Z"))
    # active_since 2026-05-01 at local midnight (EDT) = 04:00Z, due at the end of 05-08
    # local (05-09 03:59:59.999Z); the inspection (05-02 09:30 EDT) closes that clock and
    # starts the next, due at the end of 05-09 local, which the pause will cut on
    # 2027-01-04 (05:00Z, EST). The clock after the pause (2027-03-01, 05:00Z) has not
    # begun.
    assert [(c.clock_id, c.start, c.due, c.closed_at, c.ends_at) for c in eng.clocks(SITE)] == [
        ("routine-2026-05-01T04:00:00Z", ts("2026-05-01T04:00:00Z"),
         ts("2026-05-09T03:59:59.999Z"), ts("2026-05-02T13:30:00Z"), None),
        ("routine-2026-05-02T13:30:00Z", ts("2026-05-02T13:30:00Z"),
         ts("2026-05-10T03:59:59.999Z"), None, ts("2027-01-04T05:00:00Z")),
    ]
    status = site_status(eng, SITE, ts("2026-05-03T00:00:00Z"))
    assert [(c["clock_id"], c["started_at"], c["due"]) for c in status["open_clocks"]] == [
        ("routine-2026-05-02T13:30:00Z", "2026-05-02T13:30:00Z", "2026-05-10T03:59:59.999Z")]


def test_the_clock_after_the_pause_exists_once_the_pause_is_over() -> None:
    eng = _site_with_a_pause_next_year(ts("2027-03-01T05:00:00Z"))
    routine = [(c.clock_id, c.closed_at, c.ends_at) for c in eng.clocks(SITE)]
    assert routine[-1] == ("routine-2027-03-01T05:00:00Z", None, None)
    status = site_status(eng, SITE, ts("2027-03-01T05:00:00Z"))
    # The clock the pause cut is not open either: only the one that has begun.
    assert [c["clock_id"] for c in status["open_clocks"]] == ["routine-2027-03-01T05:00:00Z"]


def test_a_site_that_starts_next_month_has_no_clock_yet() -> None:
    eng, events = run([inspection(ts("2026-05-02T13:30:00Z"), kind="routine")],
                      now_ms=ts("2026-05-20T00:00:00Z"), active_since="2026-06-01")
    assert eng.clocks(SITE) == []
    assert site_status(eng, SITE, ts("2026-05-20T00:00:00Z"))["open_clocks"] == []
    assert [e for e in events if e.type in ("clock_closed", "inspection_overdue")] == []


def test_a_recorded_summary_read_before_a_clock_begins_does_not_list_it() -> None:
    # A summary recorded at 2027-03-02 holds next year's clock; read at an earlier
    # instant (the view's now) it is not listed.
    eng = _site_with_a_pause_next_year(ts("2027-03-02T00:00:00Z"))
    summary = site_summary(eng, SITE)
    assert "routine-2027-03-01T05:00:00Z" in [c["clock_id"] for c in summary["clocks"]]
    assert [c["clock_id"] for c in at_now(summary, ts("2027-02-01T00:00:00Z"))["open_clocks"]] \
        == []



""""Every seven days" is calendar days, worked by hand.

The routine clock is due at the end of the local day seven days after the day
of the last qualifying inspection (``routine_due: end_of_day``, the default):
inspected Monday 10:00, due the next Monday 23:59:59.999 local. ``routine_due:
elapsed`` keeps an exact 168-hour clock. The site is in New York: daylight
saving time begins Sunday 2026-03-08 (EST UTC-5 to EDT UTC-4) and ends Sunday
2026-11-01 (EDT to EST).
"""

from __future__ import annotations

from monitor.contract.inputs import Inspection
from monitor.contract.times import MS_PER_HOUR, iso
from monitor.engine.core import Engine
from monitor.engine.summary import site_status

from ..support.util import SITE, final, inspection, run, ts

H = MS_PER_HOUR


def routine(at: str) -> Inspection:
    return inspection(ts(at), kind="routine")


def clocks(eng: Engine) -> list[tuple[str, str, str | None]]:
    """Each routine clock as (start, due, closed), in ISO UTC."""
    return [(iso(c.start or 0), iso(c.due or 0), iso(c.closed_at) if c.closed_at else None)
            for c in eng.clocks(SITE) if c.clock == "routine"]


def test_an_inspection_on_the_seventh_day_at_any_hour_is_on_time() -> None:
    # Inspected Monday 2026-05-04 10:00 EDT (14:00Z), then Monday 2026-05-11 14:00 EDT
    # (18:00Z). Due at the end of Monday 05-11 local, 23:59:59.999 EDT = 05-12 03:59:59.999Z:
    # met. Today it is due 05-11 10:00 EDT, so this is late and a missed week.
    eng, _ = run([routine("2026-05-04T14:00:00Z"), routine("2026-05-11T18:00:00Z")],
                 ts("2026-05-12T12:00:00Z"), active_since="2026-05-01")
    assert clocks(eng)[1:] == [
        ("2026-05-04T14:00:00Z", "2026-05-12T03:59:59.999Z", "2026-05-11T18:00:00Z"),
        ("2026-05-11T18:00:00Z", "2026-05-19T03:59:59.999Z", None)]
    closed = [(c["inspected_at"], c["outcome"]) for c in final(eng, "clock_closed")]
    assert closed == [("2026-05-04T14:00:00Z", "met"), ("2026-05-11T18:00:00Z", "met")]
    assert final(eng, "inspection_missed") == [] and final(eng, "inspection_overdue") == []
    # Nor is the reminder 6 h before the due (17:59:59.999 EDT) sent: it was met at 14:00.
    assert final(eng, "inspection_due_soon") == []


def test_across_the_march_change_the_due_is_the_end_of_the_local_day() -> None:
    # Inspected Monday 2026-03-02 10:00 EST (15:00Z). Due at the end of Monday 03-09, which
    # is EDT: 23:59:59.999 EDT = 03-10 03:59:59.999Z (7 days 12 h 59 min 59.999 s after
    # the inspection, one hour less than the same local hours a week before the change).
    eng, _ = run([routine("2026-03-02T15:00:00Z")], ts("2026-03-10T12:00:00Z"),
                 active_since="2026-02-27")
    assert clocks(eng)[-1] == ("2026-03-02T15:00:00Z", "2026-03-10T03:59:59.999Z", None)
    # Reminders 6 h and 1 h before (17:59:59.999 and 22:59:59.999 EDT); overdue at the due
    # and every 4 h on, up to now (12:00Z): at +0, +4 and +8 h (11:59:59.999Z).
    soon = [(e["at"], e["hours_left"]) for e in final(eng, "inspection_due_soon")
            if e["due"] == "2026-03-10T03:59:59.999Z"]
    assert soon == [("2026-03-09T21:59:59.999Z", 6.0), ("2026-03-10T02:59:59.999Z", 1.0)]
    late = [(e["at"], e["hours_late"]) for e in final(eng, "inspection_overdue")
            if e["due"] == "2026-03-10T03:59:59.999Z"]
    assert late == [("2026-03-10T03:59:59.999Z", 0.0), ("2026-03-10T07:59:59.999Z", 4.0),
                    ("2026-03-10T11:59:59.999Z", 8.0)]


def test_across_the_november_change_the_due_is_the_end_of_the_local_day() -> None:
    # Inspected Monday 2026-10-26 10:00 EDT (14:00Z). Due at the end of Monday 11-02, EST:
    # 23:59:59.999 EST = 11-03 04:59:59.999Z.
    eng, _ = run([routine("2026-10-26T14:00:00Z")], ts("2026-10-27T00:00:00Z"),
                 active_since="2026-10-20")
    assert clocks(eng)[-1] == ("2026-10-26T14:00:00Z", "2026-11-03T04:59:59.999Z", None)
    (clock,) = site_status(eng, SITE, ts("2026-10-27T00:00:00Z"))["open_clocks"]
    # From 10-27 00:00Z to 11-03 04:59:59.999Z: 7 days 5 h less 1 ms = 172.99... h.
    assert (clock["due"], clock["hours_left"]) == ("2026-11-03T04:59:59.999Z", 173.0)


def test_missed_weeks_end_at_the_end_of_the_local_day_across_the_change() -> None:
    # Inspected Monday 2026-02-23 10:00 EST (15:00Z): due at the end of Monday 03-02, EST
    # (03-03 04:59:59.999Z); week 2 begins at the end of Monday 03-09, EDT (03-10
    # 03:59:59.999Z), 167 h later, not 168 h.
    now = ts("2026-03-10T04:30:00Z")
    eng, _ = run([routine("2026-02-23T15:00:00Z")], now, active_since="2026-02-20")
    weeks = [(w["week"], w["week_from"], w["week_to"]) for w in final(eng, "inspection_missed")]
    assert weeks == [
        (1, "2026-03-03T04:59:59.999Z", "2026-03-10T03:59:59.999Z"),
        (2, "2026-03-10T03:59:59.999Z", "2026-03-17T03:59:59.999Z")]
    status = site_status(eng, SITE, now)
    assert status["missed_weeks"] == 2 and status["open_clocks"][0]["missed_weeks"] == 2


def test_elapsed_keeps_an_exact_clock_of_168_hours() -> None:
    # The March inspection again: 168 h after 03-02 15:00Z is 03-09 15:00Z (11:00 EDT).
    eng, _ = run([routine("2026-03-02T15:00:00Z")], ts("2026-03-10T12:00:00Z"),
                 active_since="2026-02-27", routine_due="elapsed")
    assert clocks(eng)[-1] == ("2026-03-02T15:00:00Z", "2026-03-09T15:00:00Z", None)
    # The first clock, from active_since (02-27 00:00 EST, 05:00Z), is due 168 h later.
    assert clocks(eng)[0][:2] == ("2026-02-27T05:00:00Z", "2026-03-06T05:00:00Z")


# --------------------------------------------------------------------------- the commands



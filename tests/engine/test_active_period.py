"""The site's whole life bounds every clock, worked by hand.

A storm that qualifies before ``active_since``, after final stabilization
(``active_until`` or ``site close``) or in a pause is recorded and alerted as
informational and opens no storm clock; a storm clock still open when the
period ends is cut. Without ``active_since``, a reading far in the past of the
rest (a stray row two years early) does not start the routine chain: the site
starts at its first reading that another reading follows within
``routine_inspection_days``.

The site is in New York (EDT, UTC-4, in May): local midnight is 04:00Z.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

from monitor.contract.inputs import Inspection, Reading, SiteClosure
from monitor.contract.times import MS_PER_DAY, MS_PER_HOUR, MS_PER_MINUTE, iso
from monitor.engine.core import Engine
from monitor.engine.summary import site_status

from ..support.util import SITE, inspection, rain, run, site_config, storm, tips, ts

H, D = MS_PER_HOUR, MS_PER_DAY
CLOCK_NOTICES = ("inspection_overdue", "inspection_due_soon", "inspection_missed",
                 "clock_closed")


#: What each engine has handed out as settled (``drain_settled`` hands each out once).
_SETTLED: WeakKeyDictionary[Engine, list[dict[str, Any]]] = WeakKeyDictionary()


def everything(eng: Engine) -> list[dict[str, Any]]:
    """The engine's final set: what is in memory and what has settled out of it."""
    kept = _SETTLED.setdefault(eng, [])
    kept += [e.to_json() for e in eng.drain_settled()]
    return sorted(kept + [e.to_json() for e in eng.current_events()],
                  key=lambda e: (e["at"], e["id"]))


def storm_notices(eng: Engine) -> list[dict[str, Any]]:
    return [e for e in everything(eng) if e["type"] in CLOCK_NOTICES and e["clock"] == "storm"]


def outside(eng: Engine) -> list[tuple[Any, ...]]:
    """Each storm_qualified as (qualified_at, due, clock_id, informational, outside)."""
    return [(q["qualified_at"], q["due"], q.get("clock_id"), q.get("informational"),
             q.get("outside")) for q in everything(eng) if q["type"] == "storm_qualified"]


# --------------------------------------------------------------------------- storms


def test_a_storm_before_active_since_opens_no_clock() -> None:
    # The site starts 2026-05-10 (04:00Z); 0.60 in on May 1 reaches 0.50 in at 10:49Z.
    # Today: a storm clock due May 2 10:49Z and an overdue notice every 4 hours to May 12
    # (61 of them) for a site not yet started.
    eng, _ = run(storm(ts("2026-05-01T10:00:00Z")), ts("2026-05-12T00:00:00Z"),
                 active_since="2026-05-10")
    assert outside(eng) == [("2026-05-01T10:49:00Z", None, None, True, "before_active_since")]
    assert [c.clock for c in eng.clocks(SITE)] == ["routine"]
    assert storm_notices(eng) == []
    # The routine clock starts with the site and is due at the end of May 17, local.
    (routine,) = site_status(eng, SITE, ts("2026-05-12T00:00:00Z"))["open_clocks"]
    assert (routine["started_at"], routine["due"]) == (
        "2026-05-10T04:00:00Z", "2026-05-18T03:59:59.999Z")


def test_a_storm_after_final_stabilization_opens_no_clock() -> None:
    # active_until 2026-05-10: final stabilization from 04:00Z that day.
    eng, _ = run(storm(ts("2026-05-12T10:00:00Z")), ts("2026-05-20T00:00:00Z"),
                 active_since="2026-05-01", active_until="2026-05-10")
    assert outside(eng) == [("2026-05-12T10:49:00Z", None, None, True,
                             "after_final_stabilization")]
    assert storm_notices(eng) == []
    # A recorded site close does the same for a storm after it.
    closed = ts("2026-05-09T16:00:00Z")
    items: list[Reading | Inspection | SiteClosure] = [
        SiteClosure(SITE, closed, closed), *storm(ts("2026-05-12T10:00:00Z"))]
    eng, _ = run(items, ts("2026-05-20T00:00:00Z"), active_since="2026-05-01")
    assert outside(eng) == [("2026-05-12T10:49:00Z", None, None, True,
                             "after_final_stabilization")]
    assert storm_notices(eng) == []


def test_a_storm_clock_open_when_the_site_closes_is_cut_there() -> None:
    # Qualifies May 9 10:49Z, due May 10 10:49Z; the site is closed May 9 16:00Z, before
    # any reminder (the first at due - 6 h, May 10 04:49Z): no notice, never overdue, and
    # an inspection after the closure closes nothing.
    closed = ts("2026-05-09T16:00:00Z")
    items: list[Reading | Inspection | SiteClosure] = [
        *storm(ts("2026-05-09T10:00:00Z")), SiteClosure(SITE, closed, closed),
        inspection(ts("2026-05-09T20:00:00Z"))]
    eng, _ = run(items, ts("2026-05-20T00:00:00Z"), active_since="2026-05-01")
    assert outside(eng) == [("2026-05-09T10:49:00Z", "2026-05-10T10:49:00Z",
                             "storm-rg1-20260509T100000Z", None, None)]
    (clock,) = [c for c in eng.clocks(SITE) if c.clock == "storm"]
    assert (clock.ends_at, clock.closed_at) == (closed, None)
    assert storm_notices(eng) == []
    assert site_status(eng, SITE, ts("2026-05-10T00:00:00Z"))["open_clocks"] == []


def test_a_storm_in_a_pause_opens_no_clock_and_one_open_at_its_start_is_cut() -> None:
    # Pause May 11-20 (local): from May 11 04:00Z to May 21 04:00Z. A storm at 10:00 PM
    # EDT on May 10 (02:00Z on the 11th) qualifies 02:49Z, its clock due May 12 02:49Z and
    # cut 71 minutes after it opened; a storm on May 16 opens none.
    items: list[Reading | Inspection | SiteClosure] = [
        *storm(ts("2026-05-11T02:00:00Z")), *storm(ts("2026-05-16T10:00:00Z"), seq0=100),
        inspection(ts("2026-05-21T12:00:00Z"))]
    eng, _ = run(items, ts("2026-05-25T00:00:00Z"), active_since="2026-05-01",
                 pauses=[{"from": "2026-05-11", "to": "2026-05-20", "reason": "shutdown"}])
    assert outside(eng) == [
        ("2026-05-11T02:49:00Z", "2026-05-12T02:49:00Z", "storm-rg1-20260511T020000Z",
         None, None),
        ("2026-05-16T10:49:00Z", None, None, True, "paused")]
    (clock,) = [c for c in eng.clocks(SITE) if c.clock == "storm"]
    assert (clock.ends_at, clock.closed_at) == (ts("2026-05-11T04:00:00Z"), None)
    assert storm_notices(eng) == []


# --------------------------------------------------------------------------- a stray row


def stray_then_site(stray: Reading) -> list[Reading]:
    """A stray row two years early, then the site's gauge every hour for two days (the
    counter unchanged: no rain)."""
    start = ts("2026-05-01T12:00:00Z")
    return [stray] + [tips("rg1", start + h * H, 1520) for h in range(48)]


def test_a_stray_row_two_years_early_does_not_start_the_routine_chain() -> None:
    # Without active_since. Today the chain starts 2024-05-03 12:00Z: 104 missed weeks and
    # 4 346 overdue notices by 2026-05-03. The stray is followed by two years of silence,
    # more than a routine period (7 days): the site starts at 2026-05-01 12:00Z, the first
    # reading another follows within 7 days, due at the end of May 8 local (EDT).
    items = stray_then_site(tips("rg1", ts("2024-05-03T12:00:00Z"), 1520))
    now = ts("2026-05-03T12:00:00Z")
    eng, _ = run(items, now)
    assert [e for e in everything(eng) if e["type"] in CLOCK_NOTICES] == []
    assert [(c.clock_id, c.due) for c in eng.clocks(SITE)] == [
        ("routine-2026-05-01T12:00:00Z", ts("2026-05-09T03:59:59.999Z"))]
    assert site_status(eng, SITE, now)["missed_weeks"] == 0
    # The same set in any order.
    again, _ = run(list(reversed(items)), now)
    assert [(c.clock_id, c.due) for c in again.clocks(SITE)] == [
        (c.clock_id, c.due) for c in eng.clocks(SITE)]


def test_a_storm_at_a_stray_row_is_informational() -> None:
    # One row of 0.60 in two years early qualifies on its own; it is no start of the site.
    items = stray_then_site(rain("rg1", ts("2024-05-03T12:00:00Z"), 0.6, 1))
    eng, _ = run(items, ts("2026-05-03T12:00:00Z"))
    assert outside(eng) == [("2024-05-03T12:00:00Z", None, None, True, "before_start")]
    assert storm_notices(eng) == []


def test_no_routine_clock_until_a_second_reading_shows_where_the_site_starts() -> None:
    first = ts("2026-05-01T12:00:00Z")
    eng, _ = run([tips("rg1", first, 0)], first + H)
    assert eng.clocks(SITE) == []
    # A second reading eight days on: the first is a stray; the second has no partner yet.
    eng.apply(tips("rg1", first + 8 * D, 0))
    assert eng.clocks(SITE) == []
    eng.apply(tips("rg1", first + 8 * D + 10 * MS_PER_MINUTE, 0))
    assert [c.clock_id for c in eng.clocks(SITE)] == ["routine-2026-05-09T12:00:00Z"]
    # A late reading six days after the first makes the first the start (the chain then
    # runs from it; the clock due at the end of May 8 local is overdue).
    eng.apply(tips("rg1", first + 6 * D, 0))
    assert [c.clock_id for c in eng.clocks(SITE)][0] == "routine-2026-05-01T12:00:00Z"


def test_a_late_reading_that_makes_a_stray_the_start_gives_what_order_gives() -> None:
    """A stray storm row at q, then the site from q + 8.5 days (the engine's horizon
    passes q + 6 h, where the storm ended), then a reading of q + 6 days arriving late:
    q is the site's start after all, and its storm opens a clock, as in event-time
    order. Until then the storm was informational, and must not have settled so."""
    q = ts("2026-05-01T12:00:00Z")
    stray = rain("rg1", q, 0.6, 1)
    later = [rain("rg1", q + 8 * D + 12 * H + h * H, 0.0, 10 + h) for h in range(30)]
    late = rain("rg1", q + 6 * D, 0.0, 5)
    arrival = Engine(site_config())
    for r in [stray, *later]:
        arrival.apply(r)
    assert outside(arrival)[0][3:] == (True, "before_start")
    arrival.apply(late)
    end = later[-1].ts_ms
    arrival.tick(end)
    ordered, _ = run(sorted([stray, late, *later], key=lambda r: r.ts_ms), end)
    assert [dict(e, revision=None) for e in everything(arrival)] == [
        dict(e, revision=None) for e in everything(ordered)]
    assert outside(ordered) == [(iso(q), iso(q + D), "storm-rg1-20260501T120000Z", None, None)]


# --------------------------------------------------------------------------- replay


# ------------------------------------------------------------- a stray counter row


def stray_counter_then_site(stray_total: int | None) -> list[Reading]:
    """A counter row of 2024 (``stray_total``; None: none), then the site's own from
    ``active_since`` (May 1, 00:00 EDT = 04:00Z): 1 520 at 14:00Z, 1 547 at 14:10Z,
    1 571 at 14:20Z, then unchanged every hour to the next day."""
    start = ts("2026-05-01T14:00:00Z")
    own = [tips("rg1", start, 1520), tips("rg1", start + 10 * MS_PER_MINUTE, 1547)] + [
        tips("rg1", start + 20 * MS_PER_MINUTE + h * H, 1571) for h in range(24)]
    return ([tips("rg1", ts("2024-05-01T14:00:00Z"), stray_total)]
            if stray_total is not None else []) + own


def test_a_stray_counter_before_active_since_is_no_baseline() -> None:
    # Today the 2024 row of 1 000 is the baseline of 14:00Z: 520 tips revealed after a
    # two-year silence, a 5.71 in storm (5.20 in of unknown timing) qualifying at 14:00Z.
    # The first counter of the active period is a baseline again: 27 + 24 = 51 tips,
    # 0.51 in, qualifying at 14:20Z, as without the stray row.
    now = ts("2026-05-02T16:00:00Z")
    eng, _ = run(stray_counter_then_site(1000), now, active_since="2026-05-01")
    storms = [(e["started_at"], e["total_in"], e["uncertain_in"]) for e in everything(eng)
              if e["type"] == "storm_ended" and e["gauge"] == "rg1"]
    assert storms == [("2026-05-01T14:10:00Z", 0.51, 0.0)]
    assert [q[:3] for q in outside(eng)] == [
        ("2026-05-01T14:20:00Z", "2026-05-02T14:20:00Z", "storm-rg1-20260501T141000Z")]
    # Nothing of the site's own changes with the stray row but the sensor's silence
    # since 2024 (stale then, recovered at 14:00Z): the turbidity pair's monitoring
    # starts at the site's first own reading, not at active_since's midnight.
    alone, _ = run(stray_counter_then_site(None), now, active_since="2026-05-01")
    assert [e for e in everything(eng) if e["at"] >= "2026-05-01"
            and not (e["type"] == "sensor_recovered" and e["at"] == "2026-05-01T14:00:00Z")
            ] == everything(alone)



"""The inspection record a regulator would accept, through the whole engine.

Who inspected (the roster, kind ``other``), when it was entered (backdated
inspections are marked and the officer alerted), clock identity at one
instant, the site's active period (pauses, ``active_until``, ``site close``),
the weeks a routine clock misses (§ 134-12D) and corrective actions.
"""

from __future__ import annotations

import json
from typing import Any

from monitor.contract.inputs import CorrectiveAction, Inspection, Reading, SiteClosure
from monitor.contract.times import MS_PER_DAY, MS_PER_HOUR, parse_iso
from monitor.engine.core import Engine
from monitor.engine.summary import site_status
from monitor.rules.active import missed_weeks

from ..support.util import SITE, final, insp, run, site_config, storm

H, D = MS_PER_HOUR, MS_PER_DAY
#: Local midnight of 2026-05-01 at the site (America/New_York, EDT).
MAY1 = parse_iso("2026-05-01T04:00:00Z")


def test_clock_ids_are_unique_whatever_inspects_at_one_instant() -> None:
    """Two inspectors recording at the very start of the chain (and again later at one
    instant): every clock has its own id, and the clock left open goes overdue."""
    items = [insp(MAY1, "J. Rivera"), insp(MAY1, "A. Lee"),
             insp(MAY1 + 3 * D, "J. Rivera"), insp(MAY1 + 3 * D, "A. Lee")]
    eng, _ = run(items, MAY1 + 12 * D, active_since="2026-05-01")
    ids = [c.clock_id for c in eng.clocks(SITE)]
    assert len(ids) == len(set(ids)) == 3
    assert ids[:2] == ["routine-2026-05-01T04:00:00Z", "routine-2026-05-01T04:00:00Z#2"]
    overdue = {e["clock_id"] for e in final(eng, "inspection_overdue")}
    assert overdue == {ids[2]}
    (open_clock,) = site_status(eng, SITE, MAY1 + 12 * D)["open_clocks"]
    assert open_clock["clock_id"] == ids[2] and open_clock["overdue"] is True


def test_a_joint_inspection_is_one_record_with_every_name() -> None:
    eng, _ = run([insp(MAY1 + H, "J. Rivera & A. Lee", inspectors=("J. Rivera", "A. Lee"),
                       credentials=("CPESC 1", "PE 2"))], MAY1 + 2 * H,
                 active_since="2026-05-01")
    (rec,) = final(eng, "inspection_recorded")
    assert rec["inspectors"] == ["J. Rivera", "A. Lee"]
    assert rec["credentials"] == ["CPESC 1", "PE 2"]
    assert rec["closes"] == ["routine-2026-05-01T04:00:00Z"]


def test_routine_clocks_run_only_in_the_active_period() -> None:
    """A pause cuts the open clock (no notices in it) and the next starts the day after
    it; after ``active_until`` no routine clock runs; storms are still recorded."""
    end = MAY1 + 60 * D
    eng, _ = run([*storm(MAY1 + 15 * D, 60)], end, active_since="2026-05-01",
                 pauses=[{"from": "2026-05-11", "to": "2026-05-20", "reason": "shutdown"}],
                 active_until="2026-06-10")
    clocks = [c for c in eng.clocks(SITE) if c.clock == "routine"]
    pause_from, pause_to = MAY1 + 10 * D, MAY1 + 20 * D
    assert [(c.start, c.ends_at) for c in clocks] == [
        (MAY1, pause_from), (pause_to, MAY1 + 40 * D)]
    notices = [e for e in eng.current_events()
               if e.type in ("inspection_overdue", "inspection_due_soon", "inspection_missed")
               and e.body.to_json()["clock"] == "routine"]
    assert notices and all(not pause_from <= e.at_ms < pause_to for e in notices)
    assert all(e.at_ms < MAY1 + 40 * D for e in notices)
    # The storm in the pause still qualified, as informational: the active period bounds
    # every clock (it used to open a storm clock in the shutdown).
    assert [(q.get("clock_id"), q["due"], q["informational"], q["outside"])
            for q in final(eng, "storm_qualified")] == [(None, None, True, "paused")]
    assert [c for c in eng.clocks(SITE) if c.clock == "storm"] == []


def test_site_close_ends_the_routine_cadence() -> None:
    closed = MAY1 + 9 * D
    eng, _ = run([SiteClosure(SITE, closed, closed + H, "J. Rivera", "final stabilization")],
                 MAY1 + 40 * D, active_since="2026-05-01")
    (sc,) = final(eng, "site_closed")
    assert (sc["closed_at"], sc["by"]) == ("2026-05-10T04:00:00Z", "J. Rivera")
    (clock,) = [c for c in eng.clocks(SITE) if c.clock == "routine"]
    assert clock.ends_at == closed
    assert all(e.at_ms < closed for e in eng.current_events()
               if e.type in ("inspection_overdue", "inspection_missed"))
    assert site_status(eng, SITE, MAY1 + 40 * D)["open_clocks"] == []
    # A later closure record changes nothing; the earliest holds.
    assert eng.apply(SiteClosure(SITE, closed + D)) == []


def test_each_missed_week_is_counted() -> None:
    """§ 134-12D: a routine clock 15 days past due has missed 3 weeks; an inspection
    stops the count."""
    due = MAY1 + 8 * D - 1  # the end of 2026-05-08 at the site, 23:59:59.999 EDT
    eng, _ = run([], due + 15 * D, active_since="2026-05-01")
    eng.tick(due + 15 * D)
    weeks = final(eng, "inspection_missed")
    assert [w["week"] for w in weeks] == [1, 2, 3]
    assert [parse_iso(w["week_from"]) for w in weeks] == [due, due + 7 * D, due + 14 * D]
    assert missed_weeks(due, due + 15 * D) == 3
    status = site_status(eng, SITE, due + 15 * D)
    assert status["missed_weeks"] == 3
    assert status["open_clocks"][0]["missed_weeks"] == 3
    eng.apply(insp(due + 16 * D))
    eng.tick(due + 22 * D)  # the next clock is due at due + 23 days
    assert len(final(eng, "inspection_missed")) == 3
    assert missed_weeks(due, due + 40 * D, due + 16 * D) == 3


def test_corrective_actions_are_reminded_when_due_and_closed_by_a_later_inspection() -> None:
    t0 = MAY1 + 2 * H
    asked = insp(t0, corrective_actions=(
        CorrectiveAction("ca-1", "re-trench silt fence", t0 + 2 * D),
        CorrectiveAction("ca-2", "seed the berm", t0 + 5 * D)), resolves=("ca-2",))
    fixed = insp(t0 + D, resolves=("ca-1",))
    items: list[Reading | Inspection | SiteClosure] = [asked, fixed]
    eng, _ = run(items, t0 + 6 * D, active_since="2026-05-01")
    (due,) = final(eng, "corrective_action_due")
    assert (due["action_id"], due["at"]) == ("ca-2", "2026-05-06T06:00:00Z")
    assert due["opened_at"] == "2026-05-01T06:00:00Z"
    (open_action,) = site_status(eng, SITE, t0 + 6 * D)["corrective_actions"]
    assert (open_action["id"], open_action["overdue"]) == ("ca-2", True)
    eng.apply(insp(t0 + 6 * D + H, resolves=("ca-2",)))
    assert site_status(eng, SITE, t0 + 7 * D)["corrective_actions"] == []
    assert len(final(eng, "corrective_action_due")) == 1  # it was due unresolved
    # Arrival order does not matter.
    eng2, _ = run([fixed, insp(t0 + 6 * D + H, resolves=("ca-2",)), asked], t0 + 6 * D,
                  active_since="2026-05-01")
    eng2.tick(t0 + 7 * D)
    assert final(eng2, "corrective_action_due") == final(eng, "corrective_action_due")


def test_open_actions_and_their_inspections_outlive_compaction() -> None:
    """An action open for weeks keeps its inspection in memory past the lateness window
    (and with it the clocks that inspection closed), so nothing is revised or revived."""
    t0 = MAY1 + 2 * H
    items: list[Reading | Inspection | SiteClosure] = [
        insp(t0, corrective_actions=(CorrectiveAction("ca-1", "rebuild outlet", t0 + 3 * D),))]
    items += [insp(t0 + k * 7 * D) for k in range(1, 6)]
    items += [insp(t0 + 36 * D, resolves=("ca-1",))]
    eng, events = run(items, t0 + 50 * D, active_since="2026-05-01")
    for k in range(50, 80):
        events += eng.tick(t0 + k * D)
    settled = [e.to_json() for e in eng.drain_settled()]
    assert [e for e in events if e.revision > 0] == []
    everything = {e["id"]: e for e in settled} | {e.id: e.to_json()
                                                  for e in eng.current_events()}
    dues = [e for e in everything.values() if e["type"] == "corrective_action_due"]
    assert [d["action_id"] for d in dues] == ["ca-1"]
    closed = [e for e in everything.values() if e["type"] == "clock_closed"]
    assert len(closed) == 7 and all(c["outcome"] == "met" for c in closed)
    assert site_status(eng, SITE, t0 + 80 * D)["corrective_actions"] == []


def test_a_restored_engine_carries_on_with_closure_actions_and_missed_weeks() -> None:
    """dump() and restore() keep the closure, the open actions and the settled count."""
    t0 = MAY1 + 2 * H
    items: list[Reading | Inspection | SiteClosure] = [
        insp(t0, corrective_actions=(CorrectiveAction("ca-1", "rebuild outlet", t0 + 3 * D),)),
        SiteClosure(SITE, MAY1 + 60 * D, MAY1 + 60 * D)]
    eng, _ = run(items, t0 + 40 * D, active_since="2026-05-01")
    config = site_config(active_since="2026-05-01")
    again = Engine.restore(config, json.loads(json.dumps(eng.dump(), allow_nan=False)))
    for e in (eng, again):
        e.tick(t0 + 90 * D)
    now = t0 + 90 * D
    assert site_status(again, SITE, now) == site_status(eng, SITE, now)
    status = site_status(eng, SITE, now)
    assert status["missed_weeks"] == 8 and status["closed_at"] == "2026-06-30T04:00:00Z"
    assert [a["id"] for a in status["corrective_actions"]] == ["ca-1"]
    assert sorted(e.id for e in again.current_events()) == sorted(
        e.id for e in eng.current_events())


def test_two_records_of_one_visit_give_the_same_events_in_either_order() -> None:
    """Two inspections with one (time, inspector, kind) but other contents (the field
    app's record with a photo and a hand-written message of the same visit) are one
    inspection: which one stands must not depend on which arrived first. The first
    to arrive used to stand (found by the order property test)."""
    t0 = MAY1 + 2 * H
    web = insp(t0, corrective_actions=(CorrectiveAction("ca-1", "fix the fence", t0 + D),),
               via="web", certified=True)
    other = insp(t0, corrective_actions=(CorrectiveAction("ca-1", "fix", t0 + 2 * D),))
    first, _ = run([web, other], t0 + 3 * D, active_since="2026-05-01")
    second, _ = run([other, web], t0 + 3 * D, active_since="2026-05-01")
    def plain(eng: Engine, kind: str) -> list[dict[str, Any]]:
        return [{k: v for k, v in e.items() if k != "revision"} for e in final(eng, kind)]

    for kind in ("inspection_recorded", "corrective_action_due", "clock_closed"):
        assert plain(first, kind) == plain(second, kind), kind
    (recorded,) = final(first, "inspection_recorded")
    assert len(recorded["corrective_actions"]) == 1  # one of them, not both

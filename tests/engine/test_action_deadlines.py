"""Corrective actions and routine maintenance against the deadlines of a site's permits
(EPA CGP 2022 Part 5.2 and Part 2.1.4.b), through the real engine.

Worked by hand, in America/New_York (EST, UTC-5, all of December):

* a corrective action found Mon Dec 7 2026 10:00 (15:00Z): 7 calendar days from
  the day of discovery is Mon Dec 14, due at its end, 23:59:59.999 EST =
  2026-12-15T04:59:59.999Z (``routine_due: end_of_day`` counts the same way);
* routine maintenance found Thu Dec 24 2026 10:00: the next business day is not
  Fri Dec 25 (Christmas Day, a US public holiday) nor the weekend of Dec 26/27,
  but Mon Dec 28; its close at 17:00 EST (business hours 07:00-17:00) is
  2026-12-28T22:00:00Z.
"""

from __future__ import annotations

from typing import Any

from monitor.contract.inputs import ActionStep, CorrectiveAction, Inspection, Reading
from monitor.contract.times import MS_PER_DAY, MS_PER_HOUR, parse_iso
from monitor.engine.core import Engine
from monitor.rules.clocks.actions import action_facts, action_states, record_of

from ..support.util import SITE, final, insp, rain, run, site_config

H, D = MS_PER_HOUR, MS_PER_DAY
EPA: dict[str, Any] = {
    "permits": ["village-branch-134", {"profile": "epa-cgp-2022", "frequency": "weekly"}],
    "business_days": {"country": "US"}, "active_since": "2026-12-01"}
FOUND = parse_iso("2026-12-07T15:00:00Z")  # Mon Dec 7, 10:00 EST
DUE = parse_iso("2026-12-15T04:59:59.999Z")  # end of Mon Dec 14, EST
ASKED = insp(FOUND, corrective_actions=(
    CorrectiveAction("ca-1", "replace the silt fence at 2+40"),))
XMAS_EVE = parse_iso("2026-12-24T15:00:00Z")  # Thu Dec 24, 10:00 EST
CLOSE_MON = parse_iso("2026-12-28T22:00:00Z")  # Mon Dec 28, 17:00 EST
MAINT = insp(XMAS_EVE, corrective_actions=(
    CorrectiveAction("ca-2", "clean out the inlet protection", kind="maintenance"),))


def overdue(eng: Engine) -> list[dict[str, Any]]:
    return final(eng, "corrective_action_overdue")


def test_an_action_not_done_in_7_calendar_days_is_overdue_once_at_the_end_of_the_day() -> None:
    eng, _ = run([ASKED], DUE - 1, **EPA)
    assert overdue(eng) == []  # the last millisecond of Dec 14 is still in time
    eng.tick(DUE)
    (o,) = overdue(eng)
    assert {k: o[k] for k in ("at", "action_id", "text", "due", "permit", "section",
                              "hours_late")} == {
        "at": "2026-12-15T04:59:59.999Z", "action_id": "ca-1",
        "text": "replace the silt fence at 2+40", "due": "2026-12-15T04:59:59.999Z",
        "permit": "epa-cgp-2022", "section": "CGP 2022 Part 5.2", "hours_late": 0.0}
    eng.tick(DUE + 30 * D)
    assert [e["id"] for e in overdue(eng)] == [o["id"]]  # one per action and permit
    # The action's own due (none here) gives no reminder: the permit's deadline is apart.
    assert final(eng, "corrective_action_due") == []


def test_an_action_verified_within_the_7_days_is_not_overdue() -> None:
    eng, _ = run([ASKED, insp(FOUND + 3 * D, resolves=("ca-1",))], DUE + 10 * D, **EPA)
    assert overdue(eng) == []


def test_an_action_verified_after_the_deadline_stays_overdue() -> None:
    eng, _ = run([ASKED], DUE + D, **EPA)
    (before,) = overdue(eng)
    eng.apply(insp(DUE + D, resolves=("ca-1",)))
    eng.tick(DUE + 5 * D)
    assert overdue(eng) == [before]


def test_an_action_with_its_own_due_keeps_it_beside_the_permit_deadline() -> None:
    own = insp(FOUND, corrective_actions=(
        CorrectiveAction("ca-1", "replace the silt fence at 2+40", FOUND + 2 * D),))
    eng, _ = run([own], DUE, **EPA)
    assert [d["due"] for d in final(eng, "corrective_action_due")] == ["2026-12-09T15:00:00Z"]
    assert [o["due"] for o in overdue(eng)] == ["2026-12-15T04:59:59.999Z"]


def test_maintenance_is_due_at_the_close_of_the_next_business_day_past_a_holiday() -> None:
    # Dec 25 is a holiday: by Sat Dec 26 nothing is overdue (it would be, had Friday counted).
    eng, _ = run([MAINT], parse_iso("2026-12-26T15:00:00Z"), **EPA)
    assert overdue(eng) == []
    eng.tick(CLOSE_MON - 1)
    assert overdue(eng) == []
    eng.tick(CLOSE_MON)
    (o,) = overdue(eng)
    assert (o["at"], o["due"], o["section"], o["permit"], o["action_id"]) == (
        "2026-12-28T22:00:00Z", "2026-12-28T22:00:00Z", "CGP 2022 Part 2.1.4.b",
        "epa-cgp-2022", "ca-2")


def test_a_site_under_chapter_134_alone_has_no_permit_deadline() -> None:
    eng, _ = run([ASKED, MAINT], CLOSE_MON + 30 * D, active_since="2026-12-01")
    assert overdue(eng) == []


def test_a_report_of_done_counts_as_the_fix() -> None:
    """A ``corrective_action_done`` step before the deadline is a fix in time, one after it
    is late (``action_states`` and ``action_facts``, the functions the engine uses)."""
    site = site_config(**EPA).sites[0]
    in_time = ActionStep(SITE, "ca-1", "done", FOUND + 3 * D, "contractor")
    late = ActionStep(SITE, "ca-1", "done", DUE + 1, "contractor")

    def overdue_ids(steps: tuple[ActionStep, ...]) -> list[str]:
        facts = action_facts(site, action_states([record_of(ASKED)], steps), DUE + 5 * D)
        return [f.body.TYPE for f in facts]

    assert overdue_ids((in_time,)) == []
    assert overdue_ids((late,)) == ["corrective_action_overdue"]
    assert overdue_ids(()) == ["corrective_action_overdue"]


def test_an_overdue_action_settles_with_its_inspections_unrevised() -> None:
    """Verified late, then weeks of inspections: the action and its overdue leave memory
    as final, never retracted."""
    items: list[Reading | Inspection] = [ASKED, insp(DUE + D, resolves=("ca-1",))]
    items += [insp(FOUND + k * 7 * D) for k in range(2, 9)]
    # Readings move the horizon (an inspection does not); dry ones open no clock.
    items += [rain("rg1", FOUND + k * D, 0.0, k) for k in range(1, 60)]
    eng, events = run(items, FOUND + 60 * D, **EPA)
    assert eng.site_engine(SITE).compacted_ms is not None
    settled = [e.to_json() for e in eng.drain_settled()]
    assert [e.to_json() for e in events if e.revision > 0] == []
    assert [e["action_id"] for e in settled if e["type"] == "corrective_action_overdue"] == [
        "ca-1"]
    assert overdue(eng) == []

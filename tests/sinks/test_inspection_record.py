"""A backdated inspection alerts the officer: its route keys (monitor/README.md, "Events")."""

from __future__ import annotations

from monitor.contract.times import MS_PER_DAY, MS_PER_HOUR, parse_iso
from monitor.sinks.notify.routing import DEFAULT_ROUTES, route_keys

from ..support.util import final, insp, of_type, run, storm, ts

H, D = MS_PER_HOUR, MS_PER_DAY


def test_backdated_inspection_is_marked_and_the_officer_alerted() -> None:
    """Entered three days after the overdue notices began: it still closes the clock
    (the inspection was on time), but both records carry ``entered_at`` and
    ``backdated``, and ``inspection_backdated`` goes to the officer."""
    eng, _ = run(storm(ts("10:00"), 60))
    (q,) = final(eng, "storm_qualified")
    due = parse_iso(q["due"])
    entered = due + 3 * D
    eng.tick(entered)
    assert len(final(eng, "inspection_overdue")) == 19  # every 4 h for 3 days
    events = eng.apply(insp(due - 2 * H, kind="storm", entered_ms=entered))
    (closed,) = [e for e in of_type(events, "clock_closed") if e["clock"] == "storm"]
    assert (closed["outcome"], closed["backdated"]) == ("met", True)
    assert closed["entered_at"] == "2026-05-05T10:49:00Z"
    (rec,) = final(eng, "inspection_recorded")
    assert rec["backdated"] is True and rec["entered_at"] == closed["entered_at"]
    (back,) = [e for e in events if e.type == "inspection_backdated"]
    assert back.at_ms == entered and back.body.to_json()["hours_late"] == 74.0
    assert q["clock_id"] in back.body.to_json()["closes"]
    assert DEFAULT_ROUTES[route_keys(back)[-1]] == ("officer",)

    # Entered within backdate_alert_hours: not marked.
    eng2, _ = run([*storm(ts("10:00"), 60), insp(due - 2 * H, kind="storm",
                                                 entered_ms=due - 2 * H + 23 * H)], due + D)
    assert [r["backdated"] for r in final(eng2, "inspection_recorded")] == [False]
    assert not final(eng2, "inspection_backdated")

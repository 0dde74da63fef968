"""A corrective action from the inspection that asked for it to the one that verifies
it: sent to the contractor, reported done, verified, each a fact of the log book.

The chain is worked out by hand: asked at 02:00 local on May 1 (due May 3),
sent an hour later, done the next day, verified two days after that.
"""

from __future__ import annotations

from typing import Any

from monitor.contract.inputs import ActionStep, CorrectiveAction, Inspection, Photo
from monitor.contract.times import MS_PER_DAY, MS_PER_HOUR, parse_iso
from monitor.engine.core import Engine
from monitor.engine.summary import site_status
from monitor.rules.clocks.actions import action_states, record_of, step_fact

from ..support.util import SITE, final, run, site_config

H, D = MS_PER_HOUR, MS_PER_DAY
T0 = parse_iso("2026-05-01T06:00:00Z")  # 02:00 EDT
ASKED = Inspection(SITE, "J. Rivera", T0, "routine", corrective_actions=(
    CorrectiveAction("ca-1", "restake the silt fence at 2+40", T0 + 2 * D),))
SENT = ActionStep(SITE, "ca-1", "sent", T0 + H, "J. Rivera", "restake the silt fence at 2+40",
                  to="crew@example.org")
PHOTO = Photo("ab" * 32, "2026-05-02T05:50:00Z", 40.7, -74.0, None)
DONE = ActionStep(SITE, "ca-1", "done", T0 + D, "contractor", "restake the silt fence at 2+40",
                  note="new stakes", photos=(PHOTO,), via="link")
VERIFIED = Inspection(SITE, "J. Rivera", T0 + 3 * D, "routine", resolves=("ca-1",))


def actions(eng: Engine, now_ms: int) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = site_status(eng, SITE, now_ms)["corrective_actions"]
    return listed


def test_each_step_is_a_fact_and_the_state_follows_the_chain() -> None:
    eng, _ = run([ASKED], T0, active_since="2026-05-01")
    (a,) = actions(eng, T0)
    assert (a["state"], a["sent_at"], a["done_at"]) == ("open", None, None)

    events = eng.apply(SENT)
    (sent,) = [e.to_json() for e in events]
    assert sent == {"type": "corrective_action_sent", "site": SITE, "at": "2026-05-01T07:00:00Z",
                    "id": step_fact(SITE, SENT).id, "revision": 0, "action_id": "ca-1",
                    "text": "restake the silt fence at 2+40", "sent_by": "J. Rivera",
                    "to": "crew@example.org"}
    (a,) = actions(eng, T0 + 2 * H)
    assert (a["state"], a["sent_at"], a["sent_to"]) == ("sent", "2026-05-01T07:00:00Z",
                                                        "crew@example.org")

    (done,) = [e.to_json() for e in eng.apply(DONE)]
    assert (done["type"], done["at"], done["done_by"], done["note"], done["via"]) == (
        "corrective_action_done", "2026-05-02T06:00:00Z", "contractor", "new stakes", "link")
    assert done["photos"] == [PHOTO.to_json()]
    (a,) = actions(eng, T0 + D + H)
    assert (a["state"], a["done_at"], a["done_by"]) == ("done", "2026-05-02T06:00:00Z",
                                                        "contractor")
    # Reported done is not verified: the action stays open, and its reminder comes.
    eng.tick(T0 + 2 * D + H)
    assert [d["action_id"] for d in final(eng, "corrective_action_due")] == ["ca-1"]

    eng.apply(VERIFIED)
    assert actions(eng, T0 + 3 * D + H) == []  # status lists the open ones
    states = action_states([record_of(ASKED), record_of(VERIFIED)], [DONE, SENT])
    (st,) = states
    assert (st.state, st.resolved_ms, st.fixed_ms) == ("verified", T0 + 3 * D, T0 + D)
    assert not st.fixed_late(T0 + 3 * D)  # done a day before it was due
    assert st.to_json()["verified_at"] == "2026-05-04T06:00:00Z"


def test_a_repair_is_late_by_when_it_was_done_and_never_early_by_silence() -> None:
    late_done = ActionStep(SITE, "ca-1", "done", T0 + 2 * D + H, "J. Rivera")
    (st,) = action_states([record_of(ASKED)], [late_done])
    assert st.fixed_late(T0 + 2 * D + H)
    (st,) = action_states([record_of(ASKED)])
    assert not st.fixed_late(T0 + D)  # not due yet
    assert st.fixed_late(T0 + 2 * D)  # due and no record of a fix: late
    # Verified without a step: the verification dates the fix.
    (st,) = action_states([record_of(ASKED), record_of(VERIFIED)])
    assert (st.state, st.fixed_ms) == ("verified", T0 + 3 * D)


def test_steps_outside_the_action_change_nothing_and_the_first_of_a_kind_holds() -> None:
    before = ActionStep(SITE, "ca-1", "sent", T0 - H, "J. Rivera")
    other = ActionStep(SITE, "ca-9", "done", T0 + H, "contractor")
    again = ActionStep(SITE, "ca-1", "sent", T0 + 2 * H, "J. Rivera", to="boss@example.org")
    (st,) = action_states([record_of(ASKED), record_of(VERIFIED)], [other, again, before, SENT])
    assert (st.sent_ms, st.sent_to, st.done_ms) == (T0 + H, "crew@example.org", None)


def test_a_step_seconds_after_the_verifying_inspections_minute_still_counts() -> None:
    """Done at 02:00:19 and verified by the inspection of 02:00 (a form's minute): the
    chain is whole, and the repair dates from the earlier of the two."""
    verified = Inspection(SITE, "J. Rivera", T0 + D, "routine", resolves=("ca-1",))
    done = ActionStep(SITE, "ca-1", "done", T0 + D + 19_000, "J. Rivera", note="restaked")
    (st,) = action_states([record_of(ASKED), record_of(verified)], [done])
    assert (st.state, st.done_ms, st.fixed_ms) == ("verified", T0 + D + 19_000, T0 + D)


def test_order_and_duplicates_of_steps_do_not_change_the_events() -> None:
    items = [ASKED, SENT, DONE, VERIFIED]
    expected = _final(items)
    for order in ([DONE, VERIFIED, SENT, ASKED], [SENT, SENT, ASKED, DONE, VERIFIED, DONE]):
        assert _final(order) == expected
    # Two contents under one step's key: the smaller holds, whatever came first.
    other = ActionStep(SITE, "ca-1", "done", T0 + D, "contractor", note="zzz")
    assert _final([*items, other]) == _final([other, *items])


def test_a_restored_engine_keeps_the_steps() -> None:
    eng, _ = run([ASKED, SENT, DONE], T0 + D + H, active_since="2026-05-01")
    back = Engine.restore(site_config(active_since="2026-05-01"), eng.dump())
    assert actions(back, T0 + D + H) == actions(eng, T0 + D + H)
    assert back.apply(DONE) == []  # a redelivery


def _final(items: list[Any]) -> list[dict[str, Any]]:
    eng, _ = run(items, T0 + 5 * D, active_since="2026-05-01")
    return sorted((_no_revision(e.to_json()) for e in eng.current_events()),
                  key=lambda e: (e["at"], e["type"], e["id"]))


def _no_revision(e: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in e.items() if k != "revision"}

"""Rain revealed after a silence may have qualified a storm long before the reveal
(monitor/README.md, "The rules" and "Events").

A gauge that publishes every interval and falls silent, then comes back with
more tips, reveals rain of unknown timing: it fell somewhere in the silence.
If that rain qualified the storm, the storm may have qualified as early as the
silence began (``qualified_not_before``), the 24-hour inspection may be due
from then (``due_not_before``), and the deadline counted from the reveal
(``due``) is only the latest one: the alert says "inspect now", and the report
marks the storm. Hand-worked times throughout.
"""

from __future__ import annotations

from monitor.contract.inputs import Reading
from monitor.contract.times import iso

from ..support.reveals import MIN, SITE, T0, H, config, final, qualified, silent_gauge


def test_event_end_clock_is_due_from_the_silence_when_the_reveal_ends_the_storm() -> None:
    q = qualified(final(config(rain={"clock_start": "event_end"}), silent_gauge()))
    # The storm's last rain is the revealing reading (23:00): it may have ended as early
    # as the silence began (13:00), so due 23:00 + 24 h at the latest, 13:00 + 24 h at
    # the earliest.
    assert (q["qualified_at"], q["qualified_not_before"], q["due"], q["due_not_before"]) == (
        iso(T0 + 11 * H), iso(T0 + H), iso(T0 + 35 * H), iso(T0 + 25 * H))


def test_a_later_known_end_leaves_only_the_qualification_uncertain() -> None:
    # A tip at 23:30 ends the storm at a known time: the event_end deadline is certain.
    q = qualified(final(config(rain={"clock_start": "event_end"}), silent_gauge(tip_at=30)))
    assert (q["qualified_not_before"], q["due"], q["due_not_before"]) == (
        iso(T0 + H), iso(T0 + 11 * H + 30 * MIN + 24 * H), iso(T0 + 11 * H + 30 * MIN + 24 * H))


def test_no_deadline_at_a_site_without_clocks_but_the_doubt_is_said() -> None:
    q = qualified(final(config(condition="none"), silent_gauge()))
    assert (q["qualified_not_before"], q["due"], q["due_not_before"], q["informational"]) == (
        iso(T0 + H), None, None, True)


def test_rain_that_did_not_qualify_the_storm_leaves_both_null() -> None:
    """Revealed rain before the qualifying reading does not make the qualification
    uncertain: 0.05 in, a silence, 0.40 in revealed at 23:00, then 0.05 in timed tip by
    tip: 0.50 in at 23:05, a known time."""
    rows = [(T0 + m * MIN, min(m, 5)) for m in range(61)]
    rows += [(T0 + 11 * H + m * MIN, 45 + min(m, 10)) for m in range(8 * 60)]
    events = final(config(), [Reading(SITE, "rg1", "rain", t, tips_total=n) for t, n in rows])
    q = qualified(events)
    assert (q["qualified_at"], q["uncertain_in"], q["qualified_not_before"],
            q["due_not_before"]) == (iso(T0 + 11 * H + 5 * MIN), 0.4, None, None)



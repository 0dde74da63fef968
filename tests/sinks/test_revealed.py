"""The alert of a storm revealed after a silence: it may have qualified early, so it says
to inspect now; a storm of known timing keeps its plain alert (monitor/README.md, "The
rules").
"""

from __future__ import annotations

from typing import Any

from monitor.contract.events import Event
from monitor.sinks.notify.messages import Alert, render

from ..support.reveals import T0, H, config, final, qualified, silent_gauge


def storm_event(**fields: Any) -> Event:
    q = qualified(final(config(), silent_gauge()))
    q.update(fields)
    return Event.from_json(q)


def test_the_alert_says_it_may_have_qualified_early_and_to_inspect_now() -> None:
    event = storm_event()
    site = config().sites[0]
    # Sent at the reveal (23:00 UTC, 7:00 PM EDT): the earliest deadline (13:00 UTC the
    # next day) is still ahead.
    m = render(Alert("a:0", event, T0 + 11 * H, site))
    assert m.title == ("Branch Meadows: storm 0.70 in: INSPECT NOW, the deadline may have "
                       "passed")
    assert m.notify_type == "warning"
    assert m.text.startswith(
        "A storm event qualified on rain a silent gauge revealed: it may have qualified as "
        "early as Fri May 1, 2026 9:00 AM EDT, so the 24-hour storm inspection may already "
        "be due or past due. Inspect now.\n")
    assert ("May have qualified as early as: Fri May 1, 2026 9:00 AM EDT: the gauge was "
            "silent from then until Fri May 1, 2026 7:00 PM EDT") in m.text
    assert ("Inspection may be due as early as: Sat May 2, 2026 9:00 AM EDT (14.0 hours "
            "left)\n") in m.text
    assert ("Inspection due at the latest: Sat May 2, 2026 7:00 PM EDT (24.0 hours left), "
            "counted from the reading\n") in m.text
    assert "To do: inspect now: have the qualified professional inspect" in m.text
    # Delivered after the earliest deadline (a node's backlog, a late reveal): it has
    # passed, and the alert is a failure, not a warning.
    late = render(Alert("a:0", event, T0 + 26 * H, site))
    assert late.notify_type == "failure"
    assert ("Inspection may be due as early as: Sat May 2, 2026 9:00 AM EDT (1.0 hours "
            "overdue); that has already passed\n") in late.text


def test_a_storm_of_known_timing_keeps_its_plain_alert() -> None:
    event = storm_event(qualified_not_before=None, due_not_before=None, uncertain_in=0.0)
    m = render(Alert("a:0", event, T0 + 11 * H, config().sites[0]))
    assert m.title == "Branch Meadows: storm 0.70 in, inspect by Sat May 2, 7:00 PM EDT"
    assert "INSPECT NOW" not in m.title and "as early as" not in m.text

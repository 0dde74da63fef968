"""The clocks family: the duties of a site, routine and after storms (§ 134-9A).

``clocks.py`` opens and closes the inspection clocks, ``routine.py`` chains the
routine ones, ``actions.py`` follows corrective actions, ``outcomes.py`` reads
a storm's outcome back from its events, ``settle.py`` says what can no longer
change. (``engine/duties.py`` and ``engine/period.py`` stay in the engine:
they read the engine's series.) No timelines: the clocks are computed from the
gauges' storm facts and the inspections.
"""

from __future__ import annotations

from typing import Final

from ..family import Family

#: The default alert route of each of the family's event types (a variant as
#: ``type.variant``), [] = log book only (``sinks/notify/routing.py``).
ALERT_ROUTES: Final[dict[str, tuple[str, ...]]] = {
    # The qualified professional recorded it; clock_closed says what it settled.
    "inspection_recorded": (),
    # Entered long after its own time: it may have closed a clock that stood
    # overdue meanwhile, so the officer hears of it.
    "inspection_backdated": ("officer",),
    # Each missed week is a separate violation (§ 134-12D); the overdue notices
    # already go out every few hours, so these are for the log book and report.
    "inspection_missed": (),
    "corrective_action_due": ("qp",),
    # The qualified professional sent it to the contractor: the log book's record.
    "corrective_action_sent": (),
    # Reported done (by the contractor's link): the qualified professional verifies it
    # at the next inspection.
    "corrective_action_done": ("qp",),
    # Final stabilization: the routine cadence ends; the officer is told.
    "site_closed": ("qp", "officer"),
    "inspection_due_soon": ("qp",),
    # An overdue clock also notifies the officer.
    "inspection_overdue": ("qp", "officer"),
    "clock_closed": ("qp",),
    # A late inspection is a missed § 134-9A(2) deadline: the officer hears of it.
    "clock_closed.late": ("qp", "officer"),
}


FAMILY = Family(
    name="clocks",
    events=("inspection_recorded", "inspection_backdated", "inspection_due_soon",
            "inspection_overdue", "inspection_missed", "clock_closed",
            "corrective_action_due", "site_closed", "corrective_action_sent",
            "corrective_action_done"),
    alert_routes=ALERT_ROUTES)

"""The clocks family: the duties of a site, routine and after storms (§ 134-9A).

``clocks.py`` opens and closes the inspection clocks, ``routine.py`` chains the
routine ones, ``actions.py`` follows corrective actions, ``outcomes.py`` reads
a storm's outcome back from its events, ``settle.py`` says what can no longer
change. (``engine/duties.py`` and ``engine/period.py`` stay in the engine:
they read the engine's series.) No timelines: the clocks are computed from the
gauges' storm facts and the inspections.
"""

from __future__ import annotations

from ..family import Family

FAMILY = Family(
    name="clocks",
    events=("inspection_recorded", "inspection_backdated", "inspection_due_soon",
            "inspection_overdue", "inspection_missed", "clock_closed",
            "corrective_action_due", "site_closed", "corrective_action_sent",
            "corrective_action_done"))

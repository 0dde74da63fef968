"""The report's chain of each corrective action: found → sent → done → verified.

One row per action open at some time in the period (``Period.actions``, as they
stood where the period is judged): the inspection that found it (when, who),
when it was sent to the contractor (who sent it, to which address), when it
was reported done (by whom, the note), the inspection that verified it, and the
deadline with its outcome: ``on time`` or ``late`` by when the repair was made
(``ActionState.fixed_late``: the earlier of reported done and verified), ``overdue`` when
nothing says it was made and the due time has passed, ``open`` otherwise. A
step not taken is a dash, never a guess. Times are the site's local time.
"""

from __future__ import annotations

from html import escape

from ...engine import Period
from ...rules.clocks.actions import ActionState
from .rows import Local
from .tables import outcome, table

HEADING = "Corrective actions: found → sent → done → verified"


def chain_section(facts: Period, local: Local) -> str:
    """The section (``build.py``): a table of the chains, and what the outcome means."""
    rows = [[escape(f"{a.id}: {a.text}"), escape(f"{local(a.opened_ms)}, {a.inspector}"),
             escape(_sent(a, local)), escape(_done(a, local)), escape(_verified(a, local)),
             escape(local(a.due_ms) if a.due_ms is not None else "no due date"),
             outcome(deadline_word(a, facts.judged_ms))]
            for a in facts.actions]
    note = ("<p class='note'>The deadline is judged by when the repair was first reported "
            "done (by the qualified professional, or by the contractor through the link "
            "sent) or verified by an inspection, whichever came first.</p>"
            if rows else "")
    return f"<h2>{escape(HEADING)}</h2>" + table(
        ["Action", "Found (when, by)", "Sent to the contractor", "Done", "Verified", "Due",
         "Deadline"], rows, "No corrective actions open in the period.") + note


def deadline_word(action: ActionState, judged_ms: int) -> str:
    """``on time``, ``late``, ``overdue`` or ``open`` (module docstring)."""
    late = action.fixed_late(judged_ms)
    if action.fixed_ms is None:
        return "overdue" if late else "open"
    return "late" if late else "on time"


def _sent(a: ActionState, local: Local) -> str:
    if a.sent_ms is None:
        return "—"
    return f"{local(a.sent_ms)} by {a.sent_by}" + (f", mailed to {a.sent_to}" if a.sent_to
                                                   else ", link handed over")


def _done(a: ActionState, local: Local) -> str:
    if a.done_ms is None:
        return "—"
    return f"{local(a.done_ms)} by {a.done_by}" + (f": {a.done_note}" if a.done_note else "")


def _verified(a: ActionState, local: Local) -> str:
    if a.resolved_ms is None:
        return "not yet"
    return f"{local(a.resolved_ms)}, inspection by {a.resolved_by}"

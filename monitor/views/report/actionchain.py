"""The report's chain of each corrective action: found → sent → done → verified.

One row per action open at some time in the period (``Period.actions``, as they
stood where the period is judged): the inspection that found it (when, who),
when it was sent to the contractor (who sent it, to which address), when it
was reported done (by whom, the note), the inspection that verified it, and the
deadline with its outcome: ``on time`` or ``late`` by when the repair was made
(``ActionState.fixed_late``: the earlier of reported done and verified), ``overdue`` when
nothing says it was made and the due time has passed, ``open`` otherwise. A
step not taken is a dash, never a guess. Times are the site's local time.

Beside it, the deadlines the site's permits set that passed with the action
not done: one row per ``corrective_action_overdue`` of the period (action,
deadline, the permit and section it comes from, and whether the repair came
after), read off the events as the engine concluded them.
"""

from __future__ import annotations

from html import escape

from ...config import SiteConfig
from ...contract.permit_events import CorrectiveActionOverdue
from ...engine import Period
from ...rules.clocks.actions import ActionState
from ...rules.permits.duties import permits_of
from .rows import Local
from .tables import outcome, table

HEADING = "Corrective actions: found → sent → done → verified"
PERMIT_HEADING = "Permit deadlines passed: corrective actions and maintenance"


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


def permit_deadline_section(site: SiteConfig, facts: Period, local: Local) -> str:
    """The section of the permits' deadlines passed unfixed (module docstring); none for
    a site whose permits set no such deadline (Chapter 134 alone)."""
    if not any(p.corrective_action or p.maintenance for p in permits_of(site)):
        return ""
    found = {a.id: a for a in facts.actions}
    rows = []
    for e in facts.events:
        b = e.body
        if not isinstance(b, CorrectiveActionOverdue):
            continue
        a = found.get(b.action_id)
        fixed = a.fixed_ms if a is not None else None
        rows.append([escape(f"{b.action_id}: {b.text}"),
                     escape(f"{local(a.opened_ms)}, {a.inspector}" if a is not None else "—"),
                     escape(local(b.due)), escape(f"{b.permit}, {b.section}"),
                     escape(f"after it, {local(fixed)}" if fixed is not None else "not yet")])
    return f"<h2>{escape(PERMIT_HEADING)}</h2>" + table(
        ["Action", "Found (when, by)", "Deadline", "Source", "Done or verified"], rows,
        "No corrective action or maintenance passed a permit's deadline in the period.")


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

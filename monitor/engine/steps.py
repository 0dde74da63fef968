"""The steps of corrective actions in a site's engine: taken in, published, let go.

A step (``ActionStep``: sent to the contractor, reported done) is kept by its
key; the same key again is a redelivery, and of two different contents under
one key the smaller holds, whatever came first (as for inspections,
``core._canonical``), so the facts are a function of the set of steps. Its
fact is ``actions.step_fact``. Compaction lets a step go once it lies before
the horizon and its action has left memory too (``settle.py`` keeps the
inspections of actions that can still change): its fact is then final.
"""

from __future__ import annotations

from typing import Protocol

from ..contract.events import Fact
from ..contract.inputs import ActionStep
from ..rules.clocks.actions import canonical_step, step_fact
from .site import SiteEngine


class Counts(Protocol):
    """The engine's counters a step moves (``core.Stats``)."""

    too_old: int
    duplicates: int
    accepted: int


def apply_step(se: SiteEngine, step: ActionStep, stats: Counts) -> Fact | None:
    """Take one step (counted in ``stats``); its fact when that is new or changed. It
    does not move event time: it is entered at the wall clock, beside the readings."""
    if se.compacted_ms is not None and step.ts_ms < se.compacted_ms:
        stats.too_old += 1
        return None
    if not add_step(se, step):
        stats.duplicates += 1
        return None
    stats.accepted += 1
    return step_fact(se.config.id, se.action_steps[step.key])


def add_step(se: SiteEngine, step: ActionStep) -> bool:
    """Keep ``step``; False when it changes nothing (the same step, or a larger
    content under its key)."""
    held = se.action_steps.get(step.key)
    if held is not None and canonical_step(held) <= canonical_step(step):
        return False
    se.action_steps[step.key] = step
    return True


def settle_steps(se: SiteEngine, horizon_ms: int) -> list[str]:
    """Let go of the steps before ``horizon_ms`` whose action no inspection in memory
    asks for any more; the ids of their facts (final)."""
    kept = {a.id for i in se.inspections for a in i.corrective_actions}
    gone = [k for k, st in se.action_steps.items()
            if st.ts_ms < horizon_ms and st.action_id not in kept]
    return [step_fact(se.config.id, se.action_steps.pop(k)).id for k in gone]



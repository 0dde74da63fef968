"""Steps of a corrective action (sent to the contractor, reported done): checked and
journaled, whether the daemon runs or not, as an inspection is (``inspections.py``).

A step is refused before anything is written when its action is not open at the
site: no inspection asked for that id, or a later one verified it already
(``StepRefused``: the field app says so). Otherwise it goes into the journal,
the daemon's input; with no daemon running this process takes the state lock
and brings the engine up to date itself, so the step is in the log book at once.
The actions are read from the site's current events (``actions_of``), the
record the log book chain covers: inspections and the steps recorded so far.
"""

from __future__ import annotations

import time

from ..config import Config
from ..contract.events import CorrectiveActionDone, CorrectiveActionSent, InspectionRecorded
from ..contract.inputs import ActionStep
from ..errors import UserError
from ..rules.clocks.actions import ActionState, action_states, record_of_event, steps_of_events
from ..store import Store
from ..store.opening import daemon_lock, open_store
from .engine import EngineHost
from .rows import journal_in

WAIT_FOR_DAEMON_S = 20.0


class StepRefused(UserError):
    """The step names no open corrective action of the site (the field app: 404 or 409)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def actions_of(store: Store, site_id: str) -> dict[str, ActionState]:
    """Every corrective action of the site by id, with its steps, as recorded."""
    events = store.events.current(site_id)
    records = [record_of_event(e.body) for e in events if isinstance(e.body, InspectionRecorded)]
    return {a.id: a for a in action_states(records, steps_of_events(site_id, events))}


def open_action(store: Store, site_id: str, action_id: str) -> ActionState:
    """The action ``action_id`` of the site, not yet verified; ``StepRefused`` otherwise."""
    action = actions_of(store, site_id).get(action_id)
    if action is None:
        raise StepRefused(f"action: {action_id[:64]!r} is no corrective action of {site_id}",
                          404)
    if action.resolved_ms is not None:
        raise StepRefused(f"action: {action_id} was verified done by {action.resolved_by};"
                          " nothing more to record", 409)
    return action


def commit_step(config: Config, step: ActionStep, wait_s: float = WAIT_FOR_DAEMON_S) -> bool:
    """Journal ``step`` (its action checked open first); True once it is in the log
    book, False when a running daemon has not applied it within ``wait_s``."""
    with daemon_lock(config) as held, open_store(config) as store:
        open_action(store, step.site, step.action_id)
        store.journal.commit([journal_in(step, topic=None,
                                         received_ms=round(time.time() * 1000))])
        if held is not None:
            host = EngineHost.restore(config, store)
            host.catch_up()
            host.record_status()
            host.snapshot()
            return True
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if _recorded(config, step):
            return True
        time.sleep(0.2)
    return False


def _recorded(config: Config, step: ActionStep) -> bool:
    with open_store(config, readonly=True) as store:
        return any(isinstance(e.body, CorrectiveActionSent | CorrectiveActionDone)
                   and e.at_ms == step.ts_ms and e.body.action_id == step.action_id
                   for e in store.events.current(step.site))

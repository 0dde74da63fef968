"""Corrective actions of inspection reports (§ 134-9A(2)).

An inspection may ask for repairs (``corrective_actions``: id, text, due); a
*later* inspection names the ones it found done (``resolves``). An action is
open from the inspection that asked for it until the first later inspection
resolving it; one still open at its due time is a ``corrective_action_due``
fact at that instant (the qualified professional is reminded).

Beside its own due, an action has a deadline from each permit of the site
with a rule for its kind (``kind: maintenance``, or a corrective action:
``deadlines.py``; EPA CGP 2022 Part 5.2, Part 2.1.4.b). Not fixed by one (no
report of it done and no inspection verifying it at or before the deadline:
``fixed_ms``), it is one ``corrective_action_overdue`` per action and permit at
the deadline instant; a fix after the deadline leaves it standing, as the
reminder at the due time stands.

Between the two, an action may take steps (``ActionStep``, journaled as they
are entered): ``sent`` to the contractor as a link, and reported ``done`` (by
the qualified professional, or the contractor through the link). Each step is
a fact of its own (``corrective_action_sent``, ``corrective_action_done``:
``step_facts``), so the chain found → sent → done → verified is in the log
book. An action's ``state`` is the furthest step it reached: ``open``,
``sent``, ``done``, ``verified`` (resolved by an inspection). A report of
"done" does not close the action: only the inspection verifying it does, and
the reminder at its due time stands until then. Whether the repair met its
deadline is judged at the first time it was reported done or verified
(``fixed_ms``). The first step of each kind counts, whatever
order the steps arrive in; a step of an action not known, or from before it was
asked for, changes no state. A step stamped after the verifying inspection's
time still counts: steps are stamped when entered, to the millisecond, and an
inspection with the minute it was made, so a repair reported done at 09:10:19
is verified by the inspection of 09:10; no step is taken once the action is
verified (``host/actionsteps.py`` refuses it).

Everything here is a pure function of the inspections, recorded ones included
(``record_of_event``), so the engine, ``status`` and the report all ask this
module and cannot disagree about which actions are open.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace

from ...config import SiteConfig
from ...contract.events import (
    CorrectiveActionDone,
    CorrectiveActionDue,
    CorrectiveActionSent,
    Event,
    Fact,
    InspectionRecorded,
    make_id,
)
from ...contract.inputs import ActionKind, ActionStep, CorrectiveAction, Inspection, Photo
from ...contract.permit_events import CorrectiveActionOverdue
from ...contract.times import iso, parse_iso
from ..permits.duties import Permit, permits_of
from .deadlines import overdue_id, overdue_ids, permit_deadlines


@dataclass(frozen=True, slots=True)
class ActionRecord:
    """What the actions need of one inspection."""

    ts_ms: int
    inspector: str
    actions: tuple[CorrectiveAction, ...]
    resolves: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ActionState:
    """One corrective action: asked for at ``opened_ms`` by ``inspector``, resolved at
    ``resolved_ms`` (None while open)."""

    id: str
    text: str
    due_ms: int | None
    opened_ms: int
    inspector: str
    resolved_ms: int | None = None
    resolved_by: str | None = None
    #: The first ``sent`` step (when, by whom, to which address) and the first ``done``.
    sent_ms: int | None = None
    sent_by: str | None = None
    sent_to: str | None = None
    done_ms: int | None = None
    done_by: str | None = None
    done_note: str | None = None
    #: Routine maintenance or a corrective action proper (``deadlines.py``).
    kind: ActionKind = "corrective"

    @property
    def state(self) -> str:
        """The furthest step: ``verified``, ``done``, ``sent`` or ``open``."""
        return ("verified" if self.resolved_ms is not None else "done" if self.done_ms
                is not None else "sent" if self.sent_ms is not None else "open")

    @property
    def fixed_ms(self) -> int | None:
        """When the repair was made, as far as the record says: the earlier of reported
        done and verified; None while neither."""
        known = [t for t in (self.done_ms, self.resolved_ms) if t is not None]
        return min(known) if known else None

    def fixed_late(self, until_ms: int) -> bool:
        """Whether the repair missed its due time: made after it, or not made by
        ``until_ms`` with the due time passed (no record of a fix is no fix)."""
        if self.due_ms is None:
            return False
        fixed = self.fixed_ms
        return fixed > self.due_ms if fixed is not None else until_ms >= self.due_ms

    def open_at(self, ts_ms: int) -> bool:
        return self.opened_ms <= ts_ms and (self.resolved_ms is None or self.resolved_ms > ts_ms)

    @property
    def missed_due(self) -> bool:
        """Still open at its due time (so it was, or will be, reminded)."""
        return self.due_ms is not None and (self.resolved_ms is None
                                            or self.resolved_ms > self.due_ms)

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "text": self.text,
                "due": iso(self.due_ms) if self.due_ms is not None else None,
                "opened_at": iso(self.opened_ms), "inspector": self.inspector,
                "resolved_at": _iso(self.resolved_ms), "resolved_by": self.resolved_by,
                "state": self.state, "sent_at": _iso(self.sent_ms), "sent_by": self.sent_by,
                "sent_to": self.sent_to, "done_at": _iso(self.done_ms), "done_by": self.done_by,
                "done_note": self.done_note, "verified_at": _iso(self.resolved_ms),
                # Maintenance only: a corrective action's record stays as it was.
                **({"kind": self.kind} if self.kind != "corrective" else {})}


def _iso(ms: int | None) -> str | None:
    return iso(ms) if ms is not None else None


def record_of(insp: Inspection) -> ActionRecord:
    return ActionRecord(insp.ts_ms, insp.inspector, insp.corrective_actions, insp.resolves)


def record_of_event(body: InspectionRecorded) -> ActionRecord:
    """The same from a recorded ``inspection_recorded`` (the log book's view)."""
    actions = tuple(CorrectiveAction(str(a["id"]), str(a["text"]), _ms(a.get("due")),
                                     "maintenance" if a.get("kind") == "maintenance"
                                     else "corrective")
                    for a in body.corrective_actions)
    return ActionRecord(parse_iso(body.inspected_at), body.inspector, actions, body.resolves)


def _ms(value: str | None) -> int | None:
    return parse_iso(value) if value else None


def action_states(records: Iterable[ActionRecord], steps: Iterable[ActionStep] = ()
                  ) -> list[ActionState]:
    """Every corrective action with its steps and when it was resolved, in the order
    they were asked for.

    An id names one action: the first inspection asking for it opens it, and
    the first strictly later inspection naming it resolves it (an inspection
    cannot resolve what it asks for itself). A step counts from the action's
    opening on; the first of each kind holds (module docstring). Order and
    repetition of the input do not matter.
    """
    states = _resolved(records)
    for step in sorted(steps, key=_step_order):
        state = states.get(step.action_id)
        if state is None or step.ts_ms < state.opened_ms:
            continue
        if step.step == "sent" and state.sent_ms is None:
            states[step.action_id] = replace(state, sent_ms=step.ts_ms, sent_by=step.by,
                                             sent_to=step.to)
        elif step.step == "done" and state.done_ms is None:
            states[step.action_id] = replace(state, done_ms=step.ts_ms, done_by=step.by,
                                             done_note=step.note)
    return sorted(states.values(), key=lambda s: (s.opened_ms, s.id))


def canonical_step(step: ActionStep) -> str:
    """A step's whole content as one text (keys sorted): the one order of two steps
    of one instant, here and where the engine keeps one step per key (``steps.py``)."""
    return json.dumps(step.to_json(), sort_keys=True, default=str)


def _step_order(step: ActionStep) -> tuple[int, str, str]:
    """Steps by time, then by their whole content: of two at one instant the same one
    comes first whatever the arrival order."""
    return (step.ts_ms, step.by, canonical_step(step))


def _resolved(records: Iterable[ActionRecord]) -> dict[str, ActionState]:
    states: dict[str, ActionState] = {}
    for rec in sorted(records, key=lambda r: (r.ts_ms, r.inspector)):
        for rid in rec.resolves:
            state = states.get(rid)
            if state is not None and state.resolved_ms is None and rec.ts_ms > state.opened_ms:
                states[rid] = replace(state, resolved_ms=rec.ts_ms, resolved_by=rec.inspector)
        for action in rec.actions:
            if action.id not in states:
                states[action.id] = ActionState(action.id, action.text, action.due_ms,
                                                rec.ts_ms, rec.inspector, kind=action.kind)
    return states


def resolvable_at(states: Iterable[ActionState], ts_ms: int) -> list[ActionState]:
    """The actions an inspection at ``ts_ms`` can resolve (``action_states``' rule): asked
    for strictly before it and not resolved at or before it. ``states`` are those of the
    *other* inspections: an inspection cannot resolve what it asks for itself."""
    return [s for s in states if s.opened_ms < ts_ms
            and (s.resolved_ms is None or s.resolved_ms > ts_ms)]


def resolved_nothing(states: Iterable[ActionState], rec: ActionRecord) -> tuple[str, ...]:
    """The ids ``rec`` names in ``resolves`` that resolved nothing: no action open under
    that id at its time (a typo, an action done before, or one it asked for itself).
    The command line and the field app refuse them; an inspection from MQTT is recorded
    as it was sent, and what shows it says so (``monitor/README.md``)."""
    done = {s.id for s in states if s.resolved_ms == rec.ts_ms and s.resolved_by == rec.inspector}
    return tuple(r for r in rec.resolves if r not in done)


def action_facts(site: SiteConfig, states: Iterable[ActionState], now_ms: int | None,
                 permits: tuple[Permit, ...] | None = None) -> list[Fact]:
    """``corrective_action_due`` for each action still open at its due time, once *now*
    has reached it; ``corrective_action_overdue`` for each action and permit whose
    deadline *now* has reached with no fix at or before it (module docstring).
    ``permits``: the site's (worked out when not given)."""
    states = list(states)
    return _due_facts(site.id, states, now_ms) + _overdue_facts(
        site, states, now_ms, permits if permits is not None else permits_of(site))


def _due_facts(site_id: str, states: list[ActionState], now_ms: int | None) -> list[Fact]:
    out = []
    for st in states:
        if not st.missed_due or now_ms is None or st.due_ms is None or st.due_ms > now_ms:
            continue
        out.append(Fact(site_id, st.due_ms,
                        make_id("corrective_action_due", site_id, st.id, st.opened_ms),
                        CorrectiveActionDue(action_id=st.id, text=st.text, due=iso(st.due_ms),
                                            opened_at=iso(st.opened_ms),
                                            inspector=st.inspector)))
    return out


def _overdue_facts(site: SiteConfig, states: list[ActionState], now_ms: int | None,
                   permits: tuple[Permit, ...]) -> list[Fact]:
    if now_ms is None or not states:
        return []
    out = []
    for st in states:
        fixed = st.fixed_ms
        for d in permit_deadlines(site, permits, st.kind, st.opened_ms):
            if d.due_ms > now_ms or (fixed is not None and fixed <= d.due_ms):
                continue
            out.append(Fact(site.id, d.due_ms, overdue_id(site.id, st.id, d.permit),
                            CorrectiveActionOverdue(action_id=st.id, text=st.text,
                                                    due=iso(d.due_ms), permit=d.permit,
                                                    section=d.section, hours_late=0.0)))
    return out


def final_fact_ids(site: SiteConfig, state: ActionState) -> list[str]:
    """The ids of the facts an action that can no longer change has (``final_before``):
    its reminder if it missed its due, and every overdue it may have had (settling
    lets go of those present)."""
    due = ([make_id("corrective_action_due", site.id, state.id, state.opened_ms)]
           if state.missed_due else [])
    return due + overdue_ids(site, state.id)


def final_before(state: ActionState, horizon_ms: int) -> bool:
    """Whether nothing at or after ``horizon_ms`` can change the action: resolved before
    it (a resolution before its due leaves no fact; one after leaves a fact before)."""
    return state.resolved_ms is not None and state.resolved_ms < horizon_ms


def step_fact(site_id: str, step: ActionStep) -> Fact:
    """The log book's record of one step: ``corrective_action_sent`` or ``_done``, at the
    time it was entered, its id stable for the step (``ActionStep.key``)."""
    body: CorrectiveActionSent | CorrectiveActionDone
    if step.step == "sent":
        body = CorrectiveActionSent(action_id=step.action_id, text=step.text, sent_by=step.by,
                                    to=step.to)
    else:
        body = CorrectiveActionDone(action_id=step.action_id, text=step.text, done_by=step.by,
                                    note=step.note,
                                    photos=tuple(p.to_json() for p in step.photos), via=step.via)
    return Fact(site_id, step.ts_ms, make_id(body.TYPE, site_id, *step.key), body)


def step_facts(site_id: str, steps: Iterable[ActionStep]) -> dict[str, Fact]:
    """The facts of the steps by id. Two steps with one key (a redelivery, or the same
    step entered twice) are one fact: the smaller content holds, whatever the order."""
    out: dict[str, Fact] = {}
    for step in sorted(steps, key=_step_order, reverse=True):
        fact = step_fact(site_id, step)
        out[fact.id] = fact
    return out


def step_of_event(site_id: str, at_ms: int, body: CorrectiveActionSent | CorrectiveActionDone
                  ) -> ActionStep:
    """The step a recorded ``corrective_action_sent``/``_done`` says was taken (the log
    book's view, as ``record_of_event`` is of an inspection)."""
    if isinstance(body, CorrectiveActionSent):
        return ActionStep(site_id, body.action_id, "sent", at_ms, body.sent_by, body.text,
                          to=body.to)
    return ActionStep(site_id, body.action_id, "done", at_ms, body.done_by, body.text,
                      note=body.note, photos=tuple(Photo.from_json(p) for p in body.photos),
                      via=body.via)


def steps_of_events(site_id: str, events: Iterable[Event]) -> list[ActionStep]:
    """The steps the recorded events say were taken (``step_of_event``)."""
    return [step_of_event(site_id, e.at_ms, e.body) for e in events
            if isinstance(e.body, CorrectiveActionSent | CorrectiveActionDone)]

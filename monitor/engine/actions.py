"""Corrective actions of inspection reports (§ 134-9A(2)).

An inspection may ask for repairs (``corrective_actions``: id, text, due); a
*later* inspection names the ones it found done (``resolves``). An action is
open from the inspection that asked for it until the first later inspection
resolving it; one still open at its due time is a ``corrective_action_due``
fact at that instant (the qualified professional is reminded).

Everything here is a pure function of the inspections, recorded ones included
(``record_of_event``), so the engine, ``status`` and the report all ask this
module and cannot disagree about which actions are open.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from ..contract.events import CorrectiveActionDue, Fact, InspectionRecorded, make_id
from ..contract.inputs import CorrectiveAction, Inspection
from ..contract.times import iso, parse_iso


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
                "resolved_at": iso(self.resolved_ms) if self.resolved_ms is not None else None,
                "resolved_by": self.resolved_by}


def record_of(insp: Inspection) -> ActionRecord:
    return ActionRecord(insp.ts_ms, insp.inspector, insp.corrective_actions, insp.resolves)


def record_of_event(body: InspectionRecorded) -> ActionRecord:
    """The same from a recorded ``inspection_recorded`` (the log book's view)."""
    actions = tuple(CorrectiveAction(str(a["id"]), str(a["text"]), _ms(a.get("due")))
                    for a in body.corrective_actions)
    return ActionRecord(parse_iso(body.inspected_at), body.inspector, actions, body.resolves)


def _ms(value: str | None) -> int | None:
    return parse_iso(value) if value else None


def action_states(records: Iterable[ActionRecord]) -> list[ActionState]:
    """Every corrective action with when it was resolved, in the order they were asked for.

    An id names one action: the first inspection asking for it opens it, and
    the first strictly later inspection naming it resolves it (an inspection
    cannot resolve what it asks for itself). Order of the input does not matter.
    """
    states: dict[str, ActionState] = {}
    for rec in sorted(records, key=lambda r: (r.ts_ms, r.inspector)):
        for rid in rec.resolves:
            state = states.get(rid)
            if state is not None and state.resolved_ms is None and rec.ts_ms > state.opened_ms:
                states[rid] = replace(state, resolved_ms=rec.ts_ms, resolved_by=rec.inspector)
        for action in rec.actions:
            if action.id not in states:
                states[action.id] = ActionState(action.id, action.text, action.due_ms,
                                                rec.ts_ms, rec.inspector)
    return sorted(states.values(), key=lambda s: (s.opened_ms, s.id))


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


def action_facts(site_id: str, states: Iterable[ActionState], now_ms: int | None) -> list[Fact]:
    """``corrective_action_due`` for each action still open at its due time, once *now*
    has reached it."""
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


def final_before(state: ActionState, horizon_ms: int) -> bool:
    """Whether nothing at or after ``horizon_ms`` can change the action: resolved before
    it (a resolution before its due leaves no fact; one after leaves a fact before)."""
    return state.resolved_ms is not None and state.resolved_ms < horizon_ms

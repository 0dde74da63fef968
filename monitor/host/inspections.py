"""``stormwatch inspect`` and ``stormwatch site close``: record them, whether the daemon
runs or not.

An inspection from the command line is checked by the very rules of an MQTT
inspection (``models.inspection_message``), plus what only a person at a
terminal can be told: a name off the roster is refused (exit 2, the roster
listed) rather than recorded as kind ``other``; a time ahead of the clock is
refused rather than dead-lettered.

Either way the input goes into the journal, the daemon's own input: when a
daemon holds the state directory it applies the row within its next loop
(not through the broker: the shipped broker ties client ids to accounts, so
a client with the daemon's account would take over its session); when no
daemon runs, this command takes the state lock itself, journals the input and
brings the engine up to date, so the clock it satisfies is closed in the
database at once.

What it prints gives times in the site's local time with the zone named
(``localtime.py``), like ``status`` and the report; the messages that refuse
a flag repeat the time as it was typed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from ..config import Config
from ..contract.events import ClockClosed, InspectionRecorded, SiteClosed, SiteShutdown
from ..contract.inputs import Inspection, Location, Photo, ShutdownNotice, SiteClosure, Via
from ..contract.localtime import local_datetime, local_text
from ..contract.rejects import Rejection, RejectReason
from ..contract.times import iso, parse_iso
from ..errors import UserError
from ..ingest.checks import FUTURE_TOLERANCE_MS, TimeRule, site_index
from ..ingest.inspections import inspection_message
from ..rules.active import local_midnight_ms
from ..rules.clocks.actions import action_states, record_of_event, resolvable_at
from ..store import Store
from ..store.opening import daemon_lock, open_store
from .engine import EngineHost
from .rows import journal_in

WAIT_FOR_DAEMON_S = 20.0


class InspectError(UserError):
    """The inspection could not be recorded (a usage error: its message names the flag)."""


class NotOnRoster(InspectError):
    """The certifying inspector is not on the site's roster (the field app: 403)."""


class ActionIdInUse(InspectError):
    """A corrective-action id is already another inspection's (the field app: 409)."""


class NoSuchAction(InspectError):
    """A ``--resolved`` id names no corrective action open at the site at the inspection's
    time (the field app: 422 ``resolves.N``, ``index`` being N)."""

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


@dataclass(frozen=True, slots=True)
class ActionArg:
    """One ``--corrective-action TEXT`` (or ``--maintenance TEXT``: routine maintenance,
    due by its permit's own rule) and the ``--due`` that followed it."""

    text: str
    due: str | None = None
    kind: str = "corrective"


def parse_time(flag: str, text: str, config: Config, site_id: str) -> int:
    """``--at`` and ``--due``: ISO 8601 with an offset, or a date (its local midnight)."""
    site = config.site(site_id)
    assert site is not None
    try:
        if len(text) == 10:
            return local_midnight_ms(site, datetime.strptime(text, "%Y-%m-%d").date())
        at_ms = parse_iso(text)
        if local_datetime(at_ms, site.zone) is None:  # year 1 west of UTC: no id, no page
            raise ValueError(f"{text[:40]!r} is no time at the site")
        return at_ms
    except (ValueError, OverflowError) as exc:
        raise InspectError(f"{flag}: {exc} (use YYYY-MM-DD or ISO 8601 with an offset, e.g. "
                           "2026-11-30T09:30:00-05:00)") from None


def check_not_ahead(flag: str, at_ms: int, now_ms: int) -> None:
    """Refuse a time more than 5 minutes ahead of this machine's clock: what has not
    happened cannot be recorded (and would close clocks before their time)."""
    if at_ms > now_ms + FUTURE_TOLERANCE_MS:
        ahead_h = (at_ms - now_ms) / 3_600_000
        raise InspectError(f"{flag}: {iso(at_ms)} is {ahead_h:.1f} h ahead of this machine's "
                           "clock; record an inspection once it has happened")


def build_inspection(config: Config, site_id: str, names: Sequence[str], *, at: str | None,
                     kind: str, notes: str | None, findings: Sequence[str],
                     actions: Sequence[ActionArg], resolves: Sequence[str],
                     now_ms: int, via: Via = "cli", photos: Sequence[Photo] = (),
                     location: Location | None = None,
                     certified: bool | None = None) -> Inspection:
    """The inspection the command line (or the field app, ``via="web"``, with its
    photos, location and certification) describes, checked as an MQTT inspection
    is, or ``InspectError`` naming the flag at fault. The first of ``names`` is
    the certifying inspector and must be on the roster (when there is one)
    unless the kind is ``other``; the others are companions. Corrective actions
    get their ids from ``rules.action_ids`` (printed, to be named by
    ``--resolved`` later)."""
    at_ms = now_ms if at is None else parse_time("--at", at, config, site_id)
    check_not_ahead("--at", at_ms, now_ms)
    site = config.site(site_id)
    assert site is not None
    roster = {q.name: q for q in config.roster(site)}
    clean = [n.strip() for n in names if n.strip()]
    if not clean:
        raise InspectError("--inspector: must not be empty")
    if roster and kind != "other" and clean[0] not in roster:
        raise NotOnRoster(
            f"--inspector: {clean[0]} is not on the qualified_professionals roster of "
            f"{site_id} ({'; '.join(_listed(q.name, q.credential) for q in roster.values())});"
            " the first inspector named certifies the inspection (others are companions);"
            " record a walk-through by someone else with --kind other")
    parsed = []
    for text in findings:
        practice, sep, condition = text.partition(":")
        if not sep or not practice.strip():
            raise InspectError(f"--finding: {text!r} is not \"PRACTICE: condition\" (e.g. "
                               "\"silt-fence-north: undermined at station 2+40\")")
        parsed.append({"practice": practice.strip(), "condition": condition.strip()})
    payload: dict[str, object] = {
        "inspector": clean if len(clean) > 1 else clean[0], "kind": kind, "ts": iso(at_ms),
        "notes": notes, "findings": parsed, "resolves": list(resolves),
        # A date is due by the end of that day at the site (ingest/inspections.py, check_actions).
        "corrective_actions": [{"text": a.text, "due": a.due,
                                **({"kind": a.kind} if a.kind != "corrective" else {})}
                               for a in actions]}
    if photos:
        payload["photos"] = [p.to_json() for p in photos]
    if location is not None:
        payload["location"] = location.to_json()
    if certified is not None:
        payload["certified"] = certified
    result = inspection_message(site_index(config)[site_id], payload, TimeRule.wall(now_ms),
                                entered_ms=now_ms, via=via)
    if isinstance(result, Rejection):
        detail = result.detail
        if result.reason is RejectReason.too_old:
            detail = "--at: " + detail.removeprefix("ts: ")
        elif detail.startswith("corrective_actions."):
            detail = "--due: " + detail.split(": ", 1)[-1]
        raise InspectError(detail)
    return result


def _listed(name: str, credential: str | None) -> str:
    return f"{name} ({credential})" if credential else name


@dataclass(frozen=True, slots=True)
class Outcome:
    """What recording an inspection came to: how (``via``, for the report's words),
    the ``inspection_recorded`` body once the engine has applied it (None: the
    running daemon has not confirmed it yet), and the ``clock_closed`` of each
    clock it closed."""

    via: str
    recorded: InspectionRecorded | None
    closed: tuple[ClockClosed, ...] = ()


def record_inspection(config: Config, insp: Inspection) -> str:
    """Record it; return a one-paragraph report of what it closed."""
    outcome = commit_inspection(config, insp)
    if outcome.recorded is None and outcome.via.startswith("written"):
        return (f"Inspection by {insp.inspector} at {_local(config, insp.site, insp.ts_ms)}"
                f" {outcome.via}; the daemon has not confirmed it within"
                f" {WAIT_FOR_DAEMON_S:.0f} s (see `stormwatch status`).")
    return _report(config, insp, outcome)


def commit_inspection(config: Config, insp: Inspection,
                      wait_s: float = WAIT_FOR_DAEMON_S) -> Outcome:
    """Journal the inspection (the one path of ``stormwatch inspect`` and the field
    app) and say what it closed, waiting up to ``wait_s`` for a running daemon."""
    with daemon_lock(config) as held:
        if held is not None:
            with open_store(config) as store:
                refuse_bad_ids(config, store, insp)
                store.journal.commit([journal_in(insp, topic=None,
                                               received_ms=round(time.time() * 1000))])
                host = EngineHost.restore(config, store)
                host.catch_up()
                host.record_status()
                host.snapshot()
                return _outcome(config, insp, "recorded in the database (no daemon running)")
    # Not through the broker: the shipped broker ties client ids to accounts
    # (use_username_as_clientid), and a client logging in with the daemon's
    # account would take over the daemon's session. The journal is the
    # daemon's own input; it applies rows written by others within a loop.
    with open_store(config) as store:
        refuse_bad_ids(config, store, insp)
        store.journal.commit([journal_in(insp, topic=None,
                                       received_ms=round(time.time() * 1000))])
    via = "written to the database for the running daemon"
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if _recorded(config, insp) is not None:
            return _outcome(config, insp, via)
        time.sleep(0.2)
    return Outcome(via, None)


def refuse_bad_ids(config: Config, store: Store, insp: Inspection) -> None:
    """Before anything is journaled: a corrective-action id already in use, and a
    ``resolves`` id that names no open corrective action (``refuse_unknown_resolves``)."""
    refuse_ids_in_use(store, insp)
    refuse_unknown_resolves(config, store, insp)


def refuse_unknown_resolves(config: Config, store: Store, insp: Inspection) -> None:
    """``NoSuchAction`` for the first ``resolves`` id that names no corrective action open
    at the site at the inspection's time (``actions.resolvable_at``): a typo would be
    sealed into the log book as a repair that resolves nothing, while the action it
    meant stays open. The one line lists the ids that are open. The same inspection
    again is no conflict (the journal takes it as a duplicate)."""
    if not insp.resolves:
        return
    records = [record_of_event(e.body) for e in store.events.current(insp.site)
               if isinstance(e.body, InspectionRecorded)
               and not (e.at_ms == insp.ts_ms and e.body.inspector == insp.inspector)]
    open_ids = [a.id for a in resolvable_at(action_states(records), insp.ts_ms)]
    for index, rid in enumerate(insp.resolves):
        if rid not in open_ids:
            raise NoSuchAction(
                f"--resolved: {rid} names no corrective action open at {insp.site} at "
                f"{_local(config, insp.site, insp.ts_ms)} (open then: "
                f"{', '.join(open_ids) or 'none'}); nothing was recorded", index)


def refuse_ids_in_use(store: Store, insp: Inspection) -> None:
    """``ActionIdInUse`` when one of ``insp``'s corrective-action ids names an action of
    another inspection at the site: an id names one action, and a second one under it
    would be lost (the first opens it). The same inspection again is no conflict:
    the journal takes it as a duplicate."""
    wanted = {a.id for a in insp.corrective_actions}
    if not wanted:
        return
    for e in store.events.current(insp.site):
        b = e.body
        if not isinstance(b, InspectionRecorded) or (
                e.at_ms == insp.ts_ms and b.inspector == insp.inspector):
            continue
        for action in b.corrective_actions:
            if action.get("id") in wanted:
                raise ActionIdInUse(
                    f"corrective_actions: id {action['id']} is already in use by the"
                    f" inspection of {b.inspected_at} by {b.inspector}; nothing was recorded")


def _local(config: Config, site_id: str, when: int | str | None) -> str:
    site = config.site(site_id)
    assert site is not None  # the command refused an unknown --site
    return local_text(when, site.zone)


def record_closure(config: Config, closure: SiteClosure) -> str:
    """Record final stabilization through the journal; return what was recorded."""
    head = (f"Site {closure.site} closed (final stabilization) at "
            f"{_local(config, closure.site, closure.ts_ms)}")
    if _record_site_notice(config, closure, closure.entered_ms,
                           lambda b: isinstance(b, SiteClosed)):
        return head + ": recorded in the log book; no routine clock runs from then on."
    return head + ": written for the running daemon, which has not confirmed it yet" \
                  " (see `stormwatch status`)."


def record_shutdown(config: Config, notice: ShutdownNotice) -> str:
    """Record a temporary shutdown, or its end, through the journal; return what was
    recorded."""
    when = _local(config, notice.site, notice.ts_ms)
    at = iso(notice.ts_ms)

    def done(body: object) -> bool:
        return isinstance(body, SiteShutdown) and at == (
            body.ended_at if notice.resume else body.started_at)

    if notice.resume:
        head = f"Site {notice.site}: work resumed at {when}"
        tail = "; the permits' routine cadence runs again."
    else:
        head = f"Site {notice.site}: temporary shutdown from {when}"
        tail = ("; permits with a shutdown rule inspect at its cadence until "
                "`stormwatch site resume`.")
    if _record_site_notice(config, notice, notice.entered_ms, done):
        return head + ": recorded in the log book" + tail
    return head + ": written for the running daemon, which has not confirmed it yet" \
                  " (see `stormwatch status`)."


def _record_site_notice(config: Config, item: SiteClosure | ShutdownNotice,
                        entered_ms: int | None, confirmed: Callable[[object], bool]) -> bool:
    """Journal ``item`` (applying it here when no daemon runs); whether the log book has
    what ``confirmed`` looks for, waiting a while for a running daemon."""
    with daemon_lock(config) as held, open_store(config) as store:
        store.journal.commit([journal_in(item, topic=None, received_ms=entered_ms)])
        if held is not None:
            host = EngineHost.restore(config, store)
            host.catch_up()
            host.record_status()
            host.snapshot()
    deadline = time.monotonic() + (0 if held is not None else WAIT_FOR_DAEMON_S)
    while True:
        with open_store(config, readonly=True) as store:
            if any(confirmed(e.body) for e in store.events.current(item.site)):
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)


def _recorded(config: Config, insp: Inspection) -> InspectionRecorded | None:
    with open_store(config, readonly=True) as store:
        for e in store.events.current(insp.site):
            if isinstance(e.body, InspectionRecorded) and e.at_ms == insp.ts_ms \
                    and e.body.inspector == insp.inspector:
                return e.body
    return None


def _outcome(config: Config, insp: Inspection, via: str) -> Outcome:
    rec = _recorded(config, insp)
    if rec is None or not rec.closes:
        return Outcome(via, rec)
    with open_store(config, readonly=True) as store:
        closed = {e.body.clock_id: e.body for e in store.events.current(insp.site)
                  if isinstance(e.body, ClockClosed)}
    return Outcome(via, rec, tuple(closed[c] for c in rec.closes if c in closed))


def _report(config: Config, insp: Inspection, outcome: Outcome) -> str:
    rec = outcome.recorded
    head = (f"Inspection by {insp.inspector} at {_local(config, insp.site, insp.ts_ms)}"
            f" {outcome.via}.")
    if insp.corrective_actions:
        head += " Corrective actions: " + "; ".join(
            f"{a.id} ({a.text}"
            f"{', due ' + _local(config, insp.site, a.due_ms) if a.due_ms is not None else ''})"
            for a in insp.corrective_actions) + "."
    if rec is None:
        return head
    if not rec.closes:
        return head + " It closed no open clock."
    closed = {c.clock_id: c for c in outcome.closed}
    parts = []
    for cid in rec.closes:
        c = closed.get(cid)
        parts.append(f"{cid} ({c.outcome}, due {_local(config, insp.site, c.due)})"
                     if c else cid)
    return head + " Closed: " + "; ".join(parts) + "."

"""The rules of an inspection message (sensors/README.md, "MQTT contract" table), by MQTT, a replay
row or a person.

``inspection_message`` is the one code path every inspection passes, whatever
brought it (``via``: the field app, ``stormwatch inspect``, MQTT, a replay
row): the text fields, the findings and corrective actions, the evidence
(``evidence.py``), the roster, the time window. It shares the timestamp and
window rules of every message (``checks.py``) and, like them, never raises: a
wrong field is a ``Rejection`` naming it.

Two rules are the inspection's own. ``ts`` is required (``missing_ts``): an
inspection is a fact of its own time, and one stamped with its arrival would
make every redelivered or retained copy a new inspection. Corrective-action
ids are stormwatch's (``action_ids``): ids in a message are not used, so no
sender can choose an id that names another inspection's action.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import date, datetime, time, timedelta, timezone
from typing import Final, Literal, cast
from zoneinfo import ZoneInfo

from ..contract.admission import canonical
from ..contract.inputs import CorrectiveAction, Finding, Inspection, Via
from ..contract.localtime import local_datetime
from ..contract.rejects import Rejection, RejectReason
from .checks import ID_RE, SiteIndex, TimeRule, show, time_window, timestamp_ms
from .evidence import check_evidence

InspectionKind = Literal["storm", "routine", "other"]
INSPECTION_KINDS: Final = frozenset({"storm", "routine", "other"})
#: Hex digits of an inspection's hash in its corrective-action ids (24 bits: a
#: collision needs two inspections in one minute at one site, and even then
#: ``commit_inspection`` refuses an id already in use).
ACTION_HASH_HEX: Final = 6
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def check_inspector(value: object) -> tuple[str, ...] | Rejection:
    """``inspector``: a name, or a list of names for a joint inspection; non-blank text,
    kept without surrounding blanks, each name once."""
    if value is None:
        return Rejection(RejectReason.missing_field, "inspector: required")
    values = value if isinstance(value, list) else [value]
    names: list[str] = []
    for item in values:
        if not isinstance(item, str):
            return Rejection(RejectReason.bad_value,
                             f"inspector: must be text or a list of text, got {show(item)}")
        if item.strip() and item.strip() not in names:
            names.append(item.strip())
    if not names:
        return Rejection(RejectReason.missing_field, "inspector: required (blank)")
    return tuple(names)


def check_inspection_kind(value: object) -> InspectionKind | Rejection:
    """``kind`` of an inspection: storm, routine (the default) or other."""
    if value is None:
        return "routine"
    if isinstance(value, str) and value in INSPECTION_KINDS:
        return cast(InspectionKind, value)
    return Rejection(RejectReason.bad_value,
                     f"kind: must be storm, routine or other, got {show(value)}")


def check_text(name: str, value: object) -> str | None | Rejection:
    """An optional free-text field (``notes``)."""
    if value is None or isinstance(value, str):
        return value
    return Rejection(RejectReason.bad_value, f"{name}: must be text, got {show(value)}")


def check_findings(value: object) -> tuple[Finding, ...] | Rejection:
    """``findings``: a list of ``{practice, condition}`` (one free text is one finding)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (Finding("general", value),) if value.strip() else ()
    if not isinstance(value, list):
        return Rejection(RejectReason.bad_value, f"findings: must be a list, got {show(value)}")
    out = []
    for i, item in enumerate(value):
        if not (isinstance(item, dict) and isinstance(item.get("practice"), str)
                and isinstance(item.get("condition"), str) and item["practice"].strip()):
            return Rejection(RejectReason.bad_value, f"findings.{i}: must be "
                             f"{{practice, condition}} as text, got {show(item)}")
        out.append(Finding(item["practice"].strip(), item["condition"].strip()))
    return tuple(out)


def check_actions(value: object, zone: ZoneInfo) -> tuple[CorrectiveAction, ...] | Rejection:
    """``corrective_actions``: a list of ``{text, due, kind}`` (``due`` optional: a time
    with offset, as ``ts``, or a date, which means by the end of that day at the site;
    ``kind`` optional: ``corrective``, the default, or ``maintenance``).
    An ``id`` in an item is not used (``action_ids`` gives each its id): the ids
    here are placeholders until then."""
    if value is None:
        return ()
    if not isinstance(value, list):
        return Rejection(RejectReason.bad_value,
                         f"corrective_actions: must be a list, got {show(value)}")
    out = []
    for i, item in enumerate(value):
        if not (isinstance(item, dict) and isinstance(item.get("text"), str)
                and item["text"].strip()):
            return Rejection(RejectReason.bad_value, f"corrective_actions.{i}: must be "
                             f"{{text, due}} with the text of the action, got {show(item)}")
        due = item.get("due")
        due_ms = None if due is None else (end_of_day_ms(str(due), zone)
                                           if _DATE.match(str(due)) else timestamp_ms(due))
        if isinstance(due_ms, Rejection):
            return Rejection(RejectReason.bad_value, f"corrective_actions.{i}.due: "
                             f"{due_ms.detail.removeprefix('ts: ')}")
        kind = item.get("kind", "corrective")
        if kind not in ("corrective", "maintenance"):
            return Rejection(RejectReason.bad_value, f"corrective_actions.{i}.kind: must be "
                             f"corrective or maintenance, got {show(kind)}")
        out.append(CorrectiveAction(f"ca-{i + 1}", item["text"].strip(), due_ms, kind))
    return tuple(out)


def action_ids(insp: Inspection, zone: ZoneInfo) -> tuple[str, ...]:
    """The ids of an inspection's corrective actions: ``ca-<local minute>-<hash>-<n>``.

    Unique, because the hash is of the whole inspection (site, time, inspectors and
    body, without when it was entered and without the ids): two inspections in
    the same minute, by two people or with two texts, never share an id (the old
    ``ca-<minute>-<n>`` made the later replace the earlier). Deterministic, because
    the same inspection sent again must be the same journal row, a duplicate. The
    minute is for the person who reads the id; the site's zone, or UTC for an
    instant the zone cannot show."""
    body = {k: v for k, v in insp.to_json().items() if k != "entered_ms"}
    body["corrective_actions"] = [{k: v for k, v in a.to_json().items() if k != "id"}
                                  for a in insp.corrective_actions]
    digest = hashlib.sha256(canonical(body).encode("utf-8")).hexdigest()[:ACTION_HASH_HEX]
    local = local_datetime(insp.ts_ms, zone)
    stamp = local.strftime("%Y%m%dt%H%M") if local is not None else \
        datetime.fromtimestamp(insp.ts_ms / 1000, tz=timezone.utc).strftime("%Y%m%dt%H%Mz")
    return tuple(f"ca-{stamp}-{digest}-{n}" for n in range(1, len(insp.corrective_actions) + 1))


def with_action_ids(insp: Inspection, zone: ZoneInfo) -> Inspection:
    """``insp`` with its corrective actions under their ids (``action_ids``)."""
    if not insp.corrective_actions:
        return insp
    ids = action_ids(insp, zone)
    return replace(insp, corrective_actions=tuple(
        replace(a, id=aid) for a, aid in zip(insp.corrective_actions, ids, strict=True)))


def end_of_day_ms(day: str, zone: ZoneInfo) -> int | Rejection:
    """The end of ``day`` (``YYYY-MM-DD``) in ``zone``: the next local midnight."""
    try:
        start = datetime.combine(date.fromisoformat(day), time(0, 0), tzinfo=zone)
    except ValueError:
        return Rejection(RejectReason.bad_timestamp, f"ts: {show(day)} is not a date")
    # The range of every other timestamp: the end of 9999-12-31 overflows a datetime,
    # and a year before 1000 does not print as ISO 8601 (the fuzz target found both).
    if not date(1970, 1, 1) <= start.date() < date(9999, 12, 31):
        return Rejection(RejectReason.bad_timestamp, f"ts: {show(day)} is outside 1970..9999")
    return round((start + timedelta(days=1)).timestamp() * 1000)


def check_ids(name: str, value: object) -> tuple[str, ...] | Rejection:
    """A list of ids (``resolves``: the corrective actions an inspection closes)."""
    if value is None:
        return ()
    values = value if isinstance(value, list) else [value]
    if not all(isinstance(v, str) and ID_RE.match(v) for v in values):
        return Rejection(RejectReason.bad_value, f"{name}: must be a list of ids, "
                         f"got {show(value)}")
    return tuple(str(v) for v in values)


def inspection_message(site: SiteIndex, fields: Mapping[str, object], when: TimeRule,
                       entered_ms: int | None = None,
                       via: Via | None = None) -> Inspection | Rejection:
    """An inspection by the qualified professional (§ 134-9A(2); sensors/README.md, "MQTT contract"
    table).

    ``ts`` is required and the ids are stormwatch's (module docstring). The first
    name is the certifying inspector, the person who signs the report; any
    further names are companions, who carry no credential and close nothing.
    With a roster, an inspection whose certifying inspector is not on it is
    recorded as kind ``other`` (it closes no clock), whoever the companions are;
    the credential is taken from the roster now, so the log book keeps what it
    was when the inspection was entered. ``via`` says how it came (``web``,
    ``cli``, ``mqtt``, ``replay``); photos, location and certification are
    checked by ``evidence.check_evidence``."""
    names = check_inspector(fields.get("inspector"))
    if isinstance(names, Rejection):
        return names
    kind = check_inspection_kind(fields.get("kind"))
    if isinstance(kind, Rejection):
        return kind
    notes = check_text("notes", fields.get("notes"))
    if isinstance(notes, Rejection):
        return notes
    findings = check_findings(fields.get("findings"))
    if isinstance(findings, Rejection):
        return findings
    actions = check_actions(fields.get("corrective_actions"), site.zone)
    if isinstance(actions, Rejection):
        return actions
    resolves = check_ids("resolves", fields.get("resolves"))
    if isinstance(resolves, Rejection):
        return resolves
    evidence = check_evidence(fields)
    if isinstance(evidence, Rejection):
        return evidence
    if site.roster and names[0] not in site.roster:
        kind = "other"
    times = _times(site, fields, when, entered_ms)
    if isinstance(times, Rejection):
        return times
    ts_ms, entered_ms = times
    insp = Inspection(site=site.id, inspector=" & ".join(names), ts_ms=ts_ms, kind=kind,
                      notes=notes, findings=findings,
                      inspectors=names if len(names) > 1 else (),
                      # Only the certifying inspector's credential: a companion signed nothing.
                      credentials=(site.roster.get(names[0], ""),) + ("",) * (len(names) - 1)
                      if site.roster else (),
                      entered_ms=entered_ms, corrective_actions=actions, resolves=resolves,
                      photos=evidence.photos, location=evidence.location,
                      certified=evidence.certified, via=via)
    return with_action_ids(insp, site.zone)


def _times(site: SiteIndex, fields: Mapping[str, object], when: TimeRule,
           entered_ms: int | None) -> tuple[int, int | None] | Rejection:
    """When the inspection was made (``ts``, required, in the time window) and when it
    was entered (``entered_ms``, else a replay row's ``entered_at``)."""
    if fields.get("ts") is None:
        return Rejection(RejectReason.missing_ts, "ts: required for an inspection (the time it"
                         " was made, with its offset)")
    ts_ms = timestamp_ms(fields.get("ts"), when.zone_of(site))
    if isinstance(ts_ms, Rejection):
        return ts_ms
    late = time_window(ts_ms, site.lateness_ms, when)
    if late is not None:
        if late.reason is RejectReason.future_timestamp:
            return Rejection(RejectReason.future, late.detail, late.ts_ms)
        return late
    if entered_ms is None and fields.get("entered_at") is not None:
        # A replay's record of when the inspection was entered (the MQTT path
        # passes its receipt time instead: a payload cannot vouch for it).
        entered = timestamp_ms(fields["entered_at"], when.zone_of(site))
        if isinstance(entered, Rejection):
            return Rejection(entered.reason, "entered_at" + entered.detail.removeprefix("ts"))
        entered_ms = entered
    return ts_ms, entered_ms

"""An inspection from the field app, recorded as ``stormwatch inspect`` records one.

The page's form and ``POST /api/v1/sites/{id}/inspections`` both come here
with the API's JSON shape (``inspectors``, ``inspected_at``, ``kind``,
``findings``, ``corrective_actions``, ``resolves``, ``notes``, ``photos``,
``location``, ``certified``; ``inspected_at`` ISO 8601 with an offset, or the
site's wall clock as ``YYYY-MM-DDTHH:MM``). It is turned into the arguments of
``host.inspections.build_inspection`` (``via="web"``): the roster, the rules for
future and backdated times and the corrective-action ids are that one code
path's, and ``commit_inspection`` journals it. The photos named must be
stored already (``POST /api/v1/photos``); their EXIF time and position are
read from the stored file, never taken from the request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from ..config import Config, SiteConfig, photo_pixels_of
from ..contract.clocknames import clock_name, deadline, spoken
from ..contract.inputs import Inspection, Photo
from ..contract.localtime import local_text
from ..contract.rejects import Rejection
from ..contract.times import iso
from ..host.evidence import stored_photo
from ..host.inspections import (
    ActionArg,
    ActionIdInUse,
    InspectError,
    NoSuchAction,
    NotOnRoster,
    Outcome,
    build_inspection,
    commit_inspection,
)
from ..ingest.evidence import check_location, check_photos
from ..store.citations import cited_at
from ..store.db import StoreError
from ..store.opening import open_store
from ..store.photos import PhotoError
from ..store.uploads import Uploads
from ..store.users import User
from .auth import Refused

#: ``inspected_at`` as a ``datetime-local`` field gives it: the site's wall clock.
LOCAL_INPUT: Final = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?")
CONDITIONS: Final = ("ok", "needs_repair", "missing", "not_applicable")
KINDS: Final = ("storm", "routine", "other")
#: The CLI's flags, as the API's fields (``InspectError`` names the flag).
_FIELDS: Final = {"--at": "inspected_at", "--inspector": "inspectors", "--due":
                  "corrective_actions", "--finding": "findings", "--resolved": "resolves"}
#: The statement the inspector certifies (§ 134-9A(2) inspection reports).
STATEMENT: Final = ("I certify that I inspected this site myself at the time given, as the"
                    " qualified professional, and that this report is true, accurate and"
                    " complete to the best of my knowledge.")


def _text(data: Mapping[str, Any], name: str) -> str | None:
    value = data.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise Refused(422, f"{name}: must be text")
    return value.strip() or None


def _list(data: Mapping[str, Any], name: str) -> list[Any]:
    value = data.get(name) or []
    if not isinstance(value, list):
        raise Refused(422, f"{name}: must be a list")
    return value


def local_input_to_iso(config: Config, site_id: str, text: str) -> str:
    """A ``datetime-local`` value (the site's wall clock) as ISO 8601 with its offset."""
    site = config.site(site_id)
    assert site is not None
    try:
        naive = datetime.strptime(text[:16], "%Y-%m-%dT%H:%M")
    except ValueError:
        raise Refused(422, f"inspected_at: {text[:40]!r} is not a date and time") from None
    return naive.replace(tzinfo=site.zone).isoformat()


def _refused(exc: InspectError) -> Refused:
    """The command line's refusal as the API's: the flag named as the field."""
    message = str(exc)
    for flag, name in _FIELDS.items():
        if message.startswith(flag + ":"):
            # The id at fault by its place in the list (``resolves.1: …``).
            where = f".{exc.index}" if isinstance(exc, NoSuchAction) else ""
            message = name + where + message[len(flag):]
    status = 403 if isinstance(exc, NotOnRoster) else 409 if isinstance(exc, ActionIdInUse) \
        else 422
    return Refused(status, message)


def _findings(config: Config, site_id: str, data: Mapping[str, Any]) -> list[str]:
    """The findings as ``build_inspection`` takes them; a practice must be one the site
    configures (or ``general``), so a finding cannot name a control the site lacks."""
    site = config.site(site_id)
    assert site is not None
    known = {p.id for p in site.practices} | {"general"}
    out = []
    for i, item in enumerate(_list(data, "findings")):
        if not isinstance(item, dict) or not isinstance(item.get("practice"), str):
            raise Refused(422, f"findings.{i}: must be {{practice, condition, note}}")
        if site.practices and item["practice"] not in known:
            raise Refused(422, f"findings.{i}.practice: {item['practice'][:64]!r} is not a"
                               f" practice of {site_id} ({', '.join(sorted(known))})")
        condition = item.get("condition")
        if condition not in CONDITIONS:
            raise Refused(422, f"findings.{i}.condition: must be one of {', '.join(CONDITIONS)}")
        note = item.get("note")
        if note is not None and not isinstance(note, str):
            raise Refused(422, f"findings.{i}.note: must be text")
        if ":" in item["practice"] or not item["practice"].strip():
            raise Refused(422, f"findings.{i}.practice: must be a practice id")
        out.append(f"{item['practice']}: {condition}" + (f": {note.strip()}"
                                                         if note and note.strip() else ""))
    return out


def _actions(data: Mapping[str, Any]) -> list[ActionArg]:
    out = []
    for i, item in enumerate(_list(data, "corrective_actions")):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise Refused(422, f"corrective_actions.{i}: must be {{text, due}}")
        due = item.get("due")
        if due is not None and not isinstance(due, str):
            raise Refused(422, f"corrective_actions.{i}.due: must be a date (YYYY-MM-DD)")
        kind = item.get("kind", "corrective")
        if kind not in ("corrective", "maintenance"):
            raise Refused(422, f"corrective_actions.{i}.kind: must be corrective or "
                               f"maintenance")
        if item["text"].strip():
            out.append(ActionArg(item["text"].strip(), due or None, kind))
    return out


def _photos(config: Config, user: User, site_id: str, photos_dir: Path,
            data: Mapping[str, Any], now_ms: int) -> list[Photo]:
    """The photos the inspection cites, their EXIF time and position read from the
    stored files; each marked cited (the sweep leaves it for a day, ``sweep.py``)."""
    given = check_photos(data.get("photos"))
    if isinstance(given, Rejection):
        raise Refused(422, given.detail)
    if not given:
        return []
    out = []
    with Uploads.open(Path(config.state_dir)) as uploads:
        for i, p in enumerate(given):
            if not _citable(config, uploads, user, site_id, p.sha256):
                # The same words whether the photo exists or not: no hash oracle.
                raise Refused(422, f"photos.{i}.sha256: no photo you uploaded has this hash"
                                   " (nor one cited at this site before); send it to"
                                   " /api/v1/photos first")
            uploads.cite(p.sha256, now_ms)
            try:
                out.append(stored_photo(photos_dir, p, f"photos.{i}", now_ms=now_ms,
                                        max_pixels=photo_pixels_of(config)))
            except PhotoError as exc:
                raise Refused(422, str(exc)) from None
    return out


def _citable(config: Config, uploads: Uploads, user: User, site_id: str, sha256: str
             ) -> bool:
    """A photo is global (named by its hash), so an inspection may cite one only if its
    recorder uploaded it, or if it is evidence at this site already (a joint
    inspection's photos, a fix shown again): never another site's evidence."""
    if uploads.uploaded_by(sha256, user.name):
        return True
    try:
        with open_store(config, readonly=True) as store:
            return cited_at(store, site_id, sha256)
    except StoreError:
        return False


def record(config: Config, photos_dir: Path, user: User, site_id: str,
           data: Mapping[str, Any], now_ms: int, wait_s: float = 20.0) -> dict[str, Any]:
    """Record the inspection ``data`` describes for ``user``; the 201 answer, or
    ``Refused`` naming the field at fault."""
    if not user.may_record(site_id):
        raise Refused(403, f"site: {user.name} may not record inspections at {site_id}")
    names = _list(data, "inspectors")
    if not names or not all(isinstance(n, str) for n in names):
        raise Refused(422, "inspectors: must be a list of names")
    if user.name not in [n.strip() for n in names]:
        raise Refused(422, f"inspectors: must include you ({user.name})")
    # The signed-in person certifies (first); whoever else is named came along,
    # carries no credential and closes nothing (ingest/inspections.py).
    names = [user.name] + [n for n in names if n.strip() and n.strip() != user.name]
    kind = data.get("kind") or "routine"
    if kind not in KINDS:
        raise Refused(422, f"kind: must be one of {', '.join(KINDS)}")
    certified = data.get("certified")
    if certified is not None and not isinstance(certified, bool):
        raise Refused(422, "certified: must be true or false")
    location = check_location(data.get("location"))
    if isinstance(location, Rejection):
        raise Refused(422, location.detail)
    resolves = _list(data, "resolves")
    if not all(isinstance(r, str) for r in resolves):
        raise Refused(422, "resolves: must be a list of corrective action ids")
    at = _text(data, "inspected_at")
    if at is not None and LOCAL_INPUT.fullmatch(at):
        at = local_input_to_iso(config, site_id, at)  # the form's datetime-local
    try:
        insp = build_inspection(
            config, site_id, names, at=at, kind=str(kind),
            notes=_text(data, "notes"), findings=_findings(config, site_id, data),
            actions=_actions(data), resolves=resolves, now_ms=now_ms, via="web",
            photos=_photos(config, user, site_id, photos_dir, data, now_ms),
            location=location, certified=certified)
    except InspectError as exc:
        raise _refused(exc) from None
    try:
        outcome = commit_inspection(config, insp, wait_s)
    except InspectError as exc:
        raise _refused(exc) from None
    site = config.site(site_id)
    assert site is not None
    return _answer(site, insp, outcome)


def _answer(site: SiteConfig, insp: Inspection, outcome: Outcome) -> dict[str, Any]:
    """The 201 answer: what was recorded, the clocks it closed and the actions it asked
    for; ``name``, ``due_words`` and ``actions`` say them as the pages do
    (``contract/clocknames.py``), beside the ids and ISO times programs read."""
    return {
        "site": site.id,
        "inspection": insp.to_json() | {"inspected_at": iso(insp.ts_ms)},
        "confirmed": outcome.recorded is not None,
        "closed": [{"clock_id": c.clock_id, "clock": c.clock, "outcome": c.outcome,
                    "due": c.due, "due_local": local_text(c.due, site.zone),
                    "name": clock_name(c.clock_id, site.zone, c.clock,
                                       site.cadence_days(c.clock_id)),
                    "due_words": spoken(c.due, site.zone)}
                   for c in outcome.closed],
        "corrective_actions": [a.id for a in insp.corrective_actions],
        "actions": [{"id": a.id, "text": a.text,
                     "due": iso(a.due_ms) if a.due_ms is not None else None,
                     "due_words": deadline(a.due_ms, site.zone)}
                    for a in insp.corrective_actions],
        "resolves": list(insp.resolves),
    }

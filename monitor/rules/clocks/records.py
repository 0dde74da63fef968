"""The site log book's records of what people entered: inspections (backdated or not)
and final stabilization (§ 134-9A(2): "Inspection reports shall be maintained in a
site log book"). ``clocks.py`` says which clocks each inspection closed.
"""

from __future__ import annotations

from ...config import SiteConfig
from ...contract.events import (
    Fact,
    InspectionBackdated,
    InspectionRecorded,
    SiteClosed,
    make_id,
)
from ...contract.inputs import Inspection, SiteClosure
from ...contract.times import hours_ms, iso


def is_backdated(site: SiteConfig, insp: Inspection) -> bool:
    """Entered more than ``backdate_alert_hours`` after its own time."""
    return insp.entered_ms is not None and \
        insp.entered_ms - insp.ts_ms > hours_ms(site.backdate_alert_hours)


def inspection_fact_ids(site_id: str, insp: Inspection) -> tuple[str, str]:
    """The ids of an inspection's facts (``inspection_facts``), whether or not both exist."""
    return (make_id("inspection_recorded", site_id, insp.ts_ms, insp.inspector),
            make_id("inspection_backdated", site_id, insp.ts_ms, insp.inspector))


def inspection_facts(site: SiteConfig, insp: Inspection, closes: tuple[str, ...]) -> list[Fact]:
    """``inspection_recorded`` for the log book, and ``inspection_backdated`` for the
    officer when it was entered long after its own time (§ 134-9A(2) reports)."""
    entered = iso(insp.entered_ms) if insp.entered_ms is not None else None
    backdated = is_backdated(site, insp)
    recorded_id, backdated_id = inspection_fact_ids(site.id, insp)
    out = [Fact(site.id, insp.ts_ms, recorded_id, recorded_body(insp, closes, backdated))]
    if backdated and insp.entered_ms is not None:
        out.append(Fact(site.id, insp.entered_ms, backdated_id,
                        InspectionBackdated(
                            inspector=insp.inspector, inspected_at=iso(insp.ts_ms),
                            entered_at=entered or "", closes=closes,
                            hours_late=round((insp.entered_ms - insp.ts_ms) / 3_600_000, 2))))
    return out


def recorded_body(insp: Inspection, closes: tuple[str, ...], backdated: bool
                  ) -> InspectionRecorded:
    """The ``inspection_recorded`` of ``insp``: everything but ``closes`` and
    ``backdated`` is the input's own, so the log book's row can be checked against
    the journal's (``views/journalcheck.py``)."""
    return InspectionRecorded(
        inspector=insp.inspector, kind=insp.kind, inspected_at=iso(insp.ts_ms),
        closes=closes, entered_at=iso(insp.entered_ms) if insp.entered_ms is not None else None,
        backdated=backdated,
        findings=tuple({"practice": f.practice, "condition": f.condition}
                       for f in insp.findings),
        corrective_actions=tuple(
            {"id": a.id, "text": a.text, "due": iso(a.due_ms) if a.due_ms is not None else None,
             # Maintenance is due by its own rule (EPA CGP 2022 Part 2.1.4.b); a
             # corrective action, the default, keeps the record it always had.
             **({"kind": a.kind} if a.kind != "corrective" else {})}
            for a in insp.corrective_actions),
        inspectors=insp.names, credentials=insp.credentials,
        resolves=insp.resolves, notes=insp.notes or None,
        # The field app's evidence; a web inspection lists its photos even when there
        # are none (monitor/README.md, "Events").
        photos=tuple(p.to_json() for p in insp.photos)
        if insp.photos or insp.via == "web" else None,
        location=insp.location.to_json() if insp.location else None,
        certified=insp.certified, via=insp.via)


def closure_fact(closure: SiteClosure) -> Fact:
    """``site_closed``: final stabilization, for the log book."""
    return Fact(closure.site, closure.ts_ms, make_id("site_closed", closure.site),
                SiteClosed(closed_at=iso(closure.ts_ms),
                           entered_at=iso(closure.entered_ms)
                           if closure.entered_ms is not None else None,
                           by=closure.by, notes=closure.notes))

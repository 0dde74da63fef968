"""Temporary shutdowns of a site: when each began and ended, and its log book record.

    "during a temporary shutdown, after written notice, at least once every thirty (30)
    calendar days"  — New York GP-0-25-001 Part IV.C (read at second hand)

``stormwatch site shutdown --notice "…"`` records the written notice a permit asks
for, ``site resume`` the restart of soil disturbance. A permit with a ``shutdown``
rule runs its routine chain at that rule's cadence meanwhile (``routine.py``); the
others are unchanged (Chapter 134 knows pauses the officer agrees, not shutdowns).
"""

from __future__ import annotations

from ...contract.events import Fact, make_id
from ...contract.inputs import ShutdownNotice
from ...contract.permit_events import SiteShutdown
from ...contract.times import iso


def shutdown_spans(notices: tuple[ShutdownNotice, ...]
                   ) -> list[tuple[ShutdownNotice, int | None]]:
    """Each temporary shutdown with when it ended (None while it lasts): a notice starts
    one (a second before the end changes nothing), the next ``resume`` ends it."""
    out: list[tuple[ShutdownNotice, int | None]] = []
    current: ShutdownNotice | None = None
    for notice in sorted(notices, key=lambda n: (n.ts_ms, n.resume)):
        if not notice.resume and current is None:
            current = notice
        elif notice.resume and current is not None:
            out.append((current, notice.ts_ms))
            current = None
    if current is not None:
        out.append((current, None))
    return out


def shutdown_fact(site_id: str, notice: ShutdownNotice, end_ms: int | None) -> Fact:
    """``site_shutdown``: the written notice of a temporary shutdown, for the log book."""
    return Fact(site_id, notice.ts_ms, make_id("site_shutdown", site_id, notice.ts_ms),
                SiteShutdown(started_at=iso(notice.ts_ms),
                             ended_at=iso(end_ms) if end_ms is not None else None,
                             notice=notice.notice or "", by=notice.by,
                             entered_at=iso(notice.entered_ms)
                             if notice.entered_ms is not None else None))

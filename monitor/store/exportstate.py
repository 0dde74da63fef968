"""What the InfluxDB exporter keeps in the state directory, and how far behind it is.

The exporter (``sinks/influx/``) moves two cursors (journal rows, event
revisions) and publishes a few meta keys as it writes; ``status`` reads them to
say how far behind InfluxDB is. Both sides take the names from here, so the view
never leans on the sink (monitor/README.md, "Architecture").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from ..contract.times import iso

if TYPE_CHECKING:
    from . import Store

#: The exporter's journal cursor and its events cursor. The archive's plan
#: (``host/archiving.py``) keeps every row the exporter has still to read, or to
#: restore its replica from (``META_SNAPSHOT``).
CURSOR: Final = "influx"
EVENTS_CURSOR: Final = "influx_events"
#: Meta keys the exporter publishes for ``status`` (all under ``export.influx.``), and
#: the seq its replica's own snapshot was taken at.
META_LAST_WRITE: Final = "export.influx.last_write_ms"
META_ERROR: Final = "export.influx.error"
META_ERROR_SINCE: Final = "export.influx.error_since_ms"
META_SNAPSHOT: Final = "export.influx.snapshot"
DEAD_LETTER_REASON: Final = "influx_rejected"


def export_status(store: Store, now_ms: int) -> dict[str, Any]:
    """The ``export`` part of ``status --json`` (README.md, "Commands"), computed from the cursors.

    ``behind_rows``: journal rows not yet in InfluxDB; ``behind_s``: how long
    the oldest of them has been waiting (0 when none); ``behind_events``:
    event revisions not yet written; ``last_write_at``; ``error`` and
    ``error_since`` while writes fail; ``dead_letters``: points InfluxDB refused.
    """
    cursor = store.state.cursor(CURSOR)
    behind, first_ms = store.journal.backlog(cursor)
    last = store.state.meta_get(META_LAST_WRITE)
    error = store.state.meta_get(META_ERROR)
    since = store.state.meta_get(META_ERROR_SINCE)
    return {
        "behind_rows": behind,
        "behind_s": round(max(0, now_ms - first_ms) / 1000, 1) if first_ms is not None else 0.0,
        "behind_events": store.events.count_after(store.state.cursor(EVENTS_CURSOR)),
        "cursor": cursor,
        "last_write_at": iso(int(last)) if last else None,
        "error": str(error) if error else None,
        "error_since": iso(int(since)) if since else None,
        "dead_letters": store.journal.reject_counts().get(DEAD_LETTER_REASON, 0),
    }

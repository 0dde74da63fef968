"""What the daemon says about a node's backlog: one line per backlog, not one per revision.

A node that was offline sends its buffer when it is back: thousands of old
readings in a few minutes, each of which may revise the few facts it
touches (a storm's totals, a trap's fill). The host (``host.py``) holds the
log book and outbox rows of such a site back until the backlog has settled
(``EngineHost.coalesce``); the events table keeps every revision (the
exporter reads it). The log would otherwise get one INFO line per revision,
and a line per revision says nothing a reader can use. So while a site's
backlog flows its events are counted here instead of logged, and when it has
settled one line says what it was: how many rows, the event time they span,
how many events and revisions of which types it produced.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field

from ..contract.events import Event
from ..contract.times import iso

log = logging.getLogger("stormwatch.daemon")


@dataclass(slots=True)
class Backlog:
    """One site's backlog so far."""

    rows: int = 0
    first_ms: int | None = None
    last_ms: int | None = None
    #: Events recorded meanwhile, by type, and how many of them were revisions.
    types: Counter[str] = field(default_factory=Counter)
    revisions: int = 0

    def line(self, site: str) -> str:
        span = (f" from {iso(self.first_ms)} to {iso(self.last_ms)}"
                if self.first_ms is not None and self.last_ms is not None else "")
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.types.items())) or "none"
        events = sum(self.types.values())
        return (f"backlog of site {site}: {self.rows} late row(s){span} applied; {events} "
                f"event(s) recorded ({self.revisions} of them revisions: {kinds}); the log "
                "book and the alerts have the latest revision of each")


class BacklogLog:
    """The backlogs being applied, by site: rows and events counted, one line at the end."""

    def __init__(self) -> None:
        self.sites: dict[str, Backlog] = {}

    def row(self, site: str, ts_ms: int) -> None:
        b = self.sites.setdefault(site, Backlog())
        b.rows += 1
        b.first_ms = ts_ms if b.first_ms is None else min(b.first_ms, ts_ms)
        b.last_ms = ts_ms if b.last_ms is None else max(b.last_ms, ts_ms)

    def events(self, events: list[Event]) -> list[Event]:
        """Count the events of sites with a backlog; return the others (to log one by one)."""
        others = []
        for e in events:
            b = self.sites.get(e.site)
            if b is None:
                others.append(e)
                continue
            b.types[e.type] += 1
            b.revisions += e.revision > 0
        return others

    def finish(self, site: str) -> None:
        """The site's backlog has settled: its one line."""
        b = self.sites.pop(site, None)
        if b is not None:
            log.info("%s", b.line(site))

"""Which journal rows can no longer change any event: the cut an archive run may take.

A journal row is read again, after it was applied, by four readers, and the
archive must be behind all of them (``store/retention.py`` moves what this
module allows; ``store/journalrows.py`` reads archive and journal as one, so
nothing is lost even when a reader does go back, only slower):

* the engine's **restart**: the daemon restores its snapshot and replays the
  rows after the snapshot's ``applied_seq``; so only rows up to it may go;
* the engine's **re-folds**: a late reading re-reads its sensors' rows from a
  checkpoint, never before the site's *horizon* (``compacted_ms`` in the
  snapshot: the site's newest event time less ``lateness_days`` and a day);
  input older than the horizon is refused, so what it decided is final. Only
  rows of a site before its horizon may go; ticks (which belong to no site)
  before the earliest horizon of the sites that have one;
* every **cursor** over the journal in ``meta`` (``cursor.*``; those over the
  events table are named ``*_events``): the InfluxDB exporter's
  (``cursor.influx``, counted while ``influx`` is configured), and any other;
  rows after a cursor are still to be read;
* the exporter's **restart**: its replica is restored from the newest engine
  snapshot at or before its cursor (its own, or the daemon's) and replays the
  rows after it; so only rows up to that snapshot may go.

On top of that the caller's own bound: ``--before DATE`` (midnight of that date
in each site's time zone) or ``archive.after_days`` before now.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

from ..config import ArchiveConfig, Config
from ..contract.times import MS_PER_DAY, iso
from ..store import Store
from ..store.exportstate import CURSOR as INFLUX_CURSOR
from ..store.exportstate import META_SNAPSHOT as INFLUX_SNAPSHOT_META
from ..store.retention import Cut
from .snapshots import ENGINE_OWNER


@dataclass
class Plan:
    """The cut, and in words what bounds it (for ``--dry-run`` and the summary)."""

    cut: Cut
    #: The requested bound per site (and ``""``: ticks), before the horizons.
    requested_ms: dict[str, int]
    holds: list[str] = field(default_factory=list)


def day_start_ms(day: date, zone: ZoneInfo) -> int:
    """Midnight at the start of ``day`` in ``zone``."""
    return round(datetime.combine(day, time(0), tzinfo=zone).timestamp() * 1000)


def plan(config: Config, store: Store, *, now_ms: int, before: date | None = None) -> Plan:
    """The cut for an archive run now (module docstring)."""
    # Without the section (``stormwatch archive`` alone) its default bound.
    after_days = (config.archive or ArchiveConfig()).after_days
    requested: dict[str, int] = {}
    for site in config.sites:
        requested[site.id] = (day_start_ms(before, site.zone) if before is not None
                              else now_ms - round(after_days * MS_PER_DAY))
    requested[""] = (day_start_ms(before, ZoneInfo("UTC")) if before is not None
                     else now_ms - round(after_days * MS_PER_DAY))
    zones = {s.id: s.zone for s in config.sites}
    holds: list[str] = []
    head = store.state.snapshot_head(ENGINE_OWNER)
    if head is None:
        holds.append("there is no engine snapshot yet (the daemon writes one as it runs):"
                     " nothing is known to be final")
        return Plan(Cut(0, {}, zones), requested, holds)
    upto, text = head
    holds.append(f"the engine snapshot is at journal row {upto}")
    horizons = _horizons(text)
    upto = _cursors(config, store, upto, holds)
    bounds: dict[str, int] = {}
    for site in config.sites:
        horizon = horizons.get(site.id)
        if horizon is None:
            holds.append(f"site {site.id}: no input old enough to be final yet")
            continue
        bounds[site.id] = min(requested[site.id], horizon)
        if horizon < requested[site.id]:
            holds.append(f"site {site.id}: its lateness window reaches back to {iso(horizon)}")
    if bounds:
        bounds[""] = min(requested[""], *bounds.values())
    return Plan(Cut(upto, bounds, zones), requested, holds)


def _horizons(head: str) -> dict[str, int]:
    """Each site's horizon (``compacted_ms``) in an engine snapshot's head."""
    try:
        sites: dict[str, Any] = json.loads(head).get("sites", {})
    except ValueError:
        return {}
    return {sid: int(sd["compacted_ms"]) for sid, sd in sites.items()
            if isinstance(sd, dict) and isinstance(sd.get("compacted_ms"), int)}


def _cursors(config: Config, store: Store, upto: int, holds: list[str]) -> int:
    """``upto`` lowered to every journal cursor, and to where the exporter would restart."""
    for name, seq in sorted(store.state.cursors().items()):
        if name.endswith("_events"):
            continue
        if name == INFLUX_CURSOR:
            if config.influx is None:
                continue
            resume = _exporter_resume(store, seq, upto)
            if resume < seq:
                seq = resume
                holds.append(f"the InfluxDB exporter restarts from journal row {resume}")
        if seq < upto:
            holds.append(f"cursor {name} is at journal row {seq}")
            upto = seq
    return upto


def _exporter_resume(store: Store, cursor: int, daemon_seq: int) -> int:
    """The journal row the exporter's replica would be restored at: the newest snapshot at
    or before its cursor (``sinks/influx/influx.py: restore_replica``); 0 without one."""
    found = [daemon_seq] if daemon_seq <= cursor else []
    own = store.state.meta_number(INFLUX_SNAPSHOT_META, "$.seq")
    if own is not None and own <= cursor:
        found.append(own)
    return max(found, default=0)

"""The first sightings of a site and its sensors, moved earlier by each reading.

Where a site's monitoring starts (its first reading within its active period)
and where each sensor was first heard decide the silence before it
(``health.never_heard``), the notices of unmonitored turbidity and, for a site
without ``active_since``, its active period (``active.py``): a late reading
older than every other one moves them, whatever order the readings came in.
"""

from __future__ import annotations

from ..contract.inputs import Reading
from .site import SiteEngine


def note_first_seen(se: SiteEngine, reading: Reading) -> tuple[bool, bool, bool]:
    """Move the site's and the sensors' first sightings earlier for ``reading`` (the
    site's only within its active period): whether the site's moved, whether a
    sensor's did (both judge the silence again; the site's the notices too), and
    whether the clocks must be computed again (the first run of readings of a site
    without ``active_since`` moved)."""
    ts, start = reading.ts_ms, se.active_from_ms
    # A stray row from before the site began does not start its monitoring.
    site_first = (se.first_seen_ms is None or ts < se.first_seen_ms) \
        and (start is None or ts >= start)
    if site_first:
        se.first_seen_ms = ts
    clocks_dirty = se.first_run.add(ts) and se.config.active_since is None
    sensor_first = False
    # A status is a sign of life of the on_tip gauges of its node too (site.py).
    for sid in se.heard_by.get(reading.sensor, ()) if reading.kind == "status" \
            else (reading.sensor,):
        first = se.first_ms.get(sid)
        if first is None or ts < first:
            se.first_ms[sid] = ts
            sensor_first = True
    return site_first, sensor_first, clocks_dirty

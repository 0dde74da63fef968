"""Every site ranked by what is owed there: the order of the officer's overview and of
a qualified professional's "My sites".

Theory of operation. The rank is read from a site's ``status --json`` object (the
engine's own summary judged at the request's instant, ``views.status``), never
re-derived: a clock is overdue because the summary says ``overdue``, a trap wants a
clean-out because its level is ``cleanout``. Each site falls in the first tier it
meets, and sorts within the tier by the tier's own measure:

1. ``overdue``   an inspection clock past due; the most overdue first (fewest hours
                 left, which are negative);
2. ``unknown``   no state recorded for the site: nothing can be told of it, and an
                 overdue clock may hide there (missing data is never good news, so
                 such a site comes before every site whose state is known to be
                 merely owing);
3. ``due``       an open clock due within ``DUE_SOON_HOURS`` (the 24 hours § 134-9A(2)
                 gives a storm inspection), or a storm clock still waiting for its
                 storm to end (no due time yet); the soonest first, the waiting ones
                 after. A routine clock days away is not "due": every active site
                 always has one, and it would hide the traps and the turbidity;
4. ``cleanout``  a sediment trap at its clean-out level; the fullest first;
5. ``turbidity`` a turbidity pair not ``ok`` (exceeded, unmonitored, clearing,
                 pending, contrast unknown); the worst state first
                 (``TURBIDITY_SEVERITY``);
6. ``sensors``   a sensor not ``ok`` (stale, unknown) or a trap's sensor at fault;
7. ``rest``      nothing owed.

Ties (and every site of a tier without a measure) are broken by the hours left on the
site's next clock, then by its id, so the order is the same at every request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..engine import TURBIDITY_SEVERITY, SiteNow
from .siteview import SiteView

#: An open clock due within this many hours puts its site in the ``due`` tier.
DUE_SOON_HOURS: Final = 24.0
TIERS: Final = ("overdue", "unknown", "due", "cleanout", "turbidity", "sensors", "rest")
#: Hours left of a storm clock whose storm has not ended: due after every timed clock.
NOT_YET_DUE: Final = float("inf")


@dataclass(frozen=True, slots=True)
class Rank:
    """Where a site stands: its tier (``TIERS``) and the measure within the tier."""

    tier: str
    measure: float
    #: Hours left on the site's next clock (``NOT_YET_DUE`` without one).
    next_hours: float = NOT_YET_DUE

    def key(self, site_id: str) -> tuple[int, float, float, str]:
        return (TIERS.index(self.tier), self.measure, self.next_hours, site_id)


def known(status: Mapping[str, Any]) -> SiteNow | None:
    """The site's summary, or None while the daemon has recorded nothing of it.

    Without its corrective actions: nothing here ranks by them, and a site that never
    resolves one carries a season of them (``late_actions`` counts those past due)."""
    if status.get("recorded_at") is None:
        return None
    return SiteNow.from_json({**status, "corrective_actions": ()})


def late_actions(status: Mapping[str, Any]) -> int:
    """How many of the site's open corrective actions are past due."""
    return sum(1 for a in status.get("corrective_actions") or () if a.get("overdue"))


def rank_of(status: Mapping[str, Any]) -> Rank:
    """The tier of one site's ``status --json`` object and its measure (smaller first)."""
    return rank_now(known(status))


def rank_now(now: SiteNow | None) -> Rank:
    """``rank_of`` a summary already read (None: nothing recorded)."""
    if now is None:
        return Rank("unknown", 0.0)
    left = [c.hours_left for c in now.open_clocks if c.hours_left is not None]
    soonest = min(left, default=NOT_YET_DUE)
    if now.overdue_clocks():
        return Rank("overdue", soonest, soonest)
    if soonest <= DUE_SOON_HOURS or any(c.hours_left is None for c in now.open_clocks):
        return Rank("due", soonest, soonest)
    return Rank(*_owed_beside_clocks(now), soonest)


def _owed_beside_clocks(now: SiteNow) -> tuple[str, float]:
    """Tiers 4 to 7: traps, turbidity, sensors, nothing."""
    full = [now.traps[t].fill_fraction or 0.0 for t in now.traps_at("cleanout")]
    if full:
        return "cleanout", -max(full)
    worst = now.worst_turbidity()
    if worst not in ("", "ok"):
        return "turbidity", -float(TURBIDITY_SEVERITY.index(worst))
    if any(s.health != "ok" for s in now.sensors.values()) or \
            any(t.sensor_fault is not None for t in now.traps.values()):
        return "sensors", 0.0
    return "rest", 0.0


def ranked(views: Iterable[SiteView]) -> list[SiteView]:
    """The sites' views worst first (``rank_of``)."""
    return sorted(views, key=lambda v: rank_of(v.status).key(v.site.id))

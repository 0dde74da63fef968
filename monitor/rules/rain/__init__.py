"""The rain family: storm events of each gauge and of the site (§ 134-9A(2)).

``rain.py`` is the streaming fold of one gauge (and of the ``mean`` gauge of a
``gauges: mean`` site), ``rain_columns.py``/``rain_rows.py`` the same rule on
whole columns for ``backtest``, ``sitestorms.py`` the site's storms from its
gauges. Timelines ``gauge:<id>``; a ``rain`` reading goes to its gauge and to
the ``mean`` gauge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from ...config import SensorConfig, SiteConfig
from ..active import active_start_ms
from ..family import Family, FoldInputs, PayloadField, SensorKindSpec
from .rain import GaugeFold
from .sitestorms import MEAN_GAUGE

RAIN = SensorKindSpec(
    fields=(
        PayloadField("tips_total", True, 0, 2**40, "cumulative tip counter of the gauge; "
                     "2**40 tips is far beyond any gauge's life"),
        PayloadField("precip_in", False, 0, 10.0, "depth in inches since the previous message; "
                     "the world 1-minute record is ~1.2 in and gauges publish every minute"),
    ),
    required=(("tips_total",), ("precip_in", "seq")),
    words="storm events cannot be detected while the rain gauge is silent (§ 134-9A(2))",
    measurement="rain", noun="rain gauge(s)",
    counted_when_absent=True)


def folds(site: SiteConfig, make: Callable[..., GaugeFold] = GaugeFold
          ) -> dict[str, FoldInputs]:
    """One fold per gauge, and the ``mean`` gauge's over all of them (``gauges: mean``);
    ``make`` builds each (a permit's rule builds its own, ``rules/permits/storms.py``)."""
    found: dict[str, FoldInputs] = {}
    gauges, start_ms = site.gauges(), active_start_ms(site)
    for g in gauges:
        found[f"gauge:{g.id}"] = (make(site.id, g.id, site.rain, [g],
                                            active_from_ms=start_ms), (g.id,), ())
    if site.rain.gauges == "mean" and gauges:
        # Heartbeats only of the on_tip gauges that have them (liveness in the mean).
        beats = {g.id: site.heartbeat_sensors(g) for g in gauges
                 if g.on_tip and g.heartbeat_minutes is not None}
        found[f"gauge:{MEAN_GAUGE}"] = (make(site.id, MEAN_GAUGE, site.rain, gauges,
                                                  mean=True, heartbeats=beats,
                                                  active_from_ms=start_ms),
                                        tuple(g.id for g in gauges),
                                        tuple(sorted({s for ss in beats.values() for s in ss})))
    return found


def routes(site: SiteConfig, sensor: SensorConfig) -> tuple[str, ...]:
    """A gauge's readings go to its own timeline and to the ``mean`` gauge's."""
    if sensor.kind != "rain":
        return ()
    mean = site.rain.gauges == "mean"
    return (f"gauge:{sensor.id}",) + ((f"gauge:{MEAN_GAUGE}",) if mean else ())


#: The default alert route of each of the family's event types (a variant as
#: ``type.variant``), [] = log book only (``sinks/notify/routing.py``).
ALERT_ROUTES: Final[dict[str, tuple[str, ...]]] = {
    # A drizzle starts and ends a storm event; only a qualifying one is news.
    "storm_started": (),
    # § 134-9A(2): the 24-hour clock starts. The officer sees every one.
    "storm_qualified": ("qp", "officer"),
    # A site below Conditions A-C: recorded and reported, no deadline.
    "storm_qualified.informational": ("qp",),
    "storm_ended": (),
    "counter_reset": ("ops",),
}


FAMILY = Family(
    name="rain", group="gauge", kinds={"rain": RAIN},
    events=("storm_started", "storm_qualified", "storm_ended", "counter_reset"),
    folds=folds, routes=routes,
    alert_routes=ALERT_ROUTES)

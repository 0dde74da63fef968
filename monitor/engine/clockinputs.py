"""What the clocks read of a site's other facts, mirrored into its ``storm_facts``: the
gauges' storm facts (and, for ``gauges: all``, when each gauge was stale), the
permits' own storm rules and snow events, and the weather facts that open clocks
(``rules/clocks``). The clocks outlive the timelines' window, so they keep their own
copy of what they need.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..contract.events import Fact, GaugeDisagrees, SensorRecovered, SensorStale, StormForecast
from ..contract.snow_events import SnowEvent
from ..rules.rain.rain import GAUGE_QUALIFIED
from .site import SiteEngine, mirror

#: The timelines whose facts the clocks read (``note_storm_facts``): the gauges, each
#: permit's own storm rule on them, the snow gauges and every sensor's health.
CLOCK_INPUT_GROUPS = ("gauge:", "permit:", "snow:", "health:")
_STORM_TYPES = frozenset({"storm_started", "storm_ended", GAUGE_QUALIFIED})
_STALE_TYPES = frozenset({"sensor_stale", "sensor_recovered"})


def note_storm_facts(se: SiteEngine, truth: dict[str, Fact], changed: Iterable[str]) -> bool:
    """Mirror the facts the clocks read into the site's ``storm_facts``: the gauges'
    storm facts, and with ``gauges: all`` when each gauge was stale. True if any
    changed."""
    wanted = _STORM_TYPES | (_STALE_TYPES if se.config.rain.gauges == "all" else frozenset())
    if any(p.snow is not None for p in se.permits):
        wanted |= {SnowEvent.TYPE}  # a permit's snowmelt clock (rules/clocks/permitclocks.py)
    gauges = {g.id for g in se.config.gauges()}
    return mirror(se.storm_facts, truth, changed, lambda fact: fact if fact.type in wanted and (
        fact.type not in _STALE_TYPES or (isinstance(fact.body, SensorStale | SensorRecovered)
                                          and fact.body.sensor in gauges)) else None)


def note_reference_storms(se: SiteEngine, truth: dict[str, Fact], changed: Iterable[str]
                          ) -> bool:
    """Mirror the weather facts the clocks read into ``storm_facts``: the
    ``gauge_disagrees`` that open a clock (``reference_opens_clock``,
    ``sitestorms.reference_storms``) and, for a permit with a forecast storm rule, every
    ``storm_forecast`` (``rules/clocks/permitclocks.py``). True if any changed."""
    forecasts = any(p.storm is not None and p.storm.source == "forecast" for p in se.permits)

    def opens(fact: Fact) -> bool:
        body = fact.body
        return ((isinstance(body, GaugeDisagrees) and body.opens_clock)
                or (forecasts and isinstance(body, StormForecast)))

    dirty = False
    for fid in changed:
        fact = truth.get(fid)
        if fact is not None and opens(fact):
            if se.storm_facts.get(fid) != fact:
                se.storm_facts[fid] = fact
                dirty = True
        elif fid in se.storm_facts and se.storm_facts[fid].type in (GaugeDisagrees.TYPE,
                                                                     StormForecast.TYPE):
            del se.storm_facts[fid]
            dirty = True
    return dirty

"""A permit's storm rule on a site's gauges: when a storm qualifies under it.

A permit whose storm depth or window differs from the site's own ``rain:`` rule
(EPA's 0.25 in within 24 hours beside the village's 0.5 in) needs its own
qualification of the same storm events: the same gauges, the same dry gap,
hence the same ``storm_started``/``storm_ended``, but another ``qualified_at``.
``RuleGaugeFold`` runs the rain family's fold under the permit's rule and keeps
only its qualification, tagged with the rule (``GaugeQualified.rule``), which
is internal: the clocks of that permit read it, nobody else sees it.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from ...config import SiteConfig
from ...contract.events import Fact, GaugeQualified, make_id
from ...contract.inputs import Reading
from ..family import FoldInputs
from ..rain import folds as rain_folds
from ..rain.rain import GaugeFold, GaugeState
from .duties import StormDuty, permits_of


class RuleGaugeFold(GaugeFold):
    """The rain fold under a permit's storm rule, giving its qualifications only."""

    def __init__(self, *args: Any, rule_key: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rule_key = rule_key

    def step(self, state: GaugeState, item: Reading, out: list[Fact]) -> None:
        mine: list[Fact] = []
        super().step(state, item, mine)
        out.extend(self._tagged(mine))

    def advance(self, state: GaugeState, now_ms: int, out: list[Fact]) -> None:
        mine: list[Fact] = []
        super().advance(state, now_ms, mine)
        out.extend(self._tagged(mine))

    def _tagged(self, facts: list[Fact]) -> list[Fact]:
        return [Fact(f.site, f.at_ms, make_id(GaugeQualified.TYPE, f.site, f.id, self.rule_key),
                     dataclasses.replace(f.body, rule=self.rule_key))
                for f in facts if isinstance(f.body, GaugeQualified)]


def other_storm_rules(site: SiteConfig) -> dict[str, StormDuty]:
    """The gauge storm rules of the site's permits that are not its own ``rain:`` rule."""
    own = (site.rain.threshold_in, site.rain.mode)
    return {p.storm.rule_key: p.storm for p in permits_of(site)
            if p.storm is not None and p.storm.source == "gauge"
            and (p.storm.threshold_in, p.storm.window) != own}


def rule_site(site: SiteConfig, storm: StormDuty) -> SiteConfig:
    """``site`` with the storm rule ``storm`` in place of its own ``rain:`` rule."""
    rain = site.rain.model_copy(update={
        "threshold_in": storm.threshold_in, "mode": storm.window,
        "inspect_within_hours": storm.deadline_hours, "clock_start": storm.clock_start})
    return site.model_copy(update={"rain": rain})


def folds(site: SiteConfig) -> dict[str, FoldInputs]:
    """``permit:<gauge>@<rule>``: each gauge fold of the rain family, under each other rule."""
    found: dict[str, FoldInputs] = {}
    for key, storm in other_storm_rules(site).items():
        make = functools.partial(RuleGaugeFold, rule_key=key)
        for name, (fold, sensors, status_of) in rain_folds(rule_site(site, storm), make).items():
            found[f"permit:{name.split(':', 1)[1]}@{key}"] = (fold, sensors, status_of)
    return found

"""Every rule family, one line each: what the engine and the shell iterate.

Adding a family is a folder under ``monitor/rules/`` that declares its
``Family`` in its ``__init__.py`` and one line here (monitor/README.md,
"Architecture"). The order is the order of the timelines in a site: gauges,
traps, pairs, then the health of every sensor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, get_args

from ..contract.events import Event
from ..contract.inputs import SensorKind
from ..contract.sentences import SentenceContext, SiteWords
from ..contract.sentences import sentence as contract_sentence
from . import clocks, health, rain, snow, traps, turbidity, weather
from .family import Family, SensorKindSpec

FAMILIES: Final[tuple[Family, ...]] = (
    rain.FAMILY,
    traps.FAMILY,
    turbidity.FAMILY,
    health.FAMILY,
    weather.FAMILY,
    clocks.FAMILY,
    snow.FAMILY,
)

#: Every sensor kind with its family's declaration of it, in the order of the
#: contract's list (``SensorKind``), which is the order ``validate`` counts them in.
KINDS: Final[Mapping[str, SensorKindSpec]] = {
    kind: spec for kind in get_args(SensorKind)
    for family in FAMILIES for k, spec in family.kinds.items() if k == kind}


#: The sentences the families declare for their own event types (``Family.sentences``).
FAMILY_SENTENCES: Final[Mapping[str, Callable[[Any, SentenceContext], str]]] = {
    kind: say for family in FAMILIES for kind, say in family.sentences.items()}
#: The default alert routes the families declare for their own event types.
ALERT_ROUTES: Final[Mapping[str, tuple[str, ...]]] = {
    kind: tags for family in FAMILIES for kind, tags in family.alert_routes.items()}


def sentence(event: Event, site: SiteWords | None = None) -> str:
    """Any event of the vocabulary as one sentence a person reads: the contract's
    sentence, or the one its family declares (``contract/sentences.py``)."""
    return contract_sentence(event, site, FAMILY_SENTENCES)

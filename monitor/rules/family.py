"""What a rule family declares: the unit of extension of the rules.

monitor/README.md, "Architecture" has the walk-through of adding one.

A family owns sensor kinds (with the payload fields a reading of each kind may
carry, sensors/README.md, "MQTT contract"), the event types it concludes, and
the folds of a site: one timeline per thing it watches, named ``group:name``
(the names a snapshot keeps, so they never change), with the sensors whose
readings and whose ``status`` messages each fold takes. The engine iterates
``registry.FAMILIES`` and names no family; the shell reads the same
declarations for the kinds (ingest, export, alert wording, ``validate``).
Everything here is data and pure functions: a family has no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..config import SensorConfig, SiteConfig

#: A fold, the sensors whose readings it takes, and those whose ``status`` it takes.
FoldInputs = tuple[Any, tuple[str, ...], tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class PayloadField:
    """One numeric payload field of a sensor kind (sensors/README.md, "MQTT contract").

    ``low``/``high`` bound the physically possible values (inclusive);
    ``integer`` fields take no fraction; ``doc`` says what the field is.
    """

    name: str
    integer: bool
    low: float
    high: float
    doc: str


@dataclass(frozen=True, slots=True)
class SensorKindSpec:
    """A sensor kind of a family: its payload fields and what a reading needs.

    ``required`` holds the alternative forms, each a tuple of fields that must
    all be present; the first field of a form is its measurement.
    ``words`` says, for an alert about the sensor's silence, what goes unwatched.
    ``measurement`` is the InfluxDB measurement of its raw readings.
    """

    fields: tuple[PayloadField, ...]
    required: tuple[tuple[str, ...], ...]
    words: str
    measurement: str
    #: How ``validate`` counts sensors of the kind ("rain gauge(s)"), and whether it
    #: says so when a site has none (the kinds it always counted keep their "0 …").
    noun: str
    counted_when_absent: bool = False


def _no_folds(site: SiteConfig) -> dict[str, FoldInputs]:
    return {}


def _no_routes(site: SiteConfig, sensor: SensorConfig) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True, slots=True)
class Family:
    """One rule family: its kinds, its events, its folds and where readings go.

    ``folds(site)`` gives every fold of the family for a site by timeline name
    (``group:name``); ``routes(site, sensor)`` the timeline names a sensor's
    readings go to (its ``status`` messages go where ``folds`` says).
    """

    name: str
    #: The prefix of the family's timeline names (None: the family has no timelines).
    group: str | None = None
    kinds: Mapping[str, SensorKindSpec] = field(default_factory=dict)
    events: tuple[str, ...] = ()
    folds: Callable[[SiteConfig], dict[str, FoldInputs]] = _no_folds
    routes: Callable[[SiteConfig, SensorConfig], tuple[str, ...]] = _no_routes
    #: The default alert route of each of its event types (and their variants, as
    #: ``type.variant``): the notifier's defaults (``sinks/notify/routing.py``).
    alert_routes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

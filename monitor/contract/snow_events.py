"""The snow event of monitor/README.md, "Events": snowfall that makes a snowmelt
discharge a storm event. A body like the rest of the vocabulary (``events.py``
lists it in ``EVENT_TYPES``); concluded by ``monitor/rules/snow/snow.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .body import Body


@dataclass(frozen=True, slots=True, kw_only=True)
class SnowEvent(Body):
    """EPA CGP 2022 Part 4.2: "a snowmelt discharge from a storm event that produces
    3.25 inches or more of snow within a 24-hour period". ``total_in`` is the snow
    of the ``window_hours`` before ``qualified_at`` (at least ``threshold_in``);
    ``started_at`` the first snowfall of the event. Opens no clock."""

    TYPE: ClassVar[str] = "snow_event"
    sensor: str
    started_at: str
    qualified_at: str
    total_in: float
    threshold_in: float
    window_hours: float

"""The events of permits (monitor/README.md, "Events"): a corrective action past the
deadline its permit sets, the dewatering turbidity benchmark exceeded, and the
written notice of a temporary shutdown. Bodies like the rest of the vocabulary
(``events.py`` lists them in ``EVENT_TYPES``); concluded by the clocks and
permits families.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .body import Body


@dataclass(frozen=True, slots=True, kw_only=True)
class CorrectiveActionOverdue(Body):
    """A corrective action (or routine maintenance) not reported done by ``due``, the
    deadline its permit's rule sets from the inspection that found it (EPA CGP 2022
    Part 5.2: 7 calendar days; Part 2.1.4.b: the close of the next business day)."""

    TYPE: ClassVar[str] = "corrective_action_overdue"
    action_id: str
    text: str
    due: str
    permit: str
    section: str
    hours_late: float


@dataclass(frozen=True, slots=True, kw_only=True)
class TurbidityBenchmarkExceeded(Body):
    """EPA CGP 2022 Part 3.3.1: the average of a dewatering discharge's daily turbidity
    samples over the week ``week_from`` .. ``week_to`` above ``benchmark_ntu``."""

    TYPE: ClassVar[str] = "turbidity_benchmark_exceeded"
    sensor: str
    week_from: str
    week_to: str
    mean_ntu: float
    samples: int
    benchmark_ntu: float
    permit: str
    section: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SiteShutdown(Body):
    """A temporary shutdown with the written notice the permit asks for (``stormwatch
    site shutdown``): from ``started_at`` the permits with a shutdown rule inspect at
    its cadence, until ``ended_at`` (null while it lasts)."""

    TYPE: ClassVar[str] = "site_shutdown"
    started_at: str
    ended_at: str | None
    notice: str
    by: str | None = None
    entered_at: str | None = None

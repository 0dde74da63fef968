"""The sans-I/O compliance engine: readings and ticks in, events out
(monitor/README.md, "Events").

Nothing in this package touches sockets, files or the wall clock; the daemon,
``replay`` and the demo drive the very same ``Engine``. It drives the rule
families of ``monitor/rules/`` (``rules/registry.py``) and names none of them.

This module is the engine's public face: the shell (``host``, ``views``,
``sinks``, ``web``, ``daemon``, ``commands``) imports the engine, its inputs'
window, its answers (``summary``, ``readout`` types), its series and the
report's reading of its events from here, never from the modules behind it
(``tests/test_layout.py`` checks it).
"""

from __future__ import annotations

from ..rules.readout import (
    TURBIDITY_SEVERITY,
    ClockSummary,
    FaultSummary,
    OpenClock,
    PairSummary,
    SensorNow,
    SensorSummary,
    SiteNow,
    SiteSummary,
    TrapSummary,
)
from .core import Engine
from .duties import Duty
from .episodes import TurbidityEpisode, turbidity_episodes
from .period import Period, Tally, period_facts
from .series import (
    ContrastSample,
    Sample,
    StormSample,
    TrapSample,
    attach,
    hourly_rain,
    judged_rain,
)
from .summary import at_now, judged_at, site_now, site_status, status_at, summarize
from .timeline import Timeline
from .window import MemoryWindow, Window

__all__ = [
    "TURBIDITY_SEVERITY", "ClockSummary", "ContrastSample", "Duty", "Engine", "FaultSummary",
    "MemoryWindow", "OpenClock", "PairSummary", "Period", "Sample", "SensorNow",
    "SensorSummary", "SiteNow", "SiteSummary", "StormSample", "Tally", "Timeline",
    "TrapSample", "TrapSummary", "TurbidityEpisode", "Window", "at_now", "attach",
    "hourly_rain", "judged_at", "judged_rain", "period_facts", "site_now", "site_status",
    "status_at", "summarize", "turbidity_episodes",
]

"""The sans-I/O compliance engine: readings and ticks in, DESIGN § 5 events out.

Nothing in this package touches sockets, files or the wall clock; the daemon,
``replay`` and the demo drive the very same ``Engine``.
"""

from .core import Engine, Stats
from .events import EVENT_FIELDS, Event, Fact
from .inputs import Inspection, Reading

__all__ = ["EVENT_FIELDS", "Engine", "Event", "Fact", "Inspection", "Reading", "Stats"]

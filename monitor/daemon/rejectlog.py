"""The daemon's reject log: each (sensor, reason) logged at most once a minute.

Every reject is counted and dead-lettered (sensors/README.md, "MQTT contract") whatever is logged;
the log is for a person watching, who needs one line per broken node, not one
per message. What hostile input puts into a line is cut short (``logs.clip``).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Final

from ..logs import clip


class RejectLog:
    """Log each (sensor, reason) at most once a minute (sensors/README.md, "MQTT contract"); the
    caller counts.

    The memory of what was logged when is bounded twice, so that a flood of
    distinct topics (5 000 unique ones grew it by 9.7 MB) cannot grow it:
    entries older than the minute are forgotten (they no longer hold anything
    back), and at most ``max_keys`` are kept, the oldest going first, each key
    cut to ``TOPIC_MAX`` characters. Forgetting early can only mean one line
    more, never a message less: every reject is counted and dead-lettered
    whatever is logged.
    """

    EVERY_S: Final = 60.0

    def __init__(self, logger: logging.Logger, max_keys: int = 1000) -> None:
        self.log = logger
        self.max_keys = max_keys
        #: (sensor, reason) -> when it was last logged, oldest first.
        self.last: OrderedDict[tuple[str, str], float] = OrderedDict()

    def note(self, topic: str, reason: str, detail: str, now: float) -> bool:
        """Log this reject unless its (sensor, reason) was logged within the minute
        (``now``: monotonic seconds); whether it was logged."""
        parts = topic.rsplit("/", 3)  # {prefix}/site/sensor/kind: the site and sensor
        key = (clip("/".join(parts[-3:-1]) if len(parts) >= 3 else topic), reason)
        while self.last:
            oldest, at = next(iter(self.last.items()))
            if now - at < self.EVERY_S and len(self.last) < self.max_keys:
                break
            del self.last[oldest]
        if key in self.last:
            return False
        self.last[key] = now
        self.log.warning("rejected message on %s: %s (%s)", clip(topic), reason, clip(detail))
        return True

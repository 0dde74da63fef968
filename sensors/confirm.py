"""The node's side of end-to-end confirmation (sensors/README.md, "MQTT contract";
sensors/README.md, "Sensor node"): when to send again, when to fall back to deleting on PUBACK.

The daemon publishes, per sensor, the retained ``{prefix}/{site}/{sensor}/journaled``
message ``{"seq": N, "at": ...}``: every reading of that sensor up to N that
this node still holds is in its journal. The buffer deletes on it
(``Buffer.confirm``); this module keeps, per sensor, the two clocks that
decide what else to do. Both run on the node's *online* time (seconds with
the broker connected, ``Node``): a link that is down cannot bring a
confirmation, so an outage neither triggers resends nor a fallback.

Theory of operation
-------------------
A sensor is *waiting* while it has readings published (PUBACK received) and
not yet confirmed.

1. **Resend.** When a waiting sensor's confirmed seq has not moved for
   ``confirm_after_s``, its published readings are published again, the same
   bytes (``Buffer.unpublish``): the broker may have lost them after its
   PUBACK. The next resend waits twice as long, up to ``RESEND_MAX_S``, so a
   daemon that is down (the broker queues everything for it) does not get
   each reading a dozen times; a confirmation that moves starts over.
2. **Fallback.** When a waiting sensor in mode ``journaled`` has had no live
   confirmation at all for ``confirm_fallback_minutes`` (a daemon without the
   feature, one whose publishes the ACL refuses, or one down that long), it
   switches to mode ``puback``: its published readings are deleted as their
   PUBACKs come, as before confirmations existed. Logged once, shown in
   status (``confirm: puback``) and kept in the buffer across restarts.
   ``None`` never falls back.
3. **Back.** The first live confirmation in mode ``puback`` switches the
   sensor back to ``journaled`` (logged once).
4. **Retained is not live.** The retained message the broker hands over at
   each subscription is the daemon's last word, maybe from long ago: it
   deletes what it covers (that was journaled) and counts as the mark moving,
   but it is no evidence that the daemon is there now, so it neither delays
   a fallback nor ends one.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

log = logging.getLogger(__name__)

#: The longest wait between two resends of a sensor's unconfirmed readings.
RESEND_MAX_S: Final = 3600.0

Mode = Literal["journaled", "puback"]
Action = tuple[Literal["resend", "fallback"], str]


@dataclass
class SensorWait:
    """One sensor's clocks (online seconds; see the module docstring)."""

    mode: Mode
    waiting: bool = False
    heard_s: float = 0.0
    resend_at_s: float = math.inf
    interval_s: float = 0.0


class Confirmations:
    """The clocks of every sensor; ``due`` says what to do now."""

    def __init__(self, after_s: float, fallback_s: float | None,
                 modes: Mapping[str, Mode]) -> None:
        self.after_s = after_s
        self.fallback_s = fallback_s
        self.sensors = {sensor: SensorWait(mode) for sensor, mode in modes.items()}

    def mode(self, sensor: str) -> Mode:
        return self.sensors[sensor].mode

    def puback(self) -> set[str]:
        """The sensors in the fallback: their rows go on PUBACK."""
        return {s for s, w in self.sensors.items() if w.mode == "puback"}

    def published(self, sensors: Iterable[str], now_s: float) -> None:
        """Rows of these sensors got their PUBACK (or were found published at start)."""
        for sensor in sensors:
            wait = self.sensors[sensor]
            if wait.mode == "journaled" and not wait.waiting:
                self._start(wait, now_s)

    def confirmed(self, sensor: str, *, moved: bool, live: bool, waiting: bool,
                  now_s: float) -> Mode | None:
        """A confirmation of ``sensor`` was applied: it ``moved`` past what was confirmed
        before, it is ``live`` (not the retained one of a subscription), and rows are
        still ``waiting`` after it. The mode switched to, if it did (3)."""
        wait = self.sensors[sensor]
        switched: Mode | None = None
        if live:
            wait.heard_s = now_s
            if wait.mode == "puback":
                wait.mode = switched = "journaled"
        if not waiting:
            wait.waiting, wait.resend_at_s = False, math.inf
        elif not wait.waiting:
            self._start(wait, now_s)
        elif moved:
            self._start(wait, now_s, heard=live)
        return switched

    def due(self, now_s: float) -> list[Action]:
        """What is due now (1, 2), each done once: the caller acts on it."""
        out: list[Action] = []
        for sensor, wait in self.sensors.items():
            if not wait.waiting or wait.mode != "journaled":
                continue
            if self.fallback_s is not None and now_s - wait.heard_s >= self.fallback_s:
                wait.mode, wait.waiting = "puback", False
                out.append(("fallback", sensor))
            elif now_s >= wait.resend_at_s:
                wait.interval_s = min(wait.interval_s * 2, max(RESEND_MAX_S, self.after_s))
                wait.resend_at_s = now_s + wait.interval_s
                out.append(("resend", sensor))
        return out

    def _start(self, wait: SensorWait, now_s: float, heard: bool = True) -> None:
        """Waiting from now: the resend clock starts over; so does the fallback clock
        when ``heard`` (a new waiting period, or a live confirmation)."""
        wait.waiting = True
        if heard:
            wait.heard_s = now_s
        wait.interval_s = self.after_s
        wait.resend_at_s = now_s + self.after_s

def fallback_message(sensor: str, minutes: float) -> str:
    return (f"{sensor}: no confirmation from the daemon for {minutes:g} min: deleting its "
            "readings on the broker's PUBACK from now on (confirm: puback), so a broker "
            "that loses them after acknowledging them loses them for good. Check that the "
            "daemon runs, publishes confirmations (broker.confirm) and that the ACL lets "
            "this node read its journaled topics")

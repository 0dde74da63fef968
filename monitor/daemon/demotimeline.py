"""The demo's timeline: each event and the alerts it sent, printed in event-time order.

The engine emits an event when its fact becomes known, which is not always when
it happened: a storm has ended only once ``dry_gap_hours`` have passed without
rain, so ``storm_ended`` (dated at the storm's last rain) is recorded hours after
the events that followed it (the outfall clearing, a trap filling). Readings,
too, may reach the engine late: the demo allows up to ``lateness_s`` of delivery
(its ``STALE_MARGIN_S`` at its speed). Printing events as they are recorded
therefore prints some out of order.

So the timeline trails the demo's clock by that bound (``trail_s``): an event is
printed once the clock has passed its time by ``trail_s``, when nothing dated
before it can still come, and all of them are sorted by event time (ties:
causes before consequences, ``Fact.sort_key``). At the end of the demo the
clock stops and whatever is left is printed, still in order.

The alerts an event sent print under it: the demo's notify target is
``demotimeline://`` (registered here, in this process), which hands each
rendered alert to the timeline instead of writing it at once; its ``Alert id``
line (``<event id>:<revision>``, ``store/events.py``) says whose it is. The
text is exactly what ``console://`` prints.
"""

from __future__ import annotations

import queue
import re
from collections.abc import Callable
from datetime import datetime
from typing import IO, Any, cast

import apprise
from apprise.decorators import notify

from ..config import SiteConfig
from ..contract.events import (
    BatteryLow,
    ClockClosed,
    Event,
    InspectionDueSoon,
    InspectionOverdue,
    InspectionRecorded,
    SensorRecovered,
    SensorStale,
    StormEnded,
    StormQualified,
    StormStarted,
    TrapCleanoutRequired,
    TrapFill,
    TurbidityContrast,
)
from ..contract.figures import depth_text, fill_text
from ..contract.times import parse_iso
from ..sinks.notify.console import block

#: The demo's notify target: alerts go to its timeline (module docstring).
SCHEME = "demotimeline"
#: Rendered alerts not yet placed: the notify worker's thread puts, the demo takes.
_alerts: queue.Queue[str] = queue.Queue()
_ALERT_ID = re.compile(r"^Alert id: (\S+)$", re.MULTILINE)

_register = cast(Callable[..., Callable[[Callable[..., bool]], Callable[..., bool]]], notify)


def _take(body: str, title: str, notify_type: str, *args: Any, **kwargs: Any) -> bool:
    _alerts.put(block(title, body, notify_type))
    return True


_register(on=SCHEME, name="stormwatch demo timeline", body_format=apprise.NotifyFormat.TEXT)(
    _take)


def trail_s(site: SiteConfig, lateness_s: float) -> float:
    """How far behind the demo's clock the timeline prints: the longest an event may
    be recorded after its time (a storm's end: the dry gap) plus the readings'
    allowed lateness."""
    return site.rain.dry_gap_hours * 3600 + lateness_s


class Timeline:
    """The events of one site printed in event-time order, each with its alerts."""

    def __init__(self, out: IO[str], site: SiteConfig) -> None:
        self.out, self.site = out, site
        self.printed: set[tuple[str, int]] = set()
        self.alerts: dict[str, list[str]] = {}

    def show(self, events: list[Event], until_ms: float) -> None:
        """Print, in event order, the events not printed yet dated up to ``until_ms``
        (``math.inf``: all of them), each followed by the alerts it sent."""
        self._collect()
        due = sorted((e for e in events if not e.retracted and e.at_ms <= until_ms
                      and (e.id, e.revision) not in self.printed),
                     key=lambda e: e.fact.sort_key())
        for event in due:
            self.printed.add((event.id, event.revision))
            print(describe(event, self.site), file=self.out)
            for text in self.alerts.pop(f"{event.id}:{event.revision}", []):
                self.out.write(text)
        self.out.flush()

    def late_alerts(self) -> None:
        """Print the alerts of events already printed (a reminder sent again): they
        cannot go back up the terminal."""
        self._collect()
        for alert_id in [a for a in self.alerts if _printed(a, self.printed)]:
            for text in self.alerts.pop(alert_id):
                self.out.write(text)
        self.out.flush()

    def _collect(self) -> None:
        while True:
            try:
                text = _alerts.get_nowait()
            except queue.Empty:
                return
            found = _ALERT_ID.search(text)
            self.alerts.setdefault(found[1] if found else "", []).append(text)


def _printed(alert_id: str, printed: set[tuple[str, int]]) -> bool:
    event_id, _, revision = alert_id.partition(":")
    return revision.isdigit() and (event_id, int(revision)) in printed


def describe(event: Event, site: SiteConfig) -> str:
    """One line of the demo's timeline for an event (depths and fills: ``figures.py``)."""
    zone, limit, levels = site.zone, site.rain.threshold_in, site.fill_levels

    def local(when: str | int | None) -> str:
        if when is None:
            return "-"
        ms = when if isinstance(when, int) else parse_iso(when)
        return datetime.fromtimestamp(ms / 1000, tz=zone).strftime("%a %H:%M")

    details = ""
    match event.body:
        case StormStarted(gauge=gauge):
            details = f"rain on {gauge}"
        case StormQualified(total_in=total, due=due):
            details = f"{depth_text(total, limit)}: inspect by {local(due)} (§ 134-9A(2))"
        case StormEnded(total_in=total):
            details = f"{depth_text(total, limit)} in all"
        case TurbidityContrast() as e:
            over = (f"{e.downstream_ntu:g} NTU, no usable background (limit {e.limit_ntu:g})"
                    if e.delta_ntu is None else f"{e.delta_ntu:+g} NTU (limit +{e.limit_ntu:g})")
            details = f"{e.pair} {e.state}: {over} (§ 134-8C)"
        case TrapFill(trap=trap, fill_fraction=fill):
            details = f"{trap} at {fill_text(fill, *levels(trap))} of design volume"
        case TrapCleanoutRequired(trap=trap, fill_fraction=fill):
            details = f"{trap} at {fill_text(fill, *levels(trap))}: clean out (§ 134-9A(1))"
        case InspectionDueSoon(clock=clock, due=due, hours_left=left):
            details = f"{clock} inspection due {local(due)}, {left:g} h left"
        case InspectionOverdue(clock=clock, due=due):
            details = f"{clock} inspection OVERDUE since {local(due)}"
        case InspectionRecorded(inspector=inspector):
            details = f"by {inspector}"
        case SensorStale(sensor=sensor, last_seen=seen):
            details = f"{sensor} silent since {local(seen)}"
        case SensorRecovered(sensor=sensor):
            details = f"{sensor} reporting again"
        case BatteryLow(sensor=sensor, battery_v=volts):
            details = f"{sensor} at {volts} V"
        case ClockClosed(clock=clock, outcome=outcome):
            details = f"{clock} clock {outcome}"
    rev = f" (revision {event.revision})" if event.revision else ""
    return f"  [{local(event.at_ms)}] {event.type:<24} {details}{rev}"

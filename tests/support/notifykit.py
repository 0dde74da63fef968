"""The alerts in tests.

A site of the notify tests, events of its vocabulary to send, a clock the notifier
reads, and the alert an event renders to.
"""

from __future__ import annotations

from typing import Any

from monitor.config.file import parse_config
from monitor.contract.events import Event
from monitor.contract.times import iso, parse_iso
from monitor.sinks.notify.messages import Alert

from .receivers import HttpReceiver
from .util import event

SITE = "branch-meadows"

T0 = parse_iso("2026-11-30T14:15:00Z")  # Mon Nov 30, 2026 9:15 AM EST

H = 3_600_000

MIN = 60_000

SITE_DOC: dict[str, Any] = {
    "id": SITE, "name": "Branch Meadows Subdivision",
    "address": "1 Meadow Lane, Village of the Branch, NY",
    "timezone": "America/New_York", "condition": "B",
    "sensors": [{"id": "rg1", "kind": "rain"}, {"id": "tb-up", "kind": "turbidity"},
                {"id": "tb-down", "kind": "turbidity"},
                {"id": "trap1-depth", "kind": "sediment"}],
    "turbidity_pairs": [{"id": "outfall-1", "upstream": "tb-up", "downstream": "tb-down"}],
    "traps": [{"id": "trap-1", "sensor": "trap1-depth", "shape": "trapezoidal",
               "bottom_length_ft": 20, "bottom_width_ft": 10, "side_slope": 2,
               "design_depth_ft": 4}],
}


ev = event


def storm(id_: str = "storm-1", at: int = T0, revision: int = 0, due: int | None = None,
          **fields: Any) -> Event:
    return ev("storm_qualified", id_, at, revision, gauge="rg1", event_id="e1",
              started_at=iso(at - 4 * H), qualified_at=iso(at), total_in=0.5, max_24h_in=0.5,
              due=iso(due if due is not None else at + 24 * H), threshold_in=0.5,
              mode="event_24h", clock_id="storm-e1", **fields)


def notice(kind: str, id_: str, at: int, revision: int = 0, *, due: int = T0 + 24 * H,
           clock_id: str = "storm-e1", **fields: Any) -> Event:
    extra = {"hours_left": 6.0} if kind == "inspection_due_soon" else {"hours_late": 0.0}
    return ev(kind, id_, at, revision, clock_id=clock_id, clock="storm", due=iso(due),
              **{**extra, **fields})


class FakeClock:
    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> float:
        return self.ms / 1000

    def advance(self, ms: int) -> None:
        self.ms += ms


def json_url(receiver: HttpReceiver, path: str = "hook") -> str:
    return f"json://{receiver.base}/{path}"


def alert(event: Event, now: int = T0 + 45 * MIN, **kw: Any) -> Alert:
    config = parse_config({"sites": [SITE_DOC]}, env={})
    return Alert(f"{event.id}:{event.revision}", event, now, config.sites[0], **kw)

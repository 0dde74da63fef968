"""The store in tests.

Journal rows and events of one site to write to a state directory: readings, storms,
trap fills.
"""

from __future__ import annotations

from typing import Any

from monitor.contract.events import (
    Body,
    Event,
    Fact,
    StormQualified,
    StormStarted,
    TrapFill,
)
from monitor.contract.inputs import Reading
from monitor.contract.times import iso
from monitor.store import JournalIn

SITE = "branch-meadows"

T0 = 1_777_636_800_000  # 2026-05-01T12:00:00Z

MIN = 60_000


def reading(ts_ms: int, ntu: float = 3.0, sensor: str = "tb-up", site: str = SITE,
            **extra: Any) -> JournalIn:
    r = Reading(site=site, sensor=sensor, kind="turbidity", ts_ms=ts_ms, ntu=ntu, **extra)
    return JournalIn("reading", site, sensor, ts_ms, r.to_json(),
                     topic=f"stormwatch/v1/{site}/{sensor}/reading", received_ms=ts_ms + 50)


def event(body: Body, id_: str, at_ms: int, revision: int = 0, *, site: str = SITE,
          retracted: bool = False) -> Event:
    """An event exactly as the engine publishes it."""
    return Event(Fact(site, at_ms, id_, body), revision, retracted)


def qualified(id_: str = "storm-1", at_ms: int = T0, revision: int = 0) -> Event:
    return event(StormQualified(gauge="rg1", event_id=id_, started_at=iso(T0 - 60 * MIN),
                                qualified_at=iso(at_ms), total_in=0.62, max_24h_in=0.62,
                                due=iso(at_ms + 24 * 60 * MIN), uncertain_in=0.0,
                                gauges=("rg1",), threshold_in=0.5,
                                mode="event_24h", clock_id=f"storm-{id_}"),
                 id_, at_ms, revision)


def started(id_: str, at_ms: int, revision: int = 0, retracted: bool = False) -> Event:
    return event(StormStarted(gauge="rg1", event_id=id_, started_at=iso(at_ms)), id_, at_ms,
                 revision, retracted=retracted)


def trap_fill(id_: str, at_ms: int, trap: str, fill: float, depth_in: float,
              site: str = SITE) -> Event:
    return event(TrapFill(trap=trap, fill_fraction=fill, depth_in=depth_in, sensor="trap1-depth",
                          threshold=0.4), id_, at_ms, site=site)

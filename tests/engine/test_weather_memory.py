"""The weather book over a season: pruned at the site's compaction horizon, its size
stays bounded, and every event comes out as from an engine that never prunes.

Forty-five days from ``T0``: rg1 reports its counter every 10 minutes; every fourth day
a storm drops 2 mm an hour for ten hours at KHPN (20 mm, over the 12.7 mm
threshold), which rg1 sees on even storms and misses on odd ones (clogged: 0 in,
so ``gauge_disagrees``; with ``reference_opens_clock`` also a storm clock, closed
by an inspection the next day). A forecast issue every six hours forecasts the
storms of the next two days. The never-pruning engine is the same configuration
with ``lateness_days`` longer than the season, so its horizon never moves.
"""

from __future__ import annotations

import json
from typing import Any

from monitor.config import Config
from monitor.config.file import parse_config
from monitor.contract.events import Event
from monitor.contract.inputs import Forecast, Inspection, Reading, ReferenceObservation
from monitor.contract.times import MS_PER_DAY, MS_PER_HOUR, MS_PER_MINUTE
from monitor.engine.core import Engine

from ..support.weatherkit import SITE, T0

H = MS_PER_HOUR
DAYS = 45
STORM_EVERY_DAYS = 4


def config(lateness_days: float) -> Config:
    return parse_config({"state_dir": "/tmp/stormwatch-test", "sites": [{
        "id": SITE, "timezone": "America/New_York", "condition": "B",
        "lateness_days": lateness_days, "location": {"lat": 41.05, "lon": -73.54},
        "sensors": [{"id": "rg1", "kind": "rain", "in_per_tip": 0.01}]}],
        "weather": {"nws": {"user_agent": "test (ops@example.org)"},
                    "reference_stations": ["KHPN"], "reference_opens_clock": True}},
        env={})


def storm_starts() -> list[int]:
    return [T0 + d * MS_PER_DAY + 6 * H for d in range(1, DAYS, STORM_EVERY_DAYS)]


def season() -> list[Any]:
    """Every input of the season in event-time order (forecasts and observations as
    the poller journals them: at their issue and observation times)."""
    items: list[Any] = []
    starts = storm_starts()
    seen = [s for i, s in enumerate(starts) if i % 2 == 0]
    tips = 1000
    for seq, t in enumerate(range(T0, T0 + DAYS * MS_PER_DAY, 10 * MS_PER_MINUTE)):
        if any(s <= t < s + 10 * H for s in seen):
            tips += 1  # 6 tips an hour: 0.6 in over the storm
        items.append(Reading(SITE, "rg1", "rain", t, tips_total=tips, seq=seq))
    for hour in range(DAYS * 24):
        t = T0 + hour * H
        wet = any(s <= t < s + 10 * H for s in starts)
        items.append(ReferenceObservation(SITE, "KHPN", t + 51 * MS_PER_MINUTE,
                                          2.0 if wet else 0.0))
        if hour % 6 == 0:
            precip = tuple((s, s + 10 * H, 20.0) for s in starts if t <= s < t + 48 * H)
            items.append(Forecast(SITE, "nws", "OKX/33,37", t, precip or ((t, t + H, 0.0),)))
    for i, s in enumerate(starts):
        if i % 2 == 1:
            items.append(Inspection(SITE, "J. Rivera", s + 20 * H, "storm"))
    items.sort(key=lambda it: it.ts_ms)
    return items


def final(events: list[Event]) -> list[dict[str, Any]]:
    """The latest revision of each fact, without revision numbers (which the two
    engines count alike, but settled facts are handed out and not revised again)."""
    latest: dict[str, Event] = {}
    for e in events:
        if e.id not in latest or e.revision >= latest[e.id].revision:
            latest[e.id] = e
    return sorted(({k: v for k, v in e.to_json().items() if k != "revision"}
                   for e in latest.values() if not e.retracted),
                  key=lambda j: (j["at"], j["id"]))


def run(lateness_days: float, restore_at: int | None = None
        ) -> tuple[list[dict[str, Any]], list[int]]:
    eng = Engine(config(lateness_days))
    out: list[Event] = []
    sizes: list[int] = []
    for it in season():
        if restore_at is not None and it.ts_ms >= restore_at:
            # A restart from a snapshot: the pruned book (its base and tails) with it.
            eng = Engine.restore(eng.config, json.loads(json.dumps(eng.dump())))
            restore_at = None
        out += eng.apply(it)
        if isinstance(it, Forecast) and it.ts_ms % MS_PER_DAY == 0:
            out += eng.tick(it.ts_ms)
            sizes.append(eng.site_engine(SITE).weather.size())
    out += eng.tick(T0 + DAYS * MS_PER_DAY)
    out += eng.drain_settled()
    return final(out), sizes


def test_a_season_of_weather_keeps_the_book_bounded_and_the_events_unchanged() -> None:
    pruned, sizes = run(7)
    unpruned, unpruned_sizes = run(DAYS + 30)
    kinds = {e["type"] for e in pruned}
    assert {"storm_forecast", "gauge_disagrees", "storm_qualified", "clock_closed"} <= kinds
    assert len([e for e in pruned if e["type"] == "gauge_disagrees"]) == 5
    assert pruned == unpruned
    # Bounded: after the first lateness period the book holds about nine days of
    # hours and issues, whatever the length of the season; the unpruned one grows.
    assert max(sizes[20:]) <= 1.2 * max(sizes[10:20])
    assert unpruned_sizes[-1] > 2 * max(sizes[20:])
    assert run(7, restore_at=T0 + 25 * MS_PER_DAY + 7 * H)[0] == pruned

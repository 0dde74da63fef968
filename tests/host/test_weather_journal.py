"""Weather inputs are journaled as input (monitor/README.md, "Weather"), so a replay of the journal
reproduces every weather conclusion the daemon drew.

Real SQLite store and the daemon's ``EngineHost`` fed as the run loop does
(``Journal.commit`` then ``apply_committed``, ticks between); then a fresh
engine is fed the journal's rows (``apply_row``, what a restart without a
snapshot does) and must hold the same weather events.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monitor.config.file import parse_config
from monitor.contract.events import make_id
from monitor.contract.inputs import Inspection
from monitor.contract.times import MS_PER_HOUR
from monitor.engine import Engine
from monitor.host.engine import EngineHost
from monitor.host.rows import apply_row, journal_in
from monitor.store.opening import open_store

from ..support.weatherkit import (
    CHANCE,
    REFERENCE,
    SITE,
    STORM,
    T0,
    TENTH,
    counter,
    issue,
    nws_interval,
    observations,
)

H = MS_PER_HOUR
WEATHER = ("storm_forecast", "gauge_disagrees")


class Clock:
    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> float:
        return self.ms / 1000


def test_replaying_the_journal_reproduces_the_weather_events(tmp_path: Path) -> None:
    config = parse_config({"state_dir": str(tmp_path), "sites": [{
        "id": SITE, "condition": "B", "location": {"lat": 41.05, "lon": -73.54},
        "sensors": [{"id": "rg1", "kind": "rain", "in_per_tip": 0.01}]}],
        "weather": {"nws": {"user_agent": "test (ops@example.org)"},
                    "reference_stations": ["KHPN"]}}, env={})
    dry = [nws_interval(6, "PT6H", 1.0)]
    wetter = [nws_interval(6, "PT6H", 5.0), *STORM[1:]]
    clock = Clock(T0 - 20 * H)
    with open_store(config) as store:
        host = EngineHost.restore(config, store, clock=clock, routes=lambda e: ["qp"])

        def send(items: list[Any]) -> None:
            seqs = store.journal.commit([journal_in(i, topic=None, received_ms=clock.ms)
                                         for i in items])
            host.apply_committed([(seq, i, clock.ms) for seq, i in zip(seqs, items, strict=True)
                                  if seq is not None])

        readings = counter(TENTH)
        send(readings[:200])
        # Fetched at T0, again (the same issue twice: journaled once), then a dry issue
        # that retracts the storm, then one that forecasts it again (a new storm).
        clock.ms = T0
        send([issue(0, STORM, CHANCE)])
        send([issue(0, STORM, CHANCE)])
        send([issue(1, dry)])
        send([issue(2, wetter, CHANCE)])
        send(readings[200:])
        clock.ms = T0 + 12 * H
        send(observations(REFERENCE))
        host.tick()
        last: dict[str, Any] = {}
        for e in store.events.all(SITE):
            if e.type in WEATHER:
                last[e.id] = (e.type, e.revision, e.retracted)
        current = [e.to_json() for e in host.engine.current_events() if e.type in WEATHER]
        rows = store.journal.after(0, limit=100_000)
    # The first forecast: published, then retracted; the second one holds; the gauge
    # reading a tenth of the reference disagrees (revised as the hours came in).
    first = make_id("storm_forecast", SITE, "nws", T0, T0 + 6 * H)
    second = make_id("storm_forecast", SITE, "nws", T0 + 2 * H, T0 + 6 * H)
    disagrees = make_id("gauge_disagrees", SITE, "rg1", T0 - 17 * H)
    assert {k: (t, x) for k, (t, _, x) in last.items()} == {
        first: ("storm_forecast", True), second: ("storm_forecast", False),
        disagrees: ("gauge_disagrees", False)}
    assert last[first][1] == 1 and last[second][1] == 0
    assert sum(1 for r in rows if r.body.get("weather") == "forecast") == 3
    assert sum(1 for r in rows if r.body.get("weather") == "observation") == 10

    replayed = Engine(config)
    for row in rows:
        apply_row(replayed, row)
    replayed.tick(T0 + 12 * H)
    assert [e.to_json() for e in replayed.current_events() if e.type in WEATHER] == current
    assert {e["type"] for e in current} == set(WEATHER)


def test_replaying_the_journal_reproduces_the_reference_clock(tmp_path: Path) -> None:
    """``reference_opens_clock``: the clock the reference opened, its notices and the
    inspection that closed it come back the same from the journal's rows."""
    config = parse_config({"state_dir": str(tmp_path), "sites": [{
        "id": SITE, "condition": "B", "location": {"lat": 41.05, "lon": -73.54},
        "sensors": [{"id": "rg1", "kind": "rain", "in_per_tip": 0.01}]}],
        "weather": {"nws": {"user_agent": "test (ops@example.org)"},
                    "reference_stations": ["KHPN"], "reference_opens_clock": True}}, env={})
    clock = Clock(T0 - 20 * H)
    kinds = ("storm_qualified", "inspection_due_soon", "clock_closed")
    with open_store(config) as store:
        host = EngineHost.restore(config, store, clock=clock, routes=lambda e: ["qp"])
        batches: list[list[Any]] = [counter([], until_h=-1), observations(REFERENCE),
                                    [Inspection(SITE, "J. Rivera", T0 + 27 * H, "storm")]]
        for batch in batches:
            clock.ms = max(clock.ms, max(i.ts_ms for i in batch))
            seqs = store.journal.commit([journal_in(i, topic=None, received_ms=clock.ms)
                                         for i in batch])
            host.apply_committed([(seq, i, clock.ms) for seq, i in zip(seqs, batch, strict=True)
                                  if seq is not None])
            host.tick()
        current = [e.to_json() for e in host.engine.current_events() if e.type in kinds]
        rows = store.journal.after(0, limit=100_000)
    replayed = Engine(config)
    for row in rows:
        apply_row(replayed, row)
    replayed.tick(clock.ms)
    assert [e.to_json() for e in replayed.current_events() if e.type in kinds] == current
    assert [(e["type"], e.get("source")) for e in current if e["type"] != "clock_closed"
            or e["clock"] == "storm"] == [
        ("storm_qualified", "reference"), ("inspection_due_soon", "reference"),
        ("clock_closed", "reference")]

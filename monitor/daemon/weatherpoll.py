"""The daemon's weather source: fetch every ``weather.poll_minutes``, journal what came.

A worker thread like the sinks' (``workers.run_worker`` restarts it after a
failure), with its own store connection. What it fetched becomes journal rows
(``host.rows.journal_in``: the engine's inputs, so a replay of the journal
concludes what the daemon concluded); the engine thread applies rows another
connection journaled at its next turn. Per site it records ``weather:{site}``
in the store's meta, ``{source, last_ok, last_error}``, which ``status`` shows:
a source that cannot be reached is said to be unreachable, never read as "no
storm forecast". A failure is logged once per source per hour (``FailureLog``).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from ..config import Config
from ..contract.times import MS_PER_HOUR, WallClock, iso
from ..host.rows import journal_in
from ..sources.nws import FailureLog, NwsClient, NwsError
from ..store import Store
from ..store.opening import open_store
from ..store.sourcenotes import WEATHER_SOURCE, source_state, weather_meta_key

#: Observations are asked for this far back: the 24 hours the rule looks at and an
#: hour more, so a late report of the oldest hour is not missed.
LOOKBACK_MS = 25 * MS_PER_HOUR


class WeatherPoller:
    """Fetches the forecast and the reference observations of every site."""

    name = "weather"

    def __init__(self, config: Config, clock: WallClock = time.time,
                 client: NwsClient | None = None) -> None:
        assert config.weather is not None
        self.config = config
        self.weather = config.weather
        self.clock = clock
        self.client = client or NwsClient(config.weather.nws)
        self.failures = FailureLog()

    def wake(self) -> None:
        return None  # polls on its own schedule

    def run(self, stop: threading.Event) -> None:
        # A Retry-After is waited out on the stop event: SIGTERM does not wait for it.
        self.client.sleep = lambda seconds: None if stop.wait(seconds) else None
        with open_store(self.config) as store:
            while not stop.is_set():
                self.poll_once(store)
                stop.wait(self.weather.poll_minutes * 60)

    def poll_once(self, store: Store) -> None:
        now_ms = round(self.clock() * 1000)
        for site in self.config.sites:
            if site.location is None:
                continue
            state = source_state(store, site.id)
            try:
                items: list[Any] = [self.client.forecast(site.id, site.location)]
                for station in self.weather.stations_of(site.id):
                    items += self.client.observations(site.id, station, now_ms - LOOKBACK_MS)
            except NwsError as exc:
                self.failures.failed(WEATHER_SOURCE, str(exc))
                state["last_error"] = {"at": iso(now_ms), "reason": str(exc)}
            else:
                store.journal.commit([journal_in(i, topic=None, received_ms=now_ms)
                                      for i in items])
                self.failures.ok(WEATHER_SOURCE)
                state["last_ok"], state["last_error"] = iso(now_ms), None
            store.state.meta_set(weather_meta_key(site.id), json.dumps(state, sort_keys=True))

"""A small season in a real state directory, through the daemon's own ingest path.

Two sites in two time zones (New York, Los Angeles), each with a rain gauge, a
turbidity pair and a sediment trap, a reading every ``every_min`` minutes for
``days`` days from 2026-04-01; storms every few days (some qualify), a weekly
inspection, a node that buffers three hours and sends them late (so a late
reading is re-folded from the journal), and the daemon's ticks and
snapshots. ``Daemon.ingest_batch`` commits, acknowledges (to nobody) and
applies each batch, as the run loop does; the clock is the season's own.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from monitor.config import Config
from monitor.config.file import parse_config
from monitor.contract.times import MS_PER_DAY, MS_PER_MINUTE, parse_iso
from monitor.daemon.loop import Daemon
from monitor.host.engine import EngineHost
from monitor.sources.mqtt import Received
from monitor.store import Store
from monitor.store.opening import open_store

START_MS = parse_iso("2026-04-01T04:00:00Z")
SITES = (("north-lot", "America/New_York"), ("west-pad", "America/Los_Angeles"))
PREFIX = "stormwatch/v1"


def season_config(state_dir: Path, archive: dict[str, Any] | None = None) -> Config:
    return parse_config(season_data(state_dir, archive), env={})


def season_yaml(state_dir: Path, archive: dict[str, Any] | None = None) -> Path:
    """The season's configuration as a file beside its state directory, for the CLI."""
    path = state_dir.parent / "season.yaml"
    path.write_text(yaml.safe_dump(season_data(state_dir, archive)), encoding="utf-8")
    return path


def season_data(state_dir: Path, archive: dict[str, Any] | None = None) -> dict[str, Any]:
    sites = []
    for sid, zone in SITES:
        sites.append({
            "id": sid, "timezone": zone, "condition": "B", "active_since": "2026-04-01",
            "sensors": [{"id": "rg1", "kind": "rain", "in_per_tip": 0.01},
                        {"id": "tb-up", "kind": "turbidity"},
                        {"id": "tb-down", "kind": "turbidity"},
                        {"id": "trap1-depth", "kind": "sediment"}],
            "turbidity_pairs": [{"id": "outfall-1", "upstream": "tb-up",
                                 "downstream": "tb-down"}],
            "traps": [{"id": "trap-1", "sensor": "trap1-depth", "shape": "rectangular",
                       "bottom_length_ft": 20, "bottom_width_ft": 10, "design_depth_ft": 4}],
        })
    data: dict[str, Any] = {"state_dir": str(state_dir), "sites": sites}
    if archive is not None:
        data["archive"] = archive
    return data


class NoBroker:
    def ack(self, messages: list[Received]) -> int:
        return len(messages)


@dataclass
class Site:
    sid: str
    tips: int = 0
    depth_in: float = 6.0
    held: list[Received] = field(default_factory=list)


@dataclass
class Season:
    """The season's state between calls of ``run``: the clock, the sites, the dice."""

    config: Config
    every_min: int = 10
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    minute: int = 0
    now_ms: int = START_MS
    sites: list[Site] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sites = [Site(s.id) for s in self.config.sites]

    def clock(self) -> float:
        return self.now_ms / 1000

    def messages(self, minute: int) -> list[Received]:
        ts_ms = START_MS + minute * MS_PER_MINUTE
        ts = ts_ms // 1000
        day, of_day = divmod(minute, 1440)
        raining = day % 4 == 1 and 600 <= of_day < 600 + 60 * (2 + day % 3)
        out = []
        for i, site in enumerate(self.sites):
            if raining:
                site.tips += self.rng.randint(1, 3 + i)
            up = 8 + self.rng.random() * 3
            down = up + (self.rng.random() * 15 if raining else self.rng.random())
            site.depth_in += 0.01 + (0.2 if raining else 0.0)
            if site.depth_in > 30:
                site.depth_in = 6.0
            base = f"{PREFIX}/{site.sid}"
            got = [
                (f"{base}/rg1/reading", {"ts": ts, "tips_total": site.tips}),
                (f"{base}/tb-up/reading", {"ts": ts, "ntu": round(up, 2)}),
                (f"{base}/tb-down/reading", {"ts": ts, "ntu": round(down, 2)}),
                (f"{base}/trap1-depth/reading", {"ts": ts, "depth_in": round(site.depth_in, 2)}),
            ]
            if of_day == 15 * 60 and day % 7 == 3:
                got.append((f"{base}/inspection", {"ts": ts, "inspector": "J. Rivera",
                                                   "kind": "routine"}))
            msgs = [Received(t, json.dumps(b).encode(), 0, 0, 0, ts_ms + 500) for t, b in got]
            # Site 0's downstream probe (its own node) loses its link for three hours on
            # day 12 and sends them late: the pair re-folds them from the journal.
            if i == 0 and day == 12 and 300 <= of_day < 480:
                site.held.append(msgs.pop(2))
            if i == 0 and day == 12 and of_day == 480:
                msgs += site.held
                site.held = []
            out += msgs
        return out

    def run(self, store: Store, host: EngineHost, daemon: Daemon, days: float) -> None:
        """``days`` more of the season: ingest, a tick every half hour, snapshots."""
        end = self.minute + round(days * 1440)
        broker = NoBroker()
        while self.minute < end:
            self.now_ms = START_MS + self.minute * MS_PER_MINUTE + 30_000
            daemon.ingest_batch(store, broker, host, self.messages(self.minute))
            if self.minute % 30 == 0:
                host.tick()
            if host.rows_since_snapshot >= 2000:
                host.snapshot()
            self.minute += self.every_min
        host.snapshot()


def run_season(state_dir: Path, days: float, archive: dict[str, Any] | None = None,
               every_min: int = 10) -> Season:
    """A fresh state directory with ``days`` of the season in it."""
    config = season_config(state_dir, archive)
    season = Season(config, every_min)
    daemon = Daemon(config, clock=season.clock, routes=None, workers=[])
    with open_store(config) as store:
        host = EngineHost.restore(config, store, clock=season.clock)
        season.run(store, host, daemon, days)
    return season


def day_ms(day: float) -> int:
    return START_MS + round(day * MS_PER_DAY)

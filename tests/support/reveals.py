"""A storm revealed after a silence, in tests.

A site of a counting gauge and an on-tip one in New York, the counting gauge silent ten
hours and back with more tips, and the final events of the engine over it.
"""

from __future__ import annotations

from typing import Any

from monitor.config import Config
from monitor.config.file import parse_config
from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE, parse_iso
from monitor.engine import Engine

SITE = "branch-meadows"

T0 = parse_iso("2026-05-01T12:00:00Z")  # 8:00 AM EDT

MIN = MS_PER_MINUTE

H = MS_PER_HOUR


def config(tmp: str = "/tmp/stormwatch-test", **site: Any) -> Config:
    doc: dict[str, Any] = {
        "id": SITE, "name": "Branch Meadows", "timezone": "America/New_York",
        "condition": "B",
        "sensors": [{"id": "rg1", "kind": "rain", "in_per_tip": 0.01},
                    {"id": "rg2", "kind": "rain", "reporting": "on_tip"}]}
    doc.update(site)
    return parse_config({"state_dir": tmp, "sites": [doc]}, env={})


def silent_gauge(tip_at: int | None = None) -> list[Reading]:
    """rg1: 0.30 in over minutes 1..30, its counter every minute to 13:00; silent ten
    hours; back at 23:00 with 40 tips more (0.70 in in all), then dry for eight hours
    but for one tip ``tip_at`` minutes after 23:00."""
    rows = [(T0 + m * MIN, min(m, 30)) for m in range(61)]
    rows += [(T0 + 11 * H + m * MIN, 70 if tip_at is None or m < tip_at else 71)
             for m in range(8 * 60)]
    return [Reading(SITE, "rg1", "rain", t, tips_total=tips) for t, tips in rows]


def final(cfg: Config, readings: list[Reading]) -> list[dict[str, Any]]:
    eng = Engine(cfg)
    for r in readings:
        eng.apply(r)
    eng.tick(max(r.ts_ms for r in readings))
    return [e.to_json() for e in eng.current_events()]


def qualified(events: list[dict[str, Any]]) -> dict[str, Any]:
    (q,) = [e for e in events if e["type"] == "storm_qualified"]
    return q

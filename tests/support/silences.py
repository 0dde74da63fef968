"""Gauges that fall silent, in tests.

A site of one or more gauges, a long drizzle, and a gauge whose silence a late reading
reveals, as (time, sensor, tips total) rows.
"""

from __future__ import annotations

from typing import Any

from monitor.config import Config
from monitor.config.file import parse_config
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE, parse_iso

SITE = "branch-meadows"

T0 = parse_iso("2026-05-01T00:00:00Z")

MIN = MS_PER_MINUTE

H = MS_PER_HOUR


def config(gauges: list[dict[str, Any]] | None = None, **site: Any) -> Config:
    doc: dict[str, Any] = {"id": SITE, "timezone": "America/New_York", "condition": "B",
                           "sensors": gauges or [{"id": "rg1", "kind": "rain",
                                                  "in_per_tip": 0.01}]}
    doc.update(site)
    return parse_config({"state_dir": "/tmp/stormwatch-test", "sites": [doc]}, env={})


def every_minute(sensor: str, start_ms: int, minutes: int, counter_at: Any) -> list[
        tuple[int, str, int]]:
    """A gauge publishing its counter each minute; ``counter_at(m)`` is its value."""
    return [(start_ms + m * MIN, sensor, counter_at(m)) for m in range(minutes)]


def drizzle(minutes: int = 31 * 60) -> list[tuple[int, str, int]]:
    """One tip every 30 minutes (the first at minute 1) for 30 hours: 0.60 in."""
    return every_minute("rg1", T0, minutes, lambda m: min(60, (m + 29) // 30))


def silent_gauge(revealed_tips: int) -> list[tuple[int, str, int]]:
    """0.30 in over 00:01..00:30, counter every minute to 01:00; silent 10 hours; back
    at 11:00 with ``revealed_tips`` more, then reporting (dry) for 8 hours."""
    before = every_minute("rg1", T0, 61, lambda m: min(m, 30))
    back = T0 + 11 * H
    after = every_minute("rg1", back, 8 * 60, lambda m: 30 + revealed_tips)
    return before + after

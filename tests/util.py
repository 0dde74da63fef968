"""Small builders shared by the tests: configurations and reading series."""

from __future__ import annotations

from typing import Any

from monitor.config import Config
from monitor.configfile import parse_config
from monitor.engine.inputs import Inspection, Reading
from monitor.engine.times import MS_PER_MINUTE, parse_iso

SITE = "branch-meadows"


def ts(text: str) -> int:
    """ms from an ISO time; a bare ``HH:MM`` is on 2026-05-01 UTC."""
    if len(text) <= 5:
        text = f"2026-05-01T{text}:00Z"
    return parse_iso(text)


def site_config(**overrides: Any) -> Config:
    """One site with a gauge, a turbidity pair and a trap; overrides merge into the site."""
    site: dict[str, Any] = {
        "id": SITE,
        "name": "Branch Meadows Subdivision",
        "timezone": "America/New_York",
        "condition": "B",
        "sensors": [
            {"id": "rg1", "kind": "rain", "in_per_tip": 0.01},
            {"id": "tb-up", "kind": "turbidity"},
            {"id": "tb-down", "kind": "turbidity"},
            {"id": "trap1-depth", "kind": "sediment"},
        ],
        "turbidity_pairs": [{"id": "outfall-1", "upstream": "tb-up", "downstream": "tb-down"}],
        "traps": [{"id": "trap-1", "sensor": "trap1-depth", "shape": "trapezoidal",
                   "bottom_length_ft": 20, "bottom_width_ft": 10, "side_slope": 2,
                   "design_depth_ft": 4}],
    }
    rain = overrides.pop("rain", None)
    site.update(overrides)
    if rain is not None:
        site["rain"] = rain
    return parse_config({"state_dir": "/tmp/stormwatch-test", "sites": [site]}, env={})


def rain(sensor: str, at_ms: int, precip_in: float, seq: int) -> Reading:
    return Reading(site=SITE, sensor=sensor, kind="rain", ts_ms=at_ms, precip_in=precip_in, seq=seq)


def tips(sensor: str, at_ms: int, total: int) -> Reading:
    return Reading(site=SITE, sensor=sensor, kind="rain", ts_ms=at_ms, tips_total=total)


def counter_series(start_ms: int, minutes: int, tips_at: dict[int, int],
                   sensor: str = "rg1", base: int = 0) -> list[Reading]:
    """A gauge publishing its counter every minute; ``tips_at[m]`` tips fall in minute m."""
    out, total = [], base
    for m in range(minutes):
        total += tips_at.get(m, 0)
        out.append(tips(sensor, start_ms + m * MS_PER_MINUTE, total))
    return out


def inspection(at_ms: int, inspector: str = "J. Rivera, CPESC", kind: str = "storm") -> Inspection:
    return Inspection(site=SITE, inspector=inspector, ts_ms=at_ms, kind=kind)  # type: ignore[arg-type]


def of_type(events: list[Any], kind: str) -> list[dict[str, Any]]:
    return [e.to_json() for e in events if e.type == kind]

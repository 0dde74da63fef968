"""Weather inputs in tests.

NWS forecast issues and their intervals as the source parses them, the hourly
observations of a reference station, and a gauge's counter beside them, at a site with a
location and a weather section; hours are offsets from ``T0``, 2026-05-01T00:00Z.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from monitor.config import Config
from monitor.config.file import parse_config
from monitor.contract.events import Event
from monitor.contract.inputs import Forecast, Reading, ReferenceObservation
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE, parse_interval, parse_iso

T0 = parse_iso("2026-05-01T00:00:00Z")

H = MS_PER_HOUR


def nws_interval(start_h: float, duration: str, mm: float) -> tuple[int, int, float]:
    """An interval as NWS writes it (``validTime``), parsed as the source parses it."""
    start = T0 + round(start_h * H)
    text = f"{parse_iso_back(start)}/{duration}"
    a, b = parse_interval(text)
    return (a, b, mm)


def parse_iso_back(ms: int) -> str:
    from datetime import datetime, timezone
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat()


def issue(at_h: float, precip: list[tuple[int, int, float]],
          probability: tuple[tuple[int, int, float], ...] = ()) -> Forecast:
    return Forecast(site="branch-meadows", source="nws", grid="OKX/33,37",
                    ts_ms=T0 + round(at_h * H), precip=tuple(precip), probability=probability)


#: 4 + 6 + 3 mm in 6 h, 6 h and 1 h intervals from T0+6h: the window T0+6h..T0+30h
#: holds all 13 mm = 0.512 in (13 / 25.4 = 0.5118). Candidate starts are the
#: interval starts 6, 12, 18 (ends − 24 h lie before the issue): 12 → 6 + 3 = 9 mm
#: and 18 → 3 mm miss, so one storm. Chance: the intervals overlapping 6..30 are
#: 0..12 (30 %) and 12..24 (70 %); 30..36 (90 %) only touches its end: 70.
STORM = [nws_interval(6, "PT6H", 4.0), nws_interval(12, "PT6H", 6.0),
         nws_interval(18, "PT1H", 3.0), nws_interval(19, "PT11H", 0.0)]


CHANCE = (nws_interval(0, "PT12H", 30), nws_interval(12, "PT12H", 70),
          nws_interval(30, "PT6H", 90))


SITE = "branch-meadows"


def weather_config(**weather: Any) -> Config:
    return parse_config({"state_dir": "/tmp/stormwatch-test", "sites": [{
        "id": SITE, "timezone": "America/New_York", "condition": "B",
        "location": {"lat": 41.05, "lon": -73.54},
        "sensors": [{"id": "rg1", "kind": "rain", "in_per_tip": 0.01}]}],
        "weather": {"nws": {"user_agent": "test (ops@example.org)"},
                    "reference_stations": ["KHPN"], **weather}}, env={})


def counter(tips_at_h: list[float], *, from_h: float = -20, until_h: float = 12,
            every_minutes: int = 5) -> list[Reading]:
    """rg1's counter every ``every_minutes``; one tip (0.01 in) at each of ``tips_at_h``."""
    out, t, seq = [], T0 + round(from_h * H), 0
    while t <= T0 + round(until_h * H):
        tips = sum(1 for h in tips_at_h if T0 + round(h * H) <= t)
        out.append(Reading(SITE, "rg1", "rain", t, tips_total=1000 + tips, seq=seq))
        t += every_minutes * MS_PER_MINUTE
        seq += 1
    return out


def observations(values: Mapping[int, float | None]) -> list[ReferenceObservation]:
    return [ReferenceObservation(SITE, "KHPN", T0 + h * H + 51 * MS_PER_MINUTE, mm)
            for h, mm in values.items()]


def of_type(events: list[Event], kind: str) -> list[Event]:
    return [e for e in events if e.type == kind]


#: 2 mm in each of the hours 0..9 (20 mm = 0.787 in); rg1 tips once at 0.5 .. 7.5 h:
#: 0.08 in in the largest window T0-14h .. T0+10h (its counter every 5 minutes, so
#: never stale); the first reference window that reaches 12.7 mm ends at T0+7h.
TENTH = [h + 0.5 for h in range(8)]

REFERENCE = {h: 2.0 for h in range(10)}

"""The National Weather Service API (api.weather.gov): forecasts and reference observations.

What comes in, outside the engine (monitor/README.md, "Weather"): ``/points/{lat},{lon}`` names the
forecast office's grid cell of a site (cached: the grid of a point does not
change), ``/gridpoints/{wfo}/{x},{y}`` its forecast (``quantitativePrecipitation``
and ``probabilityOfPrecipitation``, each a list of ``{validTime: "start/PT6H",
value}``), and ``/stations/{id}/observations?start=...`` a station's reports
(``precipitationLastHour``: null when the station did not say, which stays
None: unknown, never 0). The results are ``contract.inputs`` values, which the
daemon journals and the engine judges.

What can go wrong, and what this does about it:

* The API is slow or down (timeouts, 5xx, a 503 during its frequent
  maintenance): each request is retried up to ``attempts`` times with capped
  exponential backoff and jitter; a ``Retry-After`` (seconds or an HTTP date)
  is honoured, up to ``retry_after_max_s`` (beyond it the fetch fails now,
  rather than hang the caller).
* It refuses us (403 without a ``User-Agent``, 429 when asked too often): the
  configured ``user_agent`` goes with every request, and one ``RateLimit`` is
  shared by every request of the process.
* A failure is an ``NwsError`` with a one-line reason; ``FailureLog`` logs it
  once per source per hour, so an outage of a day is a few lines, not
  thousands. The caller never reads a failure as "no rain".
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from ..config.weather import Location, NwsConfig
from ..contract.inputs import Forecast, ReferenceObservation
from ..contract.times import iso, parse_interval, parse_iso
from ..errors import CheckFailed
from ..store.sourcenotes import WEATHER_SOURCE

log = logging.getLogger("stormwatch.weather")

#: Millimetres per unit the API may state (``wmoUnit:mm``; older responses ``wmoUnit:m``).
_MM_PER = {"mm": 1.0, "m": 1000.0, "in": 25.4, "cm": 10.0}
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


class NwsError(CheckFailed):
    """A fetch that failed, with its one-line reason (a command that meets it exits 1)."""


@dataclass
class RateLimit:
    """At most one request per ``interval_s``, across every thread of the process."""

    interval_s: float = 0.5
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    _next: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wait(self) -> None:
        with self._lock:
            now = self.clock()
            delay = self._next - now
            self._next = max(now, self._next) + self.interval_s
        if delay > 0:
            self.sleep(delay)


@dataclass
class FailureLog:
    """Logs a source's failure once per ``every_s`` (an hour), and its recovery."""

    every_s: float = 3600.0
    clock: Callable[[], float] = time.monotonic
    _last: dict[str, float] = field(default_factory=dict)

    def failed(self, source: str, reason: str) -> None:
        now = self.clock()
        last = self._last.get(source)
        if last is None or now - last >= self.every_s:
            self._last[source] = now
            log.warning("weather source %s unreachable: %s", source, reason)

    def ok(self, source: str) -> None:
        if self._last.pop(source, None) is not None:
            log.info("weather source %s reachable again", source)


def _mm(unit: str | None) -> float:
    name = (unit or "wmoUnit:mm").rsplit(":", 1)[-1]
    if name not in _MM_PER:
        raise NwsError(f"unknown precipitation unit {unit!r}")
    return _MM_PER[name]


def retry_after_s(value: str | None, now_s: float) -> float | None:
    """A ``Retry-After`` header in seconds from now (delta seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - now_s)
    except (TypeError, ValueError):
        return None


@dataclass
class NwsClient:
    """Requests to the API, retried and rate limited (module docstring)."""

    config: NwsConfig
    http: httpx.Client | None = None
    rate: RateLimit = field(default_factory=RateLimit)
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[], float] = random.random
    wall: Callable[[], float] = time.time
    attempts: int = 4
    timeout_s: float = 15.0
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 30.0
    retry_after_max_s: float = 120.0
    _points: dict[tuple[float, float], tuple[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.http is None:
            self.http = httpx.Client(timeout=self.timeout_s, headers={
                "User-Agent": self.config.user_agent or "", "Accept": "application/geo+json"})

    def get(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        """The JSON of ``base_url + path``; ``NwsError`` once every attempt failed."""
        assert self.http is not None
        url = self.config.base_url.rstrip("/") + path
        reason = "no attempt"
        for attempt in range(self.attempts):
            self.rate.wait()
            wait = min(self.backoff_max_s, self.backoff_initial_s * 2 ** attempt)
            wait *= 1 - 0.5 * self.jitter()  # jitter: between half and all of it
            try:
                response = self.http.get(url, params=params)
            except httpx.HTTPError as exc:
                reason = f"{path}: {type(exc).__name__}: {exc}".rstrip(": ")
            else:
                if response.status_code == 200:
                    try:
                        data: dict[str, Any] = response.json()
                    except ValueError:
                        raise NwsError(f"{path}: not JSON") from None
                    return data
                reason = f"{path}: HTTP {response.status_code}"
                if response.status_code not in _RETRY_STATUS:
                    raise NwsError(reason)
                after = retry_after_s(response.headers.get("Retry-After"), self.wall())
                if after is not None:
                    if after > self.retry_after_max_s:
                        raise NwsError(f"{reason} (retry after {after:.0f} s)")
                    wait = max(wait, after)
            if attempt + 1 < self.attempts:
                self.sleep(wait)
        raise NwsError(f"{reason} (after {self.attempts} attempts)")

    def grid(self, location: Location) -> tuple[str, str]:
        """(grid id ``OKX/33,37``, its gridpoint path) of a point, cached."""
        key = (round(location.lat, 4), round(location.lon, 4))
        if key not in self._points:
            props = self.get(f"/points/{key[0]},{key[1]}").get("properties") or {}
            try:
                grid = f"{props['gridId']}/{int(props['gridX'])},{int(props['gridY'])}"
            except (KeyError, TypeError, ValueError):
                raise NwsError(f"/points/{key[0]},{key[1]}: no grid in the answer") from None
            self._points[key] = (grid, f"/gridpoints/{grid}")
        return self._points[key]

    def forecast(self, site: str, location: Location) -> Forecast:
        grid, path = self.grid(location)
        props = self.get(path).get("properties") or {}
        try:
            issued = parse_iso(str(props["updateTime"]))
            precip = _layer(props["quantitativePrecipitation"], _mm(
                props["quantitativePrecipitation"].get("uom")))
            chance = _layer(props.get("probabilityOfPrecipitation") or {"values": []}, 1.0)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise NwsError(f"{path}: unexpected answer ({exc})") from None
        return Forecast(site=site, source=WEATHER_SOURCE, grid=grid, ts_ms=issued, precip=precip,
                        probability=chance)

    def observations(self, site: str, station: str, start_ms: int
                     ) -> list[ReferenceObservation]:
        path = f"/stations/{station}/observations"
        data = self.get(path, params={"start": iso(start_ms)})
        out = []
        try:
            for feature in data.get("features") or []:
                props = feature["properties"]
                value = props.get("precipitationLastHour") or {}
                mm = value.get("value")
                out.append(ReferenceObservation(
                    site=site, station=station, ts_ms=parse_iso(str(props["timestamp"])),
                    precip_mm=None if mm is None else float(mm) * _mm(value.get("unitCode"))))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise NwsError(f"{path}: unexpected answer ({exc})") from None
        return out

    def close(self) -> None:
        if self.http is not None:
            self.http.close()


def _layer(layer: dict[str, Any], factor: float) -> tuple[tuple[int, int, float], ...]:
    """A gridpoint layer's intervals, not merged; an interval without a value is left
    out (unknown, not 0)."""
    out = []
    for item in layer["values"]:
        if item.get("value") is None:
            continue
        start, end = parse_interval(str(item["validTime"]))
        out.append((start, end, float(item["value"]) * factor))
    return tuple(out)

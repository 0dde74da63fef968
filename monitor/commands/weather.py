"""``stormwatch weather``: fetch the forecast and the reference once, and say what follows.

Per site: the forecast's rain per local day (each interval spread evenly over
its hours, as the rule spreads it), each reference station's known rain over
the last 24 hours (its unreported hours counted, never read as dry), and what
the daemon would conclude from these inputs: the engine itself is run on them,
so the command and the daemon never disagree. The gauges' side of the
comparison lives in the daemon's journal; this command reads no state, and
says so. A source that cannot be reached is exit 1 with a one-line reason:
no answer is better than "no storm forecast" made from no data.
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime, timedelta

from ..config import Config, SiteConfig, WeatherConfig
from ..contract.events import StormForecast
from ..contract.figures import depth_text
from ..contract.inputs import Forecast, ReferenceObservation
from ..contract.localtime import local_text
from ..contract.times import MS_PER_DAY, MS_PER_HOUR, hours_ms
from ..engine import Engine
from ..errors import EXIT_OK, CheckFailed, UserError
from ..rules.weather.weather import MM_PER_IN, WeatherBook, reference_mm, spread_mm
from ..sources.nws import NwsClient, NwsError
from .common import CONFIG_HELP, emit, load
from .helptext import command_help


def cmd_weather(args: argparse.Namespace) -> int:
    config = load(args.config)
    if config.weather is None:
        raise UserError(f"{args.config}: no weather: section (see config/README.md)")
    sites = config.sites
    if args.site is not None:
        site = config.site(args.site)
        if site is None:
            raise UserError(f"--site: unknown site {args.site!r} "
                            f"(configured: {', '.join(s.id for s in config.sites)})")
        sites = [site]
    client = NwsClient(config.weather.nws)
    now_ms = round(time.time() * 1000)
    try:
        fetched = [fetch(client, config.weather, site, now_ms) for site in sites]
    finally:
        client.close()
    emit("\n".join(describe(config, site, forecast, obs, now_ms)
                   for site, (forecast, obs) in zip(sites, fetched, strict=True)) + "\n")
    return EXIT_OK


def fetch(client: NwsClient, weather: WeatherConfig, site: SiteConfig, now_ms: int
          ) -> tuple[Forecast, list[ReferenceObservation]]:
    """What the daemon fetches for one site; ``CheckFailed`` (exit 1) when a source fails."""
    if site.location is None:  # check-config refuses it; a config built in code may not
        raise UserError(f"sites.{site.id}.location: required with weather:")
    try:
        forecast = client.forecast(site.id, site.location)
        obs = [o for station in weather.stations_of(site.id)
               for o in client.observations(site.id, station, now_ms - MS_PER_DAY)]
    except NwsError as exc:
        raise CheckFailed(f"{site.id}: weather source unreachable: {exc}") from None
    return forecast, obs


def describe(config: Config, site: SiteConfig, forecast: Forecast,
             obs: list[ReferenceObservation], now_ms: int) -> str:
    assert config.weather is not None
    # Depths are printed beside the threshold, never rounded across it (figures.py).
    zone, limit = site.zone, site.rain.threshold_in
    lines = [f"{site.id}: forecast of gridpoint {forecast.grid}, issued "
             f"{_local(forecast.ts_ms, site)}"]
    start = datetime.fromtimestamp(forecast.ts_ms / 1000, tz=zone)
    end_ms = forecast.ts_ms + hours_ms(config.weather.forecast_hours)
    day = start.replace(hour=0, minute=0, second=0, microsecond=0)
    while day.timestamp() * 1000 < end_ms:
        nxt = (day + timedelta(days=1, hours=2)).replace(hour=0)
        a, b = round(day.timestamp() * 1000), round(nxt.timestamp() * 1000)
        mm = spread_mm(forecast.precip, a, b)
        chances = [p for s, e, p in forecast.probability if s < b and e > a]
        chance = f" (chance up to {max(chances):g} %)" if chances else ""
        lines.append(f"  {day:%a %b %d}: {depth_text(mm / MM_PER_IN, limit)}{chance}")
        day = nxt
    book = WeatherBook()
    for o in obs:
        book.add(o)
    for station in config.weather.stations_of(site.id):
        hour0 = (now_ms - MS_PER_DAY) // MS_PER_HOUR * MS_PER_HOUR
        seen = reference_mm(book, [station], hour0, now_ms)
        if seen is None:
            lines.append(f"  reference {station}, last 24 h: unknown (no hour reported)")
            continue
        _, mm, unknown = seen
        note = f", {unknown} hours unreported (unknown, not dry)" if unknown else ""
        lines.append(f"  reference {station}, last 24 h: {depth_text(mm / MM_PER_IN, limit)}"
                     f"{note}")
    engine = Engine(config)
    engine.apply(forecast)
    for o in obs:
        engine.apply(o)
    storms = [e.body for e in engine.current_events() if e.site == site.id
              and isinstance(e.body, StormForecast)]
    for body in storms:
        lines.append(f"  would conclude: storm_forecast, {depth_text(body.forecast_in, limit)}"
                     " from "
                     f"{_local(body.window_from, site)} to {_local(body.window_to, site)}"
                     + ("" if body.probability is None
                        else f" (chance {body.probability:g} %)"))
    if not storms:
        lines.append(f"  would conclude: no storm forecast (under "
                     f"{site.rain.threshold_in:.2f} in in any 24 hours)")
    lines.append("  the gauges' side of the comparison is the daemon's (its journal)")
    return "\n".join(lines)


def _local(value: int | str, site: SiteConfig) -> str:
    return local_text(value, site.zone)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("weather", **command_help("weather"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--site", metavar="ID", help="only this site")
    p.set_defaults(func=cmd_weather)

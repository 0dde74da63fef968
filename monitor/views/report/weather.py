"""The report's weather section: the storm forecasts and the gauge disagreements of the
period, read off the engine's ``storm_forecast`` and ``gauge_disagrees`` events.

Nothing is computed here: the depths, windows and verdicts are the engine's
(``rules/weather/weather.py``), so the report cannot disagree with an alert. A forecast
a later issue revised says so (its revision), one no later issue held any more
is listed as retracted: the qualified professional may have checked the
controls for it, and the log book should show why.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from ...contract.events import Event, GaugeDisagrees, StormForecast
from ...contract.figures import depth_text
from ...contract.times import parse_iso
from .tables import Local, table


def _in_period(event: Event, window_from: str, window_to: str, from_ms: int,
               to_ms: int) -> bool:
    """Concluded in the period, or about rain expected or seen in it."""
    return (from_ms <= event.at_ms < to_ms
            or (parse_iso(window_from) < to_ms and parse_iso(window_to) > from_ms))


def forecast_rows(events: Iterable[Event], local: Local, from_ms: int, to_ms: int
                  ) -> list[list[str]]:
    """One row per storm forecast of the period: issued, window, depth, chance, and
    whether later issues revised or retracted it (plain text cells)."""
    rows = []
    for e in sorted(events, key=lambda e: (e.at_ms, e.id)):
        b = e.body
        if not isinstance(b, StormForecast) or not _in_period(e, b.window_from, b.window_to,
                                                               from_ms, to_ms):
            continue
        state = ("retracted (a later issue no longer forecast it)" if e.retracted
                 else f"revised ({e.revision}×)" if e.revision else "as issued")
        chance = "—" if b.probability is None else f"{b.probability:g} %"
        rows.append([local(b.issued_at), f"{local(b.window_from)} to {local(b.window_to)}",
                     depth_text(b.forecast_in, b.threshold_in), chance, f"{b.source} {b.grid}",
                     state])
    return rows


def disagreement_rows(events: Iterable[Event], local: Local, from_ms: int, to_ms: int
                      ) -> list[list[str]]:
    """One row per gauge disagreement of the period: the station and its depth, the
    gauge and what it saw (or that it was stale), the window, and whether it opened
    the storm clock."""
    rows = []
    for e in sorted(events, key=lambda e: (e.at_ms, e.id)):
        b = e.body
        if not isinstance(b, GaugeDisagrees) or e.retracted or not _in_period(
                e, b.window_from, b.window_to, from_ms, to_ms):
            continue
        # The station is judged against the threshold, the gauge against a quarter of it.
        reference = depth_text(b.reference_in, b.threshold_in)
        if b.reference_unknown_hours:
            reference += f" or more ({b.reference_unknown_hours} h not reported)"
        seen = depth_text(b.gauge_in, b.threshold_in / 4)
        gauge = "stale (silent)" if b.stale else seen
        if b.stale and b.gauge_in:
            gauge += f", {seen}"
        rows.append([b.reference, reference, b.gauge, gauge,
                     f"{local(b.window_from)} to {local(b.window_to)}",
                     "yes" if b.opens_clock else "no"])
    return rows


def weather_section(events: Iterable[Event], retracted: Iterable[Event], local: Local,
                    from_ms: int, to_ms: int) -> str:
    """The two tables, each saying when the period had none."""
    events = list(events)
    forecasts = forecast_rows([*events, *retracted], local, from_ms, to_ms)
    disagreements = disagreement_rows(events, local, from_ms, to_ms)
    return (
        "<h2>Storm forecasts</h2>" + table(
            ["Issued", "Window (24 h)", "Forecast", "Chance", "Source", "Later issues"],
            [[escape(c) for c in r] for r in forecasts],
            "No storm forecast among the forecasts fetched for the period.")
        + "<h2>Gauge and reference stations</h2>" + table(
            ["Station", "Station saw (24 h)", "Gauge", "Gauge saw", "Window",
             "Opened the storm clock"],
            [[escape(c) for c in r] for r in disagreements],
            "No disagreement between the gauge and the reference stations in the period."))

"""Weather rules (monitor/README.md, "Weather"): a storm in the forecast, and a gauge its reference
disagrees with.

§ 134-9A(2) asks for an inspection "within 24 hours of any storm event producing
0.5 inch of precipitation or more". The site's own gauge measures that rain; these
two rules stand beside it and never replace it.

Theory of operation
-------------------
Inputs are what the shell fetched and journaled (``contract.inputs``): forecast
issues (``Forecast``: the ``quantitativePrecipitation`` and
``probabilityOfPrecipitation`` intervals of one gridpoint, as issued) and
reference observations (``ReferenceObservation``: a station's
``precipitationLastHour``). A ``WeatherBook`` per site keeps them as *sets*:
one forecast per (source, issue time), one value per (station, clock hour),
where a known value beats an unknown one and the larger known value beats the
smaller (a special report within the hour holds part of the routine one).
Both rules are functions of those sets, so order and duplicates change nothing;
the engine publishes their truth with its usual revision/retraction.

1. *Forecast storm.* Each interval's millimetres are spread evenly over the
   interval (what fell within one is not known). Within ``forecast_hours`` of
   an issue, every 24-hour window that starts at an interval start or ends at an
   interval end is a candidate (the sliding total over evenly spread intervals
   is largest at one of those). Windows whose total reaches the site's
   ``threshold_in`` (mm / 25.4) and overlap one another are one storm; it is
   reported by its largest window (the earliest on a tie), with the highest
   chance of precipitation of the intervals overlapping that window.
2. *Revision and retraction.* Issues are read in issue order. A storm of an
   issue that overlaps a storm already forecast is that storm again (same id,
   revised when its numbers change); a new storm gets an id of its first issue.
   A storm whose window lies wholly within a later issue's time and that the
   later issue does not forecast again no longer holds: it is retracted. One
   whose window began before the later issue stays as it was (the rain is
   falling or has fallen; the forecast was what it was).
3. *Gauge disagrees.* For each clock hour a station reported rain in, the 24
   hours ending with it are a candidate window; the reference total is the
   largest of the stations' known totals (an unknown hour adds nothing and is
   counted as unknown, never as dry). When it reaches ``threshold_in`` while
   the gauge was stale within the window, or saw less than a quarter of it,
   the gauge disagrees. Overlapping such windows are one disagreement,
   reported by its largest window; its id names the first window, its time is
   that window's end (when the reference knew).

Bounded memory (a season is months). The engine refuses weather input older
than the site's compaction horizon, as it does readings; at each compaction
(``prune``) what is final before it leaves the book. Forecast issues before
the horizon are folded into a *base* (rule 2 continues from it) and the
storms whose window began before it are final: no issue the engine still
takes has them in scope. Reference hours go at a *cut*: the latest instant at
or before the horizon with no rainy hour in the 24 hours before it, so no
run of rule 3 spans it; the disagreements before the cut are final, and the
hours more than a day before it no window after it reads. The gauge's side of
the windows that reach back before the horizon (its readings there leave the
engine's memory) is kept as a *tail* of (time, depth) per gauge, taken at each
compaction before the readings go.

Deliberately not handled: a forecast says nothing about the site's rain, so it
opens no clock; nor does a disagreement here (with ``reference_opens_clock`` it
carries ``opens_clock``, and ``sitestorms.py`` makes it a storm of the site for
the clocks); a source that could not be fetched gives no input at all, and no
input concludes nothing (the shell's ``status`` says the source is unreachable).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...config import SiteConfig, WeatherConfig
from ...contract.events import Fact, GaugeDisagrees, StormForecast, make_id
from ...contract.inputs import Forecast, Reading, ReferenceObservation
from ...contract.times import MS_PER_HOUR, hours_ms, iso

MM_PER_IN = 25.4
WINDOW_MS = 24 * MS_PER_HOUR
#: The gauge disagrees when it saw less than this fraction of the reference.
GAUGE_FRACTION = 0.25
_DIGITS = 3

Interval = tuple[int, int, float]
#: A forecast storm followed from issue to issue: its fact and its window (ms).
Track = tuple[Fact, tuple[int, int]]


@dataclass
class WeatherBook:
    """A site's weather inputs as sets (module docstring): forecasts by (source,
    issue), and each station's rain per clock hour (None: unknown). ``rainy_until``
    is the end of the newest hour a station saw rain in: a gauge reading at or after
    it lies beyond every window rule 3 looks at, so it changes nothing."""

    forecasts: dict[tuple[str, int], Forecast] = field(default_factory=dict)
    hours: dict[tuple[str, int], float | None] = field(default_factory=dict)
    #: ``rainy_until_ms``, kept as hours come (a reading asks it each time).
    rainy_until: int | None = None
    #: ``forecast_truth``'s fold so far (rule 2 reads issues in issue order): the
    #: rules' parameters, the (issue ms, source) of the last issue folded, and the
    #: tracks after it. Issues arrive in issue order, so each new one is one more step
    #: instead of a fold over the season; an issue older than the last one folded
    #: throws it away. Not dumped: a loaded book folds once.
    fold: tuple[tuple[str, float, float], tuple[int, str], dict[str, Track]] | None = field(
        default=None, compare=False, repr=False)

    def add(self, item: Forecast | ReferenceObservation) -> bool:
        """Take one input; False when it changes nothing (a duplicate)."""
        if isinstance(item, Forecast):
            if item.key in self.forecasts:
                return False
            self.forecasts[item.key] = item
            if self.fold is not None and (item.ts_ms, item.source) < self.fold[1]:
                self.fold = None
            return True
        key = (item.station, item.ts_ms // MS_PER_HOUR * MS_PER_HOUR)
        old = self.hours.get(key)
        if key in self.hours and (item.precip_mm is None
                                  or (old is not None and old >= item.precip_mm)):
            return False
        self.hours[key] = item.precip_mm
        if item.precip_mm:
            end = key[1] + MS_PER_HOUR
            self.rainy_until = end if self.rainy_until is None else max(self.rainy_until, end)
        return True

    #: Rule 2 folded over the issues before the last horizon: the last of them and the
    #: tracks still in scope of a later issue (module docstring, bounded memory).
    base_last: tuple[int, str] = (-1, "")
    base_tracks: dict[str, Track] = field(default_factory=dict)
    #: Each gauge's messages before ``tail_until`` as (time, depth in inches), and its
    #: last rain reading before it (the counter the next depths continue from).
    tails: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    tail_until: int | None = None
    baselines: dict[str, Reading] = field(default_factory=dict)

    def size(self) -> int:
        """How many inputs and kept values the book holds (what pruning bounds)."""
        return (len(self.forecasts) + len(self.hours) + len(self.base_tracks)
                + sum(len(t) for t in self.tails.values()))

    def dump(self) -> dict[str, Any]:
        return {"forecasts": [f.to_json() for f in self.forecasts.values()],
                "hours": [[s, h, v] for (s, h), v in self.hours.items()],
                "base_last": list(self.base_last),
                "base_tracks": [[fid, fact.to_json(), a, b]
                                for fid, (fact, (a, b)) in self.base_tracks.items()],
                "tails": {g: [list(m) for m in t] for g, t in self.tails.items()},
                "tail_until": self.tail_until,
                "baselines": {g: r.to_json() for g, r in self.baselines.items()}}

    @classmethod
    def load(cls, data: dict[str, Any]) -> WeatherBook:
        book = cls()
        for raw in data.get("forecasts", ()):
            forecast = Forecast.from_json(raw)
            book.forecasts[forecast.key] = forecast
        book.hours = {(str(s), int(h)): v for s, h, v in data.get("hours", ())}
        rainy = [hour for (_, hour), mm in book.hours.items() if mm]
        book.rainy_until = max(rainy) + MS_PER_HOUR if rainy else None
        last = data.get("base_last", (-1, ""))
        book.base_last = (int(last[0]), str(last[1]))
        book.base_tracks = {str(fid): (Fact.from_json(raw), (int(a), int(b)))
                            for fid, raw, a, b in data.get("base_tracks", ())}
        book.tails = {str(g): [(int(ts), float(d)) for ts, d in t]
                      for g, t in data.get("tails", {}).items()}
        book.tail_until = data.get("tail_until")
        book.baselines = {str(g): Reading.from_json(r)
                          for g, r in data.get("baselines", {}).items()}
        return book


# --------------------------------------------------------------------------- 1. forecast storms


def spread_mm(intervals: Iterable[Interval], from_ms: int, to_ms: int) -> float:
    """The millimetres of ``intervals`` within ``from_ms`` .. ``to_ms``, each interval's
    spread evenly over it."""
    total = 0.0
    for start, end, mm in intervals:
        overlap = min(end, to_ms) - max(start, from_ms)
        if overlap > 0 and end > start:
            total += mm * overlap / (end - start)
    return total


@dataclass(frozen=True, slots=True)
class ForecastStorm:
    """One storm of one issue: its largest 24-hour window and what it holds."""

    from_ms: int
    to_ms: int
    forecast_mm: float
    probability: float | None
    span: tuple[int, int]


def forecast_storms(forecast: Forecast, threshold_in: float, forecast_hours: float
                    ) -> list[ForecastStorm]:
    """The storms of one issue (rule 1 of the module docstring), in time order."""
    lo, hi = forecast.ts_ms, forecast.ts_ms + hours_ms(forecast_hours)
    starts = {s for s, _, _ in forecast.precip} | {e - WINDOW_MS for _, e, _ in forecast.precip}
    candidates = sorted(s for s in starts if lo <= s <= hi - WINDOW_MS)
    threshold_mm = threshold_in * MM_PER_IN
    runs: list[list[tuple[int, float]]] = []
    for start in candidates:
        mm = spread_mm(forecast.precip, start, start + WINDOW_MS)
        if mm + 1e-9 < threshold_mm:
            continue
        if runs and start < runs[-1][-1][0] + WINDOW_MS:
            runs[-1].append((start, mm))
        else:
            runs.append([(start, mm)])
    storms = []
    for run in runs:
        start, mm = max(run, key=lambda w: (w[1], -w[0]))
        end = start + WINDOW_MS
        chances = [p for s, e, p in forecast.probability if s < end and e > start]
        storms.append(ForecastStorm(start, end, mm, max(chances) if chances else None,
                                    (run[0][0], run[-1][0] + WINDOW_MS)))
    return storms


def forecast_truth(site: SiteConfig, weather: WeatherConfig, book: WeatherBook
                   ) -> dict[str, Fact]:
    """Every ``storm_forecast`` that holds after all issues (rule 2), by id."""
    params = (site.id, site.rain.threshold_in, weather.forecast_hours)
    if book.fold is None or book.fold[0] != params:
        book.fold = (params, book.base_last, dict(book.base_tracks))
    _, last, tracks = book.fold
    newer = sorted((f for f in book.forecasts.values() if (f.ts_ms, f.source) > last),
                   key=lambda f: (f.ts_ms, f.source))
    for forecast in newer:
        _fold_issue(tracks, forecast, site, weather)
    if newer:
        book.fold = (params, (newer[-1].ts_ms, newer[-1].source), tracks)
    return {fid: fact for fid, (fact, _) in tracks.items()}


def _fold_issue(tracks: dict[str, Track], forecast: Forecast, site: SiteConfig,
                weather: WeatherConfig) -> None:
    """One step of rule 2: ``tracks`` after ``forecast``, the issues before it folded."""
    threshold = site.rain.threshold_in
    issued = forecast.ts_ms
    in_scope = {fid: t for fid, t in tracks.items() if t[1][0] >= issued}
    for storm in forecast_storms(forecast, threshold, weather.forecast_hours):
        fid = next((fid for fid, (_, (a, b)) in in_scope.items()
                    if a < storm.span[1] and b > storm.span[0]), None)
        at = tracks[fid][0].at_ms if fid is not None else issued
        if fid is None:
            fid = make_id("storm_forecast", site.id, forecast.source, issued, storm.from_ms)
        else:
            del in_scope[fid]
        body = StormForecast(
            source=forecast.source, forecast_in=round(storm.forecast_mm / MM_PER_IN, _DIGITS),
            window_from=iso(storm.from_ms), window_to=iso(storm.to_ms),
            issued_at=iso(issued), probability=storm.probability, grid=forecast.grid,
            threshold_in=threshold)
        tracks[fid] = (Fact(site.id, at, fid, body), (storm.from_ms, storm.to_ms))
    for fid in in_scope:
        del tracks[fid]  # a later issue no longer forecasts it


# --------------------------------------------------------------------------- 3. gauge disagrees


@dataclass(frozen=True, slots=True)
class GaugeRecord:
    """What a gauge reported, for comparison with the reference: each message's time
    and the depth the storm rule counted at it (0 for a dry one), and how long a
    silence makes it stale (None: not judged, an ``on_tip`` gauge without heartbeat)."""

    gauge: str
    messages: tuple[tuple[int, float], ...]
    stale_after_ms: int | None

    def rain_in(self, from_ms: int, to_ms: int) -> float:
        return sum(d for ts, d in self.messages if from_ms <= ts < to_ms)

    def stale_in(self, from_ms: int, to_ms: int) -> bool:
        """Whether the gauge was silent longer than ``stale_after_ms`` within the window
        (never heard before it counts as silent)."""
        if self.stale_after_ms is None:
            return False
        before = [ts for ts, _ in self.messages if ts <= from_ms]
        previous = before[-1] if before else None
        if previous is None:
            return True
        for ts, _ in self.messages:
            if from_ms < ts < to_ms:
                if ts - previous > self.stale_after_ms:
                    return True
                previous = ts
        return to_ms - previous > self.stale_after_ms


def reference_mm(book: WeatherBook, stations: Sequence[str], from_ms: int, to_ms: int
                 ) -> tuple[str, float, int] | None:
    """The station with the largest known rain in the clock hours within the window:
    (station, mm, hours it did not report as known); None when none has a known hour."""
    best: tuple[str, float, int] | None = None
    for station in stations:
        known, unknown, mm = 0, 0, 0.0
        for hour in range(from_ms, to_ms, MS_PER_HOUR):
            if (station, hour) not in book.hours:
                continue
            value = book.hours[(station, hour)]
            if value is None:
                unknown += 1
            else:
                known += 1
                mm += value
        if known and (best is None or mm > best[1]):
            best = (station, mm, unknown)
    return best


def reference_start_ms(site: SiteConfig, weather: WeatherConfig, book: WeatherBook
                       ) -> int | None:
    """The start of the earliest window rule 3 may look at (24 hours before the end of
    the first hour a station saw rain in); None when no station of the site saw any."""
    stations = weather.stations_of(site.id)
    rainy = [hour for (station, hour), mm in book.hours.items() if station in stations and mm]
    return min(rainy) + MS_PER_HOUR - WINDOW_MS if rainy else None


def disagreement_truth(site: SiteConfig, weather: WeatherConfig, book: WeatherBook,
                       gauges: Sequence[GaugeRecord]) -> dict[str, Fact]:
    """Every ``gauge_disagrees`` that holds (rule 3), by id."""
    stations = weather.stations_of(site.id)
    threshold_mm = site.rain.threshold_in * MM_PER_IN
    ends = sorted({hour + MS_PER_HOUR for (station, hour), mm in book.hours.items()
                   if station in stations and mm})
    out: dict[str, Fact] = {}
    for gauge in gauges:
        runs: list[list[tuple[int, str, float, float, bool, int]]] = []
        for end in ends:
            start = end - WINDOW_MS
            ref = reference_mm(book, stations, start, end)
            if ref is None or ref[1] + 1e-9 < threshold_mm:
                continue
            gauge_in = gauge.rain_in(start, end)
            stale = gauge.stale_in(start, end)
            if not stale and gauge_in * MM_PER_IN >= GAUGE_FRACTION * ref[1]:
                continue
            window = (start, ref[0], ref[1], gauge_in, stale, ref[2])
            if runs and start < runs[-1][-1][0] + WINDOW_MS:
                runs[-1].append(window)
            else:
                runs.append([window])
        for run in runs:
            start, station, mm, gauge_in, stale, unknown = max(run, key=lambda w: (w[2], -w[0]))
            fid = make_id("gauge_disagrees", site.id, gauge.gauge, run[0][0])
            out[fid] = Fact(site.id, run[0][0] + WINDOW_MS, fid, GaugeDisagrees(
                gauge=gauge.gauge, gauge_in=round(gauge_in, _DIGITS),
                reference_in=round(mm / MM_PER_IN, _DIGITS), reference=station,
                window_from=iso(start), window_to=iso(start + WINDOW_MS), stale=stale,
                threshold_in=site.rain.threshold_in,
                opens_clock=weather.reference_opens_clock, reference_unknown_hours=unknown))
    return out


# --------------------------------------------------------------------------- bounded memory


def prune_forecasts(site: SiteConfig, weather: WeatherConfig, book: WeatherBook,
                    horizon_ms: int) -> list[str]:
    """Fold the issues before ``horizon_ms`` into the book's base and drop them; the ids
    of the forecast storms that are final (their window began before the horizon, so
    no issue at or after it has them in scope: rule 2)."""
    older = sorted((f for f in book.forecasts.values() if f.ts_ms < horizon_ms),
                   key=lambda f: (f.ts_ms, f.source))
    for forecast in older:
        _fold_issue(book.base_tracks, forecast, site, weather)
        del book.forecasts[forecast.key]
    if older:
        book.base_last = (older[-1].ts_ms, older[-1].source)
    final = [fid for fid, (_, (a, _)) in book.base_tracks.items() if a < horizon_ms]
    for fid in final:
        del book.base_tracks[fid]
        if book.fold is not None:
            book.fold[2].pop(fid, None)
    return final


def reference_cut_ms(stations: Sequence[str], book: WeatherBook, horizon_ms: int) -> int:
    """The latest hour at or before ``horizon_ms`` with no rainy hour of the site's
    stations ending in the 24 hours up to it: none of rule 3's runs spans it."""
    ends = sorted({hour + MS_PER_HOUR for (station, hour), mm in book.hours.items()
                   if station in stations and mm and hour + MS_PER_HOUR <= horizon_ms},
                  reverse=True)
    cut = horizon_ms - horizon_ms % MS_PER_HOUR
    for end in ends:
        if end <= cut - WINDOW_MS:
            return cut
        cut = end - MS_PER_HOUR
    return cut


def prune_hours(book: WeatherBook, stations: Sequence[str], cut_ms: int,
                keep_from_ms: int) -> None:
    """Drop the stations' hours a day and more before ``cut_ms`` (no window after the
    cut reads them) and the gauges' tail before ``keep_from_ms`` (before what any
    window after the cut reads of the gauge)."""
    for key in [k for k in book.hours if k[0] in stations and k[1] < cut_ms - WINDOW_MS]:
        del book.hours[key]
    for tail in book.tails.values():
        del tail[:bisect_left(tail, keep_from_ms, key=lambda m: m[0])]

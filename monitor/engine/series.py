"""What the rules see after each reading, as series: the numbers plots and exports show.

A plot must never contradict an alert, so the report's plots and the InfluxDB
exporter's derived measurements do not recompute anything: they attach a
*sampler* to each timeline (``timeline.Observer``) and take the fold's own
state after each step (monitor/README.md, "Principles": domain math lives in the engine only).

``StormSample``     a gauge's open storm event after each rain reading: the
                    rain of the instant, the running total, the event's rain
                    in the trailing 24 hours (what ``event_24h`` compares), its
                    maximum, whether it qualified;
``TrapSample``      a trap's fill of design volume after each valid reading,
                    *after* the median of ``median_of`` (what the trap
                    alerts compare), and the smoothed depth; during the trap's
                    warm-up (fewer than ``median_of`` readings, when the rule
                    has no fill and concludes nothing) the fill is NaN (a gap
                    in a plot, a field left out of a point) and the state
                    ``unknown``, and the depth the median of what there is.
                    A faulty reading (``sensor_fault``) is sampled with the
                    last valid fill and depth, state ``fault`` and the
                    ``fault`` reason: the rule holds that fill, and repeats a
                    clean-out demand on it. ``demand_since_ms`` is the
                    standing clean-out demand's start (what ``duties.py``
                    lists as owed). A reading held as a possible step
                    (``sediment.py``) changes nothing yet and has no sample;
``ContrastSample``  each downstream turbidity reading and the background the
                    rule paired it with (nearest within ``max_skew_minutes``,
                    else the last one younger than ``background_max_age_minutes``,
                    else none: ``background`` is False and the contrast unknown);
                    ``basis`` says what the reading was judged against, and
                    ``state`` is the episode the fold shows (``PairFold.shown``),
                    so an absolute-basis alert is ``exceeded`` in the plot too.

A late reading re-runs its timeline from a checkpoint; the samplers see those
steps again and emit samples of the same series and time with the values
now in force: a consumer keeps the last sample per (series, time).

What a consumer reads off the samples is here too, so a plot never averages
or totals by a rule of its own: the gauges a site's storms are judged on
(``judged_rain``: the ``mean`` gauge under ``gauges: mean``), a gauge's rain
per hour (``hourly_rain``) and each storm's running total and 24-hour maximum
(``running_totals``, ``running_max_24h``).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union, cast

from ..config import SiteConfig
from ..contract.inputs import Reading
from ..contract.times import MS_PER_HOUR
from ..rules.rain.rain import GaugeFold, GaugeState
from ..rules.rain.sitestorms import judged_gauge
from ..rules.traps.traps import TrapFold, TrapState, trap_state
from ..rules.turbidity.contrast import E4_PER_MILLI, E4_PER_NTU, MILLI_PER_NTU, ntu_of
from ..rules.turbidity.turbidity import PairFold, PairState
from .core import Engine

_DIGITS = 6


@dataclass(frozen=True, slots=True)
class StormSample:
    site: str
    gauge: str
    ts_ms: int
    depth_in: float
    total_in: float
    event_24h_in: float
    max_24h_in: float
    in_event: bool
    qualified: bool
    event_id: str
    threshold_in: float
    #: The gauge's own trailing 24 h, kept by the engine in ``rolling_24h`` mode only.
    rolling_24h_in: float | None


@dataclass(frozen=True, slots=True)
class TrapSample:
    site: str
    trap: str
    ts_ms: int
    fill_fraction: float
    depth_in: float
    state: str
    warn_fraction: float
    cleanout_fraction: float
    #: The open sensor fault's reason at a faulty reading (``state`` is then ``fault``).
    fault: str | None = None
    #: The standing clean-out demand's first ``trap_cleanout_required`` (§ 134-9A(1)),
    #: None while none stands (never made, answered by a clean-out, or re-armed).
    demand_since_ms: int | None = None


@dataclass(frozen=True, slots=True)
class ContrastSample:
    site: str
    pair: str
    ts_ms: int
    downstream_ntu: float
    #: False when no upstream reading could serve as background (contrast unknown).
    background: bool
    upstream_ntu: float | None
    delta_ntu: float | None
    limit_ntu: float | None
    allowed_ntu: float | None
    #: Against the background's limit, or with ``basis`` absolute against ``absolute_ntu``.
    exceeding: bool | None
    #: The episode shown (ok, pending, exceeded, clearing), or ``unknown`` while it is
    #: ok and the reading had no background.
    state: str
    #: ``background``, ``absolute`` (no background: judged against the pair's
    #: ``absolute_ntu``), or None (neither: no ``absolute_ntu``, or a background
    #: episode still open). The delta and limit fields stay those of the background
    #: comparison: the absolute limit is a level, not an increase.
    basis: str | None = None


Sample = Union[StormSample, TrapSample, ContrastSample]  # noqa: UP007 - a runtime alias
Sink = Callable[[Sample], None]


class StormSampler:
    """``StormSample`` after each reading of a gauge (or the ``mean`` gauge)."""

    def __init__(self, site: str, gauge: str, fold: GaugeFold, sink: Sink) -> None:
        self.site, self.gauge, self.fold, self.sink = site, gauge, fold, sink

    def before(self, state: GaugeState, item: Reading) -> None:
        return None

    def after(self, state: GaugeState, item: Reading, pre: Any) -> None:
        fold, storm, ts = self.fold, state.storm, item.ts_ms
        units = fold.units
        depth = 0
        if storm is not None:
            # The window holds (ts, depth) of the event's rain in event order; the
            # readings at this instant are the last entries.
            for at, d in reversed(storm.window):
                if at != ts:
                    break
                depth += d
        self.sink(StormSample(
            self.site, self.gauge, ts,
            depth_in=round(depth / units, _DIGITS),
            total_in=round(storm.total / units, _DIGITS) if storm else 0.0,
            event_24h_in=round(storm.window_sum / units, _DIGITS) if storm else 0.0,
            max_24h_in=round(storm.max24 / units, _DIGITS) if storm else 0.0,
            in_event=storm is not None,
            qualified=storm is not None and storm.qualified_at is not None,
            event_id=fold.event_id(storm.started_at) if storm else "",
            threshold_in=float(fold.rules.threshold_in),
            rolling_24h_in=(round(state.rolling_sum / units, _DIGITS)
                            if fold.mode == "rolling_24h" else None)))


class TrapSampler:
    """``TrapSample`` after each reading that gives the trap a depth."""

    def __init__(self, site: str, trap: str, fold: TrapFold, sink: Sink) -> None:
        self.site, self.trap, self.fold, self.sink = site, trap, fold, sink

    def before(self, state: TrapState, item: Reading) -> None:
        return None

    def after(self, state: TrapState, item: Reading, pre: Any) -> None:
        if state.seen_ts != item.ts_ms:
            return  # a reading without a usable depth changes nothing
        fault = state.check.fault
        if state.last_ts != item.ts_ms and fault is None:
            return  # a held step: nothing is known yet
        trap, fill, depth = self.fold.trap, state.last_fill, state.last_depth_in
        level = "unknown" if fill is None else trap_state(fill, trap)
        self.sink(TrapSample(self.site, self.trap, item.ts_ms,
                             fill_fraction=math.nan if fill is None else round(fill, _DIGITS),
                             depth_in=math.nan if depth is None else round(depth, 4),
                             state=level if fault is None else "fault",
                             warn_fraction=float(trap.warn_fraction),
                             cleanout_fraction=float(trap.cleanout_fraction),
                             fault=None if fault is None else fault[0],
                             demand_since_ms=state.demand_first_ts))


class PairSampler:
    """``ContrastSample`` of each downstream reading of a pair.

    The pair's fold keeps a downstream reading *pending* until no upstream
    reading nearer to it can still come (an input later than its time plus
    ``max_skew``), then evaluates it once, for good. That final evaluation is
    made inside the step of a later reading and only the last one is kept in
    the state, so ``before`` replays it on a copy: every pending reading this
    step will settle is evaluated one at a time, exactly as the step does.
    Until then ``after`` gives a provisional sample of the newest pending
    reading, evaluated with the upstream readings known so far (what ``status``
    shows); the final sample has the same time and replaces it.
    """

    def __init__(self, site: str, pair: str, fold: PairFold, sink: Sink) -> None:
        self.site, self.pair, self.fold, self.sink = site, pair, fold, sink
        self.sensors = (fold.pair.upstream, fold.pair.downstream)

    def before(self, state: PairState, item: Reading) -> list[ContrastSample]:
        if item.sensor not in self.sensors or item.ntu is None:
            return []
        due = [p for p in state.pending if p[0] + self.fold.skew_ms < item.ts_ms]
        if not due:
            return []
        fold = self.fold
        scratch = fold.copy(state)
        out = []
        for entry in due:
            # ``advance`` evaluates the pending readings in order with the
            # upstream readings known; one entry at a time exposes each result.
            scratch.pending = deque([entry])
            fold.advance(scratch, entry[0], [])
            if scratch.last is not None:
                out.append(self._sample(scratch.last, scratch))
        return out

    def after(self, state: PairState, item: Reading, pre: list[ContrastSample] | None) -> None:
        if item.sensor not in self.sensors or item.ntu is None:
            return
        for sample in pre or []:
            self.sink(sample)
        if state.pending:
            # Provisional: the newest pending reading as ``status`` shows it now.
            scratch = self.fold.copy(state)
            self.fold.advance(scratch, item.ts_ms, [])
            if scratch.last is not None:
                self.sink(self._sample(scratch.last, scratch))

    def _sample(self, last: tuple[int, int | None, int, int | None],
                state: PairState) -> ContrastSample:
        t, up_m, down_m, limit_e4 = last
        episode = self.fold.shown(state)[0]
        if up_m is None or limit_e4 is None:
            shown = "unknown" if episode == "ok" else episode
            if limit_e4 is None:
                return ContrastSample(self.site, self.pair, t, ntu_of(down_m), False, None, None,
                                      None, None, None, shown)
            # Without a background the fold's limit is the absolute level.
            return ContrastSample(self.site, self.pair, t, ntu_of(down_m), False, None, None,
                                  None, None, down_m * E4_PER_MILLI > limit_e4, shown,
                                  "absolute")
        limit = round(limit_e4 / E4_PER_NTU, 4)
        return ContrastSample(self.site, self.pair, t, ntu_of(down_m), True, ntu_of(up_m),
                              ntu_of(down_m - up_m), limit,
                              round(up_m / MILLI_PER_NTU + limit, 4),
                              (down_m - up_m) * E4_PER_MILLI > limit_e4, episode, "background")


def attach(engine: Engine, sink: Sink) -> None:
    """Put a sampler on every gauge, trap and pair timeline of ``engine``; from now on
    each step of those rules gives ``sink`` its sample."""
    for site_id, se in engine.sites.items():
        for gauge, tl in se.gauges.items():
            tl.observer = StormSampler(site_id, gauge, cast(GaugeFold, tl.fold), sink)
        for trap, tl in se.traps.items():
            tl.observer = TrapSampler(site_id, trap, cast(TrapFold, tl.fold), sink)
        for pair, tl in se.pairs.items():
            tl.observer = PairSampler(site_id, pair, cast(PairFold, tl.fold), sink)


# --------------------------------------------------------------------------- read off samples


def judged_rain(site: SiteConfig, storms: Mapping[str, Sequence[StormSample]]
                ) -> dict[str, Sequence[StormSample]]:
    """Of a site's storm samples by gauge, the gauges its storms are judged on
    (``sitestorms.judged_gauge``): the ``mean`` gauge alone under ``gauges: mean``
    (its depths are the mean of the live gauges, as the rule averaged them), else
    each real gauge. A rain plot of these shows the rain the storm rule saw."""
    return {g: xs for g, xs in storms.items() if judged_gauge(site, g)}


def hourly_rain(samples: Iterable[StormSample]) -> list[tuple[int, float]]:
    """A gauge's rain per clock hour, as (start of the hour in ms, inches), in time order:
    the sum of the depth the storm rule counted at each reading of the hour."""
    per: dict[int, float] = {}
    for s in samples:
        hour = s.ts_ms // MS_PER_HOUR * MS_PER_HOUR
        per[hour] = per.get(hour, 0.0) + s.depth_in
    return sorted(per.items())


def running_totals(samples: Iterable[StormSample]) -> dict[str, float]:
    """Each storm event's running total at the last of ``samples`` (by ``event_id``): the
    depth the rule had counted so far; the total of an event only grows."""
    out: dict[str, float] = {}
    for s in samples:
        if s.in_event:
            out[s.event_id] = max(out.get(s.event_id, 0.0), s.total_in)
    return out


def running_max_24h(samples: Iterable[StormSample]) -> dict[str, float]:
    """Each storm event's largest 24-hour rain at the last of ``samples`` (by
    ``event_id``), beside its running total (``running_totals``)."""
    out: dict[str, float] = {}
    for s in samples:
        if s.in_event:
            out[s.event_id] = max(out.get(s.event_id, 0.0), s.max_24h_in)
    return out

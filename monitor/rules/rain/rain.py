"""Storm events from a rain gauge (§ 134-9A(2): "any storm event producing 0.5 inch
of precipitation or more").

A storm event is a run of rain separated from the next by at least
``dry_gap_hours`` without rain (monitor/README.md, "The rules"); it ends, in event time, once that
gap has passed after its last rain. How it *qualifies* depends on ``mode``:

``event_total`` [default] the event's cumulative depth reaches the threshold:
               the plain reading of "any storm event producing 0.5 inch", and
               never later than the other modes (a 30-hour drizzle of 0.60 in
               qualifies, although no 24 hours of it reach 0.5 in);
``event_24h``  the event's own rain within any trailing 24 hours reaches it
               (permits that say "0.5 inch in 24 hours");
``rolling_24h`` the gauge's trailing 24-hour total crosses it from below,
               whatever the event boundaries; it must fall below again before
               another crossing counts.

An event qualifies at most once. ``qualified_at`` is the time of the reading at
which the rule first holds.

Depths are integers in ``units`` per inch (micro-inches for one gauge), so
sums are exact: splitting 0.30 in into three readings of 0.10 in gives the
same totals, and 0.49 in can never round up to 0.50 in.

Rain from counters: ``tips_total`` is cumulative; the depth of a message is
the difference to the previous message in event time. The first counter ever
seen is the baseline and carries no rain, and so is the first at or after the
start of the site's active period (``active_from_ms``): a stray row from
before the site began (a logger's earlier deployment) is no baseline for the
site's own, or the tips between would be a storm that never fell. A drop from within 2 % of 2^16 or
2^32 (or of 2^``counter_bits`` when the sensor says its width) to a value
below 2 % of it is the counter *wrapping*: it counts on across the wrap, but
only when the rain the wrap implies is plausible (``wrap_is_plausible``: at
most ``max_rate_in_per_hour`` [4.0] over the time since the previous message,
counted as at least ``MIN_WRAP_SPAN_MS``). A logger that reboots at 65 300
reads as a 16-bit wrap of 236 tips: 2.36 in in the ten minutes to its next
message is no rain, it is a reboot. Any other decrease (an implausible wrap
too) means the node was reset: the new value counts from zero and
``counter_reset`` is emitted.

Silence is not dry weather, for a gauge that reports every interval
(``reporting: interval``, the default). Such a gauge publishes its counter
every minute, rain or not; one that sent nothing for longer than its
``stale_after_minutes`` and comes back with a higher counter has *revealed*
rain of unknown timing (``precip_in`` messages are timed by the node, tip by
tip, and are not read this way). That rain is
placed at the reading that reveals it, and the storm does not end inside the
silence: only the readings before it are evidence of dry weather, so a storm
closes there only if its dry gap had passed by the last of them. Tail facts
concluded during the silence (a provisional ``storm_ended``) are revised by
the timeline like any other. Each storm counts its revealed rain as
``uncertain_in``. A counter that did not move across a silence means the
silence was dry. A storm that qualifies at a revealing reading may have
qualified as early as the silence began: ``qualified_not_before`` is the last
message before the silence (the clocks make ``due_not_before`` of it).

A gauge that reports only when its bucket tips (``reporting: on_tip``: event
loggers, LoRaWAN gauges) is silent whenever it is dry: its silence *is* dry
weather, every reading's rain belongs at its own time, and nothing is ever
revealed. Whether it is alive is the business of its heartbeats
(``heartbeat_minutes``, ``health.py``).

``gauges: mean`` is one fold over every gauge of the site, and a gauge that is
stale at a reading (silent longer than its ``stale_after_minutes``, or never
heard from since the fold's first reading; an ``on_tip`` gauge: nothing of it
or its node within ``heartbeat_minutes``, and never stale without them, its
silence being dry) is left out of the mean: a reading
of ``k`` live gauges adds its depth times ``L / k`` in units of ``1 / (L *
1e6)`` inch, ``L`` being the least common multiple of ``1 .. n``, so the mean
stays an exact integer sum whatever ``k`` is.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...config import RainRules, SensorConfig
from ...contract.events import (
    Body,
    CounterReset,
    Fact,
    GaugeQualified,
    StormEnded,
    StormStarted,
    make_id,
)
from ...contract.inputs import Reading
from ...contract.times import (
    MS_PER_DAY,
    MS_PER_HOUR,
    MS_PER_MINUTE,
    compact,
    hours_ms,
    iso,
    minutes_ms,
    parse_iso,
)

MICRO_PER_IN = 1_000_000
#: A counter within this fraction of its width, dropping below it, wrapped.
WRAP_FRACTION_DIV = 50  # 2 %
#: The counter widths a wrap is looked for at when the sensor does not say.
WRAP_BITS = (16, 32)
#: The shortest time a wrap's rain is judged over, "at least one reading interval"
#: (monitor/README.md, Storms). The configuration knows no gauge's interval, so it is the gap since
#: the previous message, and at least a minute: our nodes publish every minute, and
#: two messages closer than that (a reboot's first message) are one interval apart.
MIN_WRAP_SPAN_MS = MS_PER_MINUTE

#: Internal fact (not published) that tells the site layer a gauge's event qualified.
GAUGE_QUALIFIED = GaugeQualified.TYPE


@dataclass(slots=True)
class StormState:
    """The open storm event of one gauge."""

    started_at: int
    last_rain: int
    total: int = 0
    max24: int = 0
    qualified_at: int | None = None
    q_total: int = 0
    q_max24: int = 0
    window: deque[tuple[int, int]] = field(default_factory=deque)
    window_sum: int = 0
    #: Rain of unknown timing (revealed after a silence), in the fold's units.
    uncertain: int = 0
    q_uncertain: int = 0
    #: The gauges that counted at qualification (``mean``: the live ones).
    q_gauges: tuple[str, ...] = ()
    #: Qualified at a reading that revealed rain after a silence: the silence's start.
    q_not_before: int | None = None


@dataclass(slots=True)
class GaugeState:
    last_tips: dict[str, int] = field(default_factory=dict)
    #: The newest message of each source gauge, rain or not (silence and staleness).
    last_seen: dict[str, int] = field(default_factory=dict)
    #: The fold's first message: a gauge never heard from is stale counted from it.
    first_ms: int | None = None
    #: The newest heartbeat (``status``) of each ``on_tip`` gauge of a mean.
    heard: dict[str, int] = field(default_factory=dict)
    storm: StormState | None = None
    # Gauge-level trailing 24 h (rolling_24h mode only).
    rolling: deque[tuple[int, int]] = field(default_factory=deque)
    rolling_sum: int = 0
    rolling_armed: bool = True


class GaugeFold:
    """The storm-event rule over one gauge, or over several averaged (``mean=True``).

    ``units`` is the integer depth unit per inch: ``MICRO_PER_IN`` for one gauge,
    ``MICRO_PER_IN * L`` for the mean (see the module docstring).
    """

    def __init__(self, site: str, gauge: str, rules: RainRules, sensors: Sequence[SensorConfig],
                 *, mean: bool = False,
                 heartbeats: Mapping[str, tuple[str, ...]] | None = None,
                 active_from_ms: int | None = None) -> None:
        self.site = site
        self.active_from_ms = active_from_ms
        self.gauge = gauge
        self.rules = rules
        self.mode = rules.mode
        self.mean = mean
        self.sensors = tuple(s.id for s in sensors)
        self.lcm = math.lcm(*range(1, len(sensors) + 1)) if mean else 1
        self.units = MICRO_PER_IN * self.lcm
        self.per_tip = {s.id: round(s.in_per_tip_value * MICRO_PER_IN) for s in sensors}
        self.stale_ms = {s.id: minutes_ms(s.stale_after_minutes) for s in sensors}
        self.wrap_bits = {s.id: (s.counter_bits,) if s.counter_bits else WRAP_BITS
                          for s in sensors}
        self.max_rate = {s.id: s.max_rate_in_per_hour for s in sensors}
        # Only a gauge that reports every interval reveals rain after a silence.
        self.reveals = {s.id: not s.on_tip for s in sensors}
        # Liveness in the mean of an on_tip gauge: its heartbeat (None: always live).
        self.heartbeat_ms = {s.id: minutes_ms(s.heartbeat_minutes) for s in sensors
                             if s.on_tip and s.heartbeat_minutes is not None}
        self.always_live = frozenset(s.id for s in sensors if s.on_tip) - set(self.heartbeat_ms)
        #: Sensors whose ``status`` is a heartbeat of gauges of this fold, and of which.
        self.heartbeats: dict[str, tuple[str, ...]] = {}
        for gauge, sources in (heartbeats or {}).items():
            if mean and gauge in self.heartbeat_ms:
                for sid in sources:
                    self.heartbeats[sid] = (*self.heartbeats.get(sid, ()), gauge)
        self.threshold = round(rules.threshold_in * self.units)
        self.gap_ms = hours_ms(rules.dry_gap_hours)
        # The mean's counter resets are each gauge's own facts already.
        self.emit_resets = not mean

    # ---------------------------------------------------------------- Fold protocol

    def initial(self) -> GaugeState:
        return GaugeState()

    def key(self, item: Reading) -> tuple[Any, ...]:
        if item.kind == "status":
            return (item.ts_ms, item.sensor, 2, -1, 0)
        if item.tips_total is not None:
            # Counters stamped at the same instant (a node reflashed within the
            # second) are ordered by seq when the node sends one: ordering by value
            # would put the reset first and count the old total again as rain.
            seq = item.seq if item.seq is not None else -1
            return (item.ts_ms, item.sensor, 0, seq, item.tips_total)
        seq = item.seq if item.seq is not None else -1
        return (item.ts_ms, item.sensor, 1, seq, round((item.precip_in or 0.0) * MICRO_PER_IN))

    def step(self, state: GaugeState, item: Reading, out: list[Fact]) -> None:
        ts = item.ts_ms
        if item.kind == "status":
            # A heartbeat of on_tip gauges of the mean (routed here for nothing else).
            for gauge in self.heartbeats.get(item.sensor, ()):
                state.heard[gauge] = ts
            return
        if state.first_ms is None:
            state.first_ms = ts
        previous = state.last_seen.get(item.sensor)
        depth = self._depth(state, item, out, previous)
        # Only a counter tells rain of a silence apart: a ``precip_in`` message is the
        # depth since the previous one, and nodes that send it report each tip as it
        # falls, so a silence before it is dry weather that went unreported. So is
        # the silence of a gauge that reports only when it tips.
        revealed = depth > 0 and item.tips_total is not None and previous is not None \
            and self.reveals[item.sensor] and ts - previous > self.stale_ms[item.sensor]
        # Dry weather is known up to the last message before a silence, not beyond.
        self._close_if_dry(state, previous if revealed and previous is not None else ts, out)
        self._expire(state, ts)
        if depth > 0 and self.mean:
            depth *= self.lcm // len(self._live(state, ts, item.sensor))
        state.last_seen[item.sensor] = ts
        if depth <= 0:
            return
        storm = state.storm
        if storm is None:
            storm = state.storm = StormState(started_at=ts, last_rain=ts)
            out.append(self._fact(storm, ts, StormStarted(
                gauge=self.gauge, event_id=self.event_id(ts), started_at=iso(ts))))
        storm.last_rain = ts
        storm.total += depth
        if revealed:
            storm.uncertain += depth
        storm.window.append((ts, depth))
        storm.window_sum += depth
        storm.max24 = max(storm.max24, storm.window_sum)
        if self.mode == "rolling_24h":
            state.rolling.append((ts, depth))
            state.rolling_sum += depth
        self._qualify(state, storm, ts, out, previous if revealed else None)

    def _live(self, state: GaugeState, ts: int, sensor: str) -> list[str]:
        """The gauges of the mean that are not stale at ``ts`` (``sensor`` reports now)."""
        live = []
        for sid in self.sensors:
            seen = state.last_seen.get(sid, state.first_ms)
            limit = self.stale_ms[sid]
            if sid in self.heartbeat_ms:
                heard = state.heard.get(sid)
                seen = heard if seen is None or (heard is not None and heard > seen) else seen
                limit = self.heartbeat_ms[sid]
            if sid == sensor or sid in self.always_live or (
                    seen is not None and ts - seen <= limit):
                live.append(sid)
        return live

    def advance(self, state: GaugeState, now_ms: int, out: list[Fact]) -> None:
        self._close_if_dry(state, now_ms, out)

    def copy(self, state: GaugeState) -> GaugeState:
        storm = state.storm
        return GaugeState(
            last_tips=dict(state.last_tips),
            last_seen=dict(state.last_seen),
            first_ms=state.first_ms,
            heard=dict(state.heard),
            storm=None if storm is None else StormState(
                storm.started_at, storm.last_rain, storm.total, storm.max24, storm.qualified_at,
                storm.q_total, storm.q_max24, deque(storm.window), storm.window_sum,
                storm.uncertain, storm.q_uncertain, storm.q_gauges, storm.q_not_before),
            rolling=deque(state.rolling),
            rolling_sum=state.rolling_sum,
            rolling_armed=state.rolling_armed,
        )

    def dump(self, state: GaugeState) -> Any:
        storm = state.storm
        return {
            "last_tips": state.last_tips,
            "last_seen": state.last_seen,
            "first_ms": state.first_ms,
            "heard": state.heard,
            "storm": None if storm is None else {
                "started_at": storm.started_at, "last_rain": storm.last_rain,
                "total": storm.total, "max24": storm.max24, "qualified_at": storm.qualified_at,
                "q_total": storm.q_total, "q_max24": storm.q_max24,
                "window": [list(p) for p in storm.window], "window_sum": storm.window_sum,
                "uncertain": storm.uncertain, "q_uncertain": storm.q_uncertain,
                "q_gauges": list(storm.q_gauges), "q_not_before": storm.q_not_before,
            },
            "rolling": [list(p) for p in state.rolling],
            "rolling_sum": state.rolling_sum,
            "rolling_armed": state.rolling_armed,
        }

    def load(self, data: Any) -> GaugeState:
        s = data["storm"]
        storm = None if s is None else StormState(
            s["started_at"], s["last_rain"], s["total"], s["max24"], s["qualified_at"],
            s["q_total"], s["q_max24"], deque((a, b) for a, b in s["window"]), s["window_sum"],
            s["uncertain"], s["q_uncertain"], tuple(s["q_gauges"]), s["q_not_before"])
        return GaugeState(dict(data["last_tips"]), dict(data["last_seen"]), data["first_ms"],
                          dict(data["heard"]), storm, deque((a, b) for a, b in data["rolling"]),
                          data["rolling_sum"], data["rolling_armed"])

    def depths_in(self, readings: Iterable[Reading]) -> list[tuple[int, float]]:
        """Each rain message's time and the inches this rule counts at it, folded from a
        fresh state (the first counter is the baseline): the gauge's own numbers for a
        comparison outside the storm rule (``weather.py``: the reference stations)."""
        state, ignored, out = self.initial(), list[Fact](), list[tuple[int, float]]()
        for item in sorted((r for r in readings if r.kind != "status"), key=self.key):
            depth = self._depth(state, item, ignored, state.last_seen.get(item.sensor))
            state.last_seen[item.sensor] = item.ts_ms
            out.append((item.ts_ms, depth / self.units))
        return out

    # ---------------------------------------------------------------- the rule

    def _depth(self, state: GaugeState, item: Reading, out: list[Fact],
               previous_ms: int | None) -> int:
        """Depth of this message in micro-inches (times the number of gauges for a mean);
        ``previous_ms``: the sensor's previous message, what a wrap's rain is judged over."""
        if item.tips_total is None:
            return round((item.precip_in or 0.0) * MICRO_PER_IN)
        previous = state.last_tips.get(item.sensor)
        state.last_tips[item.sensor] = item.tips_total
        if previous is None or self._starts_the_period(previous_ms, item.ts_ms):
            return 0
        tips = item.tips_total - previous
        if tips < 0:
            gap_ms = item.ts_ms - (item.ts_ms if previous_ms is None else previous_ms)
            tips = self._across_wrap(item.sensor, previous, item.tips_total, gap_ms)
        if tips < 0:
            tips = item.tips_total
            if self.emit_resets:
                out.append(Fact(self.site, item.ts_ms,
                                make_id("counter_reset", self.site, item.sensor, item.ts_ms),
                                CounterReset(sensor=item.sensor, tips_before=previous,
                                             tips_after=item.tips_total)))
        return tips * self.per_tip[item.sensor]

    def _starts_the_period(self, previous_ms: int | None, ts_ms: int) -> bool:
        """Whether a counter at ``ts_ms`` is the first of the active period after one
        from before it (a baseline again: module docstring)."""
        start = self.active_from_ms
        return start is not None and previous_ms is not None and previous_ms < start <= ts_ms

    def _across_wrap(self, sensor: str, before: int, after: int, gap_ms: int) -> int:
        """Tips across a counter wrap from ``before`` to ``after`` ``gap_ms`` later, or -1
        when the drop is not a wrap, or one whose rain is implausible (module docstring)."""
        for bits in self.wrap_bits[sensor]:
            width = 1 << bits
            margin = width // WRAP_FRACTION_DIV
            if width - margin <= before < width and after < margin:
                tips = after + width - before
                implied = tips * self.per_tip[sensor]
                return tips if wrap_is_plausible(implied, self.max_rate[sensor], gap_ms) else -1
        return -1

    def _close_if_dry(self, state: GaugeState, now_ms: int, out: list[Fact]) -> None:
        storm = state.storm
        if storm is not None and now_ms - storm.last_rain >= self.gap_ms:
            out.append(self._fact(storm, storm.last_rain, StormEnded(
                gauge=self.gauge, event_id=self.event_id(storm.started_at),
                started_at=iso(storm.started_at), ended_at=iso(storm.last_rain),
                total_in=self._inches(storm.total), max_24h_in=self._inches(storm.max24),
                qualified=storm.qualified_at is not None,
                uncertain_in=self._inches(storm.uncertain))))
            state.storm = None

    def _expire(self, state: GaugeState, ts: int) -> None:
        horizon = ts - MS_PER_DAY
        storm = state.storm
        if storm is not None:
            while storm.window and storm.window[0][0] <= horizon:
                storm.window_sum -= storm.window.popleft()[1]
        while state.rolling and state.rolling[0][0] <= horizon:
            state.rolling_sum -= state.rolling.popleft()[1]
        if state.rolling_sum < self.threshold:
            state.rolling_armed = True

    def _qualify(self, state: GaugeState, storm: StormState, ts: int, out: list[Fact],
                 not_before: int | None) -> None:
        """``not_before``: the start of the silence when this reading revealed rain."""
        if storm.qualified_at is None:
            if self.mode == "event_24h":
                holds = storm.window_sum >= self.threshold
            elif self.mode == "event_total":
                holds = storm.total >= self.threshold
            else:
                holds = state.rolling_armed and state.rolling_sum >= self.threshold
            if not holds:
                return
            storm.qualified_at = ts
            storm.q_not_before = not_before
        elif storm.qualified_at != ts:
            if self.mode == "rolling_24h" and state.rolling_sum >= self.threshold:
                state.rolling_armed = False
            return
        elif not_before is not None:
            # Readings sharing the qualifying timestamp are one observation (below):
            # one of them that revealed rain makes the qualification uncertain.
            storm.q_not_before = min(not_before, storm.q_not_before or not_before)
        # Readings sharing the qualifying timestamp are one observation: the fact
        # is concluded again with their sum, so splitting a reading changes nothing.
        if self.mode == "rolling_24h":
            state.rolling_armed = False
            storm.q_max24 = state.rolling_sum
        else:
            storm.q_max24 = storm.window_sum
        storm.q_total = storm.total
        storm.q_uncertain = storm.uncertain
        storm.q_gauges = tuple(self._live(state, ts, "")) if self.mean else (self.gauge,)
        out.append(self._fact(storm, ts, GaugeQualified(
            gauge=self.gauge, event_id=self.event_id(storm.started_at),
            started_at=iso(storm.started_at), qualified_at=iso(ts),
            total_in=self._inches(storm.q_total), max_24h_in=self._inches(storm.q_max24),
            last_rain=iso(storm.last_rain), uncertain_in=self._inches(storm.q_uncertain),
            gauges=storm.q_gauges,
            qualified_not_before=iso_or_none(storm.q_not_before))))

    # ---------------------------------------------------------------- output

    def event_id(self, started_at: int) -> str:
        return f"{self.gauge}-{compact(started_at)}"

    def _inches(self, units: int) -> float:
        return round(units / self.units, 6)

    def _fact(self, storm: StormState, at: int, body: Body) -> Fact:
        return Fact(self.site, at, make_id(body.TYPE, self.site, self.gauge, storm.started_at),
                    body)


def wrap_is_plausible(implied_micro: int, max_rate_in_per_hour: float, gap_ms: int) -> bool:
    """Whether a counter wrap implying ``implied_micro`` micro-inches of rain ``gap_ms``
    after the previous message can be rain: at most ``max_rate_in_per_hour`` over the
    gap, counted as at least ``MIN_WRAP_SPAN_MS`` (module docstring). The column-wise twin in
    ``rain_rows._counter_depths`` does these very float operations in this order, so
    both paths decide alike to the last bit."""
    limit = max_rate_in_per_hour * MICRO_PER_IN * max(gap_ms, MIN_WRAP_SPAN_MS) / MS_PER_HOUR
    return float(implied_micro) <= limit


def revealed_due(not_before_ms: int | None, qualified_ms: int, start_ms: int | None,
                 due_ms: int | None, within_ms: int, clock_start: str) -> int | None:
    """``due_not_before`` of a storm clock (monitor/README.md, "The rules"): for a storm that
    qualified on revealed rain, the deadline counted from the silence's start (``not_before_ms``),
    when the rain may have qualified it (``clock_start: qualified``) or ended it
    (``event_end``, when the revealing reading is the storm's end; a later end is
    certain, and the deadline is ``due_ms``). None for every other storm."""
    if not_before_ms is None or due_ms is None:
        return None
    if clock_start == "qualified" or start_ms == qualified_ms:
        return not_before_ms + within_ms
    return due_ms


def iso_or_none(ms: int | None) -> str | None:
    return iso(ms) if ms is not None else None


def ms_or_none(text: str | None) -> int | None:
    return parse_iso(text) if text is not None else None

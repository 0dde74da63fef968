"""Storm events in bulk: the § 134-9A(2) storm rule over whole columns of rain data.

Chapter 134, § 134-9A(2) requires an inspection "within 24 hours of any storm
event producing 0.5 inch of precipitation or more". The daemon decides which
storms those are one reading at a time (``monitor.rules.rain.rain.GaugeFold``
driven by a ``Timeline``). A backtest asks the same question of a year of
one-minute data for many gauges at once, where a Python step per reading is
the whole cost. This module answers it with array operations and gives the
*same* storm events, to the micro-inch and the millisecond: same event ids,
start, end, totals, and the same ``qualified_at`` for all three ``mode`` s of
monitor/README.md, "The rules".

Theory of operation
-------------------
The fold's state looks complicated (deques, running sums, an arming flag),
but every number it reports is a function of a few sums over the *rain
observations* of a gauge: the distinct timestamps at which it received rain,
each carrying the summed depth of its readings. So the pipeline is:

1. **Readings** (``rain_rows.readings_of``): put the rows in the fold's key order and drop
   the rows the ``Timeline`` would drop as duplicates; turn counters into
   depths with one ``diff`` per gauge; everything in integer micro-inches
   (``round(depth * 1e6)``), exactly as the fold does.
2. **Observations** (``_observations``): keep rows with rain and sum the rows
   that share a timestamp. A trailing window ``(t - 24 h, t]`` can only start
   or end *between* timestamps, so rows at one instant always count together.
3. **Events** (``_events``): a new event starts at a rain observation whose
   distance to the previous one is at least ``dry_gap_hours``.
4. **Sums**: one cumulative sum ``C`` over all observations. Any sum of rain
   over a run of observations is a difference of two entries of ``C``, and
   the run of a trailing 24 hours is found for all observations at once with
   ``searchsorted`` (``_window_starts``).
5. **Qualification**: a boolean per observation says whether the mode's rule
   holds there; the first such observation of each event is ``qualified_at``.

The only rule that looks sequential is ``rolling_24h`` arming (the trailing
total must fall below the threshold before another crossing counts). It
reduces to a local test; see ``_qualifying`` for the argument. No Python
loop runs over readings, observations or events.

Deliberate equivalences with the streaming fold (each is checked by the
property test in ``tests/engine/test_backtest.py``):

* rows are ordered like ``GaugeFold.key``: by timestamp, then by ``seq`` and
  counter value (``tips_total``) or by ``seq`` and depth (``precip_in``); two
  rows with equal keys are one message delivered twice and count once;
* a counter decrease is a wrap when it drops from within 2 % of 2^16 or 2^32
  (or 2^``counter_bits``) to below 2 % of it and the rain it implies is at
  most ``max_rate_in_per_hour`` over the time since the gauge's previous row
  (at least a minute), else a reset: the new value counts from zero; the
  first counter of a gauge is its baseline and carries no rain;
* a counter row with rain after a silence longer than the gauge's
  ``stale_after_minutes`` reveals rain of unknown timing (``uncertain_in``):
  dry weather is then known only up to the row before the silence, so the
  boundary test between two rain observations uses that row's time (the
  *evidence* time) instead of the later one's. Evidence times never decrease
  along a gauge's rows, so the newest evidence before a rain observation is
  that of its own first row;
* an event ends when ``now - last_rain >= dry_gap`` (a gap of exactly
  ``dry_gap_hours`` separates two events); the reference time is the later of
  ``now`` and the gauge's last reading, wet or dry, because the fold closes
  events on any reading;
* the qualifying totals are taken after *all* rows at ``qualified_at``: the
  fold concludes the fact again for each row sharing that timestamp.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt
import pandas as pd

from ...config import RainRules
from ...contract.times import MS_PER_DAY, hours_ms
from .rain import MICRO_PER_IN
from .rain_rows import BoolArray, Int64Array, Readings, readings_of

#: Columns of the result of ``storm_events``, in order: the numbers of the streaming
#: ``storm_started``, ``storm_qualified`` and ``storm_ended`` events.
EVENT_COLUMNS: tuple[str, ...] = (
    "gauge", "event_id",
    "started_at",      # first rain
    "ended_at",        # last rain of an ended event (NaT while it is open)
    "total_in",        # the event's rain so far
    "max_24h_in",      # its largest trailing-24-hour sum
    "qualified", "qualified_at",
    "q_total_in",      # the event's rain at qualified_at
    "q_max_24h_in",    # its 24-hour sum then (rolling_24h: the gauge's, as in storm_qualified)
    "uncertain_in",    # rain of unknown timing in the event (revealed after a silence)
    "q_uncertain_in",  # of it, at qualification
)

_UTC_EPOCH = pd.Timestamp(0, tz="UTC")


def storm_events(readings: pd.DataFrame, rules: RainRules,
                 in_per_tip: Mapping[str, float] | None = None, *,
                 now: pd.Timestamp | datetime | int | None = None,
                 stale_after_minutes: Mapping[str, float] | None = None,
                 counter_bits: Mapping[str, int | None] | None = None,
                 max_rate_in_per_hour: Mapping[str, float] | None = None,
                 active_from_ms: int | None = None) -> pd.DataFrame:
    """Storm events of every gauge in ``readings`` under § 134-9A(2) and ``rules``.

    ``readings`` has columns ``ts`` (UTC ``datetime64``, naive taken as UTC, or
    integer milliseconds since the epoch), ``gauge`` and either ``tips_total``
    (cumulative tip counter; needs ``in_per_tip[gauge]`` in inches per tip) or
    ``precip_in`` (depth in inches since the previous row), with an optional
    ``seq`` column as in the MQTT contract (-1 or NaN: none). Row order does
    not matter.

    ``rules`` supplies ``threshold_in``, ``mode`` and ``dry_gap_hours``
    (monitor/README.md, Storms); ``stale_after_minutes``, ``counter_bits`` and
    ``max_rate_in_per_hour`` the gauges' own settings (defaults: 15 minutes, a
    wrap looked for at 16 and 32 bits, a wrap's rain at most 4 in per hour).
    ``active_from_ms`` is the start of the site's active period: the first
    counter at or after it is a baseline again (``rain.py``).
    ``now`` is the event time at which the backtest is read
    (integer ms or a timestamp; default: the newest ``ts`` in ``readings``):
    an event whose last rain is less than ``dry_gap_hours`` before it is still
    open and has ``ended_at`` NaT, as if each gauge's ``Timeline`` had been
    advanced to ``now``.

    Returns one row per storm event, ordered by gauge and start, with
    ``EVENT_COLUMNS`` (each described there). Depths are summed as integer
    micro-inches and divided by 1e6 once, which gives the very float the fold
    reports (``round(units / 1e6, 6)``): compare with ``==``, not with a tolerance.
    """
    r = readings_of(readings, in_per_tip, stale_after_minutes or {}, counter_bits or {},
                    max_rate_in_per_hour, active_from_ms)
    obs = _observations(r)
    if obs.ts.size == 0:
        return empty_events()
    gap_ms = hours_ms(rules.dry_gap_hours)
    if gap_ms <= 0:
        # The fold would then split rows of one instant into events sharing an id.
        raise ValueError("dry_gap_hours must be at least a millisecond")
    threshold = round(rules.threshold_in * MICRO_PER_IN)
    now_ms = int(r.ts.max()) if now is None else _instant_ms(now)
    ev = _events(obs, gap_ms)
    sums = _Sums.of(obs, ev)
    q_obs, q_event = _first_per_event(_qualifying(rules.mode, threshold, obs, sums), ev.of)
    # The fold closes an event on any later reading or when time is advanced.
    reference = np.maximum(r.last_ts[obs.gauge[ev.start]], now_ms)
    ended = reference - obs.ts[ev.end] >= gap_ms
    return _frame(r, obs, ev, sums, ended, (q_obs, q_event), rules.mode)


def _frame(r: Readings, obs: _Observations, ev: _EventIndex, sums: _Sums, ended: BoolArray,
           first_hits: tuple[Int64Array, Int64Array], mode: str) -> pd.DataFrame:
    """The result rows (``EVENT_COLUMNS``): one per event, its totals in inches, the
    totals at the observation where it qualified (``first_hits``: that observation
    and its event)."""
    q_obs, q_event = first_hits
    n = ev.start.size
    q_24h = sums.gauge_24h if mode == "rolling_24h" else sums.event_24h
    qualified = np.zeros(n, dtype=np.bool_)
    qualified[q_event] = True
    qualified_at = np.full(n, _NAT, dtype=np.int64)
    qualified_at[q_event] = obs.ts[q_obs]
    uncertain_upto = np.cumsum(obs.uncertain)
    uncertain_before = uncertain_upto - obs.uncertain
    event_uncertain = uncertain_upto - uncertain_before[ev.start[ev.of]]

    def at_qualified(values: Int64Array) -> npt.NDArray[np.float64]:
        out = np.full(n, np.nan)
        out[q_event] = values[q_obs] / MICRO_PER_IN
        return out

    gauge = pd.Series(r.names[obs.gauge[ev.start]], dtype=str)
    started = _utc(obs.ts[ev.start])
    return pd.DataFrame({
        "gauge": gauge,
        "event_id": gauge + "-" + started.dt.strftime("%Y%m%dT%H%M%SZ"),
        "started_at": started,
        "ended_at": _utc(np.where(ended, obs.ts[ev.end], _NAT)),
        "total_in": sums.event_total[ev.end] / MICRO_PER_IN,
        "max_24h_in": np.maximum.reduceat(sums.event_24h, ev.start) / MICRO_PER_IN,
        "qualified": qualified,
        "qualified_at": _utc(qualified_at),
        "q_total_in": at_qualified(sums.event_total),
        "q_max_24h_in": at_qualified(q_24h),
        "uncertain_in": event_uncertain[ev.end] / MICRO_PER_IN,
        "q_uncertain_in": at_qualified(event_uncertain),
    })


# ----------------------------------------------------------------------------- steps


@dataclass(frozen=True, slots=True)
class _Observations:
    """Distinct (gauge, timestamp) pairs with rain, in (gauge, time) order."""

    gauge: Int64Array
    ts: Int64Array
    depth: Int64Array  # > 0, summed over the rows at that timestamp
    evidence: Int64Array  # of the first row at that timestamp
    uncertain: Int64Array  # of ``depth``, the revealed rain


def _observations(r: Readings) -> _Observations:
    """Rain rows summed per (gauge, timestamp) with ``np.add.reduceat``.

    Rows without rain are dropped here: they only ever close an event or
    expire old rain from a window, and both are functions of time, which the
    later steps compute directly. Rows sharing a timestamp are one
    observation: every window boundary lies between timestamps, and the fold
    takes the qualifying totals after the last of them.
    """
    wet = r.depth > 0
    gauge, ts, depth = r.gauge[wet], r.ts[wet], r.depth[wet]
    uncertain = np.where(r.revealed[wet], depth, 0)
    new = np.ones(ts.size, dtype=np.bool_)
    new[1:] = (gauge[1:] != gauge[:-1]) | (ts[1:] != ts[:-1])
    heads = np.flatnonzero(new)
    summed = np.add.reduceat(depth, heads) if heads.size else depth[:0]
    unknown = np.add.reduceat(uncertain, heads) if heads.size else uncertain[:0]
    return _Observations(gauge[heads], ts[heads], summed.astype(np.int64),
                         r.evidence[wet][heads], unknown.astype(np.int64))


@dataclass(frozen=True, slots=True)
class _EventIndex:
    """Storm events over the observations: each one's first and last observation, and
    the event of each observation."""

    start: Int64Array
    end: Int64Array
    of: Int64Array


def _events(obs: _Observations, gap_ms: int) -> _EventIndex:
    """Segment observations into storm events.

    An event is "a run of rain separated from the next by at least
    ``dry_gap_hours`` without any rain" (monitor/README.md, "The rules"): a boundary wherever the
    gauge changes or consecutive rain is ``>= gap_ms`` apart. The event of
    each observation is a ``cumsum`` over the boundaries.
    """
    boundary = np.ones(obs.ts.size, dtype=np.bool_)
    boundary[1:] = (obs.gauge[1:] != obs.gauge[:-1]) | (obs.evidence[1:] - obs.ts[:-1] >= gap_ms)
    start = np.flatnonzero(boundary).astype(np.int64)
    end = np.append(start[1:] - 1, obs.ts.size - 1).astype(np.int64)
    return _EventIndex(start, end, (np.cumsum(boundary) - 1).astype(np.int64))


@dataclass(frozen=True, slots=True)
class _Sums:
    """The sums of rain every rule compares, per observation, in micro-inches."""

    before: Int64Array  # the rain of all observations before this one (gauge, time order)
    window: Int64Array  # first observation of the trailing 24 hours (``_window_starts``)
    event_total: Int64Array  # the event's rain so far
    event_24h: Int64Array  # the event's rain in the trailing 24 hours
    gauge_24h: Int64Array  # the gauge's rain in the trailing 24 hours

    @classmethod
    def of(cls, obs: _Observations, ev: _EventIndex) -> _Sums:
        # One running sum for everything: rain over observations i..k is
        # ``upto[k] - before[i]`` (exclusive and inclusive prefix sums).
        upto = np.cumsum(obs.depth)
        before = upto - obs.depth
        window = _window_starts(obs)
        # The event's own window is the trailing window cut at the event start:
        # the fold's per-event deque holds only that event's rain.
        event_window = np.maximum(window, ev.start[ev.of])
        return cls(before, window, upto - before[ev.start[ev.of]], upto - before[event_window],
                   upto - before[window])


def _window_starts(obs: _Observations) -> Int64Array:
    """For each observation at ``t``, the first observation of its gauge in ``(t - 24 h, t]``.

    One ``searchsorted`` for all gauges: the timestamps are shifted so that
    each gauge occupies its own band, the bands ordered like the gauge codes
    and more than 24 hours apart. The key is then increasing over the whole
    array, and a window reaching back 24 hours never leaves its band.
    """
    if obs.ts.size == 0:
        return obs.ts.copy()
    origin = int(obs.ts.min())
    band = int(obs.ts.max()) - origin + MS_PER_DAY + 1
    key = obs.ts - origin + obs.gauge * band
    return np.searchsorted(key, key - MS_PER_DAY, side="right").astype(np.int64)


def _qualifying(mode: str, threshold: int, obs: _Observations, sums: _Sums) -> BoolArray:
    """Where the § 134-9A(2) rule of ``mode`` holds, per rain observation.

    ``event_24h``: the event's own rain in ``(t - 24 h, t]`` reaches the
    threshold. ``event_total``: the event's rain so far reaches it.

    ``rolling_24h``: the gauge's trailing total crosses the threshold *at*
    ``t``: it was below just before ``t`` (``(t - 24 h, t)``, i.e. without the
    rows at ``t``) and is at or above it with them. In the fold, arming is a
    flag carried from reading to reading, but it is determined locally:

    * the fold re-arms at any reading where the trailing total is below the
      threshold, and the first row at ``t`` sees exactly ``(t - 24 h, t)``, so
      a total below the threshold just before ``t`` means armed at ``t``;
    * conversely, if that total is at or above the threshold, the previous
      rain ``p`` had a total at least as large (the window at ``p`` contains
      every rain of the window before ``t``), so the fold disarmed at ``p``;
      between ``p`` and ``t`` no rain arrives, so every reading sees a total at
      least that of ``(t - 24 h, t)`` and none re-arms.

    The gauge's first rain is the exception: the flag starts armed, which
    only matters for a threshold that rounds to zero micro-inches.
    """
    if mode == "event_24h":
        return sums.event_24h >= threshold
    if mode == "event_total":
        return sums.event_total >= threshold
    if mode != "rolling_24h":
        raise ValueError(f"unknown rain mode {mode!r}")
    just_before = sums.before - sums.before[sums.window]
    first_rain = np.ones(obs.ts.size, dtype=np.bool_)
    first_rain[1:] = obs.gauge[1:] != obs.gauge[:-1]
    return (sums.gauge_24h >= threshold) & ((just_before < threshold) | first_rain)


def _first_per_event(holds: BoolArray, event_of: Int64Array) -> tuple[Int64Array, Int64Array]:
    """The first observation of each event where the rule holds, and that event.

    "An event qualifies at most once": only the first hit counts. The hits
    are in observation order, so the first of each event is where the event
    number changes.
    """
    hits = np.flatnonzero(holds).astype(np.int64)
    events = event_of[hits]
    first = np.ones(hits.size, dtype=np.bool_)
    first[1:] = events[1:] != events[:-1]
    return hits[first], events[first]


# ----------------------------------------------------------------------------- conversions

_NAT = np.iinfo(np.int64).min  # numpy's NaT as an int64 datetime


def _instant_ms(now: pd.Timestamp | datetime | int) -> int:
    """``now`` as integer ms; integers (numpy's too) are ms, not pandas' nanoseconds."""
    if isinstance(now, (int, np.integer)):
        return int(now)
    stamp = pd.Timestamp(now)
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    return (stamp - _UTC_EPOCH) // pd.Timedelta(1, unit="ms")


def _utc(ms: Int64Array) -> pd.Series:
    """Integer ms (``_NAT`` for none) as a UTC datetime column."""
    return pd.Series(ms.view("datetime64[ms]")).dt.tz_localize("UTC")


def empty_events() -> pd.DataFrame:
    none = np.zeros(0, dtype=np.int64)
    return pd.DataFrame({
        "gauge": pd.Series([], dtype=str),
        "event_id": pd.Series([], dtype=str),
        "started_at": _utc(none),
        "ended_at": _utc(none),
        "total_in": np.zeros(0),
        "max_24h_in": np.zeros(0),
        "qualified": np.zeros(0, dtype=np.bool_),
        "qualified_at": _utc(none),
        "q_total_in": np.zeros(0),
        "q_max_24h_in": np.zeros(0),
        "uncertain_in": np.zeros(0),
        "q_uncertain_in": np.zeros(0),
    })

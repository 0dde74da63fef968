"""Storm events in bulk: the § 134-9A(2) storm rule over whole columns of rain data.

Chapter 134, § 134-9A(2) requires an inspection "within 24 hours of any storm
event producing 0.5 inch of precipitation or more". The daemon decides which
storms those are one reading at a time (``monitor.engine.rain.GaugeFold``
driven by a ``Timeline``). A backtest asks the same question of a year of
one-minute data for many gauges at once, where a Python step per reading is
the whole cost. This module answers it with array operations and gives the
*same* storm events, to the micro-inch and the millisecond: same event ids,
start, end, totals, and the same ``qualified_at`` for all three ``mode`` s of
DESIGN § 4.

Theory of operation
-------------------
The fold's state looks complicated (deques, running sums, an arming flag),
but every number it reports is a function of a few sums over the *rain
observations* of a gauge: the distinct timestamps at which it received rain,
each carrying the summed depth of its readings. So the pipeline is:

1. **Readings** (``_readings``): put the rows in the fold's key order and drop
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

* rows are ordered like ``GaugeFold.key``: by timestamp, then by counter value
  (``tips_total``) or by ``seq`` and depth (``precip_in``); two rows with equal
  keys are one message delivered twice and count once;
* a counter decrease is a wrap when it drops from within 2 % of 2^16 or 2^32
  (or 2^``counter_bits``) to below 2 % of it, else a reset: the new value
  counts from zero; the first counter of a gauge is its baseline and carries
  no rain;
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

from ..config import RainRules, SensorConfig
from ..contract.times import MS_PER_DAY, hours_ms
from .rain import MICRO_PER_IN, WRAP_BITS, WRAP_FRACTION_DIV

Int64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Columns of the result of ``storm_events``, in order.
EVENT_COLUMNS: tuple[str, ...] = (
    "gauge", "event_id", "started_at", "ended_at", "total_in", "max_24h_in",
    "qualified", "qualified_at", "q_total_in", "q_max_24h_in", "uncertain_in",
    "q_uncertain_in",
)
#: A gauge's ``stale_after_minutes`` when none is given (the sensor default).
DEFAULT_STALE_MINUTES = float(SensorConfig.model_fields["stale_after_minutes"].default)

_UTC_EPOCH = pd.Timestamp(0, tz="UTC")


def storm_events(readings: pd.DataFrame, rules: RainRules,
                 in_per_tip: Mapping[str, float] | None = None, *,
                 now: pd.Timestamp | datetime | int | None = None,
                 stale_after_minutes: Mapping[str, float] | None = None,
                 counter_bits: Mapping[str, int | None] | None = None) -> pd.DataFrame:
    """Storm events of every gauge in ``readings`` under § 134-9A(2) and ``rules``.

    ``readings`` has columns ``ts`` (UTC ``datetime64``, naive taken as UTC, or
    integer milliseconds since the epoch), ``gauge`` and either ``tips_total``
    (cumulative tip counter; needs ``in_per_tip[gauge]`` in inches per tip) or
    ``precip_in`` (depth in inches since the previous row, with an optional
    ``seq`` column as in the MQTT contract). Row order does not matter.

    ``rules`` supplies ``threshold_in``, ``mode`` and ``dry_gap_hours``
    (DESIGN § 4); ``stale_after_minutes`` and ``counter_bits`` the gauges' own
    settings (defaults: 15 minutes, a wrap looked for at 16 and 32 bits).
    ``now`` is the event time at which the backtest is read
    (integer ms or a timestamp; default: the newest ``ts`` in ``readings``):
    an event whose last rain is less than ``dry_gap_hours`` before it is still
    open and has ``ended_at`` NaT, as if each gauge's ``Timeline`` had been
    advanced to ``now``.

    Returns one row per storm event, ordered by gauge and start, with
    ``EVENT_COLUMNS``: ``started_at`` (first rain), ``ended_at`` (last rain of an
    ended event), ``total_in`` and ``max_24h_in`` (the event's rain so far and
    its largest trailing-24-hour sum), ``qualified``, ``qualified_at`` and the
    totals at that moment, ``q_total_in`` and ``q_max_24h_in`` (for
    ``rolling_24h`` the gauge's trailing 24-hour total, as in the
    ``storm_qualified`` event), ``uncertain_in`` and ``q_uncertain_in`` (rain of
    unknown timing in the event, and at qualification). These are the numbers
    of the streaming
    ``storm_started``, ``storm_qualified`` and ``storm_ended`` events. Depths
    are summed as integer micro-inches and divided by 1e6 once, which gives
    the very float the fold reports (``round(units / 1e6, 6)``): compare
    with ``==``, not with a tolerance.
    """
    r = _readings(readings, in_per_tip, stale_after_minutes or {}, counter_bits or {})
    obs = _observations(r)
    if obs.ts.size == 0:
        return empty_events()
    gap_ms = hours_ms(rules.dry_gap_hours)
    if gap_ms <= 0:
        # The fold would then split rows of one instant into events sharing an id.
        raise ValueError("dry_gap_hours must be at least a millisecond")
    threshold = round(rules.threshold_in * MICRO_PER_IN)
    now_ms = int(r.ts.max()) if now is None else _instant_ms(now)

    start, end, event_of = _events(obs, gap_ms)
    # One running sum for everything: rain over observations i..k is
    # ``upto[k] - before[i]`` (exclusive and inclusive prefix sums).
    upto = np.cumsum(obs.depth)
    before = upto - obs.depth
    window = _window_starts(obs)
    # The event's own window is the trailing window cut at the event start:
    # the fold's per-event deque holds only that event's rain.
    event_window = np.maximum(window, start[event_of])
    event_total = upto - before[start[event_of]]
    event_24h = upto - before[event_window]
    gauge_24h = upto - before[window]

    q_obs, q_event = _first_per_event(
        _qualifying(rules.mode, threshold, obs, event_total, event_24h, gauge_24h, before, window),
        event_of)
    q_24h = gauge_24h if rules.mode == "rolling_24h" else event_24h

    last_rain = obs.ts[end]
    # The fold closes an event on any later reading or when time is advanced.
    reference = np.maximum(r.last_ts[obs.gauge[start]], now_ms)
    ended = reference - last_rain >= gap_ms

    n = start.size
    qualified = np.zeros(n, dtype=np.bool_)
    qualified[q_event] = True
    qualified_at = np.full(n, _NAT, dtype=np.int64)
    qualified_at[q_event] = obs.ts[q_obs]
    q_total = np.full(n, np.nan)
    q_total[q_event] = event_total[q_obs] / MICRO_PER_IN
    q_max = np.full(n, np.nan)
    q_max[q_event] = q_24h[q_obs] / MICRO_PER_IN
    uncertain_upto = np.cumsum(obs.uncertain)
    uncertain_before = uncertain_upto - obs.uncertain
    event_uncertain = uncertain_upto - uncertain_before[start[event_of]]
    q_uncertain = np.full(n, np.nan)
    q_uncertain[q_event] = event_uncertain[q_obs] / MICRO_PER_IN

    gauge = pd.Series(r.names[obs.gauge[start]], dtype=str)
    started = _utc(obs.ts[start])
    frame = pd.DataFrame({
        "gauge": gauge,
        "event_id": gauge + "-" + started.dt.strftime("%Y%m%dT%H%M%SZ"),
        "started_at": started,
        "ended_at": _utc(np.where(ended, last_rain, _NAT)),
        "total_in": event_total[end] / MICRO_PER_IN,
        "max_24h_in": np.maximum.reduceat(event_24h, start) / MICRO_PER_IN,
        "qualified": qualified,
        "qualified_at": _utc(qualified_at),
        "q_total_in": q_total,
        "q_max_24h_in": q_max,
        "uncertain_in": event_uncertain[end] / MICRO_PER_IN,
        "q_uncertain_in": q_uncertain,
    })
    return frame


# ----------------------------------------------------------------------------- steps


@dataclass(frozen=True, slots=True)
class _Readings:
    """Rows in the fold's key order, duplicates dropped, with depths in micro-inches."""

    names: npt.NDArray[np.object_]  # gauge name (str) by gauge code
    gauge: Int64Array  # gauge code per row (codes sort like the names)
    ts: Int64Array  # event time, ms
    depth: Int64Array  # micro-inches; <= 0 is no rain
    last_ts: Int64Array  # newest reading per gauge code, ms
    evidence: Int64Array  # dry weather is known up to here, ms (module docstring)
    revealed: BoolArray  # rain of unknown timing


@dataclass(frozen=True, slots=True)
class _Observations:
    """Distinct (gauge, timestamp) pairs with rain, in (gauge, time) order."""

    gauge: Int64Array
    ts: Int64Array
    depth: Int64Array  # > 0, summed over the rows at that timestamp
    evidence: Int64Array  # of the first row at that timestamp
    uncertain: Int64Array  # of ``depth``, the revealed rain


def _readings(frame: pd.DataFrame, in_per_tip: Mapping[str, float] | None,
              stale_minutes: Mapping[str, float],
              counter_bits: Mapping[str, int | None]) -> _Readings:
    """Sort, de-duplicate and turn the rows into depths, the way the fold sees them.

    Sorting uses ``np.lexsort`` over the fold's key ``(gauge, ts, k1, k2)``,
    with ``(k1, k2) = (tips_total, 0)`` for counters and ``(seq, micro-inches)``
    for depths (``seq`` is -1 when absent, as in ``GaugeFold.key``). The order
    matters beyond sorting time: two counters at one timestamp are applied
    smallest first, which decides whether the pair reads as a reset.
    Neighbouring rows with equal keys are the ``Timeline``'s duplicates.

    Counter depths: a ``diff`` along the sorted rows, where the first row of a
    gauge has no predecessor (baseline, no rain) and a negative difference is
    a wrap (``_wrapped``) or a reset (the new value counts from zero, so the
    depth is the value). The tips are then scaled by the gauge's
    ``round(in_per_tip * 1e6)``.
    """
    missing = {"ts", "gauge"} - set(frame.columns)
    if missing:
        raise ValueError(f"readings lack column(s): {', '.join(sorted(missing))}")
    has_tips, has_precip = "tips_total" in frame.columns, "precip_in" in frame.columns
    if has_tips == has_precip:
        raise ValueError("readings need exactly one of the columns tips_total and precip_in")

    gauge, names = _gauge_codes(frame["gauge"])
    ts = _column_ms(frame["ts"])
    if has_tips:
        k1 = _integers(frame["tips_total"], "tips_total")
        if (k1 < 0).any():
            raise ValueError("tips_total must be >= 0")
        k2 = np.zeros_like(k1)
    else:
        precip = frame["precip_in"].to_numpy(dtype=np.float64)
        if not np.isfinite(precip).all():
            raise ValueError("precip_in has missing or non-finite values")
        k1 = (_integers(frame["seq"].fillna(-1), "seq") if "seq" in frame.columns
              else np.full(len(frame), -1, dtype=np.int64))
        # np.rint rounds half to even on the same float product: Python's round().
        k2 = np.rint(precip * MICRO_PER_IN).astype(np.int64)

    order = np.lexsort((k2, k1, ts, gauge))
    gauge, ts, k1, k2 = gauge[order], ts[order], k1[order], k2[order]
    first_of_gauge = np.ones(gauge.size, dtype=np.bool_)
    first_of_gauge[1:] = gauge[1:] != gauge[:-1]
    keep = np.ones(gauge.size, dtype=np.bool_)
    keep[1:] = first_of_gauge[1:] | (ts[1:] != ts[:-1]) | (k1[1:] != k1[:-1]) | (k2[1:] != k2[:-1])
    gauge, ts, k1, k2, first_of_gauge = (
        gauge[keep], ts[keep], k1[keep], k2[keep], first_of_gauge[keep])

    if has_tips:
        present = np.zeros(names.size, dtype=np.bool_)
        present[gauge] = True
        per_tip = _micro_per_tip(names, present, in_per_tip)
        previous = np.concatenate(([np.int64(0)], k1[:-1]))
        tips = k1 - previous
        wrapped = _wrapped(previous, k1, gauge, names, counter_bits)
        tips = np.where(tips < 0, np.where(wrapped >= 0, wrapped, k1), tips)
        tips[first_of_gauge] = 0
        depth = tips * per_tip[gauge]
    else:
        depth = k2
    prev_ts = np.concatenate(([np.int64(0)], ts[:-1]))
    stale_ms = np.array([round(stale_minutes.get(str(name), DEFAULT_STALE_MINUTES) * 60_000)
                         for name in names], dtype=np.int64)
    revealed = (has_tips & ~first_of_gauge & (depth > 0)
                & (ts - prev_ts > stale_ms[gauge])).astype(np.bool_)
    evidence = np.where(revealed, prev_ts, ts).astype(np.int64)

    last_ts = np.zeros(names.size, dtype=np.int64)
    last_of_gauge = np.ones(gauge.size, dtype=np.bool_)
    last_of_gauge[:-1] = gauge[:-1] != gauge[1:]
    last_ts[gauge[last_of_gauge]] = ts[last_of_gauge]
    return _Readings(names, gauge, ts, depth, last_ts, evidence, revealed)


def _wrapped(before: Int64Array, after: Int64Array, gauge: Int64Array,
             names: npt.NDArray[np.object_], counter_bits: Mapping[str, int | None]
             ) -> Int64Array:
    """Tips across a counter wrap per row, -1 where the drop is not one (the fold's
    ``_across_wrap``: the first width that fits, in the fold's order)."""
    out = np.full(before.size, -1, dtype=np.int64)
    widths_of = [(given,) if (given := counter_bits.get(str(name))) else WRAP_BITS
                 for name in names]
    for position in range(max(len(w) for w in widths_of) if widths_of else 0):
        bits_per_gauge = np.array([w[position] if position < len(w) else 0 for w in widths_of],
                                  dtype=np.int64)
        bits = bits_per_gauge[gauge]
        width = np.left_shift(np.int64(1), bits, dtype=np.int64)
        margin = width // WRAP_FRACTION_DIV
        fits = (bits > 0) & (out < 0) & (before >= width - margin) & (before < width) \
            & (after < margin)
        out = np.where(fits, after + width - before, out)
    return out


def _observations(r: _Readings) -> _Observations:
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


def _events(obs: _Observations, gap_ms: int) -> tuple[Int64Array, Int64Array, Int64Array]:
    """Segment observations into storm events: (first index, last index, event per index).

    An event is "a run of rain separated from the next by at least
    ``dry_gap_hours`` without any rain" (DESIGN § 4): a boundary wherever the
    gauge changes or consecutive rain is ``>= gap_ms`` apart. The event of
    each observation is a ``cumsum`` over the boundaries.
    """
    boundary = np.ones(obs.ts.size, dtype=np.bool_)
    boundary[1:] = (obs.gauge[1:] != obs.gauge[:-1]) | (obs.evidence[1:] - obs.ts[:-1] >= gap_ms)
    start = np.flatnonzero(boundary).astype(np.int64)
    end = np.append(start[1:] - 1, obs.ts.size - 1).astype(np.int64)
    event_of = (np.cumsum(boundary) - 1).astype(np.int64)
    return start, end, event_of


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


def _qualifying(mode: str, threshold: int, obs: _Observations, event_total: Int64Array,
                event_24h: Int64Array, gauge_24h: Int64Array, before: Int64Array,
                window: Int64Array) -> BoolArray:
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
        return event_24h >= threshold
    if mode == "event_total":
        return event_total >= threshold
    if mode != "rolling_24h":
        raise ValueError(f"unknown rain mode {mode!r}")
    just_before = before - before[window]
    first_rain = np.ones(obs.ts.size, dtype=np.bool_)
    first_rain[1:] = obs.gauge[1:] != obs.gauge[:-1]
    return (gauge_24h >= threshold) & ((just_before < threshold) | first_rain)


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


def _gauge_codes(column: pd.Series) -> tuple[Int64Array, npt.NDArray[np.object_]]:
    """Gauge numbers that sort like the gauge names, and the names.

    Hashing half a million strings is the single largest cost of a backtest;
    a categorical column has done it already, so only its categories are
    factorised.
    """
    if column.isna().any():
        raise ValueError("gauge has missing values")
    if isinstance(column.dtype, pd.CategoricalDtype):
        renumber, names = pd.factorize(column.cat.categories.astype(str), sort=True)
        codes = renumber.astype(np.int64)[column.cat.codes.to_numpy()]
    else:
        raw, names = pd.factorize(column.astype(str), sort=True)
        codes = raw.astype(np.int64)
    return codes, np.asarray(names, dtype=object)


def _column_ms(ts: pd.Series) -> Int64Array:
    """Event times as integer ms; datetimes floored to the engine's millisecond clock."""
    if pd.api.types.is_datetime64_any_dtype(ts.dtype):
        if ts.isna().any():
            raise ValueError("ts has missing values")
        if isinstance(ts.dtype, pd.DatetimeTZDtype):
            ts = ts.dt.tz_convert("UTC").dt.tz_localize(None)
        ns = ts.to_numpy(dtype="datetime64[ns]").view(np.int64)
        return np.floor_divide(ns, 1_000_000).astype(np.int64)
    if not pd.api.types.is_numeric_dtype(ts.dtype):
        raise ValueError(f"ts must be datetime64 or integer milliseconds, not {ts.dtype}")
    return _integers(ts, "ts")


def _integers(values: pd.Series, name: str) -> Int64Array:
    """A column as int64, refusing missing or fractional values rather than guessing."""
    if values.isna().any():
        raise ValueError(f"{name} has missing values")
    if pd.api.types.is_integer_dtype(values.dtype):
        return values.to_numpy(dtype=np.int64)
    floats = values.to_numpy(dtype=np.float64)
    if not (np.isfinite(floats).all() and (floats == np.floor(floats)).all()):
        raise ValueError(f"{name} must hold integers")
    return floats.astype(np.int64)


def _micro_per_tip(names: npt.NDArray[np.object_], present: BoolArray,
                   in_per_tip: Mapping[str, float] | None) -> Int64Array:
    """``round(in_per_tip * 1e6)`` per gauge code, as ``GaugeFold.per_tip``.

    Only the gauges ``present`` in the rows need an entry (an unused category
    of a categorical column does not).
    """
    table = in_per_tip or {}
    missing = [str(name) for name in names[present] if name not in table]
    if missing:
        raise ValueError(f"in_per_tip lacks gauge(s): {', '.join(missing)}")
    return np.array([round(table[name] * MICRO_PER_IN) if name in table else 0
                     for name in names], dtype=np.int64)


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

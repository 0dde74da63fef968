"""Step 1 of the column-wise storm rule (``rain_columns.py``): rows into depths.

A backtest's rows come as a pandas frame in any order, with counters or
depths. The streaming fold (``rain.GaugeFold`` in a ``Timeline``) sees each
gauge's readings in its key order, drops a message delivered twice, turns a
counter into the tips since the previous one (a wrap counts on, a reset counts
from zero, the first counter is a baseline) and marks rain revealed after a
silence. ``readings_of`` does all of that with array operations, in integer
micro-inches exactly as the fold does, so that the later steps of
``rain_columns.py`` give the fold's very storm events. The column checks
(``_gauge_codes``, ``_column_ms``, ``_integers``, ``_micro_per_tip``) refuse
missing or fractional values rather than guessing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from ...config import SensorConfig
from ...contract.times import MS_PER_HOUR
from .rain import MICRO_PER_IN, MIN_WRAP_SPAN_MS, WRAP_BITS, WRAP_FRACTION_DIV

Int64Array = npt.NDArray[np.int64]
Float64Array = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: A gauge's ``stale_after_minutes`` when none is given (the sensor default).
DEFAULT_STALE_MINUTES = float(SensorConfig.model_fields["stale_after_minutes"].default)
#: A gauge's ``max_rate_in_per_hour`` when none is given (the sensor default).
DEFAULT_MAX_RATE = float(SensorConfig.model_fields["max_rate_in_per_hour"].default)


@dataclass(frozen=True, slots=True)
class Readings:
    """Rows in the fold's key order, duplicates dropped, with depths in micro-inches."""

    names: npt.NDArray[np.object_]  # gauge name (str) by gauge code
    gauge: Int64Array  # gauge code per row (codes sort like the names)
    ts: Int64Array  # event time, ms
    depth: Int64Array  # micro-inches; <= 0 is no rain
    last_ts: Int64Array  # newest reading per gauge code, ms
    evidence: Int64Array  # dry weather is known up to here, ms (``rain_columns.py``)
    revealed: BoolArray  # rain of unknown timing


@dataclass(frozen=True, slots=True)
class _Keys:
    """The fold's key of each row: gauge code, time, and ``(k0, k1, k2)``."""

    names: npt.NDArray[np.object_]
    gauge: Int64Array
    ts: Int64Array
    k0: Int64Array  # a counter's seq (-1 when absent), or -1
    k1: Int64Array  # tips_total, or seq (-1 when absent)
    k2: Int64Array  # 0, or the depth in micro-inches
    has_tips: bool

    def sorted_unique(self) -> tuple[_Keys, BoolArray]:
        """The rows in key order without the ``Timeline``'s duplicates (neighbours with
        equal keys), and where each gauge's rows begin."""
        order = np.lexsort((self.k2, self.k1, self.k0, self.ts, self.gauge))
        gauge, ts, k1, k2 = self.gauge[order], self.ts[order], self.k1[order], self.k2[order]
        k0 = self.k0[order]
        first_of_gauge = np.ones(gauge.size, dtype=np.bool_)
        first_of_gauge[1:] = gauge[1:] != gauge[:-1]
        keep = np.ones(gauge.size, dtype=np.bool_)
        keep[1:] = (first_of_gauge[1:] | (ts[1:] != ts[:-1]) | (k0[1:] != k0[:-1])
                    | (k1[1:] != k1[:-1]) | (k2[1:] != k2[:-1]))
        return (_Keys(self.names, gauge[keep], ts[keep], k0[keep], k1[keep], k2[keep],
                      self.has_tips), first_of_gauge[keep])


def readings_of(frame: pd.DataFrame, in_per_tip: Mapping[str, float] | None,
             stale_minutes: Mapping[str, float],
             counter_bits: Mapping[str, int | None],
             max_rate: Mapping[str, float] | None = None,
             active_from_ms: int | None = None) -> Readings:
    """Sort, de-duplicate and turn the rows into depths, the way the fold sees them.

    Sorting uses ``np.lexsort`` over the fold's key ``(gauge, ts, k0, k1, k2)``,
    with ``(k0, k1, k2) = (seq, tips_total, 0)`` for counters and ``(-1, seq,
    micro-inches)`` for depths (``seq`` is -1 when absent, as in
    ``GaugeFold.key``). The order matters beyond sorting time: two counters at
    one timestamp are applied in the order of their ``seq`` (a node rebooted
    within the second: 100 then 3 is a reset), else smallest first, which
    decides whether the pair reads as a reset.
    Neighbouring rows with equal keys are the ``Timeline``'s duplicates.

    Counter depths: a ``diff`` along the sorted rows, where the first row of a
    gauge has no predecessor (baseline, no rain) and a negative difference is
    a wrap (``_wrapped``, when its rain is within ``_wrap_limits``: the gauge's
    ``max_rate`` in inches per hour) or a reset (the new value counts from
    zero, so the depth is the value). The tips are then scaled by the gauge's
    ``round(in_per_tip * 1e6)``. A gauge's first row at or after
    ``active_from_ms`` is a baseline too when a row before it precedes it (a stray
    row from before the site began is no baseline for the site's own).
    """
    keys, first_of_gauge = _keys(frame).sorted_unique()
    names, gauge, ts = keys.names, keys.gauge, keys.ts
    prev_ts = np.concatenate(([np.int64(0)], ts[:-1]))
    if active_from_ms is not None:
        first_of_gauge = first_of_gauge | ((prev_ts < active_from_ms) & (ts >= active_from_ms))
    depth = (_counter_depths(keys, first_of_gauge, in_per_tip, counter_bits,
                             _wrap_limits(names, gauge, ts - prev_ts, max_rate or {}))
             if keys.has_tips else keys.k2)
    stale_ms = np.array([round(stale_minutes.get(str(name), DEFAULT_STALE_MINUTES) * 60_000)
                         for name in names], dtype=np.int64)
    revealed = (keys.has_tips & ~first_of_gauge & (depth > 0)
                & (ts - prev_ts > stale_ms[gauge])).astype(np.bool_)
    evidence = np.where(revealed, prev_ts, ts).astype(np.int64)

    last_ts = np.zeros(names.size, dtype=np.int64)
    last_of_gauge = np.ones(gauge.size, dtype=np.bool_)
    last_of_gauge[:-1] = gauge[:-1] != gauge[1:]
    last_ts[gauge[last_of_gauge]] = ts[last_of_gauge]
    return Readings(names, gauge, ts, depth, last_ts, evidence, revealed)


def _keys(frame: pd.DataFrame) -> _Keys:
    """The fold's key of every row, the columns checked (``ts``, ``gauge``, and exactly
    one of ``tips_total`` and ``precip_in``, with ``seq`` optional for either)."""
    missing = {"ts", "gauge"} - set(frame.columns)
    if missing:
        raise ValueError(f"readings lack column(s): {', '.join(sorted(missing))}")
    has_tips, has_precip = "tips_total" in frame.columns, "precip_in" in frame.columns
    if has_tips == has_precip:
        raise ValueError("readings need exactly one of the columns tips_total and precip_in")
    gauge, names = _gauge_codes(frame["gauge"])
    ts = _column_ms(frame["ts"])
    seq = (_integers(frame["seq"].fillna(-1), "seq") if "seq" in frame.columns
           else np.full(len(frame), -1, dtype=np.int64))
    if has_tips:
        k1 = _integers(frame["tips_total"], "tips_total")
        if (k1 < 0).any():
            raise ValueError("tips_total must be >= 0")
        return _Keys(names, gauge, ts, seq, k1, np.zeros_like(k1), True)
    precip = frame["precip_in"].to_numpy(dtype=np.float64)
    if not np.isfinite(precip).all():
        raise ValueError("precip_in has missing or non-finite values")
    # np.rint rounds half to even on the same float product: Python's round().
    return _Keys(names, gauge, ts, np.full(len(frame), -1, dtype=np.int64), seq,
                 np.rint(precip * MICRO_PER_IN).astype(np.int64), False)


def _counter_depths(keys: _Keys, first_of_gauge: BoolArray,
                    in_per_tip: Mapping[str, float] | None,
                    counter_bits: Mapping[str, int | None],
                    wrap_limits: Float64Array) -> Int64Array:
    """Micro-inches of each counter row: tips since the previous row of its gauge (across a
    wrap whose rain is within ``wrap_limits``, or from zero after a reset; none at a
    gauge's first row) times its tip."""
    present = np.zeros(keys.names.size, dtype=np.bool_)
    present[keys.gauge] = True
    per_tip = _micro_per_tip(keys.names, present, in_per_tip)
    previous = np.concatenate(([np.int64(0)], keys.k1[:-1]))
    tips = keys.k1 - previous
    wrapped = _wrapped(previous, keys.k1, keys.gauge, keys.names, counter_bits)
    wrapped = np.where((wrapped * per_tip[keys.gauge]).astype(np.float64) <= wrap_limits,
                       wrapped, -1)
    tips = np.where(tips < 0, np.where(wrapped >= 0, wrapped, keys.k1), tips)
    tips[first_of_gauge] = 0
    depth: Int64Array = tips * per_tip[keys.gauge]
    return depth


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


def _wrap_limits(names: npt.NDArray[np.object_], gauge: Int64Array, gap_ms: Int64Array,
                 max_rate: Mapping[str, float]) -> Float64Array:
    """The most rain (micro-inches) a wrap may imply at each row, ``gap_ms`` after the
    row before: the fold's ``rain.wrap_is_plausible``, the same float operations in the
    same order, so both decide alike to the last bit."""
    rate = np.array([max_rate.get(str(name), DEFAULT_MAX_RATE) for name in names],
                    dtype=np.float64)
    limits: Float64Array = (rate[gauge] * MICRO_PER_IN * np.maximum(gap_ms, MIN_WRAP_SPAN_MS)
                            / MS_PER_HOUR)
    return limits


# ----------------------------------------------------------------------------- columns


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

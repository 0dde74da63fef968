"""Backtest: the storm events of every gauge of a replay CSV, computed on whole columns.

A backtest reads the file with ``replay``'s own reader (``sources/filerows.py``:
the row rules of a message, event-time order, double tips and repeated
``seq`` judged in that order), so the two take the same rows and refuse the
same ones for the same reasons, per-tip exports included. The rain readings
of the configured gauges then go, as columns, to the column-wise storm rule
(``rules/rain/rain_columns.py``), which finds the streaming fold's very storm
events; like ``replay``, the storms are read at the newest input's time (an
inspection the day after the rain ends the storm). Storms only: turbidity,
sediment and inspection rows are read and checked, and leave only their time.
With ``gauges: mean`` the gauges are reported one by one (``replay`` also has
the mean's own storms).

What the column rule cannot take is refused (``BacktestInputError``, one
line, exit 2), never answered with "no storms": a gauge with counter rows
(``tips_total``) and depth rows (``precip_in``, per-tip rows) in one file
(``replay`` reads both), a file without a rain row of a configured gauge.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from ..config import Config, SiteConfig
from ..contract.inputs import Inspection, Reading
from ..contract.times import iso
from ..ingest.checks import NaiveZone
from ..rules.active import active_start_ms
from ..rules.rain.rain_columns import empty_events, storm_events
from ..sources.csvfile import CsvInputError
from ..sources.filerows import Rejects, read_whole
from ..sources.pertip import PerTipRows

#: The two rain forms of a row: a cumulative counter, or a depth since the previous row.
COUNTER, DEPTH = "tips_total", "precip_in"


class BacktestInputError(CsvInputError):
    """A file the column-wise storm rule cannot take (module docstring)."""


@dataclass
class BacktestResult:
    """``stormwatch backtest``: the storm events of every configured gauge in a CSV, and
    what the reader did not take (as ``ReplayResult`` has it)."""

    events: pd.DataFrame
    rows: int
    taken: int
    rejects: Rejects
    per_tip: PerTipRows


def backtest(config: Config, source: str | Path | IO[str], *, now_ms: int | None,
             zone: NaiveZone = None) -> BacktestResult:
    """The storm events of every gauge of a replay CSV (module docstring); ``now_ms`` and
    ``zone`` as ``replay`` takes them."""
    whole = read_whole(config, source, now_ms=now_ms, zone=zone)
    rain = _rain_rows(whole.inputs)
    if whole.inputs and rain.empty:
        raise BacktestInputError(
            f"{source}: no rain row of a configured gauge among the {len(whole.inputs)} "
            "rows taken: backtest finds storms only (replay reads the rest)")
    now = whole.inputs[-1].ts_ms if whole.inputs else None
    out = []
    for site in config.sites:
        mine = rain[rain["site"] == site.id]
        for form in (COUNTER, DEPTH):
            rows = mine[mine[COUNTER].notna() == (form == COUNTER)]
            if not rows.empty:
                out.append(_storms(site, form, rows, now))
    events = (pd.concat(out, ignore_index=True) if out
              else empty_events().assign(site=pd.Series([], dtype=str)))
    return BacktestResult(events, whole.rows, len(whole.inputs), whole.rejects, whole.per_tip)


def _rain_rows(inputs: list[Reading | Inspection]) -> pd.DataFrame:
    """The rain readings (every rain sensor is a gauge) as columns: site, gauge, time, and
    the counter (NaN for a depth), the depth and ``seq`` (-1: none). A gauge with rows
    of both forms is ``BacktestInputError``."""
    rain = [r for r in inputs if isinstance(r, Reading) and r.kind == "rain"]
    frame = pd.DataFrame({
        "site": pd.Categorical([r.site for r in rain]),
        "gauge": pd.Categorical([r.sensor for r in rain]),
        "ts": np.fromiter((r.ts_ms for r in rain), dtype=np.int64, count=len(rain)),
        COUNTER: np.fromiter((np.nan if r.tips_total is None else r.tips_total for r in rain),
                             dtype=np.float64, count=len(rain)),
        DEPTH: np.fromiter((r.precip_in or 0.0 for r in rain), dtype=np.float64,
                           count=len(rain)),
        "seq": np.fromiter((-1 if r.seq is None else r.seq for r in rain), dtype=np.int64,
                           count=len(rain))})
    forms = frame.assign(counter=frame[COUNTER].notna()).groupby(
        ["site", "gauge"], observed=True)["counter"].nunique()
    if (forms > 1).any():
        site, gauge = forms[forms > 1].index[0]
        raise BacktestInputError(
            f"gauge {gauge} of site {site} has counter rows (tips_total) and depth rows "
            "(precip_in, or a row per tip): backtest takes one form a gauge (replay reads both)")
    return frame


def _storms(site: SiteConfig, form: str, rows: pd.DataFrame, now_ms: int | None
            ) -> pd.DataFrame:
    """The storm events of one site's gauges of one form (``rain_columns.storm_events``)."""
    data = pd.DataFrame({"ts": rows["ts"].to_numpy(),
                         "gauge": rows["gauge"].cat.remove_unused_categories(),
                         form: rows[form].to_numpy()})
    if form == COUNTER:
        data[form] = data[form].astype(np.int64)
    data["seq"] = rows["seq"].to_numpy()  # orders rows of one instant, as the fold does
    gauges = site.gauges()
    events = storm_events(data, site.rain, {g.id: g.in_per_tip_value for g in gauges},
                          stale_after_minutes={g.id: g.reveal_after_minutes for g in gauges},
                          counter_bits={g.id: g.counter_bits for g in gauges},
                          max_rate_in_per_hour={g.id: g.max_rate_in_per_hour for g in gauges},
                          active_from_ms=active_start_ms(site), now=now_ms)
    events.insert(0, "site", site.id)
    return events


def event_rows(events: pd.DataFrame) -> list[dict[str, object]]:
    """The storm table as JSON-ready rows, times as the engine writes them (``iso``)."""
    out = []
    for row in events.itertuples(index=False):
        rec: dict[str, object] = {}
        for name, value in zip(events.columns, row, strict=True):
            if isinstance(value, pd.Timestamp):
                rec[name] = iso(value.value // 1_000_000)
            elif value is pd.NaT or (isinstance(value, float) and np.isnan(value)):
                rec[name] = None
            elif isinstance(value, np.bool_ | bool):
                rec[name] = bool(value)
            else:
                rec[name] = value.item() if isinstance(value, np.generic) else value
        out.append(rec)
    return out

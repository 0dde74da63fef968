"""Generated rain series (hypothesis).

Cases of the backtest's property: one to three gauges of bursts, drizzles over days,
counter resets and 16-bit wraps, split and redelivered messages, as a shuffled frame of
counters or depths, with the rules and the ``now`` to judge them by.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
from hypothesis import strategies as st

from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE, parse_iso

H = MS_PER_HOUR

MIN = MS_PER_MINUTE

T0 = parse_iso("2026-05-01T00:00:00Z")


def epoch_ms(ts: pd.Series) -> pd.Series:
    if pd.api.types.is_datetime64_any_dtype(ts.dtype):
        return (ts - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(1, unit="ms")
    return ts


def dry_minutes(gap_minutes: int) -> st.SearchStrategy[int]:
    """Dry spells around the boundaries that matter: the dry gap and the 24 h window.

    Spells a little shorter than the gap chain bursts into events longer than
    24 hours, where ``event_24h`` and ``event_total`` part ways.
    """
    return st.one_of(
        st.integers(1, 90), st.integers(gap_minutes - 3, gap_minutes + 3),
        st.integers(gap_minutes // 2, gap_minutes - 1), st.integers(1436, 1444),
        st.integers(gap_minutes + 4, 1500))


@dataclass(frozen=True)
class Case:
    frame: pd.DataFrame
    in_per_tip: dict[str, float]
    threshold_in: float
    dry_gap_hours: float
    now: int | None
    #: A wrap counts on only when its rain is within the gauge's rate.
    max_rate: dict[str, float]


@st.composite
def gauge_rows(draw: st.DrawFn, gauge: str, start: int, form: str, in_per_tip: float,
               gap_minutes: int) -> list[dict[str, Any]]:
    """One gauge: rain and dry spells on a one-minute grid.

    Bursts get 0..4 tips a minute (a downpour) or mostly none (a shower);
    drizzles drop a tip every half hour to three hours, for hours or days;
    dry spells are reported every minute, every few minutes or not at all (a
    silent node). Counter resets, redelivered rows and messages split within
    one timestamp are sprinkled in.
    """
    rows: list[dict[str, Any]] = []
    # Some counters start just below 2^16 and wrap like a 16-bit register.
    minute, counter_value, seq = 0, draw(st.one_of(st.integers(0, 50),
                                                   st.integers(65_480, 65_535))), 0
    # A node's counters carry a seq in the order it sent them (and a redelivered row its
    # own); a node that reboots within the second sends its reset at the same instant.
    counter_seq = form == "tips_total" and draw(st.booleans())

    def counter_row(ts: int, value: int) -> None:
        nonlocal seq
        rows.append({"ts": ts, "gauge": gauge, "tips_total": value,
                     **({"seq": seq} if counter_seq else {})})
        seq += 1

    def emit(m: int, tips: int, reset: bool = False, split: bool = False) -> None:
        nonlocal counter_value, seq
        ts = start + m * MIN
        if form == "tips_total":
            if reset:
                if counter_seq and draw(st.booleans()):
                    counter_row(ts, counter_value % 65_536)  # the last count before it
                counter_value = 0
            if split and tips >= 2:
                counter_row(ts, (counter_value + 1) % 65_536)
            counter_value += tips
            counter_row(ts, counter_value % 65_536)
        else:
            depth = tips * in_per_tip
            parts = [depth / 3, depth - depth / 3] if split else [depth]
            for part in parts:
                rows.append({"ts": ts, "gauge": gauge, "precip_in": part, "seq": seq})
                seq += 1

    intensity = draw(st.sampled_from([(0, 1, 2, 3, 4), (0, 0, 0, 0, 0, 1, 2)]))
    emit(0, 0)

    def dry_spell(minutes: int, every: int) -> None:
        nonlocal minute
        for m in range(1, minutes + 1):
            if every and m % every == 0:
                emit(minute + m, 0)
        minute += minutes

    for _ in range(draw(st.integers(1, 8))):
        if draw(st.integers(0, 3)) == 0:
            # A long drizzle: one tip every ``spacing`` minutes for hours or
            # days, one event whose trailing 24 h stays small.
            spacing = draw(st.sampled_from([30, 60, 90, 144, 180]))
            every = draw(st.sampled_from([7, 60, 0]))
            for _ in range(draw(st.integers(2, 40))):
                dry_spell(spacing - 1, every)
                minute += 1
                emit(minute, 1, reset=draw(st.integers(0, 30)) == 0)
        else:
            tips = draw(st.lists(st.sampled_from(intensity), min_size=1, max_size=40))
            for tip_count in tips:
                minute += 1
                emit(minute, tip_count, reset=draw(st.integers(0, 30)) == 0,
                     split=draw(st.integers(0, 8)) == 0)
        dry_spell(draw(dry_minutes(gap_minutes)), draw(st.sampled_from([1, 1, 7, 60, 0])))
    # Redeliveries: exact copies of a few rows.
    for index in draw(st.lists(st.integers(0, len(rows) - 1), max_size=3)):
        rows.append(dict(rows[index]))
    return rows


@st.composite
def cases(draw: st.DrawFn) -> Case:
    form = draw(st.sampled_from(["tips_total", "precip_in"]))
    gap = draw(st.sampled_from([6.0, 6.0, 4.0]))
    gauges = [f"rg{i}" for i in range(draw(st.integers(1, 3)))]
    in_per_tip = {g: draw(st.sampled_from([0.01, 0.2 / 25.4, 0.02])) for g in gauges}
    rows: list[dict[str, Any]] = []
    for g in gauges:
        start = T0 + draw(st.integers(0, 600)) * MIN + draw(st.sampled_from([0, 30_000, 1]))
        rows += draw(gauge_rows(g, start, form, in_per_tip[g], round(gap * 60)))
    frame = pd.DataFrame(rows)
    if form == "precip_in" and draw(st.booleans()):
        frame = frame.drop(columns="seq")

    # The backtest must not depend on row order; the fold gets time order.
    seed = draw(st.integers(0, 2**32 - 1))
    frame = frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    if draw(st.booleans()):
        frame["ts"] = pd.to_datetime(frame["ts"], unit="ms", utc=True)
    if draw(st.booleans()):
        # Categories in reverse order, one unused: events still come out by name.
        frame["gauge"] = pd.Categorical(frame["gauge"], categories=["rg9", *reversed(gauges)])
    last = int(epoch_ms(frame["ts"]).max())
    # ``now``: the newest reading (None), around the dry gap after it, or even
    # before it (events then end only through later readings of their gauge).
    late = draw(st.sampled_from([None, 0, -1, 1, 24 * 60, -24 * 60]))
    now = None if late is None else last + round(gap * H) + late * MIN
    # 1e-7 in rounds to a threshold of zero micro-inches: every rain reaches it.
    threshold = draw(st.sampled_from([0.5, 0.5, 0.2, 0.05, 0.01]))
    max_rate = {g: draw(st.sampled_from([4.0, 4.0, 0.5, 2.4, 40.0])) for g in gauges}
    return Case(frame, in_per_tip, threshold, gap, now, max_rate)

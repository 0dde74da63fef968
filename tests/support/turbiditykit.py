"""Turbidity in tests.

A pair of probes up- and downstream of an outfall, their readings every minute or every
ten minutes, a pair's fold and an engine fed with them, and their facts by type.
"""

from __future__ import annotations

from typing import Any

from monitor.config import SensorConfig, TurbidityPair
from monitor.contract.events import Fact
from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_MINUTE, parse_iso
from monitor.engine import Engine, Timeline
from monitor.rules.turbidity.turbidity import PairFold

from .util import SITE, site_config, ts

T0 = parse_iso("2026-05-01T12:00:00Z")

PAIR = TurbidityPair(id="outfall-1", upstream="tb-up", downstream="tb-down")

UP = SensorConfig(id="tb-up", kind="turbidity")

DOWN = SensorConfig(id="tb-down", kind="turbidity")


def at(minutes: float) -> int:
    return T0 + round(minutes * MS_PER_MINUTE)


def up(minutes: float, ntu: float) -> Reading:
    return Reading(site=SITE, sensor="tb-up", kind="turbidity", ts_ms=at(minutes), ntu=ntu)


def down(minutes: float, ntu: float) -> Reading:
    return Reading(site=SITE, sensor="tb-down", kind="turbidity", ts_ms=at(minutes), ntu=ntu)


def fold(pair: TurbidityPair = PAIR, upstream: SensorConfig = UP,
         downstream: SensorConfig = DOWN) -> PairFold:
    return PairFold(SITE, pair, upstream, downstream)


def run(f: PairFold, readings: list[Reading], now_minutes: float | None = None) -> list[Fact]:
    tl = Timeline(f)
    for r in readings:
        tl.insert(r)
    if now_minutes is not None:
        tl.advance_to(at(now_minutes))
    # The published ones: the unknown runs are internal (``unmonitored.py`` reads them).
    return sorted((f for f in tl.facts() if not f.type.startswith("_")), key=Fact.sort_key)


def of_type(facts: list[Fact], kind: str) -> list[Fact]:
    return [f for f in facts if f.type == kind]


def minutely(start: int, stop: int, up_ntu: float, down_ntu: float) -> list[Reading]:
    """Both probes every minute from ``start`` to ``stop`` minutes inclusive."""
    out = []
    for m in range(start, stop + 1):
        out += [up(m, up_ntu), down(m, down_ntu)]
    return out


def every_10(stop: int, up_ntu: float, down_ntu: float, dip_at: int | None = None
             ) -> list[Reading]:
    """Both probes every 10 minutes from 0 to ``stop`` minutes inclusive; at ``dip_at``
    the upstream probe reads 15 NTU (only 5 above downstream)."""
    out = []
    for m in range(0, stop + 1, 10):
        out += [up(m, 15.0 if m == dip_at else up_ntu), down(m, down_ntu)]
    return out


def probes(start: str, hours: float, *, up_off: tuple[str, str] | None = None,
           down_off: tuple[str, str] | None = None, down_ntu: dict[int, float] | None = None,
           up_ntu: float = 10.0) -> list[Reading]:
    """Both probes at 10 and 11 NTU and the gauge, every 5 minutes from ``start`` for
    ``hours``; a probe is silent from the first to the second time of ``*_off``;
    ``down_ntu`` overrides the downstream reading at the given times (ms)."""
    out = []
    first = ts(start)
    for i in range(round(hours * 12)):
        t = first + i * 5 * MS_PER_MINUTE
        out.append(Reading(SITE, "rg1", "rain", t, tips_total=0))
        if up_off is None or not ts(up_off[0]) <= t < ts(up_off[1]):
            out.append(Reading(SITE, "tb-up", "turbidity", t, ntu=up_ntu))
        if down_off is None or not ts(down_off[0]) <= t < ts(down_off[1]):
            out.append(Reading(SITE, "tb-down", "turbidity", t,
                               ntu=(down_ntu or {}).get(t, 11.0)))
    return out


def feed(items: list[Any], now_ms: int | None = None, **site: Any) -> Engine:
    eng = Engine(site_config(**site))
    for item in items:
        eng.apply(item)
    eng.tick(now_ms if now_ms is not None else max(i.ts_ms for i in items))
    return eng


#: An upstream probe that pegs at 400 NTU.
UP_400 = SensorConfig(id="tb-up", kind="turbidity", max_ntu=400)

#: The pair with suspect probes checked (10 NTU upstream above downstream).
SUSPECT = PAIR.model_copy(update={"suspect_delta_ntu": 10.0})

"""What the engine saw of one site after each reading, for the report's plots.

The site's journal is run through an engine of its own with its samplers
(``engine/series.py``), the same way the daemon ran it, so a plot shows
what the rules saw (the trap's fill after the median, the storm's running
total), never a recomputation that could contradict an alert.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...config import Config
from ...engine.core import Engine
from ...engine.series import ContrastSample, Sample, StormSample, TrapSample, attach
from ...host.rows import apply_row
from ...store import Store


@dataclass
class Series:
    """What the engine saw of one site after each reading (``engine/series.py``): the
    report plots these, so a plot shows exactly what the alerts were decided on."""

    storms: dict[str, list[StormSample]] = field(default_factory=dict)
    traps: dict[str, list[TrapSample]] = field(default_factory=dict)
    contrast: dict[str, list[ContrastSample]] = field(default_factory=dict)


def engine_series(config: Config, store: Store, site_id: str, lo: int, hi: int) -> Series:
    """The site's samples with event time in ``[lo, hi)``.

    The site's journal is run through an engine of its own from the start (the
    rules carry state: a storm's running total, the median of a trap, the
    last background), the same way the daemon ran it; the last sample of each
    series and instant wins (a late reading corrects what came before it).
    """
    engine = Engine(config)
    found: dict[tuple[str, str, int], Sample] = {}

    def keep(sample: Sample) -> None:
        if sample.site == site_id and lo <= sample.ts_ms < hi:
            name = (sample.gauge if isinstance(sample, StormSample) else
                    sample.trap if isinstance(sample, TrapSample) else sample.pair)
            found[(type(sample).__name__, name, sample.ts_ms)] = sample

    attach(engine, keep)
    seq = 0
    while rows := store.journal.after(seq, limit=5000):
        seq = rows[-1].seq
        for row in rows:
            if row.body.get("site") == site_id:
                apply_row(engine, row)
        engine.drain_settled()
    out = Series()
    for sample in sorted(found.values(), key=lambda s: s.ts_ms):
        if isinstance(sample, StormSample):
            out.storms.setdefault(sample.gauge, []).append(sample)
        elif isinstance(sample, TrapSample):
            out.traps.setdefault(sample.trap, []).append(sample)
        else:
            out.contrast.setdefault(sample.pair, []).append(sample)
    return out

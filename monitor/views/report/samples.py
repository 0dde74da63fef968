"""What the engine saw of one site after each reading, for the report's plots.

The site's journal is run through an engine of its own with its samplers
(``engine/series.py``), the same way the daemon ran it, so a plot shows
what the rules saw (the trap's fill after the median, the storm's running
total), never a recomputation that could contradict an alert.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TypeVar

from ...config import Config
from ...engine import ContrastSample, Engine, Sample, StormSample, TrapSample, attach
from ...host.rows import apply_row
from ...store import Store


@dataclass
class Series:
    """What the engine saw of one site after each reading (``engine/series.py``): the
    report plots these, so a plot shows exactly what the alerts were decided on."""

    storms: dict[str, list[StormSample]] = field(default_factory=dict)
    traps: dict[str, list[TrapSample]] = field(default_factory=dict)
    contrast: dict[str, list[ContrastSample]] = field(default_factory=dict)
    #: Each trap's last sample before the window (what the trap stood at when the
    #: period began, so a trap silent all period still shows its standing demand).
    trap_before: dict[str, TrapSample] = field(default_factory=dict)

    def since(self, ms: int) -> Series:
        """The samples at or after ``ms`` (a report's period, of a wider window)."""
        def cut(series: dict[str, list[S]]) -> dict[str, list[S]]:
            kept = {k: [x for x in xs if x.ts_ms >= ms] for k, xs in series.items()}
            return {k: xs for k, xs in kept.items() if xs}
        return replace(self, storms=cut(self.storms), traps=cut(self.traps),
                       contrast=cut(self.contrast))

    def trap_samples(self) -> dict[str, list[TrapSample]]:
        """Each trap's samples with the last one before the window first."""
        names = set(self.traps) | set(self.trap_before)
        return {t: ([self.trap_before[t]] if t in self.trap_before else [])
                + self.traps.get(t, []) for t in sorted(names)}


S = TypeVar("S", StormSample, TrapSample, ContrastSample)


def engine_series(config: Config, store: Store, site_id: str, lo: int, hi: int) -> Series:
    """The site's samples with event time in ``[lo, hi)``.

    The site's journal is run through an engine of its own from the start (the
    rules carry state: a storm's running total, the median of a trap, the
    last background), the same way the daemon ran it; the last sample of each
    series and instant wins (a late reading corrects what came before it).
    Each trap's last sample before ``lo`` is kept too (``Series.trap_before``).
    """
    engine = Engine(config)
    found: dict[tuple[str, str, int], Sample] = {}
    before: dict[str, TrapSample] = {}

    def keep(sample: Sample) -> None:
        if sample.site != site_id:
            return
        if isinstance(sample, TrapSample) and sample.ts_ms < lo:
            held = before.get(sample.trap)
            if held is None or held.ts_ms <= sample.ts_ms:
                before[sample.trap] = sample
        if lo <= sample.ts_ms < hi:
            name = (sample.gauge if isinstance(sample, StormSample) else
                    sample.trap if isinstance(sample, TrapSample) else sample.pair)
            found[(type(sample).__name__, name, sample.ts_ms)] = sample

    attach(engine, keep)
    seq = 0
    while rows := store.journal.after(seq, limit=5000, site=site_id):
        seq = rows[-1].seq
        for row in rows:
            if row.body.get("site") == site_id:
                apply_row(engine, row)
        engine.drain_settled()
    out = Series(trap_before=before)
    for sample in sorted(found.values(), key=lambda s: s.ts_ms):
        if isinstance(sample, StormSample):
            out.storms.setdefault(sample.gauge, []).append(sample)
        elif isinstance(sample, TrapSample):
            out.traps.setdefault(sample.trap, []).append(sample)
        else:
            out.contrast.setdefault(sample.pair, []).append(sample)
    return out

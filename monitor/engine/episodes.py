"""Turbidity episodes read back from their events, each with its peak (§ 134-8C).

    "Any land development activity shall not cause an increase in turbidity that
    will result in substantial visible contrast to natural conditions ..."
    — Chapter 134, § 134-8C

Theory of operation
-------------------
The pair rule (``turbidity.py``) says an episode ``exceeded`` once the
contrast has persisted ``sustain_minutes``, and ``cleared`` once it has stayed
below for ``clear_minutes``; both events carry the values of one reading (at
detection, at clearing), not the worst of the episode. A report of the
episode must give its peak: how bad it got. ``turbidity_episodes`` pairs each
``exceeded`` with its ``cleared`` (same pair and ``started_at``) and takes the
peak from the pair's contrast samples (``series.ContrastSample``: each
downstream reading as the rule evaluated it) between the episode's start and
its clearing (or ``until_ms`` while it is still open): ``episode_peak``.

The peak of a ``background`` episode is the reading with the largest increase
over background (``delta_ntu``; a reading without a usable background has no
increase and cannot be the peak); of an ``absolute`` episode, judged on the
downstream level alone, the reading with the highest downstream NTU. The
earliest such reading wins a tie. No sample in the span (the readings are
outside the samples given) gives no peak, never a made-up one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ..contract.events import Event, TurbidityContrast
from ..contract.times import parse_iso
from .series import ContrastSample


@dataclass(frozen=True, slots=True)
class TurbidityEpisode:
    """One ``exceeded`` episode of a pair: its start, when it was detected (and the
    values then), when it cleared (None: not by ``until_ms``), and its peak reading."""

    pair: str
    basis: str
    started_ms: int
    detected_ms: int
    detected: TurbidityContrast
    cleared_ms: int | None = None
    peak: ContrastSample | None = None


def episode_peak(samples: Iterable[ContrastSample], basis: str, from_ms: int,
                 until_ms: int) -> ContrastSample | None:
    """The peak reading of an episode of ``basis`` in ``[from_ms, until_ms]`` (module
    docstring), or None when no sample there can be one."""
    best: ContrastSample | None = None
    best_value = 0.0
    for s in sorted(samples, key=lambda s: s.ts_ms):
        if not from_ms <= s.ts_ms <= until_ms:
            continue
        value = s.downstream_ntu if basis == "absolute" else s.delta_ntu
        if value is not None and (best is None or value > best_value):
            best, best_value = s, value
    return best


def turbidity_episodes(events: Iterable[Event],
                       contrast: Mapping[str, Sequence[ContrastSample]],
                       until_ms: int) -> list[TurbidityEpisode]:
    """The episodes detected before ``until_ms``, in the order they started, with their
    clearing (if before ``until_ms``) and peak up to it; ``contrast`` holds each pair's
    samples."""
    found: dict[tuple[str, str], TurbidityEpisode] = {}
    for e in sorted(events, key=lambda e: e.at_ms):
        b = e.body
        if not isinstance(b, TurbidityContrast) or e.at_ms >= until_ms:
            continue
        key = (b.pair, b.started_at)
        if b.state == "exceeded":
            found.setdefault(key, TurbidityEpisode(b.pair, b.basis, parse_iso(b.started_at),
                                                   e.at_ms, b))
        elif key in found:
            found[key] = replace(found[key], cleared_ms=e.at_ms)
    out = []
    for ep in found.values():
        end = ep.cleared_ms if ep.cleared_ms is not None else until_ms - 1
        out.append(replace(ep, peak=episode_peak(contrast.get(ep.pair, ()), ep.basis,
                                                 ep.started_ms, end)))
    return sorted(out, key=lambda ep: (ep.started_ms, ep.pair))

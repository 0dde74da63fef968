"""Turbidity episodes read back with their peak (``engine/episodes.py``), by hand."""

from __future__ import annotations

from monitor.contract.events import TurbidityContrast
from monitor.contract.times import MS_PER_MINUTE, parse_iso
from monitor.engine.episodes import episode_peak, turbidity_episodes
from monitor.engine.series import ContrastSample

from ..support.util import contrast

T0 = parse_iso("2026-05-20T10:00:00Z")


def sample(minute: int, up: float | None, down: float, pair: str = "outfall-1") -> ContrastSample:
    ts = T0 + minute * MS_PER_MINUTE
    if up is None:
        return ContrastSample("s", pair, ts, down, False, None, None, None, None, None,
                              "exceeded", "absolute")
    return ContrastSample("s", pair, ts, down, True, up, down - up, 5.0, up + 5.0,
                          down - up > 5.0, "exceeded", "background")


def test_the_peak_is_the_largest_increase_inside_the_episode() -> None:
    # Before the start a larger increase (40) that is not the episode's; inside 6, 22, 30
    # (at minute 20, over an upstream of 10: Δ 20), 14; a reading without background.
    samples = [sample(-5, 5, 45), sample(0, 5, 11), sample(10, 5, 27), sample(20, 10, 30),
               sample(25, None, 60), sample(30, 5, 19)]
    peak = episode_peak(samples, "background", T0, T0 + 30 * MS_PER_MINUTE)
    assert peak is not None
    assert (peak.ts_ms, peak.delta_ntu, peak.downstream_ntu) == (
        T0 + 10 * MS_PER_MINUTE, 22, 27)
    # Absolute: the downstream level, the reading without background included.
    peak = episode_peak(samples, "absolute", T0, T0 + 30 * MS_PER_MINUTE)
    assert peak is not None and (peak.ts_ms, peak.downstream_ntu) == (
        T0 + 25 * MS_PER_MINUTE, 60)
    assert episode_peak(samples, "background", T0 + 40 * MS_PER_MINUTE,
                        T0 + 50 * MS_PER_MINUTE) is None


def test_episodes_pair_detection_clearing_and_peak() -> None:
    events = [contrast("2026-05-20T10:10:00Z", "exceeded", "2026-05-20T10:00:00Z"),
              contrast("2026-05-20T11:00:00Z", "cleared", "2026-05-20T10:00:00Z"),
              contrast("2026-05-20T12:10:00Z", "exceeded", "2026-05-20T12:00:00Z")]
    samples = [sample(0, 5, 12), sample(10, 5, 20), sample(20, 5, 33), sample(40, 5, 8),
               sample(90, 5, 50), sample(120, 5, 13), sample(130, 5, 25), sample(150, 5, 41)]
    until = parse_iso("2026-05-20T12:40:00Z")
    first, second = turbidity_episodes(events, {"outfall-1": samples}, until)
    assert (first.started_ms, first.detected_ms, first.cleared_ms) == (
        T0, parse_iso("2026-05-20T10:10:00Z"), parse_iso("2026-05-20T11:00:00Z"))
    assert isinstance(first.detected, TurbidityContrast) and first.detected.delta_ntu == 15.0
    assert first.peak is not None and (first.peak.ts_ms, first.peak.delta_ntu) == (
        T0 + 20 * MS_PER_MINUTE, 28)  # not the 45 at 11:30, after it cleared
    # Still open at 12:40: its peak so far, 36 at 12:30 (not the 45 before it started).
    assert second.cleared_ms is None
    assert second.peak is not None and (second.peak.ts_ms, second.peak.delta_ntu) == (
        T0 + 150 * MS_PER_MINUTE, 36)
    # Before the second was detected, only the first.
    (only,) = turbidity_episodes(events, {"outfall-1": samples}, parse_iso("2026-05-20T12:05:00Z"))
    assert only.started_ms == T0

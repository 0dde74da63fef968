"""The report's plots: inline PNG (matplotlib) of what the engine saw.

Each plot draws engine samples (``samples.py``) and asks the engine what to
draw of them (``engine/series.py``): the rain plot shows the gauges the
site's storms are judged on (the ``mean`` gauge under ``gauges: mean``), so
a plot never shows a storm the alerts did not see, nor hides one they did.
Each image has an alternative text saying what it shows, and is a block
``<figure>`` of its own captioned with the same words: the images were once
inline, one after another, so on paper they were the lines of one anonymous
paragraph, which the widows and orphans rule (two lines) would not break after
its first line; the section's heading was left alone on a page and each plot
took a page of its own.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from datetime import timedelta
from html import escape
from typing import Any

from ...config import SiteConfig
from ...contract.figures import depth_text
from ...contract.times import MS_PER_HOUR
from ...engine import (
    ContrastSample,
    StormSample,
    TrapSample,
    hourly_rain,
    judged_rain,
)
from ...rules.rain.sitestorms import MEAN_GAUGE
from .samples import Series
from .tables import LocalTime

#: A plot's size and resolution: wide and low, so that two, each with its caption,
#: share a printed page at a legible size (``style.py``), and sharp on paper.
PLOT_INCHES = (10.0, 3.4)
PLOT_DPI = 150


def plots_section(site: SiteConfig, series: Series, local: LocalTime, from_ms: int,
                  to_ms: int) -> str:
    """The plots of ``[from_ms, to_ms)``: rain (or that there was none), trap fill,
    turbidity; each time axis in local dates and times, the zone named under it."""
    axis = time_axis_words(local, from_ms, to_ms)
    parts = ["<h2>Plots</h2>", f"<p>Time axes: {escape(axis)}.</p>"]
    if series.storms:
        parts.append(_rain_plot(site, series.storms, local, axis))
    else:
        parts.append("<p><em>No rain gauge readings in the period.</em></p>")
    for plot in (_trap_plot(site, series.traps, local, axis),
                 _turbidity_plot(site, series.contrast, local, axis)):
        if plot is not None:
            parts.append(plot)
    return "".join(parts)


def _figure(fig: Any, words: str, axis: str) -> str:
    """The plot as an inline PNG in a ``<figure>`` captioned with what it shows (its
    alternative text too, with the time axis): printed, the two are never split."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=PLOT_DPI, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return (f'<figure class="plot"><img alt="{escape(f"{words}; time axis: {axis}")}" '
            f'src="data:image/png;base64,{data}"><figcaption>{escape(words)}.</figcaption>'
            "</figure>")


def time_axis_words(local: LocalTime, from_ms: int, to_ms: int) -> str:
    """What a plot's time axis is labelled: local date and time, and the zone."""
    return f"local date and time, {local.zone_words(from_ms, to_ms - 1)}"


def _axes(title: str, local: LocalTime, axis: str) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=PLOT_INCHES)
    ax.set_title(title)
    # Few enough ticks that two-line labels (date, time) never run into each other.
    locator = mdates.AutoDateLocator(tz=local.zone, minticks=3, maxticks=7)  # type: ignore[no-untyped-call]
    formatter = mdates.DateFormatter("%Y-%m-%d\n%H:%M", tz=local.zone)  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(formatter)
    ax.set_xlabel(axis)
    ax.grid(alpha=0.3)
    return fig, ax


def _rain_plot(site: SiteConfig, storms: dict[str, list[StormSample]], local: LocalTime,
               axis: str) -> str:
    """Hourly rain and the storm running total of each gauge the storms are judged on
    (``series.judged_rain``: under ``gauges: mean`` the mean of the live gauges, as the
    rule averaged them), against the threshold."""
    judged = judged_rain(site, storms)
    fig, ax = _axes(f"{site.name or site.id}: rainfall (in)", local, axis)
    width = 1 / 24 * 0.9 / max(len(judged), 1)
    for i, (gauge, samples) in enumerate(judged.items()):
        hours = hourly_rain(samples)
        offset = (i - (len(judged) - 1) / 2) * width
        ax.bar([local.dt(h + MS_PER_HOUR // 2) + timedelta(days=offset) for h, _ in hours],
               [inch for _, inch in hours], width=width, color=_BARS[i % len(_BARS)],
               label="hourly rain" + (f" ({_gauge_words(gauge)})" if len(storms) > 1 else ""))
        if any(s.in_event for s in samples):
            ax.step([local.dt(s.ts_ms) for s in samples],
                    [s.total_in if s.in_event else float("nan") for s in samples], where="post",
                    color="#d9534f", label="storm running total"
                    + (f" ({_gauge_words(gauge)})" if len(storms) > 1 else ""))
    ax.axhline(site.rain.threshold_in, color="#d9534f", linestyle="--",
               label=f"{site.rain.threshold_in:g} in (§ 134-9A(2))")
    ax.set_ylabel("inches")
    ax.legend(loc="best")
    return _figure(fig, _rain_words(site, judged), axis)


#: The bars of each gauge, side by side when a site's storms are judged on several.
_BARS = ("#4a90d9", "#9cc3ec", "#25598f")


def _gauge_words(gauge: str) -> str:
    return "mean of the live gauges" if gauge == MEAN_GAUGE else gauge


def _rain_words(site: SiteConfig, judged: Mapping[str, Sequence[StormSample]]) -> str:
    """The rain plot's alternative text: what it shows, and each gauge's highest total."""
    limit = site.rain.threshold_in
    tops = [f"{_gauge_words(g)} "
            + depth_text(max((s.total_in for s in xs if s.in_event), default=0.0), limit)
            for g, xs in judged.items()]
    return (f"Hourly rain and storm running total as the storm rule judged it "
            f"(gauges: {site.rain.gauges}); highest storm total: {', '.join(tops)}; "
            f"threshold {site.rain.threshold_in:g} in")


def _trap_plot(site: SiteConfig, traps: dict[str, list[TrapSample]],
               local: LocalTime, axis: str) -> str | None:
    """Each trap's fill of design volume after the median, as the trap alerts see it."""
    if not traps:
        return None
    fig, ax = _axes(f"{site.name or site.id}: sediment trap fill (% of design volume)", local,
                    axis)
    for tid, samples in traps.items():
        ax.plot([local.dt(s.ts_ms) for s in samples], [s.fill_fraction * 100 for s in samples],
                marker=".", label=tid)
    trap0 = site.traps[0]
    ax.axhline(trap0.warn_fraction * 100, color="orange", linestyle="--",
               label=f"{trap0.warn_fraction:.0%} warning")
    ax.axhline(trap0.cleanout_fraction * 100, color="#d9534f", linestyle="--",
               label=f"{trap0.cleanout_fraction:.0%} clean-out (§ 134-9A(1))")
    ax.set_ylabel("% full")
    ax.legend(loc="best")
    return _figure(fig, "Sediment trap fill of design volume after the median, against the "
                   "clean-out level", axis)


def _turbidity_plot(site: SiteConfig, contrast: dict[str, list[ContrastSample]],
                    local: LocalTime, axis: str) -> str | None:
    """Downstream minus its background, and the allowed increase, per pair; a reading
    without a usable background is a gap (the contrast is unknown there)."""
    if not contrast:
        return None
    fig, ax = _axes(f"{site.name or site.id}: downstream − upstream turbidity (NTU)", local,
                    axis)
    for pid, samples in contrast.items():
        xs = [local.dt(s.ts_ms) for s in samples]
        nan = float("nan")
        ax.plot(xs, [s.delta_ntu if s.delta_ntu is not None else nan for s in samples],
                marker=".", label=pid)
        ax.plot(xs, [s.limit_ntu if s.limit_ntu is not None else nan for s in samples],
                linestyle="--", color="#d9534f", label=f"{pid} allowed increase (§ 134-8C)")
        unknown = [x for x, s in zip(xs, samples, strict=True) if not s.background]
        if unknown:
            ax.plot(unknown, [0.0] * len(unknown), "x", color="#888",
                    label=f"{pid}: no background")
    ax.axhline(0, color="#888", linewidth=0.8)
    ax.set_ylabel("NTU")
    ax.legend(loc="best")
    return _figure(fig, "Turbidity downstream minus upstream and the allowed increase", axis)

"""``stormwatch report``: a compliance report with plots, as one HTML file (DESIGN § 6).

Reads the database read-only: events from ``EventLog.current`` (the
authoritative set) and the journal's readings for the plots. Every time is
shown in the site's own time zone; plots are inline PNG (matplotlib, Agg).
"""

from __future__ import annotations

import base64
import io
from collections import defaultdict
from collections.abc import Iterable
from datetime import date, datetime, time, timedelta
from html import escape
from pathlib import Path
from typing import Any

from .config import Config, SiteConfig
from .engine.times import MS_PER_HOUR, parse_iso
from .engine.traps import fill_fraction
from .host import db_path, open_store
from .store import Store

LAW = [
    ("§ 134-9A(2)", "… a qualified professional conduct site inspections and document the "
     "effectiveness of all erosion and sediment control practices every seven days and within "
     "24 hours of any storm event producing 0.5 inch of precipitation or more. Inspection "
     "reports shall be maintained in a site log book."),
    ("§ 134-9A(1)", "Sediment shall be removed from sediment traps or sediment ponds whenever "
     "their design capacity has been reduced by 50%."),
    ("§ 134-8C", "Any land development activity shall not cause an increase in turbidity that "
     "will result in substantial visible contrast to natural conditions in surface waters of "
     "the State of New York."),
]

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:70em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #bbb;padding:.25em .6em;text-align:left;font-size:.92em}
th{background:#eee} blockquote{color:#444;border-left:3px solid #bbb;margin-left:0;padding-left:1em}
.late,.exceeded,.overdue{color:#b00;font-weight:bold} .met{color:#070}
img{max-width:100%}
"""


def parse_bound(text: str, site: SiteConfig, *, end: bool) -> int:
    """``--from``/``--to``: a local date (inclusive: ``--to`` ends at the next midnight)
    or an ISO time with offset. Raises ValueError."""
    text = text.strip()
    if len(text) == 10:
        day = date.fromisoformat(text)
        if end:
            day += timedelta(days=1)
        return round(datetime.combine(day, time(0), tzinfo=site.zone).timestamp() * 1000)
    return parse_iso(text)


def _ms(text: str | None) -> int | None:
    return parse_iso(text) if text else None


class _Local:
    def __init__(self, site: SiteConfig) -> None:
        self.zone = site.zone

    def dt(self, ms: int) -> datetime:
        return datetime.fromtimestamp(ms / 1000, tz=self.zone)

    def __call__(self, value: int | str | None) -> str:
        if value is None or value == "":
            return "—"
        ms = value if isinstance(value, int) else parse_iso(value)
        return self.dt(ms).strftime("%Y-%m-%d %H:%M %Z")


def _table(headers: list[str], rows: list[list[str]], empty: str) -> str:
    """``rows`` hold already-escaped HTML cells."""
    if not rows:
        return f"<p><em>{escape(empty)}</em></p>"
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _outcome(text: str) -> str:
    return f'<span class="{escape(text)}">{escape(text)}</span>'


def _in(value: Any) -> str:
    return "—" if value is None else f"{float(value):.2f} in"


# --------------------------------------------------------------------------- data


def _readings(store: Store, site_id: str, lo: int, hi: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seq = 0
    while True:
        rows = store.journal.after(seq, limit=5000)
        if not rows:
            break
        seq = rows[-1].seq
        for row in rows:
            b = row.body
            if row.kind == "reading" and b.get("site") == site_id \
                    and lo <= int(b.get("ts_ms", -1)) < hi:
                out.append(b)
    out.sort(key=lambda b: int(b["ts_ms"]))
    return out


def _rain_increments(site: SiteConfig, readings: list[dict[str, Any]]
                     ) -> dict[str, list[tuple[int, float]]]:
    """Per gauge: (ts_ms, inches fallen since the gauge's previous reading)."""
    out: dict[str, list[tuple[int, float]]] = {}
    for gauge in site.gauges():
        series: list[tuple[int, float]] = []
        last_total: int | None = None
        seen_seq: set[int] = set()
        for b in readings:
            if b.get("sensor") != gauge.id or b.get("kind") != "rain":
                continue
            ts = int(b["ts_ms"])
            if b.get("tips_total") is not None:
                total = int(b["tips_total"])
                if last_total is not None and total >= last_total:
                    series.append((ts, (total - last_total) * gauge.in_per_tip_value))
                last_total = total
            elif b.get("precip_in") is not None:
                seq = b.get("seq")
                if seq is not None and seq in seen_seq:
                    continue
                if seq is not None:
                    seen_seq.add(int(seq))
                series.append((ts, float(b["precip_in"])))
        if series:
            out[gauge.id] = series
    return out


# --------------------------------------------------------------------------- plots


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="plot" src="data:image/png;base64,{data}">'


def _axes(title: str, local: _Local) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 3.6))
    ax.set_title(title)
    formatter = mdates.DateFormatter("%m-%d %H:%M", tz=local.zone)  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_formatter(formatter)
    fig.autofmt_xdate()
    ax.grid(alpha=0.3)
    return fig, ax


def _rain_plot(site: SiteConfig, incs: dict[str, list[tuple[int, float]]],
               storms: list[dict[str, Any]], local: _Local, hi: int) -> str:
    hourly: dict[int, list[float]] = defaultdict(list)
    for series in incs.values():
        per: dict[int, float] = defaultdict(float)
        for ts, inch in series:
            per[ts // MS_PER_HOUR * MS_PER_HOUR] += inch
        for hour, inch in per.items():
            hourly[hour].append(inch)
    label = "hourly rain" + (f" (mean of {len(incs)} gauges)" if len(incs) > 1 else "")
    fig, ax = _axes(f"{site.name or site.id}: rainfall (in)", local)
    hours = sorted(hourly)
    ax.bar([local.dt(h + MS_PER_HOUR // 2) for h in hours],
           [sum(hourly[h]) / len(hourly[h]) for h in hours],
           width=1 / 24 * 0.9, color="#4a90d9", label=label)
    merged = sorted((ts, inch / len(incs)) for series in incs.values() for ts, inch in series)
    for i, storm in enumerate(storms):
        start = _ms(storm.get("started_at"))
        if start is None:
            continue
        end = _ms(storm.get("ended_at")) or hi
        xs, ys, total = [local.dt(start)], [0.0], 0.0
        for ts, inch in merged:
            if start <= ts <= end:
                total += inch
                xs.append(local.dt(ts))
                ys.append(total)
        ax.step(xs, ys, where="post", color="#d9534f",
                label="storm cumulative" if i == 0 else None)
    ax.axhline(site.rain.threshold_in, color="#d9534f", linestyle="--",
               label=f"{site.rain.threshold_in:g} in (§ 134-9A(2))")
    ax.set_ylabel("inches")
    ax.legend(loc="best")
    return _png(fig)


def _trap_plot(site: SiteConfig, readings: list[dict[str, Any]], local: _Local) -> str | None:
    series: dict[str, list[tuple[int, float]]] = {}
    for trap in site.traps:
        sensor = site.sensor(trap.sensor)
        points = []
        for b in readings:
            if b.get("sensor") != trap.sensor:
                continue
            depth = b.get("depth_in")
            if depth is None and b.get("distance_in") is not None and sensor is not None \
                    and sensor.sensor_height_in is not None:
                depth = max(0.0, sensor.sensor_height_in - float(b["distance_in"]))
            if depth is not None:
                points.append((int(b["ts_ms"]), fill_fraction(trap, float(depth)) * 100))
        if points:
            series[trap.id] = points
    if not series:
        return None
    fig, ax = _axes(f"{site.name or site.id}: sediment trap fill (% of design volume)", local)
    for tid, points in series.items():
        ax.plot([local.dt(t) for t, _ in points], [f for _, f in points], marker=".", label=tid)
    trap0 = site.traps[0]
    ax.axhline(trap0.warn_fraction * 100, color="orange", linestyle="--",
               label=f"{trap0.warn_fraction:.0%} warning")
    ax.axhline(trap0.cleanout_fraction * 100, color="#d9534f", linestyle="--",
               label=f"{trap0.cleanout_fraction:.0%} clean-out (§ 134-9A(1))")
    ax.set_ylabel("% full")
    ax.legend(loc="best")
    return _png(fig)


def _turbidity_plot(site: SiteConfig, readings: list[dict[str, Any]],
                    local: _Local) -> str | None:
    series: dict[str, list[tuple[int, float]]] = {}
    for pair in site.turbidity_pairs:
        up: tuple[int, float] | None = None
        points = []
        for b in readings:
            if b.get("ntu") is None:
                continue
            if b.get("sensor") == pair.upstream:
                up = (int(b["ts_ms"]), float(b["ntu"]))
            elif b.get("sensor") == pair.downstream and up is not None:
                points.append((int(b["ts_ms"]), float(b["ntu"]) - up[1]))
        if points:
            series[pair.id] = points
    if not series:
        return None
    fig, ax = _axes(f"{site.name or site.id}: downstream − upstream turbidity (NTU)", local)
    for pid, points in series.items():
        ax.plot([local.dt(t) for t, _ in points], [d for _, d in points], marker=".", label=pid)
    ax.axhline(0, color="#888", linewidth=0.8)
    ax.set_ylabel("NTU")
    ax.legend(loc="best")
    return _png(fig)


# --------------------------------------------------------------------------- report


def _storms(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    by_id: dict[str, dict[str, Any]] = {}
    for e in events:
        if e["type"] in ("storm_started", "storm_qualified", "storm_ended"):
            s = by_id.setdefault(e["event_id"], {})
            s.update({k: v for k, v in e.items() if k not in ("type", "at", "id", "revision")})
            if e["type"] == "storm_qualified":
                s["qualified"] = True
    return sorted(by_id.values(), key=lambda s: s.get("started_at", ""))


def build_report(config: Config, site_id: str, from_ms: int, to_ms: int, now_ms: int) -> str:
    """The report for ``[from_ms, to_ms)`` as one HTML document."""
    site = config.site(site_id)
    if site is None:
        raise ValueError(f"unknown site {site_id!r}")
    local = _Local(site)
    title = f"Stormwater compliance report — {site.name or site.id}"
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
             f"<style>{CSS}</style></head><body><h1>{escape(title)}</h1>"]
    header = [("Site", f"{site.name or ''} ({site.id})"), ("Address", site.address or "—"),
              ("Condition", site.condition),
              ("Period", f"{local(from_ms)} to {local(to_ms)} (end exclusive)"),
              ("Time zone", site.timezone), ("Generated at", local(now_ms))]
    parts.append(_table(["", ""], [[escape(k), escape(v)] for k, v in header], ""))
    parts.append("<h2>The law</h2>" + "".join(
        f"<blockquote><strong>{escape(ref)}</strong> {escape(text)}</blockquote>"
        for ref, text in LAW))

    if not Path(db_path(config)).exists():
        parts.append("<h2>No data</h2><p>There is no data yet: the database "
                     f"{escape(str(db_path(config)))} does not exist.</p></body></html>")
        return "".join(parts)

    with open_store(config, readonly=True) as store:
        all_events = store.events.current(site.id)
        readings = _readings(store, site.id, from_ms, to_ms)

    def in_period(e: dict[str, Any]) -> bool:
        return from_ms <= parse_iso(e["at"]) < to_ms

    events = [e for e in all_events if in_period(e)]
    storms = []
    for s in _storms(all_events):
        start, end = _ms(s.get("started_at")), _ms(s.get("ended_at"))
        if start is not None and start < to_ms and (end is None or end >= from_ms):
            storms.append(s)
    closed = {e["clock_id"]: e for e in all_events if e["type"] == "clock_closed"}
    of = defaultdict(list)
    for e in events:
        of[e["type"]].append(e)

    storm_out: list[str] = []
    for s in storms:
        if not s.get("qualified"):
            storm_out.append("not qualified")
        elif s.get("informational") or not s.get("clock_id"):
            storm_out.append("informational")
        elif s["clock_id"] in closed:
            storm_out.append(str(closed[s["clock_id"]]["outcome"]))
        else:
            due = _ms(s.get("due"))
            storm_out.append("overdue" if due is not None and now_ms >= due else "open")
    routine = [e["outcome"] for e in of["clock_closed"] if e["clock"] == "routine"]
    summary = [
        ("Storms", f"{len(storms)} ({sum(1 for s in storms if s.get('qualified'))} qualified, "
                   f"≥ {site.rain.threshold_in:g} in)"),
        ("Storm inspections", f"{storm_out.count('met')} met, {storm_out.count('late')} late, "
                              f"{storm_out.count('open') + storm_out.count('overdue')} open "
                              f"({storm_out.count('overdue')} overdue)"),
        ("Routine inspections", f"{routine.count('met')} met, {routine.count('late')} late"),
        ("Trap clean-out demands", str(len(of["trap_cleanout_required"]))),
        ("Turbidity exceedances",
         str(sum(1 for e in of["turbidity_contrast"] if e.get("state") == "exceeded"))),
        ("Stale-sensor episodes", str(len(of["sensor_stale"]))),
    ]
    parts.append("<h2>Summary</h2>" + _table(
        ["Item", "Count"], [[escape(k), escape(v)] for k, v in summary], ""))

    rows = []
    for s, outcome in zip(storms, storm_out, strict=True):
        inspected = closed.get(s.get("clock_id") or "", {}).get("inspected_at")
        rows.append([escape(local(s.get("started_at"))), escape(local(s.get("ended_at"))),
                     escape(_in(s.get("total_in"))), escape(_in(s.get("max_24h_in"))),
                     escape(local(s.get("qualified_at"))), escape(local(s.get("due"))),
                     escape(local(inspected)), _outcome(outcome)])
    parts.append("<h2>Storms</h2>" + _table(
        ["Start", "End", "Total", "Max 24 h", "Qualified at", "Inspection due", "Inspected at",
         "Outcome"], rows, "No storms in the period."))

    rows = []
    for e in of["inspection_recorded"]:
        clocks = [f"{c} ({closed[c]['outcome']})" if c in closed else c for c in e["closes"]]
        rows.append([escape(local(e["inspected_at"])), escape(str(e["inspector"])),
                     escape(str(e["kind"])), escape(str(e.get("notes") or "")),
                     escape(", ".join(clocks) or "—")])
    parts.append("<h2>Inspections</h2>" + _table(
        ["Time", "Inspector", "Kind", "Notes", "Clocks closed"], rows,
        "No inspections recorded in the period."))

    rows = []
    for e in events:
        if e["type"] in ("trap_fill", "trap_cleanout_required", "trap_cleaned"):
            fill = (f"{e['fill_fraction']:.0%}" if "fill_fraction" in e
                    else f"{e['fill_before']:.0%} → {e['fill_after']:.0%}")
            rows.append([escape(local(e["at"])), escape(str(e["trap"])),
                         escape(e["type"].replace("_", " ")), escape(fill)])
    parts.append("<h2>Sediment traps</h2>" + _table(
        ["Time", "Trap", "Event", "Fill (of design volume)"], rows,
        "No trap events in the period."))

    rows = []
    for e in of["turbidity_contrast"]:
        rows.append([escape(local(e["at"])), escape(str(e["pair"])), _outcome(str(e["state"])),
                     escape(local(e.get("started_at"))), escape(f"{e['upstream_ntu']:g}"),
                     escape(f"{e['downstream_ntu']:g}"), escape(f"{e['delta_ntu']:g}"),
                     escape(f"{e['limit_ntu']:g}")])
    parts.append("<h2>Turbidity episodes</h2>" + _table(
        ["Time", "Pair", "State", "Episode start", "Upstream NTU", "Downstream NTU", "Δ NTU",
         "Limit Δ NTU"], rows, "No turbidity episodes in the period."))

    parts.append("<h2>Plots</h2>")
    incs = _rain_increments(site, readings)
    if incs:
        parts.append(_rain_plot(site, incs, storms, local, to_ms))
    else:
        parts.append("<p><em>No rain gauge readings in the period.</em></p>")
    for plot in (_trap_plot(site, readings, local), _turbidity_plot(site, readings, local)):
        if plot is not None:
            parts.append(plot)
    parts.append("</body></html>")
    return "".join(parts)

"""What the exporter writes: journal rows, engine state and events as InfluxDB points.

Theory of operation
-------------------
Raw measurements (``rain``, ``turbidity``, ``sediment``, ``sensor_status``,
``inspection``, and ``weather``: the forecast and reference inputs the weather
rules were given) are the journal rows themselves. The derived measurements
are engine state *after each reading* (a storm's running total, a trap's
smoothed fill, a pair's contrast), which the journal does not hold. The
exporter gets them from its own engine, the ``Replica``: an ``Engine``
restored from a snapshot at or before the exporter's cursor and fed the very
journal rows the daemon's engine was fed, in the same order. The engine is
deterministic and sans-I/O, so the replica's state after row *n* is the
daemon engine's state after row *n*, and a crash or an outage of InfluxDB
only delays the derived points: they are computed again from the journal.

The derived values come from the engine's own samplers (``engine/series.py``):
each step of a gauge, trap or pair rule gives a sample of the fold's state
after it, and ``sample_points`` writes it. A late reading re-runs its rule
from a checkpoint; the samples of that reading and of every later one come
again, with the same series and timestamps, so InfluxDB replaces them. The
report's plots use the very same samples: a plot and an alert cannot
disagree.

Identity (deploy/README.md, "InfluxDB and Grafana" and the idempotence of the exporter): every point
is
keyed by measurement, tags and the event time of what it describes, in ms.
Replaying a batch writes identical points; re-deriving after late data
writes the same keys with corrected values; the later write wins.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ...config import Config
from ...contract.events import (
    Event,
    GaugeDisagrees,
    ProbesSuspect,
    SensorFault,
    StormEnded,
    StormForecast,
    StormQualified,
    TrapCleanoutRequired,
    TurbidityContrast,
    TurbidityMonitored,
    TurbidityUnmonitored,
)
from ...contract.inputs import Forecast, ReferenceObservation, is_inspection_body
from ...contract.times import MS_PER_HOUR, MS_PER_MINUTE, iso
from ...engine import (
    Engine,
    OpenClock,
    Sample,
    SensorNow,
    SiteNow,
    StormSample,
    TrapSample,
    attach,
    judged_at,
    status_at,
    summarize,
)
from ...host.rows import WEATHER_KEY, apply_row
from ...host.window import JournalWindow
from ...rules.registry import KINDS
from ...rules.weather.weather import MM_PER_IN
from ...store import JournalRow, canonical
from .lineprotocol import FieldValue, Int, Point, raw_series

#: Measurement of each reading kind (deploy/README.md, "InfluxDB and Grafana"; ``sensor_status``
#: holds the ``{site}/{sensor}/status`` messages).
RAW_MEASUREMENTS = {**{kind: spec.measurement for kind, spec in KINDS.items()},
                    "status": "sensor_status"}
#: Payload fields that are integers by nature (the rest are written as floats).
INT_FIELDS = frozenset({"tips_total", "seq", "buffered", "dropped"})
#: Reading keys that are tags or the timestamp, not fields.
_NOT_FIELDS = frozenset({"site", "sensor", "kind", "ts_ms"})

_DIGITS = 6


# --------------------------------------------------------------------------- raw rows


def raw_points(row: JournalRow) -> list[Point]:
    """The points of one journal row: a reading or an inspection (ticks write nothing)."""
    body = row.body
    if row.kind == "reading":
        measurement = RAW_MEASUREMENTS.get(str(body.get("kind")))
        if measurement is None:
            return []
        fields: dict[str, FieldValue | None] = {}
        for key, value in body.items():
            if key in _NOT_FIELDS or value is None:
                continue
            if key in INT_FIELDS and isinstance(value, int) and not isinstance(value, bool):
                fields[key] = Int(value)
            elif isinstance(value, int | float) and not isinstance(value, bool):
                fields[key] = float(value)
        ts = int(body["ts_ms"])
        if row.received_ms is not None:
            # How late the reading arrived: buffered nodes and outages show here.
            fields["delay_s"] = round((row.received_ms - ts) / 1000, 3)
        return [Point.at(raw_series(measurement, str(body["site"]), str(body["sensor"])),
                         fields, ts)]
    if row.kind == "tick" and body.get(WEATHER_KEY):
        return weather_points(body)
    if row.kind == "inspection" and is_inspection_body(body):
        return [Point.make("inspection",
                           {"site": str(body["site"]), "kind": str(body.get("kind", "routine")),
                            "inspector": str(body["inspector"])},
                           {"recorded": True, "notes": _text(body.get("notes")),
                            "findings": _text(body.get("findings"))},
                           int(body["ts_ms"]))]
    return []


def weather_points(body: dict[str, Any]) -> list[Point]:
    """A journaled weather row as ``weather`` points (tags ``site``, ``source``:
    ``forecast`` with its ``grid``, or ``reference`` with its ``station``). A forecast:
    one point per interval at its start, its depth and its depth per hour (the rules
    spread an interval evenly over it), so a later issue for the same interval
    replaces it; an observation: ``precipitationLastHour``, left out when the station
    gave none (unknown, never 0), with ``known`` saying which."""
    site = str(body["site"])
    if body.get(WEATHER_KEY) == "forecast":
        forecast = Forecast.from_json(body)
        tags = {"site": site, "source": "forecast", "grid": forecast.grid}
        return [Point.make("weather", tags, {
            "precip_mm": round(mm, _DIGITS), "precip_in": round(mm / MM_PER_IN, _DIGITS),
            "precip_in_per_h": round(mm / MM_PER_IN * MS_PER_HOUR / (end - start), _DIGITS),
            "hours": round((end - start) / MS_PER_HOUR, 3), "issued_at": iso(forecast.ts_ms)},
            start) for start, end, mm in forecast.precip if end > start]
    obs = ReferenceObservation.from_json(body)
    mm = obs.precip_mm
    return [Point.make("weather", {"site": site, "source": "reference", "station": obs.station},
                       {"precip_last_hour_mm": None if mm is None else round(mm, _DIGITS),
                        "precip_last_hour_in": None if mm is None
                        else round(mm / MM_PER_IN, _DIGITS),
                        "known": mm is not None}, obs.ts_ms)]


def _text(value: Any) -> str | None:
    if isinstance(value, list):
        # Structured findings: one "practice: condition" phrase each.
        return "; ".join(f"{f.get('practice')}: {f.get('condition')}" if isinstance(f, dict)
                         else str(f) for f in value) or None
    return None if value is None else str(value)


# --------------------------------------------------------------------------- events


#: Event fields that name what an event is about; they are the ``event`` tags.
EVENT_SUBJECTS = ("gauge", "trap", "pair", "sensor", "clock_id", "inspector")


def event_points(event: Event, earlier: Iterable[Event] = ()) -> list[Point]:
    """The ``event`` points of one stored event revision (monitor/README.md, "Events", for
    annotations).

    Series: site, type and the event's subject (``EVENT_SUBJECTS``: the gauge,
    trap, pair, sensor, clock or inspector it is about); time: the event's
    ``at``; the event ``id`` is a field. Two events of one type about one
    subject at one instant are one fact, so this identifies an event as well
    as its id does, without a series per event: an id tag would add a series
    for every event ever raised (a flapping sensor raises thousands a year),
    which costs InfluxDB 1.x's in-memory index RAM on a Raspberry Pi and runs
    into its ``max-values-per-tag`` limit (100,000).

    A later revision at the same ``at`` replaces the point (``revision`` tells
    which one it is). When a correction moved ``at`` (a late reading made a
    storm qualify earlier), the earlier revisions' points stay at their old
    time: they are rewritten with ``current=false`` so dashboards that filter
    on ``current`` show only the authoritative one. A retraction is
    ``current=false, retracted=true``.
    """
    tags = _event_tags(event)
    title, text = describe(event)
    fields: dict[str, FieldValue | None] = {
        "id": event.id,
        "revision": Int(event.revision),
        "current": not event.retracted,
        "retracted": event.retracted,
        "title": title,
        "text": text,
        "json": canonical(event.to_json()),
    }
    fields.update(_event_numbers(event))
    points = [Point.make("event", tags, fields, event.at_ms)]
    here = Point.make("event", tags, {}, event.at_ms).identity
    retired: dict[tuple[str, int], Point] = {}
    for e in earlier:
        if e.revision >= event.revision:
            continue
        old = Point.make("event", _event_tags(e), {"current": False,
                                                   "superseded_by": Int(event.revision)},
                         e.at_ms)
        if old.identity != here:
            retired[old.identity] = old
    return points + list(retired.values())


def _event_numbers(event: Event) -> dict[str, FieldValue]:
    """The fields of monitor/README.md, "Events" a dashboard filters or sums on, as typed fields of
    their own: rain of unknown timing, the basis of a turbidity finding, a clean-out repeat,
    the reason of a sensor fault or of unmonitored turbidity, how long probes have been
    suspect."""
    body = event.body
    if isinstance(body, StormQualified | StormEnded):
        return {"uncertain_in": float(body.uncertain_in)}
    if isinstance(body, TurbidityContrast):
        return {"basis": body.basis}
    if isinstance(body, TrapCleanoutRequired):
        return {"repeat": Int(body.repeat)}
    if isinstance(body, SensorFault | TurbidityUnmonitored | TurbidityMonitored):
        return {"reason": body.reason}
    if isinstance(body, ProbesSuspect):
        return {"hours": float(body.hours)}
    if isinstance(body, StormForecast):
        return {"forecast_in": float(body.forecast_in)}
    if isinstance(body, GaugeDisagrees):
        return {"gauge_in": float(body.gauge_in), "reference_in": float(body.reference_in)}
    return {}


def _event_tags(event: Event) -> dict[str, str]:
    # Every type alike: the subject is whichever of its fields names one.
    body = event.body.to_json()
    tags = {"site": event.site, "type": event.type}
    tags.update({k: str(body[k]) for k in EVENT_SUBJECTS if body.get(k) is not None})
    return tags


def describe(event: Event) -> tuple[str, str]:
    """A short title and a one-line text for an annotation."""
    body = event.body.to_json()
    subject = next((str(body[k]) for k in ("gauge", "trap", "pair", "sensor", "clock",
                                           "inspector") if body.get(k) is not None), None)
    title = event.type.replace("_", " ") + (f" ({subject})" if subject else "")
    if event.retracted:
        title += " [retracted]"
    parts = [f"{k}={_show(v)}" for k, v in body.items()
             if k not in ("gauge", "trap", "pair", "sensor", "inspector")]
    if event.revision:
        parts.append(f"revision {event.revision}")
    return title, "; ".join(parts) or title


def _show(value: Any) -> str:
    if isinstance(value, list | dict):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


# --------------------------------------------------------------------------- derived series


def sample_points(sample: Sample) -> list[Point]:
    """The point of one engine sample (``engine/series.py``): ``storm``, ``trap`` or
    ``contrast``, keyed by site and gauge, trap or pair, at the reading's time."""
    if isinstance(sample, StormSample):
        fields: dict[str, FieldValue | None] = {
            "depth_in": sample.depth_in, "total_in": sample.total_in,
            "event_24h_in": sample.event_24h_in, "max_24h_in": sample.max_24h_in,
            "in_event": sample.in_event, "qualified": sample.qualified,
            "event_id": sample.event_id, "threshold_in": sample.threshold_in,
        }
        if sample.rolling_24h_in is not None:
            fields["rolling_24h_in"] = sample.rolling_24h_in
        return [Point.make("storm", {"site": sample.site, "gauge": sample.gauge}, fields,
                           sample.ts_ms)]
    if isinstance(sample, TrapSample):
        return [Point.make("trap", {"site": sample.site, "trap": sample.trap}, {
            "fill_fraction": sample.fill_fraction, "depth_in": sample.depth_in,
            "state": sample.state, "warn_fraction": sample.warn_fraction,
            "cleanout_fraction": sample.cleanout_fraction, "fault": sample.fault},
            sample.ts_ms)]
    fields = {"downstream_ntu": sample.downstream_ntu, "background": sample.background,
              "state": sample.state, "basis": sample.basis}
    if sample.background:
        fields.update({"upstream_ntu": sample.upstream_ntu, "delta_ntu": sample.delta_ntu,
                       "limit_ntu": sample.limit_ntu, "allowed_ntu": sample.allowed_ntu,
                       "exceeding": sample.exceeding})
    return [Point.make("contrast", {"site": sample.site, "pair": sample.pair}, fields,
                       sample.ts_ms)]


# --------------------------------------------------------------------------- the replica


class Replica:
    """An engine fed the journal in order, and the points of each row.

    ``apply(row)`` applies one journal row exactly as the daemon does
    (``host.apply_row``, its window onto the journal at that row) and returns
    its raw points and the derived points it caused: the engine's samplers
    (``engine/series.py``) report each step of its rules. ``position`` is the
    seq of the last row applied.
    """

    def __init__(self, config: Config, engine: Engine, position: int = 0,
                 window: JournalWindow | None = None) -> None:
        self.config = config
        self.engine = engine
        self.window = window
        self.position = position
        self._points: list[Point] | None = None
        attach(engine, self._sample)

    def skip(self, row: JournalRow) -> None:
        """Apply a row without deriving points (catching up to the cursor after a restore)."""
        self._apply(row)

    def apply(self, row: JournalRow) -> list[Point]:
        points = raw_points(row)
        self._points = points
        try:
            self._apply(row)
        finally:
            self._points = None
        return points

    def _sample(self, sample: Sample) -> None:
        if self._points is not None:
            self._points += sample_points(sample)

    def _apply(self, row: JournalRow) -> None:
        if self.window is not None:
            self.window.upto_seq = row.seq
        apply_row(self.engine, row)
        self.engine.drain_settled()
        self.position = row.seq


# --------------------------------------------------------------------------- wall-clock points


def minute_points(engine: Engine, config: Config, now_ms: int) -> list[Point]:
    """``clock``, ``health`` and ``site`` at the wall-clock minute of ``now_ms``.

    What ``stormwatch status`` shows, as points: one per open inspection
    clock (``hours_left`` counting down), one per sensor (stale, last seen,
    battery) and one summary per site for the fleet overview. Stamped on the
    minute, so writing a minute twice rewrites the same points. Every number
    is the engine's (``SiteNow``): which clocks are overdue, the next one due,
    the traps at clean-out level, the worst turbidity state.
    """
    minute = now_ms // MS_PER_MINUTE * MS_PER_MINUTE
    points: list[Point] = []
    for site in config.sites:
        summary = summarize(engine, site.id)
        # Clocks are judged in event time when that runs ahead (a demo), as status does.
        s = status_at(summary, judged_at(summary, now_ms))
        points += [_clock_point(site.id, c, minute) for c in s.open_clocks]
        points += [_health_point(site.id, sid, h, now_ms, minute) for sid, h in s.sensors.items()]
        points.append(_site_point(site.id, s, minute))
    return points


def _clock_point(site_id: str, c: OpenClock, minute: int) -> Point:
    left = c.hours_left
    # The permit the clock keeps, as a tag the officer's dashboard can group by (only at
    # a site that names its permits: the series of other sites stay as they were).
    tags = {"site": site_id, "clock": c.clock, "clock_id": c.clock_id,
            **({"permit": c.permit} if c.permit is not None else {})}
    return Point.make("clock", tags, {
        "hours_left": left,
        "due": iso(c.due_ms) if c.due_ms is not None else "",
        "started_at": iso(c.started_ms),
        "event_id": c.event_id or "",
        # The engine's rule (``clocks.is_overdue``), not the sign of a rounded hours_left:
        # a clock 10 s past due is overdue here as in the alert raised at due.
        "overdue": c.overdue,
    }, minute)


def _health_point(site_id: str, sensor_id: str, h: SensorNow, now_ms: int,
                  minute: int) -> Point:
    last_seen = h.last_seen_ms
    return Point.make("health", {"site": site_id, "sensor": sensor_id, "kind": h.kind}, {
        "stale": bool(h.stale),
        # ok / stale / unknown (an on_tip gauge without heartbeat_minutes).
        "health": h.health,
        "last_seen": iso(last_seen) if last_seen is not None else "",
        "minutes_since_seen": (round((now_ms - last_seen) / MS_PER_MINUTE, 2)
                               if last_seen is not None else None),
        "battery_v": h.battery_v,
    }, minute)


def _site_point(site_id: str, s: SiteNow, minute: int) -> Point:
    """The fleet overview's row of a site: its headline numbers, as the engine has them."""
    first = s.next_clock()
    fills = [t.fill_fraction for t in s.traps.values() if t.fill_fraction is not None]
    return Point.make("site", {"site": site_id}, {
        "open_clocks": Int(len(s.open_clocks)),
        "open_storm_clocks": Int(sum(c.clock == "storm" for c in s.open_clocks)),
        "overdue_clocks": Int(len(s.overdue_clocks())),
        "hours_left": first.hours_left if first is not None else None,
        "next_due": iso(first.due_ms) if first is not None and first.due_ms is not None else "",
        "last_inspection": (iso(s.last_inspection_ms) if s.last_inspection_ms is not None
                            else ""),
        "sensors": Int(len(s.sensors)),
        "stale_sensors": Int(sum(bool(h.stale) for h in s.sensors.values())),
        "trap_fill_max": max(fills) if fills else None,
        # A faulty trap keeps its last valid level in ``level``.
        "traps_cleanout": Int(len(s.traps_at("cleanout"))),
        "traps_fault": Int(sum(t.state == "fault" for t in s.traps.values())),
        "turbidity_state": s.worst_turbidity(),
        "turbidity_exceeded": Int(sum(p.state == "exceeded" for p in s.turbidity.values())),
    }, minute)

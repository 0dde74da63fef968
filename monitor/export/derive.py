"""What the exporter writes: journal rows, engine state and events as InfluxDB points.

Theory of operation
-------------------
Raw measurements (``rain``, ``turbidity``, ``sediment``, ``sensor_status``,
``inspection``) are the journal rows themselves. The derived measurements
are engine state *after each reading* (a storm's running total, a trap's
smoothed fill, a pair's contrast), which the journal does not hold. The
exporter gets them from its own engine, the ``Replica``: an ``Engine``
restored from a snapshot at or before the exporter's cursor and fed the very
journal rows the daemon's engine was fed, in the same order. The engine is
deterministic and sans-I/O, so the replica's state after row *n* is the
daemon engine's state after row *n*, and a crash or an outage of InfluxDB
only delays the derived points: they are computed again from the journal.

Reading the state "after a reading" must respect event time: the engine
keeps each rule as a timeline in the readings' own time order
(``engine/timeline.py``), and a late reading is *inserted*, changing the
state at every later position. The timeline reports every step it takes to
an *observer*, with the state before and after it: a reading appended at the
end is one step; a late one re-runs the fold from a checkpoint, and the
steps from the late reading on are reported again, so the points of that
reading and of every later one are derived again. They have the same series
and timestamps as before, so InfluxDB replaces them.

Each rule has a ``Deriver`` that reads the points out of its fold's state:
``before(state, reading)`` sees the state before the reading is folded (the
turbidity pair needs it, see ``PairDeriver``), ``after(state, reading, pre)``
the state after. Derivers read the folds' public state; the engine is not
changed for them.

Identity (DESIGN § 8 and the idempotence of the exporter): every point is
keyed by measurement, tags and the event time of what it describes, in ms.
Replaying a batch writes identical points; re-deriving after late data
writes the same keys with corrected values; the later write wins.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from typing import Any, Protocol, cast

from ..config import Config
from ..engine.core import Engine
from ..engine.events import EVENT_FIELDS
from ..engine.inputs import Reading
from ..engine.rain import GaugeFold, GaugeState
from ..engine.summary import site_status
from ..engine.times import MS_PER_MINUTE, parse_iso
from ..engine.traps import TrapFold, TrapState, trap_state
from ..engine.turbidity import E4_PER_MILLI, E4_PER_NTU, MILLI_PER_NTU, PairFold, PairState
from ..host import JournalWindow, apply_row
from ..store import JournalRow, canonical
from .lineprotocol import FieldValue, Int, Point, raw_series, series_key

#: Measurement of each reading kind (DESIGN § 8; ``sensor_status`` holds the
#: ``{site}/{sensor}/status`` messages).
RAW_MEASUREMENTS = {"rain": "rain", "turbidity": "turbidity", "sediment": "sediment",
                    "status": "sensor_status"}
#: Payload fields that are integers by nature (the rest are written as floats).
INT_FIELDS = frozenset({"tips_total", "seq", "buffered"})
#: Reading keys that are tags or the timestamp, not fields.
_NOT_FIELDS = frozenset({"site", "sensor", "kind", "ts_ms"})
#: Severity of a pair's state, for the site summary's worst state.
_TURBIDITY_ORDER = ("unknown", "ok", "pending", "clearing", "exceeded")

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
    if row.kind == "inspection":
        return [Point.make("inspection",
                           {"site": str(body["site"]), "kind": str(body.get("kind", "routine")),
                            "inspector": str(body["inspector"])},
                           {"recorded": True, "notes": _text(body.get("notes")),
                            "findings": _text(body.get("findings"))},
                           int(body["ts_ms"]))]
    return []


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


# --------------------------------------------------------------------------- events


#: Event fields that name what an event is about; they are the ``event`` tags.
EVENT_SUBJECTS = ("gauge", "trap", "pair", "sensor", "clock_id", "inspector")


def event_points(event: dict[str, Any], earlier: Iterable[dict[str, Any]] = ()) -> list[Point]:
    """The ``event`` points of one stored event revision (DESIGN § 5, for annotations).

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
    at = parse_iso(event["at"])
    tags = _event_tags(event)
    revision = int(event.get("revision", 0))
    retracted = bool(event.get("retracted", False))
    title, text = describe(event)
    points = [Point.make("event", tags, {
        "id": str(event["id"]),
        "revision": Int(revision),
        "current": not retracted,
        "retracted": retracted,
        "title": title,
        "text": text,
        "json": canonical(event),
    }, at)]
    here = Point.make("event", tags, {}, at).identity
    retired: dict[tuple[str, int], Point] = {}
    for e in earlier:
        if int(e.get("revision", 0)) >= revision:
            continue
        old = Point.make("event", _event_tags(e), {"current": False,
                                                   "superseded_by": Int(revision)},
                         parse_iso(e["at"]))
        if old.identity != here:
            retired[old.identity] = old
    return points + list(retired.values())


def _event_tags(event: dict[str, Any]) -> dict[str, str]:
    tags = {"site": str(event["site"]), "type": str(event["type"])}
    tags.update({k: str(event[k]) for k in EVENT_SUBJECTS if event.get(k) is not None})
    return tags


def describe(event: dict[str, Any]) -> tuple[str, str]:
    """A short title and a one-line text for an annotation."""
    kind = str(event["type"])
    subject = next((str(event[k]) for k in ("gauge", "trap", "pair", "sensor", "clock",
                                            "inspector") if event.get(k) is not None), None)
    title = kind.replace("_", " ") + (f" ({subject})" if subject else "")
    if event.get("retracted"):
        title += " [retracted]"
    own = EVENT_FIELDS.get(kind, ())
    parts = [f"{k}={_show(event[k])}" for k in own
             if k in event and k not in ("gauge", "trap", "pair", "sensor", "inspector")]
    if int(event.get("revision", 0)):
        parts.append(f"revision {event['revision']}")
    return title, "; ".join(parts) or title


def _show(value: Any) -> str:
    if isinstance(value, list | dict):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


# --------------------------------------------------------------------------- derivers


class Deriver(Protocol):
    """Points read from one timeline's fold state around one reading."""

    def before(self, state: Any, item: Reading) -> Any:
        """Called with the state before ``item`` is folded; the result goes to ``after``."""
        ...

    def after(self, state: Any, item: Reading, pre: Any) -> list[Point]:
        """Called with the state after ``item`` is folded."""
        ...


class GaugeDeriver:
    """``storm``: the gauge's open storm event after each rain reading.

    ``depth_in`` is the rain of the reading's instant (all readings of the
    gauge at that timestamp, so the point holds the sum when two arrive at
    once, as for the ``mean`` gauge); ``total_in`` the event's running total;
    ``event_24h_in`` the event's rain in the trailing 24 hours, the quantity the
    ``event_24h`` rule compares with ``threshold_in``; ``max_24h_in`` its
    maximum so far. Between events the totals are 0 and ``event_id`` is "".
    """

    def __init__(self, site: str, gauge: str, fold: GaugeFold) -> None:
        self.site, self.gauge, self.fold = site, gauge, fold
        self.series = series_key("storm", {"site": site, "gauge": gauge})

    def before(self, state: GaugeState, item: Reading) -> None:
        return None

    def after(self, state: GaugeState, item: Reading, pre: Any) -> list[Point]:
        fold, storm, ts = self.fold, state.storm, item.ts_ms
        units = fold.units
        depth = 0
        if storm is not None:
            # The window holds (ts, depth) of the event's rain in event order; the
            # readings at this instant are the last entries.
            for at, d in reversed(storm.window):
                if at != ts:
                    break
                depth += d
        fields: dict[str, FieldValue | None] = {
            "depth_in": round(depth / units, _DIGITS),
            "total_in": round(storm.total / units, _DIGITS) if storm else 0.0,
            "event_24h_in": round(storm.window_sum / units, _DIGITS) if storm else 0.0,
            "max_24h_in": round(storm.max24 / units, _DIGITS) if storm else 0.0,
            "in_event": storm is not None,
            "qualified": storm is not None and storm.qualified_at is not None,
            "event_id": fold.event_id(storm.started_at) if storm else "",
            "threshold_in": float(fold.rules.threshold_in),
        }
        if fold.mode == "rolling_24h":
            # The engine keeps the gauge's own trailing 24 h only in this mode.
            fields["rolling_24h_in"] = round(state.rolling_sum / units, _DIGITS)
        return [Point.at(self.series, fields, ts)]


class TrapDeriver:
    """``trap``: the smoothed fill of design volume after each sediment reading (§ 134-9A(1))."""

    def __init__(self, site: str, trap: str, fold: TrapFold) -> None:
        self.fold = fold
        self.series = series_key("trap", {"site": site, "trap": trap})

    def before(self, state: TrapState, item: Reading) -> None:
        return None

    def after(self, state: TrapState, item: Reading, pre: Any) -> list[Point]:
        if state.last_ts != item.ts_ms or state.last_fill is None \
                or state.last_depth_in is None:
            return []  # a reading without a usable depth changes nothing
        trap = self.fold.trap
        return [Point.at(self.series, {
            "fill_fraction": round(state.last_fill, _DIGITS),
            "depth_in": round(state.last_depth_in, 4),
            "state": trap_state(state.last_fill, trap),
            "warn_fraction": float(trap.warn_fraction),
            "cleanout_fraction": float(trap.cleanout_fraction),
        }, item.ts_ms)]


class PairDeriver:
    """``contrast``: each downstream reading compared with its background (§ 134-8C).

    The pair's fold keeps a downstream reading *pending* until no upstream
    reading nearer to it can still come (an input later than its time plus
    ``max_skew``), then evaluates it once, for good. That final evaluation is
    made inside the step of a later reading and only the last one is kept in
    the state, so ``before`` replays it on a copy: every pending reading this
    step will settle is evaluated one at a time, exactly as the step does.
    Until then ``after`` writes a provisional point for the newest pending
    reading, evaluated with the upstream readings known so far (what
    ``status`` shows); the final point has the same series and time and
    replaces it. (Older pending readings keep the provisional point written
    when they were the newest until their final one comes, a few minutes
    later in event time.)

    Fields: ``upstream_ntu``, ``downstream_ntu``, ``delta_ntu``, ``limit_ntu``
    (the pair's rule at that background), ``allowed_ntu`` (upstream + limit,
    the line the downstream probe must stay under), ``exceeding``, ``state``
    (the episode: ok, pending, exceeded, clearing; ``unknown`` without a
    background), ``background`` (whether one was found).
    """

    def __init__(self, site: str, pair: str, fold: PairFold) -> None:
        self.fold = fold
        self.series = series_key("contrast", {"site": site, "pair": pair})
        self.sensors = (fold.pair.upstream, fold.pair.downstream)

    def before(self, state: PairState, item: Reading) -> list[Point]:
        if item.sensor not in self.sensors or item.ntu is None:
            return []
        due = [p for p in state.pending if p[0] + self.fold.skew_ms < item.ts_ms]
        if not due:
            return []
        fold = self.fold
        scratch = fold.copy(state)
        points = []
        for entry in due:
            # ``advance`` evaluates the pending readings in order with the
            # upstream readings known; one entry at a time exposes each result.
            scratch.pending = deque([entry])
            fold.advance(scratch, entry[0], [])
            if scratch.last is not None:
                points.append(self._point(scratch.last, scratch.episode))
        return points

    def after(self, state: PairState, item: Reading, pre: list[Point] | None) -> list[Point]:
        if item.sensor not in self.sensors or item.ntu is None:
            return []
        points = list(pre or [])
        if state.pending:
            # Provisional: the newest pending reading as ``status`` shows it now.
            scratch = self.fold.copy(state)
            self.fold.advance(scratch, item.ts_ms, [])
            if scratch.last is not None:
                points.append(self._point(scratch.last, scratch.episode))
        return points

    def _point(self, last: tuple[int, int | None, int, int | None], episode: str) -> Point:
        t, up_m, down_m, limit_e4 = last
        fields: dict[str, FieldValue | None] = {"downstream_ntu": _ntu(down_m)}
        if up_m is None or limit_e4 is None:
            fields["background"] = False
            fields["state"] = "unknown" if episode == "ok" else episode
        else:
            limit = round(limit_e4 / E4_PER_NTU, 4)
            fields.update({
                "upstream_ntu": _ntu(up_m),
                "delta_ntu": _ntu(down_m - up_m),
                "limit_ntu": limit,
                "allowed_ntu": round(up_m / MILLI_PER_NTU + limit, 4),
                "exceeding": (down_m - up_m) * E4_PER_MILLI > limit_e4,
                "background": True,
                "state": episode,
            })
        return Point.at(self.series, fields, t)


def _ntu(milli: int) -> float:
    return round(milli / MILLI_PER_NTU, 3)


# --------------------------------------------------------------------------- the replica


class Replica:
    """An engine fed the journal in order, and the points of each row.

    ``apply(row)`` applies one journal row exactly as the daemon does
    (``daemon.apply_row``, its window onto the journal at that row) and returns
    its raw points and the derived points it caused: each timeline with a
    deriver reports its steps to the replica (``Observer`` of ``timeline.py``).
    ``position`` is the seq of the last row applied.
    """

    def __init__(self, config: Config, engine: Engine, position: int = 0,
                 window: JournalWindow | None = None) -> None:
        self.config = config
        self.engine = engine
        self.window = window
        self.position = position
        self._points: list[Point] | None = None
        for site_id, se in engine.sites.items():
            for gauge, tl in se.gauges.items():
                tl.observer = _Observe(self, GaugeDeriver(site_id, gauge,
                                                          cast(GaugeFold, tl.fold)))
            for trap, tl in se.traps.items():
                tl.observer = _Observe(self, TrapDeriver(site_id, trap, cast(TrapFold, tl.fold)))
            for pair, tl in se.pairs.items():
                tl.observer = _Observe(self, PairDeriver(site_id, pair, cast(PairFold, tl.fold)))

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

    def _apply(self, row: JournalRow) -> None:
        if self.window is not None:
            self.window.upto_seq = row.seq
        apply_row(self.engine, row)
        self.engine.drain_settled()
        self.position = row.seq


class _Observe:
    """A deriver as a timeline's observer, adding its points to the row being applied."""

    def __init__(self, replica: Replica, deriver: Deriver) -> None:
        self.replica = replica
        self.deriver = deriver

    def before(self, state: Any, item: Reading) -> Any:
        if self.replica._points is None:
            return None
        return self.deriver.before(state, item)

    def after(self, state: Any, item: Reading, pre: Any) -> None:
        points = self.replica._points
        if points is not None:
            points += self.deriver.after(state, item, pre)


# --------------------------------------------------------------------------- wall-clock points


def minute_points(engine: Engine, config: Config, now_ms: int) -> list[Point]:
    """``clock``, ``health`` and ``site`` at the wall-clock minute of ``now_ms``.

    What ``stormwatch status`` shows, as points: one per open inspection
    clock (``hours_left`` counting down), one per sensor (stale, last seen,
    battery) and one summary per site for the fleet overview. Stamped on the
    minute, so writing a minute twice rewrites the same points.
    """
    minute = now_ms // MS_PER_MINUTE * MS_PER_MINUTE
    points: list[Point] = []
    for site in config.sites:
        s = site_status(engine, site.id, now_ms)
        hours: list[float] = []
        next_due = ""
        storm_clocks = overdue = 0
        for c in s["open_clocks"]:
            left = c["hours_left"]
            points.append(Point.make("clock", {"site": site.id, "clock": c["clock"],
                                               "clock_id": c["clock_id"]}, {
                "hours_left": left,
                "due": c["due"] or "",
                "started_at": c["started_at"] or "",
                "event_id": c.get("event_id", ""),
                "overdue": left is not None and left < 0,
            }, minute))
            storm_clocks += c["clock"] == "storm"
            if left is not None:
                overdue += left < 0
                if not hours or left < min(hours):
                    next_due = c["due"] or ""
                hours.append(left)
        stale = 0
        for sensor_id, h in s["sensors"].items():
            stale += bool(h["stale"])
            last_seen = h["last_seen"]
            points.append(Point.make("health", {"site": site.id, "sensor": sensor_id,
                                                "kind": h["kind"]}, {
                "stale": bool(h["stale"]),
                "last_seen": last_seen or "",
                "minutes_since_seen": (round((now_ms - parse_iso(last_seen)) / MS_PER_MINUTE, 2)
                                       if last_seen else None),
                "battery_v": h["battery_v"],
            }, minute))
        fills = [t["fill_fraction"] for t in s["traps"].values() if t["fill_fraction"] is not None]
        states = [t["state"] for t in s["turbidity"].values()]
        worst = max(states, key=_TURBIDITY_ORDER.index, default="")
        points.append(Point.make("site", {"site": site.id}, {
            "open_clocks": Int(len(s["open_clocks"])),
            "open_storm_clocks": Int(storm_clocks),
            "overdue_clocks": Int(overdue),
            "hours_left": min(hours) if hours else None,
            "next_due": next_due,
            "last_inspection": s["last_inspection"] or "",
            "sensors": Int(len(s["sensors"])),
            "stale_sensors": Int(stale),
            "trap_fill_max": max(fills) if fills else None,
            "traps_cleanout": Int(sum(t["state"] == "cleanout" for t in s["traps"].values())),
            "turbidity_state": worst,
            "turbidity_exceeded": Int(sum(st == "exceeded" for st in states)),
        }, minute))
    return points

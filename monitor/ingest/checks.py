"""Input validation: MQTT payloads (sensors/README.md, "MQTT contract") and replay CSV rows
(README.md, "Commands").

Theory of operation
-------------------
Everything that enters stormwatch from outside passes through one of two entry
points and comes out as an engine input (``Reading`` or ``Inspection``) or as a
``Rejection`` naming one ``RejectReason``. Nothing raises: the ingest shell
counts, logs and dead-letters a rejection with the raw bytes (sensors/README.md, "MQTT contract",
"never crash, never silently drop").

``parse_message``  MQTT (``sources/parse.py``): size limit, topic, JSON, then the shared rules.
``parse_row``      replay CSV (``sources/csvfile.py``): cells to numbers, then the same
                   shared rules.

The shared rules are data: ``FIELD_RULES`` gives each numeric payload field its
type (integer or not), its physical range and the sensor kind it implies, and
``REQUIRED`` gives each message kind its alternative required forms; a sensor
kind's fields and forms are its rule family's (``monitor/rules/registry.py``). The
irregular parts sit beside the tables as code: timestamps (two forms, a time
window) and the topic/payload cross-checks. An inspection's rules (text
fields, corrective actions, the roster) are ``inspections.py``'s, on the
timestamp and window rules of this module.

Order of checks, so one message always gets the same reason:

1. where the input comes from, the cheap checks first: MQTT ``oversize``,
   ``bad_topic``, ``unknown_site``, ``unknown_sensor``, ``invalid_json``,
   ``topic_mismatch``; CSV ``missing_field`` (site, sensor), ``unknown_site``,
   ``unknown_sensor``;
2. ``wrong_kind`` wins over every per-field reason, because a message from a
   sensor of another kind says nothing about this one's values;
3. the first per-field reason in payload order (``bad_value``, ``not_finite``,
   ``negative_value``, ``impossible_value``);
4. ``missing_field``;
5. the timestamp: ``missing_field``, ``bad_timestamp``, ``no_timezone``,
   ``not_finite``, ``future_timestamp``, ``too_old`` (``TimeRule``: against what).

Deliberate leniencies (a node may add fields, sensors/README.md, "MQTT contract"): unknown keys are
ignored; JSON ``null`` and empty CSV cells are absent; integer fields accept a
number with no fractional part (``12.0``, as JSON Schema's "integer" does);
the node-health fields (``battery_v``, ``seq``, ``rssi_dbm``, ``uptime_s``,
``buffered``, ``dropped``) are accepted on any sensor message; measurement fields on a
``status`` topic are ignored rather than stored as a measurement of the wrong
message; payload fields on an ``inspection`` topic are ignored.

The replay CSV's rows are read in ``sources/csvfile.py`` with these same rules.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Final, Literal
from zoneinfo import ZoneInfo

from ..config import ID_PATTERN, Config
from ..contract.inputs import MessageKind, Reading, SensorKind
from ..contract.localtime import wall_time_ms
from ..contract.rejects import Rejection, RejectReason
from ..contract.times import MS_PER_DAY, MS_PER_MINUTE, iso_datetime
from ..rules.registry import KINDS

#: "at most 4 KiB" (sensors/README.md, "MQTT contract"), counted in bytes of the raw payload.
MAX_PAYLOAD_BYTES: Final = 4096
#: "more than 5 minutes in the future" is rejected (sensors/README.md, "MQTT contract"); exactly 5
#: is accepted.
FUTURE_TOLERANCE_MS: Final = 5 * MS_PER_MINUTE
#: 9999-12-31T23:59:59.999Z: later instants cannot be written as ISO 8601 by ``times.iso``.
MAX_TS_MS: Final = 253_402_300_799_999
#: The topic segment of field inspections, and the ``sensor`` cell of inspection rows.
INSPECTION: Final = "inspection"

ID_RE = re.compile(ID_PATTERN)


# --------------------------------------------------------------------------- the rule tables


@dataclass(frozen=True, slots=True)
class FieldRule:
    """How one numeric payload field of sensors/README.md, "MQTT contract" is checked.

    ``low``/``high`` bound the physically possible values (inclusive). A value
    below a ``low`` of 0 is ``negative_value``; anything else outside the range
    is ``impossible_value``. ``implies`` is the sensor kind the field belongs
    to, or None for the node-health fields any message may carry.
    """

    name: str
    integer: bool
    low: float
    high: float
    implies: str | None
    doc: str


#: The node-health fields any message may carry.
_COMMON = (
    FieldRule("battery_v", False, 0, 60.0, None, "node battery in volts"),
    FieldRule("seq", True, 0, 2**63 - 1, None,
              "per-sensor increasing message number; bounded by SQLite's INTEGER"),
    FieldRule("rssi_dbm", False, -200.0, 30.0, None, "received signal strength in dBm"),
    FieldRule("uptime_s", False, 0, 3_155_760_000.0, None, "node uptime in seconds (100 years)"),
    FieldRule("buffered", True, 0, 2**40, None, "readings the node holds while offline"),
    FieldRule("dropped", True, 0, 2**40, None,
              "readings the node dropped past its buffer bound, ever"),
)
#: Each sensor kind's fields, as its rule family declares them (``rules/registry.py``).
_RULES = tuple(FieldRule(f.name, f.integer, f.low, f.high, kind, f.doc)
               for kind, spec in KINDS.items() for f in spec.fields) + _COMMON

#: Every numeric payload field by name (sensors/README.md, "MQTT contract" table).
FIELD_RULES: Final[Mapping[str, FieldRule]] = {rule.name: rule for rule in _RULES}

#: Required fields by message kind: alternative forms, each a tuple of fields that
#: must all be present. The first field of a form is its measurement; when only
#: that is given, the rest are named as missing ("seq: required with precip_in").
REQUIRED: Final[Mapping[str, tuple[tuple[str, ...], ...]]] = {
    **{kind: spec.required for kind, spec in KINDS.items()}, "status": ()}


# --------------------------------------------------------------------------- shared rules


def show(value: object) -> str:
    """A value for a detail line, short enough that a hostile payload cannot flood logs."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_value(rule: FieldRule, value: object) -> int | float | Rejection:
    """One numeric field against its rule: the number to keep, or why not."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return Rejection(RejectReason.not_finite, f"{rule.name}: must be finite")
    # bool is an int subclass, and true/false is never a measurement.
    elif not isinstance(value, int) or isinstance(value, bool):
        return Rejection(RejectReason.bad_value,
                         f"{rule.name}: must be a number, got {show(value)}")
    if value < rule.low:
        if rule.low == 0:
            return Rejection(RejectReason.negative_value,
                             f"{rule.name}: must not be negative, got {show(value)}")
        return Rejection(RejectReason.impossible_value,
                         f"{rule.name}: below {rule.low:g}, got {show(value)}")
    if value > rule.high:
        return Rejection(RejectReason.impossible_value,
                         f"{rule.name}: above {rule.high:g}, got {show(value)}")
    if not rule.integer:
        # Bounds checked first: any int converts exactly enough; -0.0 + 0.0 is 0.0.
        return float(value) + 0.0
    if isinstance(value, float):
        if not value.is_integer():
            return Rejection(RejectReason.bad_value,
                             f"{rule.name}: must be an integer, got {show(value)}")
        return int(value)
    return value


def missing_field(kind: MessageKind, values: Mapping[str, object]) -> Rejection | None:
    """Whether ``values`` holds one complete required form of ``kind`` (``REQUIRED``)."""
    forms = REQUIRED[kind]
    if not forms:
        return None
    for form in forms:
        for name in form:
            if name not in values:
                break
        else:
            return None
    for form in forms:
        if form[0] in values:
            lacking = ", ".join(name for name in form if name not in values)
            return Rejection(RejectReason.missing_field, f"{lacking}: required with {form[0]}")
    wanted = " or ".join(form[0] for form in forms)
    return Rejection(RejectReason.missing_field, f"{wanted}: required for a {kind} message")


#: How a ``ts`` without an offset is read: in a zone, in its site's zone (``"site"``), or
#: not at all (``None``: refused ``no_timezone``; the daemon, a file without ``--timezone``).
NaiveZone = ZoneInfo | Literal["site"] | None


@dataclass(frozen=True, slots=True)
class TimeRule:
    """What an input's ``ts`` is judged against ("A file is not a stream",
    monitor/README.md): two references and a zone.

    ``now_ms``      a ``ts`` more than ``FUTURE_TOLERANCE_MS`` after it is
                    ``future_timestamp`` (None: not checked);
    ``late_ref_ms`` one more than the site's ``lateness_days`` before it is
                    ``too_old`` (None: not checked);
    ``zone``        how to read an ISO ``ts`` without an offset (``NaiveZone``).

    The daemon judges both bounds against its wall clock (``wall``). A file is
    read whole: the future against the wall clock at the time of the run, no
    lateness bound (it exists to bound a live daemon's memory); read in arrival
    order (``replay --arrival-order``), the lateness bound against the site's
    newest row so far.
    """

    now_ms: int | None
    late_ref_ms: int | None = None
    zone: NaiveZone = None

    @classmethod
    def wall(cls, now_ms: int) -> TimeRule:
        """The daemon's: both bounds against its wall clock, no naive times."""
        return cls(now_ms, now_ms)

    def zone_of(self, site: SiteIndex) -> ZoneInfo | None:
        return site.zone if self.zone == "site" else self.zone


def timestamp_ms(value: object, zone: ZoneInfo | None = None) -> int | Rejection:
    """``ts`` of the MQTT payloads in ms: ISO 8601 with ``Z``/``±hh:mm``, or Unix seconds (number).

    ISO text without an offset is read in ``zone`` (``localtime.wall_time_ms``);
    without one, or where the zone cannot place it, it is ``no_timezone``."""
    if value is None:
        return Rejection(RejectReason.missing_field, "ts: required")
    if isinstance(value, str):
        try:
            dt = iso_datetime(value)
            ms = round(dt.timestamp() * 1000) if dt.tzinfo is not None else \
                _naive_ms(value, dt, zone)
        except (ValueError, OverflowError):
            # fromisoformat's messages differ in shape and echo the input; one
            # short uniform line is easier to count.
            return Rejection(RejectReason.bad_timestamp,
                             f"ts: not ISO 8601 with an explicit offset: {show(value)}")
        if isinstance(ms, Rejection):
            return ms
        if not 0 <= ms <= MAX_TS_MS:
            return Rejection(RejectReason.bad_timestamp, f"ts: {show(value)} is before 1970")
        return ms
    if isinstance(value, float):
        if not math.isfinite(value):
            return Rejection(RejectReason.not_finite, "ts: must be finite")
    elif not isinstance(value, int) or isinstance(value, bool):
        return Rejection(RejectReason.bad_timestamp,
                         f"ts: must be ISO 8601 text or Unix seconds, got {show(value)}")
    # The range test comes before the multiplication: 1e308 * 1000 is inf.
    if not 0 <= value <= MAX_TS_MS / 1000:
        return Rejection(RejectReason.bad_timestamp,
                         f"ts: {show(value)} s is outside 1970..9999")
    return value * 1000 if isinstance(value, int) else round(value * 1000)


def _naive_ms(text: str, wall: datetime, zone: ZoneInfo | None) -> int | Rejection:
    """A ``ts`` without an offset: its instant in ``zone``, or ``no_timezone``. A date
    alone is no time of day (a daily total is not rain at midnight): ``bad_timestamp``."""
    try:
        date.fromisoformat(text.strip())
    except ValueError:
        pass
    else:
        raise ValueError("a date without a time")
    if zone is None:
        return Rejection(RejectReason.no_timezone,
                         f"ts: {show(text)} has no UTC offset (Z or +hh:mm)")
    ms = wall_time_ms(wall, zone)
    if isinstance(ms, str):
        when, why = (("comes twice", "the hour the clocks go back") if ms == "ambiguous"
                     else ("never comes", "the hour the clocks skip"))
        return Rejection(RejectReason.no_timezone,
                         f"ts: {show(text)} {when} in {zone.key} ({why}): give its offset")
    return ms


def time_window(ts_ms: int, lateness_ms: int, when: TimeRule) -> Rejection | None:
    """The admission time window around ``when``'s references; boundaries are accepted."""
    if when.now_ms is not None and ts_ms > when.now_ms + FUTURE_TOLERANCE_MS:
        ahead_ms = ts_ms - when.now_ms
        ahead = (f"{ahead_ms / 1000:.0f} s" if ahead_ms < MS_PER_DAY
                 else f"{ahead_ms / MS_PER_DAY:.2f} days")  # a typo'd year, a wrong clock
        return Rejection(RejectReason.future_timestamp,
                         f"ts: {ahead} after the reference time", ts_ms)
    ref_ms = when.late_ref_ms
    if ref_ms is not None and ts_ms < ref_ms - lateness_ms:
        return Rejection(RejectReason.too_old,
                         f"ts: {(ref_ms - ts_ms) / MS_PER_DAY:.2f} days before the reference "
                         f"time (lateness_days {lateness_ms / MS_PER_DAY:g})", ts_ms)
    return None


# --------------------------------------------------------------------------- config index


@dataclass(frozen=True, slots=True)
class SiteIndex:
    id: str
    lateness_ms: int
    kinds: dict[str, SensorKind]
    #: The qualified professionals: name -> credential ("" when none); empty: no roster.
    roster: dict[str, str]
    zone: ZoneInfo


_cache: tuple[Config, dict[str, SiteIndex]] | None = None


def site_index(config: Config) -> dict[str, SiteIndex]:
    """Site and sensor look-ups as dicts, built once per Config object.

    ``Config.site()`` and ``SiteConfig.sensor()`` scan lists; at ~500k rows per
    replay that scan would cost more than all the field checks together.
    """
    global _cache
    cached = _cache
    if cached is not None and cached[0] is config:
        return cached[1]
    index = {
        site.id: SiteIndex(site.id, round(site.lateness_days * MS_PER_DAY),
                           {s.id: s.kind for s in site.sensors},
                           {q.name: q.credential or "" for q in config.roster(site)},
                           site.zone)
        for site in config.sites
    }
    # Holding the Config keeps the identity test sound (no id reuse after GC).
    _cache = (config, index)
    return index


# --------------------------------------------------------------------------- one code path


def sensor_message(site: SiteIndex, sensor: str, kind: MessageKind, fields: Mapping[str, object],
                    when: TimeRule, require_seq: bool = True) -> Reading | Rejection:
    """The rules of sensors/README.md, "MQTT contract" for a reading (``kind`` = the sensor's) or a
    status message.

    ``require_seq=False`` (replay CSV) accepts ``precip_in`` without ``seq``:
    recorded series often carry a depth per interval and nothing else, and a
    file row cannot be redelivered, so (ts, depth) identifies it well enough.
    """
    sensor_kind = site.kinds[sensor]
    status = kind == "status"
    values: dict[str, int | float] = {}
    first: Rejection | None = None
    for name, raw in fields.items():
        rule = FIELD_RULES.get(name)
        if rule is None or raw is None:
            continue  # unknown fields are the node's business; null is absent
        if rule.implies is not None:
            if status:
                continue
            if rule.implies != sensor_kind:
                return Rejection(RejectReason.wrong_kind,
                                 f"{name}: a {rule.implies} field, but {sensor} is a "
                                 f"{sensor_kind} sensor")
        if first is None:
            checked = check_value(rule, raw)
            if isinstance(checked, Rejection):
                first = checked  # keep scanning: wrong_kind still takes precedence
            else:
                values[name] = checked
    if first is not None:
        return first
    missing = missing_field(kind, values)
    if missing is not None and not (not require_seq and kind == "rain" and "precip_in" in values):
        return missing
    ts_ms = timestamp_ms(fields.get("ts"), when.zone_of(site))
    if isinstance(ts_ms, Rejection):
        return ts_ms
    late = time_window(ts_ms, site.lateness_ms, when)
    if late is not None:
        return late
    return Reading(site=site.id, sensor=sensor, kind=kind, ts_ms=ts_ms,
                   **values)  # type: ignore[arg-type]  # keys are FIELD_RULES names

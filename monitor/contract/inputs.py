"""What goes into the engine: accepted readings, status messages and inspections, and
what the weather sources fetched (a forecast, reference observations: monitor/README.md, "Weather").

These are already validated by the shell (``monitor.ingest.checks``); the engine
trusts their types and ranges and looks only at event time (``ts_ms``).

Photos of an inspection (the field app) are named by SHA-256 only: the bytes are
kept under ``photos_dir`` (``monitor/store/photos.py``: ``photo_path``). A photo
of the fix of a corrective action that the inspection resolves has a caption
beginning ``resolves <action id>`` (``fix_caption``, ``fixed_action``), e.g.
``resolves ca-20261130t0915-1: new stakes at 2+40``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

#: Every sensor kind: the one list of them (sensors/README.md, "MQTT contract"); each
#: belongs to one rule family (``monitor/rules/registry.py`` declares its payload).
SensorKind = Literal["rain", "turbidity", "sediment", "snow"]
#: What a sensor's message is: a reading of its kind, or its node's ``status``.
MessageKind = Literal[SensorKind, "status"]
#: A corrective action proper, or routine maintenance (``CorrectiveAction``).
ActionKind = Literal["corrective", "maintenance"]


@dataclass(frozen=True, slots=True)
class Reading:
    """One sensor message. ``kind`` is the sensor's configured kind, or ``status``.

    Rain: ``tips_total`` (cumulative counter) or ``precip_in`` with ``seq``.
    Turbidity: ``ntu``. Sediment: ``depth_in`` or ``distance_in``. Snow: ``snow_in``.
    """

    site: str
    sensor: str
    kind: MessageKind
    ts_ms: int
    tips_total: int | None = None
    precip_in: float | None = None
    seq: int | None = None
    ntu: float | None = None
    temp_c: float | None = None
    depth_in: float | None = None
    distance_in: float | None = None
    snow_in: float | None = None
    battery_v: float | None = None
    rssi_dbm: float | None = None
    uptime_s: float | None = None
    buffered: int | None = None
    dropped: int | None = None

    def to_json(self) -> dict[str, object]:
        # Written out: the journal encodes every accepted reading with this.
        out: dict[str, object] = {"site": self.site, "sensor": self.sensor, "kind": self.kind,
                                  "ts_ms": self.ts_ms}
        for name in _OPTIONAL:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Reading:
        return cls(**data)  # type: ignore[arg-type]


_OPTIONAL = ("tips_total", "precip_in", "seq", "ntu", "temp_c", "depth_in", "distance_in",
             "snow_in", "battery_v", "rssi_dbm", "uptime_s", "buffered", "dropped")


@dataclass(frozen=True, slots=True)
class Finding:
    """What an inspection found at one practice: ``silt-fence-north: undermined at 2+40``."""

    practice: str
    condition: str


@dataclass(frozen=True, slots=True)
class CorrectiveAction:
    """A repair the inspection asks for, by ``due_ms`` (None: no date), closed by a
    later inspection that ``resolves`` its ``id``. ``kind`` ``maintenance`` is routine
    maintenance, which a permit may give a shorter deadline (EPA CGP 2022 Part
    2.1.4.b); written only when it is that, so every earlier row keeps its bytes."""

    id: str
    text: str
    due_ms: int | None = None
    kind: ActionKind = "corrective"

    def to_json(self) -> dict[str, Any]:
        """The journal's form (``due_ms``; ``kind`` only for maintenance)."""
        out: dict[str, Any] = {"id": self.id, "text": self.text, "due_ms": self.due_ms}
        if self.kind != "corrective":
            out["kind"] = self.kind
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CorrectiveAction:
        return cls(str(data["id"]), str(data["text"]), data.get("due_ms"),
                   data.get("kind", "corrective"))


#: The start of the caption of a photo showing the fix of a corrective action.
FIX_PREFIX = "resolves "


def fix_caption(action_id: str, text: str | None = None) -> str:
    """The caption of the photo of an action's fix: ``resolves <id>[: text]``."""
    return FIX_PREFIX + action_id + (f": {text}" if text else "")


def fixed_action(caption: str | None) -> str | None:
    """The action id a photo's caption says it shows the fix of, or None."""
    if not caption or not caption.startswith(FIX_PREFIX):
        return None
    return caption[len(FIX_PREFIX):].split(":", 1)[0].strip() or None


#: The longest camera text a photo keeps as ``taken_at_text``.
MAX_TIME_TEXT = 40


@dataclass(frozen=True, slots=True)
class Photo:
    """A photo of an inspection: its SHA-256, its EXIF time (ISO UTC) and position
    as read from the stored file, and the inspector's caption.

    ``taken_at_text`` is what the camera said when that was no plausible time
    (``9999:12:31 23:59:59``; ``taken_at`` is then None). It is written only
    when there is one, so the rows and events of every photo before it keep
    their bytes (the log book chain hashes them).
    """

    sha256: str
    taken_at: str | None = None
    lat: float | None = None
    lon: float | None = None
    caption: str | None = None
    taken_at_text: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"sha256": self.sha256, "taken_at": self.taken_at,
                                  "lat": self.lat, "lon": self.lon, "caption": self.caption}
        if self.taken_at_text is not None:
            out["taken_at_text"] = self.taken_at_text
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Photo:
        """A photo of a journal row, of this version or an older one (no
        ``taken_at_text``); a key a newer version added is passed over."""
        return cls(str(data["sha256"]), data.get("taken_at"), data.get("lat"),
                   data.get("lon"), data.get("caption"), data.get("taken_at_text"))


@dataclass(frozen=True, slots=True)
class Location:
    """Where the phone was when the inspection was recorded ("Use my location")."""

    lat: float
    lon: float
    accuracy_m: float | None = None

    def to_json(self) -> dict[str, object]:
        return {"lat": self.lat, "lon": self.lon, "accuracy_m": self.accuracy_m}


Via = Literal["web", "cli", "mqtt", "replay"]


@dataclass(frozen=True, slots=True)
class Inspection:
    """An inspection by the qualified professional (§ 134-9A(2)), at ``ts_ms``.

    ``inspector`` names who inspected (a joint inspection: every name, in
    ``inspectors``, joined with " & "); ``credentials`` is each one's credential
    from the roster when it was entered ("" for none). ``entered_ms`` is when it
    was entered (the journal's receipt), so one dated well before it is seen as
    backdated. ``kind`` is ``other`` for an inspection that closes no clock
    (someone not on the roster, a walk-through).
    """

    site: str
    inspector: str
    ts_ms: int
    kind: Literal["storm", "routine", "other"] = "routine"
    notes: str | None = None
    findings: tuple[Finding, ...] = ()
    inspectors: tuple[str, ...] = ()
    credentials: tuple[str, ...] = ()
    entered_ms: int | None = None
    corrective_actions: tuple[CorrectiveAction, ...] = ()
    resolves: tuple[str, ...] = ()
    photos: tuple[Photo, ...] = ()
    location: Location | None = None
    certified: bool | None = None
    via: Via | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return self.inspectors or (self.inspector,)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"site": self.site, "inspector": self.inspector,
                                  "ts_ms": self.ts_ms, "kind": self.kind}
        if self.notes is not None:
            out["notes"] = self.notes
        if self.findings:
            out["findings"] = [{"practice": f.practice, "condition": f.condition}
                               for f in self.findings]
        for name in ("inspectors", "credentials", "resolves"):
            if getattr(self, name):
                out[name] = list(getattr(self, name))
        if self.entered_ms is not None:
            out["entered_ms"] = self.entered_ms
        if self.corrective_actions:
            out["corrective_actions"] = [a.to_json() for a in self.corrective_actions]
        if self.photos:
            out["photos"] = [p.to_json() for p in self.photos]
        if self.location is not None:
            out["location"] = self.location.to_json()
        for name in ("certified", "via"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Inspection:
        findings = data.get("findings") or ()
        if isinstance(findings, str):
            # Journal rows from before findings were structured: one free-text finding.
            findings = [{"practice": "general", "condition": findings}]
        return cls(
            site=str(data["site"]), inspector=str(data["inspector"]), ts_ms=int(data["ts_ms"]),
            kind=data.get("kind", "routine"), notes=data.get("notes"),
            findings=tuple(Finding(str(f["practice"]), str(f["condition"])) for f in findings),
            inspectors=tuple(data.get("inspectors", ())),
            credentials=tuple(data.get("credentials", ())),
            entered_ms=data.get("entered_ms"),
            corrective_actions=tuple(CorrectiveAction.from_json(a)
                                     for a in data.get("corrective_actions", ())),
            resolves=tuple(data.get("resolves", ())),
            photos=tuple(Photo.from_json(p) for p in data.get("photos", ())),
            location=Location(**data["location"]) if data.get("location") else None,
            certified=data.get("certified"), via=data.get("via"))


@dataclass(frozen=True, slots=True)
class SiteClosure:
    """Final stabilization of a site at ``ts_ms`` (``stormwatch site close``), entered at
    ``entered_ms`` by ``by``: no routine clock runs from then on."""

    site: str
    ts_ms: int
    entered_ms: int | None = None
    by: str | None = None
    notes: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"site": self.site, "ts_ms": self.ts_ms, "closure": True}
        for name in ("entered_ms", "by", "notes"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SiteClosure:
        return cls(site=str(data["site"]), ts_ms=int(data["ts_ms"]),
                   entered_ms=data.get("entered_ms"), by=data.get("by"), notes=data.get("notes"))


#: The body keys of the inspection rows of the journal that are not inspections: a
#: site's closure, a shutdown or its end, a corrective action's step.
OTHER_PERSON_RECORDS: Final = ("closure", "shutdown", "action_step")


def is_inspection_body(body: Mapping[str, Any]) -> bool:
    """Whether a journal ``inspection`` row's body is an inspection (not one of
    ``OTHER_PERSON_RECORDS``, kept in the same rows)."""
    return not any(body.get(key) for key in OTHER_PERSON_RECORDS)


@dataclass(frozen=True, slots=True)
class ShutdownNotice:
    """A temporary shutdown of a site beginning at ``ts_ms`` with the written ``notice`` a
    permit asks for (``stormwatch site shutdown``), or its end (``resume``: soil
    disturbance restarts, ``stormwatch site resume``), entered at ``entered_ms`` by
    ``by``. Journaled as an inspection row whose body says ``shutdown``
    (``host/rows.py``)."""

    site: str
    ts_ms: int
    notice: str | None = None
    resume: bool = False
    entered_ms: int | None = None
    by: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"site": self.site, "ts_ms": self.ts_ms, "shutdown": True}
        if self.resume:
            out["resume"] = True
        for name in ("notice", "entered_ms", "by"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ShutdownNotice:
        return cls(site=str(data["site"]), ts_ms=int(data["ts_ms"]), notice=data.get("notice"),
                   resume=bool(data.get("resume", False)), entered_ms=data.get("entered_ms"),
                   by=data.get("by"))


#: The steps of a corrective action between the inspection that asked for it and the
#: one that verifies it (``resolves``): sent to the contractor, reported done.
StepKind = Literal["sent", "done"]
#: Who reports an action done through the contractor's link (no account, no name).
CONTRACTOR = "contractor"


@dataclass(frozen=True, slots=True)
class ActionStep:
    """One step of corrective action ``action_id`` at ``ts_ms`` (when it was entered):
    ``sent`` to the contractor by the qualified professional ``by`` (``to``: the
    address it was mailed to, None when the link was only shown), or ``done`` by
    ``by`` (a person, or ``CONTRACTOR`` through the link: ``via`` ``link``) with a
    ``note`` and ``photos``. ``text`` is the action's text when the step was taken,
    so the log book row reads on its own. Journaled as an inspection row whose
    body says ``action_step`` (``host/rows.py``)."""

    site: str
    action_id: str
    step: StepKind
    ts_ms: int
    by: str
    text: str = ""
    to: str | None = None
    note: str | None = None
    photos: tuple[Photo, ...] = ()
    via: str | None = None

    @property
    def key(self) -> tuple[str, str, int, str]:
        """One step per (action, step, time, who): a second with it is a redelivery."""
        return (self.action_id, self.step, self.ts_ms, self.by)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"site": self.site, "action_step": self.step,
                                  "action_id": self.action_id, "ts_ms": self.ts_ms,
                                  "by": self.by, "text": self.text}
        for name in ("to", "note", "via"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.photos:
            out["photos"] = [p.to_json() for p in self.photos]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ActionStep:
        step = data["action_step"]
        if step not in ("sent", "done"):
            raise ValueError(f"action_step: {step!r} is no step")
        return cls(site=str(data["site"]), action_id=str(data["action_id"]), step=step,
                   ts_ms=int(data["ts_ms"]), by=str(data["by"]), text=str(data.get("text", "")),
                   to=data.get("to"), note=data.get("note"),
                   photos=tuple(Photo.from_json(p) for p in data.get("photos", ())),
                   via=data.get("via"))


# --------------------------------------------------------------------------- weather


@dataclass(frozen=True, slots=True)
class Forecast:
    """One issue of a gridpoint forecast for a site, as the source gave it.

    ``precip`` holds (start ms, end ms, mm) of each ``quantitativePrecipitation``
    interval and ``probability`` (start ms, end ms, percent) of each
    ``probabilityOfPrecipitation`` interval, not merged: the intervals have mixed
    lengths (1 to 12 hours), and what fell *within* one is not known. ``grid`` is
    the gridpoint (``OKX/33,37``). ``ts_ms`` is the issue time (``updateTime``):
    one forecast is one issue, and the same issue fetched twice counts once.
    """

    site: str
    source: str
    grid: str
    ts_ms: int
    precip: tuple[tuple[int, int, float], ...] = ()
    probability: tuple[tuple[int, int, float], ...] = ()

    @property
    def key(self) -> tuple[str, int]:
        return (self.source, self.ts_ms)

    def to_json(self) -> dict[str, object]:
        return {"site": self.site, "forecast": self.source, "grid": self.grid,
                "ts_ms": self.ts_ms, "precip": [list(i) for i in self.precip],
                "probability": [list(i) for i in self.probability]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Forecast:
        return cls(site=str(data["site"]), source=str(data["forecast"]), grid=str(data["grid"]),
                   ts_ms=int(data["ts_ms"]),
                   precip=tuple((int(a), int(b), float(v)) for a, b, v in data["precip"]),
                   probability=tuple((int(a), int(b), float(v))
                                     for a, b, v in data["probability"]))


@dataclass(frozen=True, slots=True)
class ReferenceObservation:
    """One observation of a reference station: ``precip_mm`` fell in the hour before
    ``ts_ms`` (``precipitationLastHour``); None when the station did not say, which
    is unknown, never 0. Observations of one station within one clock hour describe
    that hour (the routine report and its specials): the largest known value holds.
    """

    site: str
    station: str
    ts_ms: int
    precip_mm: float | None

    def to_json(self) -> dict[str, object]:
        return {"site": self.site, "station": self.station, "ts_ms": self.ts_ms,
                "precip_mm": self.precip_mm}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReferenceObservation:
        mm = data.get("precip_mm")
        return cls(site=str(data["site"]), station=str(data["station"]),
                   ts_ms=int(data["ts_ms"]), precip_mm=None if mm is None else float(mm))


WeatherInput = Forecast | ReferenceObservation

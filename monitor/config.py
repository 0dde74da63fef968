"""The configuration's schema: the pydantic models the engine and the shell read.

Every default here is a default of DESIGN § 4, and the field names are the
contract of DESIGN § 7 (``config/example.yaml`` is the documented reference).
Reading the file (YAML, ``${ENV_VAR}``, secrets from ``*_file`` fields,
``STORMWATCH_*`` overrides, one error line per problem) is ``configfile.py``.

Checks that span several fields raise their problems located at the field a
user must edit (``sites.0.traps.1.side_slope``), not at the model that ran the
check. Cross-references within a site (pairs and traps naming sensors,
duplicate ids) are checked on the raw input even when another field of the
site is invalid, so one typo does not hide them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from .notify.routing import ROUTE_KEYS

ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"
Id = Annotated[str, Field(pattern=ID_PATTERN)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Fraction01 = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]

#: Conditions of § 134-7B(2) under which § 134-9A(2) inspections are required.
CLOCK_CONDITIONS = frozenset({"A", "B", "C"})

SENSOR_KINDS = ("rain", "turbidity", "sediment")

#: Prefix of the environment variables that override the file (DESIGN § 7).
ENV_PREFIX = "STORMWATCH_"

# A problem found by a check that spans fields: where (relative to the model
# that ran the check) and what.
Loc = tuple[str | int, ...]
Problem = tuple[Loc, str]


class Model(BaseModel):
    """Base for every configuration section: immutable, unknown keys rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _error_details(problems: Sequence[Problem], value: Any) -> list[InitErrorDetails]:
    return [InitErrorDetails(type=PydanticCustomError("config", message), loc=loc, input=value)
            for loc, message in problems]


def _raise_problems(title: str, problems: Sequence[Problem], value: Any) -> None:
    """Raise every problem at once, each at its own field.

    A ``ValidationError`` raised inside a validator keeps its locations, and
    pydantic nests them under the model's own location, so a trap's check can
    point at ``sites.0.traps.1.side_slope`` rather than at the whole trap.
    """
    if problems:
        raise ValidationError.from_exception_data(title, _error_details(problems, value))


def _combined(title: str, exc: ValidationError, problems: Sequence[Problem],
              value: Any) -> ValidationError:
    """Field errors from pydantic plus our own problems, as one error."""
    details = [InitErrorDetails(type=PydanticCustomError(e["type"], e["msg"]), loc=e["loc"],
                                input=e["input"])
               for e in exc.errors()]
    return ValidationError.from_exception_data(title, details + _error_details(problems, value))


# --------------------------------------------------------------------------- services


class TlsConfig(Model):
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    insecure: bool = False


class BrokerConfig(Model):
    host: str = "127.0.0.1"
    port: int = Field(default=1883, ge=1, le=65535)
    client_id: str = "stormwatch"
    topic_prefix: str = "stormwatch/v1"
    username: str | None = None
    password_file: str | None = None
    tls: TlsConfig | None = None
    keepalive_s: int = Field(default=60, ge=5)
    session_expiry_hours: float = Field(default=168.0, ge=0)
    subscribe: Literal["all", "sites"] = "all"


class InfluxConfig(Model):
    url: str = "http://127.0.0.1:8086"
    api: Literal["v1", "v2"] = "v2"
    org: str | None = None
    bucket: str | None = None
    token_file: str | None = None
    database: str | None = None
    retention_policy: str | None = None
    username: str | None = None
    password_file: str | None = None
    batch_size: int = Field(default=5000, ge=1)

    @model_validator(mode="after")
    def _api_fields(self) -> InfluxConfig:
        problems: list[Problem] = []
        if self.api == "v2" and not self.bucket:
            problems.append((("bucket",), "required for api v2"))
        if self.api == "v1" and not self.database:
            problems.append((("database",), "required for api v1"))
        _raise_problems(type(self).__name__, problems, self)
        return self


#: A notification tag: the name that connects routes to targets (``qp``, ``officer``).
Tag = Annotated[str, Field(pattern=ID_PATTERN)]


def _route_problems(data: Any) -> list[Problem]:
    """Route keys must name a § 5 event type (or one of its variants): a typo
    would otherwise silence an alert without a word. Read from the raw input,
    so a bad tag elsewhere in the routes does not hide a bad key."""
    routes = _as_mapping(data).get("routes")
    if not isinstance(routes, Mapping):
        return []
    return [(("routes", key), f"unknown event type {key!r} (one of: {', '.join(ROUTE_KEYS)})")
            for key in routes if key not in ROUTE_KEYS]


def _validate_reporting(cls: type[BaseModel], data: Any, handler: ModelWrapValidatorHandler[Any],
                        problems: Sequence[Problem]) -> Any:
    """Run the model's own validation and report ``problems`` found on the raw input
    with it, so one mistake does not hide another (check-config prints them all)."""
    try:
        model = handler(data)
    except ValidationError as exc:
        if not problems:
            raise
        raise _combined(cls.__name__, exc, problems, data) from None
    _raise_problems(cls.__name__, problems, data)
    return model


def _with_route_problems(cls: type[BaseModel], data: Any,
                         handler: ModelWrapValidatorHandler[Any]) -> Any:
    return _validate_reporting(cls, data, handler, _route_problems(data))


class NotifyTarget(Model):
    """One Apprise URL and the tags whose alerts it receives (none: every alert)."""

    url: str
    tags: list[Tag] = Field(default_factory=list)
    name: str | None = None


class NotifyConfig(Model):
    """Alert delivery (DESIGN § 7, ``monitor/notify``): targets, routes, retries, escalation."""

    targets: list[NotifyTarget] = Field(default_factory=list)
    config_file: str | None = None
    routes: dict[str, list[Tag]] = Field(default_factory=dict)
    grafana_url: str | None = None
    body_format: Literal["auto", "text", "markdown"] = "auto"
    poll_s: PositiveFloat = 1.0
    retry_initial_s: PositiveFloat = 30.0
    retry_max_s: PositiveFloat = 900.0
    retry_jitter: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] = 0.2
    escalate_to: Tag | None = "officer"
    escalate_after_attempts: int = Field(default=6, ge=1)
    escalate_after_minutes: PositiveFloat = 60.0
    give_up_after_hours: PositiveFloat = 72.0

    @model_validator(mode="wrap")
    @classmethod
    def _routes(cls, data: Any, handler: ModelWrapValidatorHandler[NotifyConfig]
                ) -> NotifyConfig:
        result: NotifyConfig = _with_route_problems(cls, data, handler)
        return result

    @model_validator(mode="after")
    def _retry(self) -> NotifyConfig:
        if self.retry_max_s < self.retry_initial_s:
            _raise_problems(type(self).__name__, [(
                ("retry_max_s",), f"must be at least retry_initial_s ({self.retry_initial_s:g})")],
                self)
        return self


class SiteNotify(Model):
    """A site's own routes: each listed event type replaces the global route."""

    routes: dict[str, list[Tag]] = Field(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _routes(cls, data: Any, handler: ModelWrapValidatorHandler[SiteNotify]) -> SiteNotify:
        result: SiteNotify = _with_route_problems(cls, data, handler)
        return result


# --------------------------------------------------------------------------- site rules


class RainRules(Model):
    """Storm detection and storm-clock parameters (DESIGN § 4, § 134-9A(2))."""

    # At least one tip of a 0.01 in gauge, and at least a minute of dry gap: smaller
    # values round to nothing in the engine's integer micro-inches and milliseconds.
    threshold_in: Annotated[float, Field(ge=0.01, allow_inf_nan=False)] = 0.5
    mode: Literal["event_24h", "event_total", "rolling_24h"] = "event_24h"
    dry_gap_hours: Annotated[float, Field(ge=1 / 60, allow_inf_nan=False)] = 6.0
    clock_start: Literal["qualified", "event_end"] = "qualified"
    gauges: Literal["any", "all", "mean"] = "any"
    inspect_within_hours: PositiveFloat = 24.0
    remind_before_hours: list[PositiveFloat] = Field(default_factory=lambda: [6.0, 1.0])
    overdue_repeat_hours: PositiveFloat = 4.0


#: Sensor fields that mean something for one kind only.
_KIND_FIELDS = {"in_per_tip": "rain", "max_ntu": "turbidity", "sensor_height_in": "sediment"}


class SensorConfig(Model):
    id: Id
    kind: Literal["rain", "turbidity", "sediment"]
    in_per_tip: PositiveFloat | None = None
    max_ntu: PositiveFloat | None = None
    sensor_height_in: PositiveFloat | None = None
    stale_after_minutes: PositiveFloat = 15.0
    battery_low_v: PositiveFloat | None = 3.5

    @model_validator(mode="after")
    def _kind_fields(self) -> SensorConfig:
        problems: list[Problem] = [
            ((name,), f"applies to {kind} sensors only, not to a {self.kind} sensor")
            for name, kind in _KIND_FIELDS.items()
            if kind != self.kind and getattr(self, name) is not None
        ]
        _raise_problems(type(self).__name__, problems, self)
        return self

    @property
    def max_ntu_value(self) -> float:
        """Full scale of a turbidity probe; readings at it are ``pegged``."""
        return self.max_ntu if self.max_ntu is not None else 1000.0

    @property
    def in_per_tip_value(self) -> float:
        """Depth of one bucket tip; 0.01 in is the common US gauge."""
        return self.in_per_tip if self.in_per_tip is not None else 0.01


class TurbidityPair(Model):
    """An upstream (background) and downstream probe compared for § 134-8C."""

    id: Id
    upstream: Id
    downstream: Id
    rule: Literal["wa-173-201a", "delta_ntu"] = "wa-173-201a"
    delta_ntu: PositiveFloat | None = None
    sustain_minutes: NonNegativeFloat = 10.0
    clear_minutes: NonNegativeFloat = 30.0
    max_skew_minutes: NonNegativeFloat = 10.0
    background_max_age_minutes: NonNegativeFloat = 60.0

    @model_validator(mode="after")
    def _rule_fields(self) -> TurbidityPair:
        problems: list[Problem] = []
        if self.rule == "delta_ntu" and self.delta_ntu is None:
            problems.append((("delta_ntu",), "required when rule is delta_ntu"))
        if self.rule != "delta_ntu" and self.delta_ntu is not None:
            problems.append((("delta_ntu",), f"applies to rule delta_ntu only, not to {self.rule}"))
        if self.upstream == self.downstream:
            problems.append((("downstream",), "must be a different sensor from upstream"))
        _raise_problems(type(self).__name__, problems, self)
        return self


#: The dimensions each trap shape is computed from (DESIGN § 4).
_SHAPE_FIELDS: dict[str, tuple[str, ...]] = {
    "rectangular": ("bottom_length_ft", "bottom_width_ft"),
    "trapezoidal": ("bottom_length_ft", "bottom_width_ft", "side_slope"),
    "cylindrical": ("diameter_ft",),
    "stage_storage": ("stage_storage",),
}
_DIMENSIONS = ("bottom_length_ft", "bottom_width_ft", "side_slope", "diameter_ft", "stage_storage")


class TrapConfig(Model):
    """A sediment trap or pond and its design capacity (§ 134-9A(1))."""

    id: Id
    sensor: Id
    shape: Literal["rectangular", "trapezoidal", "cylindrical", "stage_storage"]
    bottom_length_ft: PositiveFloat | None = None
    bottom_width_ft: PositiveFloat | None = None
    side_slope: NonNegativeFloat | None = None
    diameter_ft: PositiveFloat | None = None
    stage_storage: list[tuple[NonNegativeFloat, NonNegativeFloat]] | None = None
    design_depth_ft: PositiveFloat
    warn_fraction: Fraction01 = 0.4
    cleanout_fraction: Fraction01 = 0.5
    median_of: int = Field(default=5, ge=1, le=101)

    @model_validator(mode="after")
    def _geometry(self) -> TrapConfig:
        problems: list[Problem] = []
        needed = _SHAPE_FIELDS[self.shape]
        for name in _DIMENSIONS:
            given = getattr(self, name) is not None
            if name in needed and not given:
                problems.append(((name,), f"required for shape {self.shape}"))
            elif given and name not in needed:
                problems.append(((name,), f"does not apply to shape {self.shape}"))
        if self.stage_storage is not None and self.shape == "stage_storage":
            problems += _stage_storage_problems(self.stage_storage, self.design_depth_ft)
        if self.warn_fraction >= self.cleanout_fraction:
            problems.append((("warn_fraction",),
                             f"must be below cleanout_fraction ({self.cleanout_fraction:g})"))
        _raise_problems(type(self).__name__, problems, self)
        return self


def _stage_storage_problems(table: list[tuple[float, float]],
                            design_depth_ft: float) -> list[Problem]:
    """A depth→volume table must start at the trap bottom and rise strictly."""
    if len(table) < 2:
        return [(("stage_storage",), "needs at least two [depth_ft, volume_cf] rows")]
    problems: list[Problem] = []
    if table[0] != (0.0, 0.0):
        problems.append((("stage_storage", 0), "the first row must be [0, 0] (the trap bottom)"))
    for i in range(1, len(table)):
        (depth0, volume0), (depth, volume) = table[i - 1], table[i]
        if depth <= depth0:
            problems.append((("stage_storage", i), f"depth {depth:g} ft must be greater than "
                             f"the row before ({depth0:g})"))
        elif volume <= volume0:
            problems.append((("stage_storage", i), f"volume {volume:g} cf must be greater than "
                             f"the row before ({volume0:g})"))
    if design_depth_ft > table[-1][0]:
        problems.append((("design_depth_ft",), f"{design_depth_ft:g} ft lies beyond the "
                         f"stage_storage table (last row at {table[-1][0]:g} ft)"))
    return problems


class SiteConfig(Model):
    id: Id
    name: str | None = None
    address: str | None = None
    timezone: str = "UTC"
    condition: Literal["A", "B", "C", "none"] = "A"
    active_since: date | None = None
    routine_inspection_days: PositiveFloat = 7.0
    lateness_days: PositiveFloat = 7.0
    rain: RainRules = Field(default_factory=RainRules)
    sensors: list[SensorConfig] = Field(default_factory=list)
    turbidity_pairs: list[TurbidityPair] = Field(default_factory=list)
    traps: list[TrapConfig] = Field(default_factory=list)
    notify: SiteNotify = Field(default_factory=SiteNotify)

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
            # OSError: "America" names a directory of the tz database.
            raise ValueError(f"unknown time zone {value!r} (use an IANA name such as "
                             "America/New_York)") from exc
        return value

    @model_validator(mode="wrap")
    @classmethod
    def _references(cls, data: Any, handler: ModelWrapValidatorHandler[SiteConfig]) -> SiteConfig:
        site: SiteConfig = _validate_reporting(cls, data, handler,
                                               _site_reference_problems(_as_mapping(data)))
        return site

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @property
    def clocks_apply(self) -> bool:
        """§ 134-9A(2) inspections apply to Conditions A, B and C of § 134-7B(2)."""
        return self.condition in CLOCK_CONDITIONS

    def sensor(self, sensor_id: str) -> SensorConfig | None:
        for s in self.sensors:
            if s.id == sensor_id:
                return s
        return None

    def gauges(self) -> list[SensorConfig]:
        return [s for s in self.sensors if s.kind == "rain"]


# Cross-reference checks read the raw input, tolerating entries that field
# validation rejects (those are reported there, once).


def _as_mapping(data: Any) -> Mapping[str, Any]:
    if isinstance(data, BaseModel):
        return data.model_dump()
    return data if isinstance(data, Mapping) else {}


def _entries(value: Any) -> list[tuple[int, Mapping[str, Any]]]:
    """The mapping (or model) items of a raw list, as mappings, with their indices."""
    if not isinstance(value, list):
        return []
    return [(i, _as_mapping(item)) for i, item in enumerate(value)
            if isinstance(item, Mapping | BaseModel)]


def _duplicate_ids(section: str, entries: list[tuple[int, Mapping[str, Any]]]) -> list[Problem]:
    first: dict[str, int] = {}
    problems: list[Problem] = []
    for i, entry in entries:
        ident = entry.get("id")
        if not isinstance(ident, str):
            continue
        if ident in first:
            problems.append(((section, i, "id"),
                             f"duplicate id {ident!r} (also at {section}.{first[ident]})"))
        else:
            first[ident] = i
    return problems


def _site_reference_problems(site: Mapping[str, Any]) -> list[Problem]:
    """Duplicate ids, and pairs and traps that name a missing or wrong-kind sensor."""
    sensors = _entries(site.get("sensors"))
    pairs = _entries(site.get("turbidity_pairs"))
    traps = _entries(site.get("traps"))
    problems = (_duplicate_ids("sensors", sensors) + _duplicate_ids("turbidity_pairs", pairs)
                + _duplicate_ids("traps", traps))
    kinds: dict[str, Any] = {}
    for _, sensor in sensors:
        if isinstance(sensor.get("id"), str):
            kinds.setdefault(sensor["id"], sensor.get("kind"))
    wanted = [("turbidity_pairs", pairs, ("upstream", "downstream"), "turbidity"),
              ("traps", traps, ("sensor",), "sediment")]
    for section, entries, fields, kind in wanted:
        for i, entry in entries:
            for name in fields:
                message = _reference_problem(entry.get(name), kind, kinds)
                if message:
                    problems.append(((section, i, name), message))
    return problems


def _reference_problem(ref: Any, kind: str, kinds: Mapping[str, Any]) -> str | None:
    if not isinstance(ref, str):
        return None  # missing or not a string: field validation says so
    if ref not in kinds:
        choices = ", ".join(sorted(s for s, k in kinds.items() if k == kind)) or "none"
        return f"{ref!r} is not a sensor of this site (its {kind} sensors: {choices})"
    actual = kinds[ref]
    if actual == kind or actual not in SENSOR_KINDS:
        return None  # an invalid kind is reported on the sensor itself
    return f"{ref!r} is a {actual} sensor, not a {kind} sensor"


class DaemonConfig(Model):
    """How the daemon keeps its engine state on disk (``stormwatch run``)."""

    #: A snapshot is taken after this many seconds with new journal rows ...
    snapshot_every_s: PositiveFloat = 300.0
    #: ... or after this many rows, whichever comes first.
    snapshot_every_rows: int = Field(default=20_000, ge=1)
    #: After a failed snapshot, the next attempt waits this long (ingest goes on).
    snapshot_retry_s: PositiveFloat = 60.0


class Config(Model):
    broker: BrokerConfig = Field(default_factory=BrokerConfig)
    state_dir: str = "/var/lib/stormwatch"
    daemon: DaemonConfig = Field(default_factory=DaemonConfig)
    influx: InfluxConfig | None = None
    notify: NotifyConfig = Field(default_factory=NotifyConfig)
    log_format: Literal["text", "json"] = "text"
    sites: list[SiteConfig] = Field(min_length=1)

    @model_validator(mode="wrap")
    @classmethod
    def _unique_sites(cls, data: Any, handler: ModelWrapValidatorHandler[Config]) -> Config:
        config: Config = _validate_reporting(
            cls, data, handler, _duplicate_ids("sites", _entries(_as_mapping(data).get("sites"))))
        return config

    def site(self, site_id: str) -> SiteConfig | None:
        for s in self.sites:
            if s.id == site_id:
                return s
        return None

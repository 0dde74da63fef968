"""The configuration's schema: the pydantic models the engine and the shell read.

The rules' parameters per site are in ``siterules.py``, the base model and
field types in ``base.py``; this module puts them together (sites, services,
the whole file), and the package re-exports it.

Every default here is a default of monitor/README.md, "The rules", and the field names are the
contract of config/README.md (``config/example.yaml`` is the documented reference).
Reading the file (YAML, ``${ENV_VAR}``, secrets from ``*_file`` fields,
``STORMWATCH_*`` overrides, one error line per problem) is ``file.py``.

Checks that span several fields raise their problems located at the field a
user must edit (``sites.0.traps.1.side_slope``), not at the model that ran the
check. Cross-references within a site (pairs and traps naming sensors,
duplicate ids) are checked on the raw input even when another field of the
site is invalid, so one typo does not hide them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal, get_args
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, Field, ModelWrapValidatorHandler, field_validator, model_validator

from ..contract.inputs import SensorKind
from ..contract.permits import PERMIT_STATES
from ..contract.routes import ROUTE_KEYS
from .base import (
    ID_PATTERN,
    Id,
    Model,
    PositiveFloat,
    Problem,
    as_mapping,
    raise_problems,
    validate_reporting,
)
from .permits import BusinessDays, PermitRef, cadence_of
from .siterules import (
    DEFAULT_ABSOLUTE_NTU,
    Pause,
    QualifiedProfessional,
    RainRules,
    SensorConfig,
    TrapConfig,
    TurbidityPair,
)
from .weather import Location, WeatherConfig, weather_problems
from .web import DEFAULT_MAX_PHOTO_PIXELS, Practice, WebConfig

__all__ = [
    "CLOCK_CONDITIONS", "DEFAULT_ABSOLUTE_NTU", "ENV_PREFIX", "ID_PATTERN", "SENSOR_KINDS",
    "ArchiveConfig", "BrokerConfig",
    "Config", "DaemonConfig", "DeadLettersConfig", "InfluxConfig", "Model", "NotifyConfig",
    "NotifyTarget", "Pause", "Practice",
    "QualifiedProfessional",
    "RainRules", "SensorConfig", "SiteConfig", "SiteNotify", "TlsConfig", "TrapConfig",
    "TurbidityPair", "WeatherConfig", "WebConfig", "photos_dir_of",
]

#: Conditions of § 134-7B(2) under which § 134-9A(2) inspections are required.
CLOCK_CONDITIONS = frozenset({"A", "B", "C"})

SENSOR_KINDS: tuple[str, ...] = get_args(SensorKind)

#: Prefix of the environment variables that override the file (config/README.md).
ENV_PREFIX = "STORMWATCH_"

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
    #: Publish the end-to-end confirmations (``{prefix}/{site}/{sensor}/journaled``).
    confirm: bool = True


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
        raise_problems(type(self).__name__, problems, self)
        return self


#: A notification tag: the name that connects routes to targets (``qp``, ``officer``).
Tag = Annotated[str, Field(pattern=ID_PATTERN)]


def _route_problems(data: Any) -> list[Problem]:
    """Route keys must name an event type of the vocabulary (or one of its variants): a typo
    would otherwise silence an alert without a word. Read from the raw input,
    so a bad tag elsewhere in the routes does not hide a bad key."""
    routes = as_mapping(data).get("routes")
    if not isinstance(routes, Mapping):
        return []
    return [(("routes", key), f"unknown event type {key!r} (one of: {', '.join(ROUTE_KEYS)})")
            for key in routes if key not in ROUTE_KEYS]


def _with_route_problems(cls: type[BaseModel], data: Any,
                         handler: ModelWrapValidatorHandler[Any]) -> Any:
    return validate_reporting(cls, data, handler, _route_problems(data))


class NotifyTarget(Model):
    """One Apprise URL and the tags whose alerts it receives (none: every alert)."""

    url: str
    tags: list[Tag] = Field(default_factory=list)
    name: str | None = None


class NotifyConfig(Model):
    """Alert delivery (config/README.md, ``monitor/notify``): targets, routes, retries,
    escalation."""

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
            raise_problems(type(self).__name__, [(
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


class SiteConfig(Model):
    id: Id
    name: str | None = None
    address: str | None = None
    timezone: str = "UTC"
    condition: Literal["A", "B", "C", "none"] = "A"
    active_since: date | None = None
    #: Final stabilization: no routine clock from this day (local midnight) on.
    active_until: date | None = None
    pauses: list[Pause] = Field(default_factory=list)
    routine_inspection_days: PositiveFloat = 7.0
    #: ``end_of_day``: the routine clock is due at the end of the local day that many
    #: calendar days after the last inspection; ``elapsed``: exactly that many 24 hours.
    routine_due: Literal["end_of_day", "elapsed"] = "end_of_day"
    #: An inspection entered this long after its own time is marked backdated.
    backdate_alert_hours: PositiveFloat = 24.0
    #: The site's own roster; none means the configuration's (top level).
    qualified_professionals: list[QualifiedProfessional] | None = None
    lateness_days: PositiveFloat = 7.0
    rain: RainRules = Field(default_factory=RainRules)
    sensors: list[SensorConfig] = Field(default_factory=list)
    turbidity_pairs: list[TurbidityPair] = Field(default_factory=list)
    traps: list[TrapConfig] = Field(default_factory=list)
    notify: SiteNotify = Field(default_factory=SiteNotify)
    #: The point the weather forecast is for (required with top-level ``weather:``).
    location: Location | None = None
    #: The erosion and sediment controls the inspection form asks about, in order.
    practices: list[Practice] = Field(default_factory=list)
    #: The permits the site answers to (none: Chapter 134 alone, ``village-branch-134``).
    permits: tuple[PermitRef, ...] = ()
    #: The business calendar of business-day deadlines (``permits``); ``calendar`` is
    #: the one in force.
    business_days: BusinessDays = Field(default_factory=BusinessDays)

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
        site: SiteConfig = validate_reporting(cls, data, handler,
                                               _site_reference_problems(as_mapping(data)))
        return site

    @model_validator(mode="after")
    def _period(self) -> SiteConfig:
        if self.active_since and self.active_until and self.active_until <= self.active_since:
            raise_problems(type(self).__name__, [(("active_until",), "must be after "
                                                  f"active_since ({self.active_since})")], self)
        days = self.routine_inspection_days
        if self.routine_due == "end_of_day" and days != int(days):
            # A calendar day has no fraction: say which clock is meant, never round.
            raise_problems(type(self).__name__, [(("routine_inspection_days",), (
                f"{days:g} is not a whole number of days, which routine_due: end_of_day "
                f"(calendar days) needs; set routine_due: elapsed for a clock of exactly "
                f"{days:g} x 24 hours"))], self)
        keys = [p.key for p in self.permits]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:
            raise_problems(type(self).__name__, [(("permits", keys.index(twice[0]), "id"), (
                f"{twice[0]} is listed twice; give the second one its own id"))], self)
        return self

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @property
    def calendar(self) -> BusinessDays:
        """The business calendar in force: ``business_days`` as set, or where the site
        does not set it, the US's with the public holidays of the state of its first state
        permit (North Carolina's "next business day" is a North Carolina business day)."""
        if "business_days" in self.model_fields_set:
            return self.business_days
        state = next((PERMIT_STATES[p.profile] for p in self.permits
                      if p.profile in PERMIT_STATES), None)
        return self.business_days if state is None else BusinessDays(subdiv=state)

    def cadence_days(self, clock_id: str = "") -> float:
        """The routine cadence, in days, of the permit a clock belongs to (its id's
        ``<permit>/`` prefix; none: the first permit), what its name counts in ("14 days
        from Nov 25"); the site's own ``routine_inspection_days`` where the permit has no
        routine rule or takes the site's numbers."""
        days = cadence_of(self.permits, self.routine_inspection_days, clock_id)
        return self.routine_inspection_days if days is None else days

    @property
    def clocks_apply(self) -> bool:
        """§ 134-9A(2) inspections apply to Conditions A, B and C of § 134-7B(2)."""
        return self.condition in CLOCK_CONDITIONS

    def sensor(self, sensor_id: str) -> SensorConfig | None:
        for s in self.sensors:
            if s.id == sensor_id:
                return s
        return None

    def fill_levels(self, trap_id: str) -> tuple[float, ...]:
        """The fills a trap's fill is judged against (``warn_fraction``,
        ``cleanout_fraction``), for printing it on the right side of them
        (``contract/figures.py``); none for a trap the site does not have."""
        return next(((t.warn_fraction, t.cleanout_fraction) for t in self.traps
                     if t.id == trap_id), ())

    def gauges(self) -> list[SensorConfig]:
        return [s for s in self.sensors if s.kind == "rain"]

    def heartbeat_sensors(self, sensor: SensorConfig) -> tuple[str, ...]:
        """The sensors whose ``status`` is a sign of life of ``sensor``: itself, and for
        an ``on_tip`` gauge with ``heartbeat_minutes`` every sensor of its ``node``
        (a node's status is its heartbeat, monitor/README.md, "The rules")."""
        if not (sensor.on_tip and sensor.heartbeat_minutes is not None and sensor.node):
            return (sensor.id,)
        return (sensor.id, *(s.id for s in self.sensors
                             if s.node == sensor.node and s.id != sensor.id))


# Cross-reference checks read the raw input, tolerating entries that field
# validation rejects (those are reported there, once).


def _entries(value: Any) -> list[tuple[int, Mapping[str, Any]]]:
    """The mapping (or model) items of a raw list, as mappings, with their indices."""
    if not isinstance(value, list):
        return []
    return [(i, as_mapping(item)) for i, item in enumerate(value)
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
                + _duplicate_ids("traps", traps)
                + _duplicate_ids("practices", _entries(site.get("practices"))))
    kinds: dict[str, Any] = {}
    units: dict[str, Any] = {}
    for _, sensor in sensors:
        if isinstance(sensor.get("id"), str):
            kinds.setdefault(sensor["id"], sensor.get("kind"))
            units.setdefault(sensor["id"], sensor.get("unit", "NTU"))
    wanted = [("turbidity_pairs", pairs, ("upstream", "downstream"), "turbidity"),
              ("traps", traps, ("sensor",), "sediment")]
    for section, entries, fields, kind in wanted:
        for i, entry in entries:
            for name in fields:
                message = _reference_problem(entry.get(name), kind, kinds)
                if message:
                    problems.append(((section, i, name), message))
    return problems + [(("turbidity_pairs", i), message) for i, pair in pairs
                       if (message := _unit_problem(pair, units))]


def _unit_problem(pair: Mapping[str, Any], units: Mapping[str, Any]) -> str | None:
    """A pair of an NTU and an FNU probe: the two units disagree on the same water (white
    light against infrared), so their difference is no contrast at all."""
    up, down = pair.get("upstream"), pair.get("downstream")
    if not (isinstance(up, str) and isinstance(down, str) and up in units and down in units):
        return None
    if units[up] == units[down] or not {units[up], units[down]} <= {"NTU", "FNU"}:
        return None  # an invalid unit is reported on the sensor itself
    return (f"upstream {up!r} reads {units[up]} and downstream {down!r} reads "
            f"{units[down]}: a pair compares like units only (NTU and FNU disagree on the "
            "same water); use two probes of one unit")


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


class DeadLettersConfig(Model):
    """The dead-letter table (rejected messages, sensors/README.md, "MQTT contract"), bounded so
    that a misbehaving or malicious node cannot fill the disk with it."""

    #: The table's size cap in MiB; past it the oldest dead letters are pruned
    #: (counted: ``status --json`` ``ingest.dead_letters_pruned``). Each keeps the
    #: first 4 KiB of its payload, so 64 MiB hold at least ~15 000 of them.
    max_mb: PositiveFloat = 64.0

    @property
    def max_bytes(self) -> int:
        return int(self.max_mb * 1024 * 1024)


class ArchiveConfig(Model):
    """The daemon's own archiving (``stormwatch archive`` does the same on demand): journal
    rows that can no longer change any event move into compressed files under
    ``state_dir/archive/``, their SHA-256 in the log book; none is ever deleted."""

    #: Rows whose event time is older than this many days are archived (once the
    #: lateness window, the engine snapshot and every journal cursor are past them).
    after_days: PositiveFloat = 30.0


class ShardConfig(Model):
    """One daemon of several, each owning the sites its configuration lists
    (deploy/README.md, "Beyond one machine"): ``id`` names it in ``stormwatch shards``
    and in its ACL account's note."""

    id: Id


class Config(Model):
    broker: BrokerConfig = Field(default_factory=BrokerConfig)
    #: This daemon is one shard of several (``ShardConfig``); none: it owns every site.
    shard: ShardConfig | None = None
    state_dir: str = "/var/lib/stormwatch"
    daemon: DaemonConfig = Field(default_factory=DaemonConfig)
    dead_letters: DeadLettersConfig = Field(default_factory=DeadLettersConfig)
    influx: InfluxConfig | None = None
    #: Without the section the daemon archives nothing by itself.
    archive: ArchiveConfig | None = None
    notify: NotifyConfig = Field(default_factory=NotifyConfig)
    #: The field web app (``stormwatch web``); none: no app, and no form links in alerts.
    web: WebConfig | None = None
    log_format: Literal["text", "json"] = "text"
    #: Who may inspect (§ 134-9A(2)); empty: anyone named closes clocks.
    qualified_professionals: list[QualifiedProfessional] = Field(default_factory=list)
    sites: list[SiteConfig] = Field(min_length=1)
    #: Forecasts and reference observations (``weather.py``); none: off.
    weather: WeatherConfig | None = None

    @model_validator(mode="wrap")
    @classmethod
    def _unique_sites(cls, data: Any, handler: ModelWrapValidatorHandler[Config]) -> Config:
        raw = as_mapping(data)
        sites = _entries(raw.get("sites"))
        config: Config = validate_reporting(
            cls, data, handler,
            _duplicate_ids("sites", sites) + weather_problems(raw, sites))
        return config

    @model_validator(mode="after")
    def _shard_subscribes_to_its_sites(self) -> Config:
        """A shard subscribes to its own sites' topics only (``subscribe: sites``): another
        shard's readings are not its to journal, nor to confirm."""
        if self.shard is None or self.broker.subscribe == "sites":
            return self
        if "subscribe" in self.broker.model_fields_set:
            raise_problems(type(self).__name__, [(("broker", "subscribe"), (
                f"shard {self.shard.id} subscribes to its own sites only: set sites (or "
                "leave it out)"))], self)
        return self.model_copy(update={
            "broker": self.broker.model_copy(update={"subscribe": "sites"})})

    def site(self, site_id: str) -> SiteConfig | None:
        for s in self.sites:
            if s.id == site_id:
                return s
        return None

    def roster(self, site: SiteConfig) -> list[QualifiedProfessional]:
        """The qualified professionals of a site: its own list, else the top-level one."""
        if site.qualified_professionals is not None:
            return site.qualified_professionals
        return self.qualified_professionals


def photo_pixels_of(config: Config) -> int:
    """The most pixels a photo may have: ``web.max_photo_mpx``, else its default."""
    if config.web is not None:
        return config.web.max_photo_pixels
    return DEFAULT_MAX_PHOTO_PIXELS


def photos_dir_of(config: Config) -> Path:
    """Where the field app keeps photos: ``web.photos_dir``, else ``state_dir/photos``."""
    if config.web is not None and config.web.photos_dir is not None:
        return Path(config.web.photos_dir)
    return Path(config.state_dir) / "photos"

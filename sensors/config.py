"""The node's configuration schema (sensors/README.md, "Sensor node"): the pydantic models.

The names are the contract of sensors/README.md, "Sensor node"; ``config/node.example.yaml``
documents every option with its default. Models are frozen and reject unknown
keys, like the daemon's. Reading the file and turning pydantic's errors into
``path.to.field: message`` lines is ``configfile.py``.

The node does not import the daemon's configuration code: it runs on a Pi
that only needs ``sensors/``, and its file is a different document.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_validator,
)

from .fields import FIELDS_BY_KIND, PRIMARY_FIELDS, REQUIRED_ANY, SensorKind

ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"
Id = Annotated[str, Field(pattern=ID_PATTERN)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Port = Annotated[int, Field(ge=1, le=65535)]


class Model(BaseModel):
    """Base of every section: immutable, unknown keys rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- sections


class TlsConfig(Model):
    ca_file: Path


class BrokerConfig(Model):
    host: str = "127.0.0.1"
    port: Port = 1883
    #: Default ``stormwatch-node-{site}``; unique per node on the broker.
    client_id: str | None = None
    username: str | None = None
    #: The password is read from this file (trailing newline removed); never inline.
    password_file: Path | None = None
    tls: TlsConfig | None = None
    topic_prefix: str = "stormwatch/v1"
    keepalive_s: Annotated[int, Field(ge=5, le=3600)] = 60
    #: Longest wait between reconnection attempts (paho doubles from 1 s up to it).
    reconnect_max_s: Annotated[int, Field(ge=1, le=3600)] = 60


class BufferConfig(Model):
    path: Path = Path("/var/lib/stormwatch-node/buffer.db")
    #: Readings kept while offline, in MB of payload; past it the oldest are dropped.
    max_mb: PositiveFloat = 64.0
    #: Readings published and not yet acknowledged (PUBACK) at any time.
    max_inflight: Annotated[int, Field(ge=1, le=1000)] = 20
    #: Readings published per second at most (backlog drain after an outage).
    max_rate_per_s: PositiveFloat = 50.0


class HealthConfig(Model):
    """Where the node's battery voltage and signal strength come from, when known."""

    #: A file holding one number (e.g. a UPS HAT's sysfs ``voltage_now``).
    battery_v_file: Path | None = None
    #: Multiplies the number read (1e-6 for sysfs microvolts).
    battery_v_scale: PositiveFloat = 1.0
    #: A file holding the modem's RSSI in dBm (written by a modem script).
    rssi_dbm_file: Path | None = None


class SensorBase(Model):
    id: Id
    kind: SensorKind
    #: Seconds between readings (not used by ``csv``: rows keep their own times).
    every_s: PositiveFloat = 60.0

    #: The kinds this driver can read (empty: any); set by each driver's model.
    KINDS: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="after")
    def _kind_fits_driver(self) -> SensorBase:
        if self.KINDS and self.kind not in self.KINDS:
            driver = getattr(self, "driver", "?")
            raise ValueError(f"kind: {self.kind!r} cannot be read by the {driver} driver "
                             f"(it reads {', '.join(sorted(self.KINDS))})")
        return self


class GpioSensor(SensorBase):
    """A tipping bucket's reed switch between a GPIO pin and ground."""

    KINDS = frozenset({"rain"})
    driver: Literal["gpio"]
    #: BCM number (17) or a gpiozero pin name ("GPIO17", "BOARD11").
    pin: int | str
    #: Tips closer than this to the last counted one are a double tip: counted once.
    min_tip_interval_s: NonNegativeFloat = 1.0
    #: Debounce of the switch contact in seconds (gpiozero ``bounce_time``); null: none.
    bounce_time_s: PositiveFloat | None = 0.005
    #: Internal pull-up, switch to ground (the usual wiring).
    pull_up: bool = True


class Ads1115Sensor(SensorBase):
    """A turbidity probe's voltage output read by an ADS1115 ADC on I2C."""

    KINDS = frozenset({"turbidity"})
    driver: Literal["ads1115"]
    address: Annotated[int, Field(ge=0x48, le=0x4B)] = 0x48
    channel: Annotated[int, Field(ge=0, le=3)] = 0
    #: Programmable gain: full scale 6.144 V at 2/3, 4.096 V at 1, 2.048 V at 2 ...
    gain: Literal["2/3", 1, 2, 4, 8, 16] = 1
    #: [volts, NTU] points, volts strictly increasing; linear between points.
    calibration: Annotated[list[tuple[float, float]], Field(min_length=2)]
    #: Conversions averaged per reading.
    samples: Annotated[int, Field(ge=1, le=64)] = 4

    @model_validator(mode="after")
    def _curve(self) -> Ads1115Sensor:
        volts = [v for v, _ in self.calibration]
        if any(not math.isfinite(v) or not math.isfinite(n) for v, n in self.calibration):
            raise ValueError("calibration: points must be finite numbers")
        if any(b <= a for a, b in zip(volts, volts[1:], strict=False)):
            raise ValueError("calibration: volts must be strictly increasing")
        if any(n < 0 for _, n in self.calibration):
            raise ValueError("calibration: NTU must not be negative")
        return self


class MaxbotixSensor(SensorBase):
    """A MaxBotix-style ultrasonic range finder over serial (``R####\\r`` frames)."""

    KINDS = frozenset({"sediment"})
    driver: Literal["maxbotix"]
    port: str
    baudrate: int = 9600
    #: Frames per reading; the reading is their median.
    pings: Annotated[int, Field(ge=1, le=50)] = 5
    #: Ranges outside [min, max] in inches (the bracket, no echo) are discarded.
    min_range_in: NonNegativeFloat
    max_range_in: PositiveFloat
    #: What the frame's digits count: mm (HRXL/HRLV, 4 digits), cm, or in (LV, 3 digits).
    frame_unit: Literal["mm", "cm", "in"] = "mm"
    #: Seconds to wait for ``pings`` frames.
    timeout_s: PositiveFloat = 3.0

    @model_validator(mode="after")
    def _range(self) -> MaxbotixSensor:
        if self.max_range_in <= self.min_range_in:
            raise ValueError("max_range_in: must be greater than min_range_in")
        return self


class Register(Model):
    """One Modbus value: where it is and how it is encoded."""

    address: Annotated[int, Field(ge=0, le=65535)]
    #: uint16/int16: one register; uint32/int32/float32: two, high word first.
    type: Literal["uint16", "int16", "uint32", "int32", "float32"] = "float32"
    #: 3 holding registers, 4 input registers.
    functioncode: Literal[3, 4] = 3
    #: The value published is raw × scale.
    scale: float = 1.0


class ModbusSensor(SensorBase):
    """A commercial sonde or logger on Modbus RTU (RS-485 adapter)."""

    driver: Literal["modbus"]
    port: str
    slave: Annotated[int, Field(ge=1, le=247)] = 1
    baudrate: int = 9600
    parity: Literal["N", "E", "O"] = "N"
    timeout_s: PositiveFloat = 0.5
    #: Shorthand: the register of the kind's main field (ntu, depth_in, tips_total).
    #: (``register`` in the file; the attribute name is taken by pydantic's ABC base.)
    register_: Annotated[int | None, Field(alias="register", ge=0, le=65535)] = None
    #: The type of ``register``.
    type: Literal["uint16", "int16", "uint32", "int32", "float32"] = "float32"
    functioncode: Literal[3, 4] = 3
    scale: float = 1.0
    #: Field name → register, for more than one value (e.g. ntu and temp_c).
    registers: dict[str, Register] = Field(default_factory=dict)
    #: Width of a rain counter register when it is not its type's (a wrap is told by it).
    counter_bits: Annotated[int, Field(ge=8, le=64)] | None = None

    def register_map(self) -> dict[str, Register]:
        """Every field read, the shorthand ``register`` included."""
        out = dict(self.registers)
        if self.register_ is not None:
            out.setdefault(PRIMARY_FIELDS[self.kind], Register(
                address=self.register_, type=self.type, functioncode=self.functioncode,
                scale=self.scale))
        return out

    @model_validator(mode="after")
    def _fields(self) -> ModbusSensor:
        fields = self.register_map()
        unknown = sorted(set(fields) - FIELDS_BY_KIND[self.kind])
        if unknown:
            raise ValueError(f"registers: {', '.join(unknown)} not a field of a {self.kind} "
                             f"sensor (use {', '.join(sorted(FIELDS_BY_KIND[self.kind]))})")
        # A Modbus rain gauge counts tips; every other kind needs one of its required fields.
        needed = (("tips_total",) if self.kind == "rain"
                  else tuple(sorted(REQUIRED_ANY[self.kind])))
        if not any(f in fields for f in needed):
            raise ValueError(f"register: a {self.kind} sensor needs {' or '.join(needed)} "
                             "(set register, or registers)")
        return self


def _speed(value: Any) -> Any:
    # One message instead of one per member of the union.
    if value in ("max", "realtime"):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 \
            and math.isfinite(value):
        return float(value)
    raise ValueError("must be max, realtime or a factor > 0 (10 = ten times faster)")


class CsvSensor(SensorBase):
    """Rows of a file in the replay format: a logger's card, or a test's input."""

    driver: Literal["csv"]
    file: Path
    #: max: as fast as the buffer takes them; realtime; or a factor (10 = ten times faster).
    speed: Annotated[Literal["max", "realtime"] | PositiveFloat,
                     BeforeValidator(_speed)] = "realtime"
    #: Rain, a per-tip file (a row per tip): a tip this many seconds or less after the
    #: last counted one is a double tip, not counted (``counter.is_double_tip``).
    debounce_s: NonNegativeFloat = 1.0

    @model_validator(mode="after")
    def _no_period(self) -> CsvSensor:
        if "every_s" in self.model_fields_set:
            raise ValueError("every_s: not used by the csv driver (rows keep their own times)")
        if "debounce_s" in self.model_fields_set and self.kind != "rain":
            raise ValueError("debounce_s: applies to rain sensors only (per-tip files)")
        return self


class SimStorm(Model):
    """The design storm of a simulated sensor (``drivers/sim.py``)."""

    depth_in: NonNegativeFloat = 1.0
    #: The storm's duration; the 24-hour distribution is stretched or squeezed to it.
    hours: PositiveFloat = 24.0
    #: The SCS (NRCS) 24-hour distribution: II (most of the US) or III (Gulf, Atlantic).
    type: Literal["II", "III"] = "II"
    #: When it starts, Unix seconds.
    start_s: Annotated[float, Field(allow_inf_nan=False)]


class SimSensor(SensorBase):
    """Readings made up for ``stormwatch simulate`` (``drivers/sim.py``): no hardware.

    One reading every ``every_s`` from ``start_s`` to ``end_s`` (Unix seconds of
    the simulated clock), each stamped with its own grid time.
    """

    driver: Literal["sim"]
    #: The simulator makes rain and what rain drives; no snow (a ``csv`` driver replays it).
    KINDS = frozenset({"rain", "turbidity", "sediment"})
    start_s: Annotated[float, Field(allow_inf_nan=False)]
    end_s: Annotated[float, Field(allow_inf_nan=False)]
    storm: SimStorm | None = None
    #: Seeds the sensor's noise: the same seed gives the same readings.
    seed: int = 0
    #: rain: depth of one tip of the simulated bucket.
    in_per_tip: PositiveFloat = 0.01
    #: turbidity: NTU without rain, and NTU added per in/h of recent rain intensity.
    background_ntu: NonNegativeFloat = 8.0
    ntu_per_in_per_h: NonNegativeFloat = 10.0
    noise_ntu: NonNegativeFloat = 0.5
    #: turbidity: the probe's full scale (a reading never exceeds it: it pegs).
    max_ntu: PositiveFloat = 1000.0
    #: sediment: depth before the storm, and inches of sediment per inch of runoff.
    sediment_start_in: NonNegativeFloat = 6.0
    sediment_in_per_runoff_in: NonNegativeFloat = 3.0
    #: sediment: rain that wets the ground before any runs off.
    initial_abstraction_in: NonNegativeFloat = 0.2
    noise_in: NonNegativeFloat = 0.05
    #: sediment: set, readings are ``distance_in`` from a sensor this high; unset, ``depth_in``.
    sensor_height_in: PositiveFloat | None = None

    @model_validator(mode="after")
    def _period(self) -> SimSensor:
        if self.end_s < self.start_s:
            raise ValueError("end_s: must not be before start_s")
        return self


Sensor = Annotated[GpioSensor | Ads1115Sensor | MaxbotixSensor | ModbusSensor | CsvSensor
                   | SimSensor, Field(discriminator="driver")]
DRIVERS = ("gpio", "ads1115", "maxbotix", "modbus", "csv", "sim")


class NodeConfig(Model):
    broker: BrokerConfig = Field(default_factory=BrokerConfig)
    site: Id
    buffer: BufferConfig = Field(default_factory=BufferConfig)
    sensors: Annotated[list[Sensor], Field(min_length=1)]
    #: Seconds between status messages.
    status_every_s: PositiveFloat = 60.0
    #: Seconds after its PUBACK (online) before a reading the daemon has not confirmed
    #: is published again; doubled for each further resend, up to an hour.
    confirm_after_s: PositiveFloat = 120.0
    #: Minutes (online) without any confirmation from the daemon before falling back
    #: to deleting readings on PUBACK; null: never fall back.
    confirm_fallback_minutes: PositiveFloat | None = 30.0
    health: HealthConfig = Field(default_factory=HealthConfig)

    @property
    def client_id(self) -> str:
        return self.broker.client_id or f"stormwatch-node-{self.site}"

    @model_validator(mode="after")
    def _unique_ids(self) -> NodeConfig:
        problems = duplicate_ids([s.model_dump(by_alias=True) for s in self.sensors])
        if problems:
            raise ValueError(problems[0])
        return self


def duplicate_ids(sensors: Any) -> list[str]:
    """``sensors.N.id: ...`` for each id given twice, on raw input too: a duplicate is
    reported even when another field of the file is invalid."""
    seen: dict[str, int] = {}
    problems: list[str] = []
    for i, sensor in enumerate(sensors if isinstance(sensors, list) else []):
        ident = sensor.get("id") if isinstance(sensor, dict) else None
        if not isinstance(ident, str):
            continue
        if ident in seen:
            problems.append(f"sensors.{i}.id: {ident!r} is also the id of sensors.{seen[ident]}")
        else:
            seen[ident] = i
    return problems

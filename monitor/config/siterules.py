"""The parameters of the domain rules, per site: storm detection, sensors,
turbidity pairs and sediment traps (monitor/README.md, "The rules" and
config/README.md; ``config.py`` puts them together into sites).
Every default is a default of monitor/README.md, "The rules".
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, model_validator

from ..contract.inputs import SensorKind
from .base import Fraction01, Id, Model, NonNegativeFloat, PositiveFloat, Problem, raise_problems


class RainRules(Model):
    """Storm detection and storm-clock parameters (monitor/README.md, "The rules", § 134-9A(2))."""

    # At least one tip of a 0.01 in gauge, and at least a minute of dry gap: smaller
    # values round to nothing in the engine's integer micro-inches and milliseconds.
    threshold_in: Annotated[float, Field(ge=0.01, allow_inf_nan=False)] = 0.5
    mode: Literal["event_24h", "event_total", "rolling_24h"] = "event_total"
    dry_gap_hours: Annotated[float, Field(ge=1 / 60, allow_inf_nan=False)] = 6.0
    clock_start: Literal["qualified", "event_end"] = "qualified"
    gauges: Literal["any", "all", "mean"] = "any"
    inspect_within_hours: PositiveFloat = 24.0
    remind_before_hours: list[PositiveFloat] = Field(default_factory=lambda: [6.0, 1.0])
    overdue_repeat_hours: PositiveFloat = 4.0


#: Sensor fields that mean something for one kind only.
_KIND_FIELDS = {"in_per_tip": "rain", "counter_bits": "rain", "max_ntu": "turbidity",
                "sensor_height_in": "sediment", "max_step_in": "sediment",
                "heartbeat_minutes": "rain"}
#: ... and those of them with a default, refused only when set to another value.
_KIND_FIELDS_SET = {"reporting": "rain", "debounce_s": "rain", "max_rate_in_per_hour": "rain",
                    "unit": "turbidity"}

#: monitor/README.md, "Sediment traps": the largest change of sediment depth between two
#: consecutive readings that can be true (unless sustained for ``median_of`` readings).
DEFAULT_MAX_STEP_IN = 12.0

#: A silence that long is never seen: 1e9 minutes is about 1 900 years.
NEVER_MINUTES = 1e9


class SensorConfig(Model):
    id: Id
    kind: SensorKind
    in_per_tip: PositiveFloat | None = None
    #: The width of the gauge's tip counter when known (a wrap is then told by it alone);
    #: a counter wider than 62 bits never wraps in a gauge's life.
    counter_bits: int | None = Field(default=None, ge=8, le=62)
    #: A drop near the counter's top is a wrap only when the rain it implies is at most
    #: this rate over the time since the previous reading (at least a minute); else the
    #: logger rebooted near its maximum: a ``counter_reset``, no rain (monitor/README.md, Storms).
    max_rate_in_per_hour: PositiveFloat = 4.0
    max_ntu: PositiveFloat | None = None
    #: What a turbidity probe reports in: ``NTU`` (a white-light nephelometer, EPA
    #: 180.1) or ``FNU`` (an infrared one, ISO 7027). The two disagree on the same
    #: water, so a pair compares like units only; the ``ntu`` field carries either.
    unit: Literal["NTU", "FNU"] = "NTU"
    sensor_height_in: PositiveFloat | None = None
    #: Sediment: a depth step larger than this between consecutive readings is a
    #: sensor fault (``impossible_step``) unless it is sustained. Default 12 in.
    max_step_in: PositiveFloat | None = None
    stale_after_minutes: PositiveFloat = 15.0
    battery_low_v: PositiveFloat | None = 3.5
    #: The node (Pi) carrying the sensor: sensors naming one node share its MQTT
    #: account in ``stormwatch acl`` (a node publishes for all its sensors).
    node: Id | None = None
    #: How a rain gauge talks (monitor/README.md, "Silence is not dry weather"): ``interval``
    #: publishes its counter every interval, rain or not, so a silence is no dry
    #: weather; ``on_tip`` publishes only when the bucket tips, so a silence is dry.
    reporting: Literal["interval", "on_tip"] = "interval"
    #: An ``on_tip`` gauge is alive while a message of it, or a ``status`` of its
    #: node, came within this time; without it its health cannot be told (``unknown``).
    heartbeat_minutes: PositiveFloat | None = None
    #: Per-tip input (a logger's export, one row per tip): a tip this close to the
    #: previous counted one of the gauge is a double tip (mechanical bounce), dropped.
    debounce_s: NonNegativeFloat = 1.0

    @model_validator(mode="after")
    def _kind_fields(self) -> SensorConfig:
        given = [name for name, kind in _KIND_FIELDS.items() if getattr(self, name) is not None]
        given += [name for name in _KIND_FIELDS_SET
                  if getattr(self, name) != type(self).model_fields[name].default]
        kinds = _KIND_FIELDS | _KIND_FIELDS_SET
        problems: list[Problem] = [
            ((name,), f"applies to {kinds[name]} sensors only, not to a {self.kind} sensor")
            for name in given if kinds[name] != self.kind
        ]
        raise_problems(type(self).__name__, problems, self)
        return self

    @property
    def on_tip(self) -> bool:
        """A gauge that reports only when it tips: its silence is dry weather."""
        return self.kind == "rain" and self.reporting == "on_tip"

    @property
    def health_judged(self) -> bool:
        """Whether silence can be told from death: every sensor but an ``on_tip`` gauge
        without ``heartbeat_minutes`` (whose health is ``unknown``)."""
        return not self.on_tip or self.heartbeat_minutes is not None

    @property
    def reveal_after_minutes(self) -> float:
        """A counter that rose across a silence longer than this revealed rain of unknown
        timing (``rules/rain/rain.py``, ``backtest.py``); an ``on_tip`` gauge's silence is dry
        weather and reveals nothing (a span longer than any record)."""
        return NEVER_MINUTES if self.on_tip else self.stale_after_minutes

    @property
    def silent_after_minutes(self) -> float:
        """Minutes without a message after which the sensor is stale: its
        ``stale_after_minutes``, or for an ``on_tip`` gauge its ``heartbeat_minutes``
        (meaningful only when ``health_judged``)."""
        if self.on_tip and self.heartbeat_minutes is not None:
            return self.heartbeat_minutes
        return self.stale_after_minutes

    @property
    def max_ntu_value(self) -> float:
        """Full scale of a turbidity probe; readings at it are ``pegged``."""
        return self.max_ntu if self.max_ntu is not None else 1000.0

    @property
    def max_step_in_value(self) -> float:
        """The largest depth step of a sediment sensor that can be true (monitor/README.md, "The
        rules")."""
        return self.max_step_in if self.max_step_in is not None else DEFAULT_MAX_STEP_IN

    @property
    def in_per_tip_value(self) -> float:
        """Depth of one bucket tip; 0.01 in is the common US gauge."""
        return self.in_per_tip if self.in_per_tip is not None else 0.01


#: Washington's Construction Stormwater General Permit (the source of the
#: ``wa-173-201a`` rule) makes a discharge of 250 NTU or more reportable to the
#: regulator within 24 hours whatever the background: turbidity that high is
#: a visible contrast in any receiving water (§ 134-8C).
DEFAULT_ABSOLUTE_NTU = 250.0


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
    #: Downstream NTU that is a violation on its own when no background can be had;
    #: null turns it off. See ``DEFAULT_ABSOLUTE_NTU``.
    absolute_ntu: PositiveFloat | None = DEFAULT_ABSOLUTE_NTU
    #: ``probes_suspect`` when upstream reads more than this above downstream for
    #: ``suspect_hours`` (swapped probes, or a probe in a plume); null: off.
    suspect_delta_ntu: PositiveFloat | None = None
    suspect_hours: PositiveFloat = 6.0
    #: ``turbidity_unmonitored`` once the contrast has been unknown this long while the
    #: site is active (background missing, downstream probe stale or pegged).
    unknown_notice_hours: PositiveFloat = 2.0

    @model_validator(mode="after")
    def _rule_fields(self) -> TurbidityPair:
        problems: list[Problem] = []
        if self.rule == "delta_ntu" and self.delta_ntu is None:
            problems.append((("delta_ntu",), "required when rule is delta_ntu"))
        if self.rule != "delta_ntu" and self.delta_ntu is not None:
            problems.append((("delta_ntu",), f"applies to rule delta_ntu only, not to {self.rule}"))
        if self.upstream == self.downstream:
            problems.append((("downstream",), "must be a different sensor from upstream"))
        raise_problems(type(self).__name__, problems, self)
        return self


#: The dimensions each trap shape is computed from (monitor/README.md, "The rules").
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
    cleanout_repeat_hours: PositiveFloat = 24.0
    #: A threshold that fired re-arms once the fill has stayed 0.05 below it this
    #: long (or at a ``trap_cleaned``): noise about it is one alert, not one an hour.
    rearm_hours: NonNegativeFloat = 6.0
    #: A clean-out has ended (its fall has settled) once the smoothed fill has not
    #: fallen by more than 0.02 over this long and over ``median_of`` readings; until
    #: then no threshold fires (the trap is being emptied).
    settle_minutes: NonNegativeFloat = 60.0
    #: A depth above this multiple of the design depth is a sensor fault
    #: (``above_max_fill``), not sediment.
    max_fill_fraction: Annotated[float, Field(ge=1.0, allow_inf_nan=False)] = 1.5

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
        raise_problems(type(self).__name__, problems, self)
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


# --------------------------------------------------------------------------- inspections


class QualifiedProfessional(Model):
    """Someone whose inspections count under § 134-9A(2) ("a qualified professional").

    ``name`` is what ``--inspector`` and the MQTT payload give; ``credential``
    (a CPESC number, a licence) is shown in the log book and the report."""

    name: Annotated[str, Field(min_length=1, max_length=200)]
    credential: str | None = None
    contact: str | None = None


class Pause(Model):
    """Days the officer agreed no routine inspection is due (a winter shutdown):
    ``from`` through ``to``, both inclusive, in the site's time zone."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    from_: date = Field(alias="from")
    to: date
    reason: str | None = None

    @model_validator(mode="after")
    def _ordered(self) -> Pause:
        if self.to < self.from_:
            raise_problems(type(self).__name__, [(("to",), f"must not be before from "
                                                  f"({self.from_.isoformat()})")], self)
        return self

"""The MQTT payloads of sensors/README.md, "MQTT contract" as pydantic models: the documented
schema.

``model_json_schema()`` of these is what a node developer reads. They
validate through the very rule functions of ``models.py``, so the schema
cannot drift from what the daemon accepts. The daemon does not build them:
a rejection must carry one specific reason code, and ``wrong_kind``, the
topic and the time window need the configuration, so a model would add a
pass that maps pydantic errors back to codes (a second place to keep the
rules) for no gain in speed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Final

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from ..config.base import ID_PATTERN
from ..contract.rejects import Rejection
from ..ingest.checks import (
    FIELD_RULES,
    MessageKind,
    check_value,
    missing_field,
    timestamp_ms,
)
from ..ingest.inspections import InspectionKind, check_inspector


def _rule_validator(name: str) -> BeforeValidator:
    """Validate a model field with ``check_value`` so the schema cannot drift from the rules."""
    rule = FIELD_RULES[name]

    def check(value: object) -> object:
        if value is None:
            return None
        checked = check_value(rule, value)
        if isinstance(checked, Rejection):
            raise ValueError(f"{checked.reason.value}: {checked.detail}")
        return checked

    return BeforeValidator(check)


def _bounds(name: str) -> Any:
    rule = FIELD_RULES[name]
    return Field(ge=rule.low, le=rule.high, description=rule.doc)


def _raise_on(result: object) -> object:
    if isinstance(result, Rejection):
        raise ValueError(f"{result.reason.value}: {result.detail}")
    return result


def _ts_checked(value: object) -> object:
    _raise_on(timestamp_ms(value))
    return value


TipsTotal = Annotated[int, _bounds("tips_total"), _rule_validator("tips_total")]
PrecipIn = Annotated[float, _bounds("precip_in"), _rule_validator("precip_in")]
Ntu = Annotated[float, _bounds("ntu"), _rule_validator("ntu")]
TempC = Annotated[float, _bounds("temp_c"), _rule_validator("temp_c")]
DepthIn = Annotated[float, _bounds("depth_in"), _rule_validator("depth_in")]
DistanceIn = Annotated[float, _bounds("distance_in"), _rule_validator("distance_in")]
BatteryV = Annotated[float, _bounds("battery_v"), _rule_validator("battery_v")]
Seq = Annotated[int, _bounds("seq"), _rule_validator("seq")]
RssiDbm = Annotated[float, _bounds("rssi_dbm"), _rule_validator("rssi_dbm")]
UptimeS = Annotated[float, _bounds("uptime_s"), _rule_validator("uptime_s")]
Buffered = Annotated[int, _bounds("buffered"), _rule_validator("buffered")]
Dropped = Annotated[int, _bounds("dropped"), _rule_validator("dropped")]
Timestamp = Annotated[
    int | float | str,
    Field(description="ISO 8601 with Z or ±hh:mm, or Unix seconds"),
    BeforeValidator(_ts_checked),
]


class Payload(BaseModel):
    """Fields every sensor message may carry (sensors/README.md, "MQTT contract"); unknown keys are
    ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True, allow_inf_nan=False)

    #: Message kind whose ``REQUIRED`` forms the model enforces.
    message_kind: ClassVar[MessageKind] = "status"

    ts: Timestamp
    site: str | None = None
    sensor: str | None = None
    battery_v: BatteryV | None = None
    seq: Seq | None = None

    @model_validator(mode="after")
    def _required(self) -> Payload:
        values = {k: v for k, v in self.__dict__.items() if v is not None}
        _raise_on(missing_field(self.message_kind, values))
        return self


class StatusPayload(Payload):
    """``{prefix}/{site}/{sensor}/status``: node health, nothing required but ``ts``."""

    rssi_dbm: RssiDbm | None = None
    uptime_s: UptimeS | None = None
    buffered: Buffered | None = None
    dropped: Dropped | None = None


class RainPayload(Payload):
    """A rain gauge: ``tips_total``, or ``precip_in`` with ``seq``."""

    message_kind: ClassVar[MessageKind] = "rain"
    tips_total: TipsTotal | None = None
    precip_in: PrecipIn | None = None


class TurbidityPayload(Payload):
    """A turbidity probe: ``ntu`` (§ 134-8C contrast)."""

    message_kind: ClassVar[MessageKind] = "turbidity"
    ntu: Ntu | None = None
    temp_c: TempC | None = None


class SedimentPayload(Payload):
    """A sediment-depth sensor: ``depth_in`` or ``distance_in`` (§ 134-9A(1))."""

    message_kind: ClassVar[MessageKind] = "sediment"
    depth_in: DepthIn | None = None
    distance_in: DistanceIn | None = None


def _names(value: object) -> str | list[str]:
    names = check_inspector(value)
    if isinstance(names, Rejection):
        raise ValueError(f"{names.reason.value}: {names.detail}")
    return names[0] if isinstance(value, str) else list(names)


class FindingPayload(BaseModel):
    """What the inspection found at one practice (``silt-fence-north``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    practice: str = Field(min_length=1)
    condition: str


class CorrectiveActionPayload(BaseModel):
    """A repair asked for; a later inspection lists its ``id`` in ``resolves``."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: str = Field(pattern=ID_PATTERN)
    text: str
    due: str | None = Field(default=None, description="a date (end of that local day) or a "
                                                      "time with offset")


class InspectionPayload(BaseModel):
    """``{prefix}/{site}/inspection``: an inspection recorded in the field (§ 134-9A(2)).
    A ``ts`` more than 5 minutes ahead is rejected (``future``)."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)

    inspector: Annotated[str | list[str], BeforeValidator(_names)] = Field(
        description="a name, or a list of names for a joint inspection")
    kind: InspectionKind = "routine"
    notes: str | None = None
    findings: list[FindingPayload] | str | None = None
    corrective_actions: list[CorrectiveActionPayload] | None = None
    resolves: list[Annotated[str, Field(pattern=ID_PATTERN)]] | None = None
    site: str | None = None
    ts: Timestamp | None = Field(default=None, description="defaults to the receipt time")


#: The schema model of each message kind (sensors/README.md, "MQTT contract" table).
PAYLOAD_MODELS: Final[Mapping[str, type[BaseModel]]] = {
    "rain": RainPayload,
    "turbidity": TurbidityPayload,
    "sediment": SedimentPayload,
    "status": StatusPayload,
    "inspection": InspectionPayload,
}

"""The building blocks of the configuration schema (``config.py``): the base model,
the field types, how a check that spans fields reports each problem at the
field a user must edit (``sites.0.traps.1.side_slope``), all at once, and how
numbers are said in messages (``say_number``, ``bound_message``): as people
write them, in the unit of the field's name (``at least 1 minute``, not
``greater than or equal to 0.016666666666666666``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ModelWrapValidatorHandler, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"
Id = Annotated[str, Field(pattern=ID_PATTERN)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Fraction01 = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]

# A problem found by a check that spans fields: where (relative to the model
# that ran the check) and what.
Loc = tuple[str | int, ...]
Problem = tuple[Loc, str]


class Model(BaseModel):
    """Base for every configuration section: immutable, unknown keys rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def error_details(problems: Sequence[Problem], value: Any) -> list[InitErrorDetails]:
    return [InitErrorDetails(type=PydanticCustomError("config", message), loc=loc, input=value)
            for loc, message in problems]


def raise_problems(title: str, problems: Sequence[Problem], value: Any) -> None:
    """Raise every problem at once, each at its own field.

    A ``ValidationError`` raised inside a validator keeps its locations, and
    pydantic nests them under the model's own location, so a trap's check can
    point at ``sites.0.traps.1.side_slope`` rather than at the whole trap.
    """
    if problems:
        raise ValidationError.from_exception_data(title, error_details(problems, value))


def combined(title: str, exc: ValidationError, problems: Sequence[Problem],
              value: Any) -> ValidationError:
    """Field errors from pydantic plus our own problems, as one error."""
    # The context (a bound's ``ge``, ``lt`` ...) goes along, so the message can be
    # said again in the field's unit (``bound_message``).
    details = [InitErrorDetails(type=PydanticCustomError(e["type"], e["msg"], e.get("ctx")),
                                loc=e["loc"], input=e["input"])
               for e in exc.errors()]
    return ValidationError.from_exception_data(title, details + error_details(problems, value))


def validate_reporting(cls: type[BaseModel], data: Any, handler: ModelWrapValidatorHandler[Any],
                        problems: Sequence[Problem]) -> Any:
    """Run the model's own validation and report ``problems`` found on the raw input
    with it, so one mistake does not hide another (check-config prints them all)."""
    try:
        model = handler(data)
    except ValidationError as exc:
        if not problems:
            raise
        raise combined(cls.__name__, exc, problems, data) from None
    raise_problems(cls.__name__, problems, data)
    return model


def as_mapping(data: Any) -> Mapping[str, Any]:
    if isinstance(data, BaseModel):
        return data.model_dump()
    return data if isinstance(data, Mapping) else {}


# --------------------------------------------------------------------------- numbers in messages

#: Units said after a number, from the end of a field's name (config/README.md: units
#: are in the names); (singular, plural).
_UNITS: dict[str, tuple[str, str]] = {
    "_hours": ("hour", "hours"), "_minutes": ("minute", "minutes"), "_days": ("day", "days"),
    "_s": ("second", "seconds"), "_in": ("in", "in"), "_ft": ("ft", "ft"),
    "_cf": ("cubic foot", "cubic feet"), "_ntu": ("NTU", "NTU"), "_v": ("V", "V"),
    "_in_per_hour": ("in per hour", "in per hour"),
}
#: A pydantic bound's error type: its context key and how it is said.
_BOUNDS = {"greater_than_equal": ("ge", "at least"), "greater_than": ("gt", "more than"),
           "less_than_equal": ("le", "at most"), "less_than": ("lt", "less than")}


def say_number(value: float) -> str:
    """``0.5``, ``12.7``, ``24``, ``0.01667``: at most four significant digits, no
    exponent, no trailing zeros."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    text = f"{value:.4g}"
    if "e" in text:  # 1e-05: a person writes 0.00001
        text = f"{value:.12f}".rstrip("0").rstrip(".")
    return text


def say_quantity(value: float, field: str) -> str:
    """``value`` of the field named ``field`` with its unit: ``1 minute`` for 1/60 of
    ``dry_gap_hours``, ``0.01 in`` for ``threshold_in``, a plain number otherwise."""
    for suffix, (one, many) in _UNITS.items():
        if field.endswith(suffix):
            if suffix == "_hours" and 0 < abs(value) < 1:
                return say_quantity(value * 60, "x_minutes")
            if suffix == "_minutes" and 0 < abs(value) < 1:
                return say_quantity(value * 60, "x_s")
            shown = say_number(value)
            return f"{shown} {one if shown in ('1', '-1') else many}"
    return say_number(value)


def bound_message(kind: str, ctx: Mapping[str, Any] | None, field: str,
                  given: Any) -> str | None:
    """A pydantic numeric bound error (``greater_than_equal`` ...) said as people
    would: ``must be at least 1 minute (got 3.6 seconds)``; None for other errors."""
    said = _BOUNDS.get(kind)
    if said is None or not ctx or not isinstance(ctx.get(said[0]), int | float):
        return None
    limit = float(ctx[said[0]])
    message = f"must be {said[1]} {say_quantity(limit, field)}"
    if isinstance(given, int | float) and not isinstance(given, bool):
        message += f" (got {say_quantity(float(given), field)})"
    return message

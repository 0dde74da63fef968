"""The building blocks of the configuration schema (``config.py``): the base model,
the field types, and how a check that spans fields reports each problem at the
field a user must edit (``sites.0.traps.1.side_slope``), all at once.
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
    details = [InitErrorDetails(type=PydanticCustomError(e["type"], e["msg"]), loc=e["loc"],
                                input=e["input"])
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

"""The base of every event body: a frozen dataclass of one event type's own fields,
and how it becomes JSON and back (``events.py`` holds the vocabulary itself).

A body's JSON has every field without a default (the contract's, null
included) and the optional ones only when set; a contract field added later
(``contract_field``) has a default, so records written before it still read,
and is in the JSON always, null included.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

#: Field metadata: a field of the event contract, in the JSON even when null.
CONTRACT = "contract"


def contract_field() -> Any:
    """A field of the vocabulary added to a type later: null unless set, always in the JSON, and
    absent from older records (which then read as null)."""
    return dataclasses.field(default=None, metadata={CONTRACT: True})


@dataclass(frozen=True, slots=True, kw_only=True)
class Body:
    """The own fields of one event type (its ``TYPE``)."""

    TYPE: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.default is not dataclasses.MISSING \
                    and not f.metadata.get(CONTRACT):
                continue  # an optional field that is not set
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Body:
        """The body of ``data`` (an event's JSON); unknown keys are ignored."""
        kwargs = {}
        for f in dataclasses.fields(cls):
            if f.name in data:
                value = data[f.name]
                kwargs[f.name] = tuple(value) if isinstance(value, list) else value
        return cls(**kwargs)

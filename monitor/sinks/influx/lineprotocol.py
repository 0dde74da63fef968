"""InfluxDB line protocol: points, their identity, and their one text form.

A point is ``measurement,tag=value,... field=value,... timestamp``. InfluxDB
identifies a point by its *series* (measurement and tag set) and its
timestamp: writing the same series at the same time again replaces the
field values given and keeps the others. The exporter relies on that for
idempotence (a replayed batch rewrites the same points), so:

* tags are sorted here, once, so one series always has one spelling;
* timestamps are integer milliseconds (``precision=ms``), the journal's own
  unit, so a point's time never depends on float rounding;
* field types never vary for one field name: integers carry the ``i``
  suffix, every other number is written as a float (``5`` NTU is ``5.0``),
  because InfluxDB refuses a point whose field type differs from the type
  already stored for that field ("field type conflict").

Escaping follows the line protocol reference (InfluxDB 1.8 "Line protocol
tutorial", 2.x "Line protocol" reference): commas and spaces in measurement
names; commas, equals signs and spaces in tag keys, tag values and field
keys; double quotes and backslashes in string field values. Line protocol
has no way to carry a newline, so newlines in strings become spaces, and no
way to carry NaN or infinity, so such a field is left out (ingest rejects
them anyway). Empty tag values are not allowed either: such a tag is left
out, which is what InfluxDB does with an absent tag.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

FieldValue = bool | int | float | str

_MEASUREMENT_ESCAPES = str.maketrans({",": r"\,", " ": r"\ ", "\n": " "})
_KEY_ESCAPES = str.maketrans({",": r"\,", "=": r"\=", " ": r"\ ", "\n": " "})
_STRING_ESCAPES = str.maketrans({'"': r"\"", "\\": "\\\\", "\n": " ", "\r": " "})


class Int(int):
    """An integer field: written with the ``i`` suffix.

    Plain Python ints are written as floats, so a value that happens to be
    whole (``ntu: 5``) never turns its field into an integer field. Fields
    that are integers by nature (``tips_total``, ``seq``, counts, revisions)
    say so with ``Int(n)``.
    """

    __slots__ = ()


def escape_measurement(name: str) -> str:
    return name.translate(_MEASUREMENT_ESCAPES)


def escape_key(text: str) -> str:
    """A tag key, tag value or field key."""
    return text.translate(_KEY_ESCAPES)


def format_value(value: FieldValue) -> str | None:
    """One field value in line protocol, or None when it cannot be written (NaN, inf)."""
    if isinstance(value, bool):  # before int: bool is an int subclass
        return "true" if value else "false"
    if isinstance(value, Int):
        return f"{int(value)}i"
    if isinstance(value, int | float):
        number = float(value)
        if not math.isfinite(number):
            return None
        return repr(number)
    return '"' + value.translate(_STRING_ESCAPES) + '"'


@lru_cache(maxsize=4096)
def raw_series(measurement: str, site: str, sensor: str) -> str:
    """``series_key`` of a raw reading, cached: a fleet has few sensors and many readings."""
    return series_key(measurement, {"site": site, "sensor": sensor})


def series_key(measurement: str, tags: Mapping[str, str | None]) -> str:
    """``measurement,k=v,...`` with tags sorted by key and empty ones left out."""
    parts = [escape_measurement(measurement)]
    for key in sorted(tags):
        value = tags[key]
        if value:
            parts.append(f"{escape_key(key)}={escape_key(value)}")
    return ",".join(parts)


@dataclass(slots=True)
class Point:
    """One point: its series key (escaped, tags sorted), fields and time in ms.

    ``(series, ts_ms)`` is the point's identity in InfluxDB.
    """

    series: str
    fields: dict[str, FieldValue]
    ts_ms: int

    @classmethod
    def make(cls, measurement: str, tags: Mapping[str, str | None],
             fields: Mapping[str, FieldValue | None], ts_ms: int) -> Point:
        """A point; fields whose value is None are left out."""
        return cls(series_key(measurement, tags),
                   {k: v for k, v in fields.items() if v is not None}, int(ts_ms))

    @classmethod
    def at(cls, series: str, fields: Mapping[str, FieldValue | None], ts_ms: int) -> Point:
        """A point of an already escaped series key (``series_key``), for hot paths."""
        return cls(series, {k: v for k, v in fields.items() if v is not None}, ts_ms)

    @property
    def identity(self) -> tuple[str, int]:
        return (self.series, self.ts_ms)

    @property
    def measurement(self) -> str:
        # The first unescaped comma ends the measurement.
        i = 0
        text = self.series
        while i < len(text):
            if text[i] == "\\":
                i += 2
                continue
            if text[i] == ",":
                return text[:i].replace("\\ ", " ").replace("\\,", ",")
            i += 1
        return text.replace("\\ ", " ").replace("\\,", ",")

    def encode(self) -> str | None:
        """The point as one line (no newline), or None when no field can be written."""
        fields = []
        for key, value in self.fields.items():
            text = format_value(value)
            if text is not None:
                fields.append(f"{escape_key(key)}={text}")
        if not fields:
            return None
        return f"{self.series} {','.join(fields)} {self.ts_ms}"


"""Domain events: the one vocabulary of DESIGN § 5.

A ``Fact`` is what the rules conclude (type, site, event time, stable id and
the type's own fields). An ``Event`` is a fact as published: with the
``revision`` it has reached. When late data changes a fact, the engine
publishes the same id again with ``revision + 1``; when late data shows a fact
never held (a storm start that moved earlier gets a new id), the old id is
published once more with ``retracted: true``. The latest revision is
authoritative.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from .times import iso, parse_iso

#: Every event type and its own fields (DESIGN § 5); ``extra`` fields may follow.
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "storm_started": ("gauge", "event_id", "started_at"),
    "storm_qualified": (
        "gauge", "event_id", "started_at", "qualified_at", "total_in", "max_24h_in", "due",
    ),
    "storm_ended": (
        "gauge", "event_id", "started_at", "ended_at", "total_in", "max_24h_in", "qualified",
    ),
    "inspection_recorded": ("inspector", "kind", "inspected_at", "closes"),
    "inspection_due_soon": ("clock_id", "clock", "due", "hours_left"),
    "inspection_overdue": ("clock_id", "clock", "due", "hours_late"),
    "clock_closed": ("clock_id", "clock", "due", "inspected_at", "outcome"),
    "trap_fill": ("trap", "fill_fraction", "depth_in"),
    "trap_cleanout_required": ("trap", "fill_fraction", "depth_in"),
    "trap_cleaned": ("trap", "fill_before", "fill_after"),
    "turbidity_contrast": (
        "pair", "state", "started_at", "upstream_ntu", "downstream_ntu", "delta_ntu", "limit_ntu",
    ),
    "sensor_stale": ("sensor", "last_seen"),
    "sensor_recovered": ("sensor", "last_seen"),
    "battery_low": ("sensor",),
    "counter_reset": ("sensor",),
    "background_missing": ("sensor",),
    "pegged": ("sensor",),
}

#: Tie-break for events at the same instant: causes before consequences.
TYPE_ORDER = {name: i for i, name in enumerate(EVENT_FIELDS)}


def make_id(*parts: object) -> str:
    """A stable id: the first 16 hex digits of SHA-256 over the parts."""
    text = "\x1f".join(str(p) for p in parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Fact:
    """A concluded domain fact. ``fields`` holds JSON-ready values only."""

    type: str
    site: str
    at_ms: int
    id: str
    fields: dict[str, Any] = field(default_factory=dict, hash=False)

    def sort_key(self) -> tuple[int, int, str]:
        return (self.at_ms, TYPE_ORDER.get(self.type, 99), self.id)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "site": self.site, "at": iso(self.at_ms), "id": self.id,
                **self.fields}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fact:
        rest = {k: v for k, v in data.items()
                if k not in ("type", "site", "at", "id", "revision", "retracted")}
        return cls(data["type"], data["site"], parse_iso(data["at"]), data["id"], rest)


@dataclass(frozen=True, slots=True)
class Event:
    """A published fact with its revision (DESIGN § 2: latest revision wins)."""

    fact: Fact
    revision: int = 0
    retracted: bool = False

    @property
    def type(self) -> str:
        return self.fact.type

    @property
    def id(self) -> str:
        return self.fact.id

    @property
    def at_ms(self) -> int:
        return self.fact.at_ms

    def to_json(self) -> dict[str, Any]:
        out = self.fact.to_json()
        out["revision"] = self.revision
        if self.retracted:
            out["retracted"] = True
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Event:
        return cls(Fact.from_json(data), int(data.get("revision", 0)),
                   bool(data.get("retracted", False)))


def in_event_order(events: list[Event]) -> list[Event]:
    """Events by event time (causes before consequences at one instant), then revision."""
    return sorted(events, key=lambda e: (e.fact.sort_key(), e.revision))

"""Topics and payloads of the MQTT contract (sensors/README.md, "MQTT contract"), as the node writes
them.

``{prefix}/{site}/{sensor}/reading`` carries one reading: ``ts`` (ISO 8601,
UTC, ``Z``), ``seq`` and the sensor's fields. ``{prefix}/{site}/{sensor}/status``
carries the node's health as seen by that sensor: the daemon accepts a status
only on the topic of a sensor it knows, so a node with three sensors sends
three status messages, each with the node-wide ``battery_v``, ``rssi_dbm`` and
``uptime_s`` and that sensor's own ``buffered`` and ``dropped``.

JSON is compact and each key appears once, so the daemon's fast path parses it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from .clock import iso_z
from .fields import DECIMALS


def reading_topic(prefix: str, site: str, sensor: str) -> str:
    return f"{prefix.rstrip('/')}/{site}/{sensor}/reading"


def status_topic(prefix: str, site: str, sensor: str) -> str:
    return f"{prefix.rstrip('/')}/{site}/{sensor}/status"


def rounded(name: str, value: float) -> float | int:
    """A field's value as published: integers stay integers, the rest to ``DECIMALS``."""
    if isinstance(value, int):
        return value
    return round(value, DECIMALS.get(name, 3))


def reading_payload(ts_ms: int, seq: int, fields: Mapping[str, float]) -> bytes:
    body: dict[str, object] = {"ts": iso_z(ts_ms), "seq": seq}
    body.update((name, rounded(name, value)) for name, value in fields.items())
    return json.dumps(body, separators=(",", ":")).encode()


def status_payload(ts_ms: int, fields: Mapping[str, object]) -> bytes:
    body: dict[str, object] = {"ts": iso_z(ts_ms)}
    body.update(fields)
    return json.dumps(body, separators=(",", ":")).encode()

"""The keys alerts are routed by: every event type, and the variants of a few.

A route (``notify.routes`` in the configuration, config/README.md) maps a key to
tags. The key is an event type, or for the types whose route depends on one
field, ``type.value`` (``clock_closed.late``). The configuration checks its
routes against these keys, and the notifier routes by them, so both live here
below either.
"""

from __future__ import annotations

from typing import Final

from .events import EVENT_FIELDS

#: Types whose route (and urgency) depends on one field, and that field's values.
VARIANTS: Final[dict[str, tuple[str, ...]]] = {
    "storm_qualified": ("informational",),
    "clock_closed": ("met", "late"),
    "turbidity_contrast": ("exceeded", "cleared"),
}

#: Every key a route may be given under (validated in the configuration).
ROUTE_KEYS: Final[tuple[str, ...]] = tuple(
    [*EVENT_FIELDS] + [f"{t}.{v}" for t, vs in VARIANTS.items() for v in vs])

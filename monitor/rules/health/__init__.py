"""The health family: silence, recovery and battery of every sensor, of any kind.

``health.py`` is the fold of one sensor and the silence of sensors never heard
from. Timelines ``health:<sensor>``, each taking the sensor's ``status``
messages and those of the nodes that are its sign of life.
"""

from __future__ import annotations

from typing import Final

from ...config import SiteConfig
from ..family import Family, FoldInputs
from .health import HealthFold


def folds(site: SiteConfig) -> dict[str, FoldInputs]:
    """One fold per sensor; its readings, and the status of its node as heartbeats."""
    return {f"health:{s.id}": (HealthFold(site.id, s), (s.id,), site.heartbeat_sensors(s))
            for s in site.sensors}


#: The default alert route of each of the family's event types (a variant as
#: ``type.variant``), [] = log book only (``sinks/notify/routing.py``).
ALERT_ROUTES: Final[dict[str, tuple[str, ...]]] = {
    # Sensor health goes to whoever keeps the nodes running.
    "sensor_stale": ("ops",),
    "sensor_recovered": ("ops",),
    "battery_low": ("ops",),
}


FAMILY = Family(name="health", group="health",
                events=("sensor_stale", "sensor_recovered", "battery_low"), folds=folds,
                alert_routes=ALERT_ROUTES)

"""A gauge that reports on each tip, in tests.

Its site's configuration and two storms of its logger as (time, tips total) rows.
"""

from __future__ import annotations

from typing import Any

from monitor.config import Config
from monitor.config.file import parse_config
from monitor.contract.times import MS_PER_DAY, MS_PER_MINUTE, parse_iso

SITE = "branch-meadows"

T0 = parse_iso("2026-05-01T00:00:00Z")

MIN = MS_PER_MINUTE

DAY = MS_PER_DAY


def config(*gauges: dict[str, Any], **site: Any) -> Config:
    doc: dict[str, Any] = {"id": SITE, "timezone": "America/New_York", "condition": "B",
                           "sensors": list(gauges)}
    doc.update(site)
    return parse_config({"state_dir": "/tmp/stormwatch-test", "sites": [doc]}, env={})


def gauge(ident: str = "rg1", **fields: Any) -> dict[str, Any]:
    return {"id": ident, "kind": "rain", "in_per_tip": 0.01, **fields}


def two_storms() -> list[tuple[int, int]]:
    """A logger's rows: a row per tip, two minutes apart, 60 tips from 00:00 and 60 more
    from three days later; nothing in between (it was dry)."""
    rows = [(T0 + k * 2 * MIN, 1 + k) for k in range(60)]
    rows += [(T0 + 3 * DAY + k * 2 * MIN, 61 + k) for k in range(60)]
    return rows

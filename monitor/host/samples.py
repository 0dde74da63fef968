"""A turbidity sample taken by hand, journaled as a reading of its discharge point.

EPA CGP 2022 Part 3.3.1 asks for at least one turbidity sample a day from each
dewatering discharge point; a site without a probe there takes a grab sample
with a hand meter. The field app enters it as what it is, a reading of that
discharge point's turbidity sensor (``dewatering``), through the admission rules
every MQTT reading passes (``ingest/checks.sensor_message``), so the benchmark
(``rules/permits/benchmark.py``) counts it as it counts a probe's. Whether the
daemon runs or not, it goes into the journal, as an inspection does.
"""

from __future__ import annotations

import time

from ..config import Config
from ..contract.inputs import Reading
from ..contract.rejects import Rejection
from ..contract.times import iso
from ..ingest.checks import TimeRule, sensor_message, site_index
from ..store.opening import daemon_lock, open_store
from .engine import EngineHost
from .rows import journal_in

#: The journal row's topic of a sample entered in the field app (no broker carried it).
SAMPLE_TOPIC = "web/sample"


def sample_reading(config: Config, site_id: str, sensor: str, ntu: float, at_ms: int,
                   now_ms: int) -> Reading | Rejection:
    """The reading of a hand sample, by the rules of an MQTT reading (a time ahead of
    ``now_ms`` or older than the site's lateness bound, a value no meter reads: refused)."""
    index = site_index(config)[site_id]
    return sensor_message(index, sensor, "turbidity", {"ts": iso(at_ms), "ntu": ntu},
                          TimeRule.wall(now_ms))


def commit_sample(config: Config, reading: Reading) -> bool:
    """Journal ``reading``; True when it was applied here (no daemon runs), False when
    the running daemon applies it."""
    with daemon_lock(config) as held, open_store(config) as store:
        store.journal.commit([journal_in(reading, topic=SAMPLE_TOPIC,
                                         received_ms=round(time.time() * 1000))])
        if held is None:
            return False
        host = EngineHost.restore(config, store)
        host.catch_up()
        host.record_status()
        host.snapshot()
        return True

"""Status of an unmonitored pair says unknown, then unmonitored, never OK
(monitor/README.md, "Turbidity"). The rules' side is in
``tests/engine/test_unmonitored.py``.
"""

from __future__ import annotations

from monitor.contract.times import iso
from monitor.engine import site_status
from monitor.views.status import format_status

from ..support.turbiditykit import feed, probes
from ..support.util import SITE, ts


def test_status_says_unknown_then_unmonitored_never_ok() -> None:
    # tb-down last read at 12:55 (ok then); the engine at 14:00: unknown since 13:10, the
    # notice due 15:10; at 15:30 the notice is out: unmonitored.
    items = probes("12:00", 2.5, down_off=("13:00", "18:00"))
    eng = feed(items, ts("14:00"))
    pair = site_status(eng, SITE, ts("14:00"))["turbidity"]["outfall-1"]
    assert (pair["state"], pair["unknown"]) == ("unknown", {
        "reason": "downstream_stale", "since": iso(ts("13:10")), "notice_at": iso(ts("15:10"))})
    eng.tick(ts("15:30"))
    shown = site_status(eng, SITE, ts("15:30"))
    assert shown["turbidity"]["outfall-1"]["state"] == "unmonitored"
    status = {"generated_at": iso(ts("15:30")), "journal": {"age_s": 1.0},
              "ingest": {"accepted": 1, "rejected": {}, "journal_seq": 1, "applied_seq": 1},
              "daemon": {"age_s": 1.0, "stale": False, "state_written_at": iso(ts("15:30")),
                         "wall_clock_step_s": None},
              "broker": {"state": "connected", "since": None},
              "sites": {SITE: {**shown, "recorded_at": iso(ts("15:30"))}}}
    line = next(ln for ln in format_status(eng.config, status).splitlines()
                if ln.startswith("  turbidity outfall-1"))
    assert line == ("  turbidity outfall-1: unmonitored; contrast UNKNOWN since 2026-05-01 "
                    "09:10 EDT (no readings from the downstream probe): § 134-8C is not "
                    "checked; the qualified professional was told at 2026-05-01 11:10 EDT: a "
                    "person must look")

"""A temporary shutdown with its written notice (``stormwatch site shutdown``): New York's
permit inspects every 30 calendar days meanwhile and weekly again after ``site resume``;
Chapter 134, which has no shutdown rule, is unchanged (config/README.md, "Permits").

Hand-computed in New York's zone (EST): active from Mon Nov 2 2026, inspected Wed Nov 4
10:00; shutdown from Fri Nov 6 (local midnight, 05:00Z); resumed Tue Dec 1.
"""

from __future__ import annotations

from monitor.contract.inputs import ShutdownNotice
from monitor.contract.times import parse_iso
from monitor.engine import Engine

from ..support.util import SITE, final, insp, site_config

NOTICE = "Winter shutdown; written notice mailed to DEC Region 3 on Nov 5"


def engine(*, resume: bool) -> Engine:
    eng = Engine(site_config(active_since="2026-11-02",
                             permits=["village-branch-134", "ny-gp-0-25-001"]))
    eng.apply(insp(parse_iso("2026-11-04T15:00:00Z")))
    eng.apply(ShutdownNotice(SITE, parse_iso("2026-11-06T05:00:00Z"), NOTICE, by="J. Rivera"))
    if resume:
        eng.apply(ShutdownNotice(SITE, parse_iso("2026-12-01T05:00:00Z"), resume=True))
    eng.tick(parse_iso("2026-12-03T12:00:00Z"))
    return eng


def routine(eng: Engine, permit: str) -> list[tuple[str, str | None, str | None]]:
    return [(c.clock_id, str(c.due), str(c.ends_at)) for c in eng.clocks(SITE)
            if c.clock == "routine" and c.chain == permit]


def iso_ms(text: str) -> str:
    return str(parse_iso(text))


def test_new_york_inspects_every_30_days_in_a_shutdown_and_weekly_after_it() -> None:
    eng = engine(resume=True)
    ny = routine(eng, "ny-gp-0-25-001")
    assert ny == [
        ("ny-gp-0-25-001/routine-2026-11-02T05:00:00Z", iso_ms("2026-11-10T04:59:59.999Z"),
         "None"),
        # Open when the shutdown began: cut there.
        ("ny-gp-0-25-001/routine-2026-11-04T15:00:00Z", iso_ms("2026-11-12T04:59:59.999Z"),
         iso_ms("2026-11-06T05:00:00Z")),
        # 30 calendar days from Nov 6: the end of Dec 6; cut when work resumed.
        ("ny-gp-0-25-001/routine-2026-11-06T05:00:00Z", iso_ms("2026-12-07T04:59:59.999Z"),
         iso_ms("2026-12-01T05:00:00Z")),
        # Weekly again: the end of Dec 8.
        ("ny-gp-0-25-001/routine-2026-12-01T05:00:00Z", iso_ms("2026-12-09T04:59:59.999Z"),
         "None"),
    ]
    # Chapter 134 has no shutdown rule: its clock of Nov 4 stands overdue.
    village = routine(eng, "village-branch-134")
    assert village[-1][:2] == ("routine-2026-11-04T15:00:00Z",
                               iso_ms("2026-11-12T04:59:59.999Z"))
    (shutdown,) = final(eng, "site_shutdown")
    assert (shutdown["started_at"], shutdown["ended_at"], shutdown["notice"], shutdown["by"]) \
        == ("2026-11-06T05:00:00Z", "2026-12-01T05:00:00Z", NOTICE, "J. Rivera")


def test_no_missed_week_is_counted_for_new_york_during_the_shutdown() -> None:
    eng = engine(resume=False)
    missed = {e["permit"] for e in final(eng, "inspection_missed")}
    assert missed == {"village-branch-134"}
    (shutdown,) = final(eng, "site_shutdown")
    assert shutdown["ended_at"] is None

"""The compliance report in tests.

A month of readings at an active site (counters, storms, inspections), the report's
tables read back as cells of text, and the month the printed report plots.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import unescape
from pathlib import Path

from monitor.config.file import load_config
from monitor.contract.inputs import CorrectiveAction, Inspection, Reading
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE, parse_iso
from monitor.host.engine import EngineHost
from monitor.host.rows import journal_in
from monitor.store.opening import open_store

from .daemonkit import SITE, write_config

H = MS_PER_HOUR
#: The line of a site's configuration that makes it active from the month's start.
ACTIVE = "    active_since: 2026-05-01\n"


def gauge_readings(start_ms: int, end_ms: int,
                   storms: Sequence[tuple[int, int]]) -> list[Reading]:
    """The gauge's counter every 4 hours when dry, every minute while it rains."""
    out, total, at = [], 0, start_ms
    rain = {s + m * MS_PER_MINUTE for s, n in storms for m in range(n)}
    stamps = sorted(set(range(start_ms, end_ms, 4 * H)) | rain
                    | {s + (n + m) * MS_PER_MINUTE for s, n in storms for m in range(1, 60)})
    for at in stamps:
        total += 1 if at in rain else 0
        out.append(Reading(site=SITE, sensor="rg1", kind="rain", ts_ms=at, tips_total=total))
    return out


def table_cells(html: str, heading: str) -> list[list[str]]:
    """The rows of the table after ``<h2>heading``, as text cells."""
    section = html.split(f"<h2>{heading}", 1)[1].split("<h2>", 1)[0]
    return [[unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td>(.*?)</td>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", section)[1:]]


#: The month the report tests report: May 2026 in New York.
FROM, TO = parse_iso("2026-05-01T04:00:00Z"), parse_iso("2026-06-01T04:00:00Z")
#: When the month's turbidity episode starts.
TURBID = parse_iso("2026-05-30T14:00:00Z")


def month_items() -> list[Reading | Inspection]:
    insp = parse_iso("2026-05-03T20:00:00Z")
    items: list[Reading | Inspection] = [Inspection(
        site=SITE, inspector="J. Rivera", ts_ms=insp, entered_ms=insp + MS_PER_HOUR,
        corrective_actions=(
            CorrectiveAction("ca-1", "re-trench silt fence north",
                             parse_iso("2026-05-07T04:00:00Z")),
            CorrectiveAction("ca-2", "seed the stockpile", parse_iso("2026-06-10T04:00:00Z"))))]
    # 33 in of sediment in the Blue Book trap (20 x 10 ft, 2:1 sides, 4 ft deep):
    # V(2.75 ft) = 550 + 30*2*2.75^2 + 4/3*4*2.75^3 = 1114.67 cf of 2101.33 cf: 53 %.
    # The fifth reading (the median's window full) is the demand: May 10 16:00 UTC.
    for h in range(5):
        items.append(Reading(site=SITE, sensor="trap1-depth", kind="sediment",
                             ts_ms=parse_iso("2026-05-10T12:00:00Z") + h * MS_PER_HOUR,
                             depth_in=33.0))
    items.append(Reading(site=SITE, sensor="trap1-depth", kind="sediment",
                         ts_ms=parse_iso("2026-05-20T12:00:00Z"), depth_in=33.0))
    # Background 5 NTU; downstream 6, then 20 from 14:05 (over the 5 NTU allowed
    # increase), 30, 50 (the peak: 45 NTU over background at 14:20 UTC), 20, 18 ...
    for i, down in enumerate((6.0, 20.0, 25.0, 30.0, 50.0, 20.0, 18.0, 16.0, 15.0, 15.0)):
        ts = TURBID + i * 5 * MS_PER_MINUTE
        items.append(Reading(site=SITE, sensor="tb-up", kind="turbidity", ts_ms=ts, ntu=5.0))
        items.append(Reading(site=SITE, sensor="tb-down", kind="turbidity", ts_ms=ts + 1000,
                             ntu=down))
    return sorted(items, key=lambda it: it.ts_ms)


def month_site(tmp_path: Path, more: str = "",
               items: Sequence[Reading | Inspection] | None = None) -> Path:
    """The config file of the site of May (module docstring), its state recorded from
    ``items`` (default ``month_items()``); ``more`` is further lines of the site's
    configuration."""
    path = write_config(tmp_path, 1, name=f"Branch Meadows\n{ACTIVE}{more}")
    config = load_config(path, env={})
    with open_store(config) as store:
        host = EngineHost.restore(config, store, clock=lambda: TO / 1000)
        store.journal.commit([journal_in(it, topic=None, received_ms=None)
                              for it in (month_items() if items is None else items)])
        host.catch_up()
        host.tick()
    return path


def plotted_month() -> list[Reading | Inspection]:
    """May's inputs: rain (storms on May 3 and 13), a trap at 53 %, a turbidity episode."""
    storms = [(parse_iso("2026-05-03T14:00:00Z"), 70), (parse_iso("2026-05-13T14:00:00Z"), 61)]
    return sorted([*month_items(), *gauge_readings(FROM, TO, storms)], key=lambda it: it.ts_ms)

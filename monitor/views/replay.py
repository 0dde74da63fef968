"""Replay: recorded readings from CSV through the same engine the daemon runs.

A file is not a stream (monitor/README.md): the file is read whole by the row rules
(``sources/filerows.py``: every reason a message is refused for, the future
against the wall clock of the run, no lateness bound), its inputs put in event
time, and then folded in that order, so a newest-first export gives what the
ascending one gives and nothing of a file is "too old". At the end one tick
at the newest event time lets the remaining time pass (storms whose dry gap
has elapsed end, silent sensors go stale), and the final set of events is what
``--format jsonl`` prints.

``arrival_order`` (``--arrival-order``) folds the rows as they come instead,
each as if it arrived as a message, under the daemon's ingest rule
(``admission.py``): a row older than its site's lateness bound *relative to
that site's newest row so far* is ``too_old``, a ``seq`` repeated with another
body after it is a ``seq_conflict``: to compare a file with what a daemon did.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ..config import Config, SiteConfig
from ..config.plausible import storm_duty_unwatched
from ..contract.admission import SiteNewest
from ..contract.events import (
    BackgroundMissing,
    BatteryLow,
    ClockClosed,
    CounterReset,
    Event,
    InspectionOverdue,
    Pegged,
    ProbesSuspect,
    SensorFault,
    SensorRecovered,
    SensorStale,
    StormEnded,
    StormQualified,
    StormStarted,
    TrapCleaned,
    TrapCleanoutRequired,
    TrapFill,
    TurbidityContrast,
    TurbidityMonitored,
    TurbidityUnmonitored,
    in_event_order,
)
from ..contract.figures import depth_text, fill_text
from ..contract.inputs import Inspection, Reading
from ..contract.localtime import local_text
from ..contract.permits import NO_GAUGE
from ..contract.rejects import RejectReason
from ..contract.unmonitored_words import reason_words
from ..engine import Engine, site_now
from ..ingest.checks import NaiveZone
from ..sources.filerows import FileReader, Rejects, header_and_rows, read_whole
from ..sources.pertip import PerTipRows
from .duties import permit_triggers

#: Settled facts are taken from the engine every so many inputs (its memory stays flat).
DRAIN_EVERY = 4096


@dataclass
class ReplayResult:
    engine: Engine
    rows: int = 0
    #: Inputs the row rules took (duplicates included): none means the file gave nothing.
    taken: int = 0
    rejects: Rejects = field(default_factory=Rejects)
    #: Facts the engine settled (final, out of its memory) during the replay.
    settled: list[Event] = field(default_factory=list)
    #: The rows of a per-tip export, and the double tips dropped (``pertip.py``).
    per_tip: PerTipRows | None = None

    @property
    def rejected(self) -> Counter[str]:
        return self.rejects.counts

    @property
    def first_rejects(self) -> list[str]:
        return self.rejects.first

    def events(self) -> list[Event]:
        """The final set: settled facts and those the engine still holds, in event order."""
        self.settled += self.engine.drain_settled()
        return in_event_order(self.settled + self.engine.current_events())


def replay(config: Config, source: str | Path | IO[str],
           progress: Callable[[str], None] | None = None,
           engine: Engine | None = None, *, now_ms: int | None = None,
           zone: NaiveZone = None, arrival_order: bool = False) -> ReplayResult:
    """Fold every row of a replay CSV into an engine; return it with the reject counts.

    ``now_ms`` is the wall clock at the time of the run (the command passes it; None:
    no future bound), ``zone`` how a time without an offset is read
    (``--timezone``), ``arrival_order`` the daemon's order and lateness rule
    (module docstring). An unusable file is ``CsvInputError``."""
    engine = engine or Engine(config)
    result = ReplayResult(engine)
    if arrival_order:
        _in_arrival_order(config, source, result, progress, now_ms, zone)
    else:
        whole = read_whole(config, source, now_ms=now_ms, zone=zone, progress=progress)
        result.rows, result.rejects, result.per_tip = whole.rows, whole.rejects, whole.per_tip
        result.taken = len(whole.inputs)
        for k, item in enumerate(whole.inputs, 1):
            if progress is not None and k % 50_000 == 0:
                progress(f"{k:,} of {result.taken:,} inputs folded")
            # In event time nothing falls behind the engine's horizon: none is too old.
            if not _fold(result, item):
                result.rejects.add(0, RejectReason.too_old.value, "behind the engine's horizon")
        del whole
    if engine.watermark_ms is not None:
        engine.tick(engine.watermark_ms)
    return result


def _in_arrival_order(config: Config, source: str | Path | IO[str], result: ReplayResult,
                      progress: Callable[[str], None] | None, now_ms: int | None,
                      zone: NaiveZone) -> None:
    """Each row as it comes, as a message would (module docstring): lateness is judged
    against the site's newest row taken so far (``admission.SiteNewest``)."""
    header, rows = header_and_rows(source)
    reader = FileReader(config, header, now_ms=now_ms, zone=zone, earlier="earlier in the file")
    result.rejects, result.per_tip = reader.rejects, reader.per_tip
    newest = SiteNewest()
    for n, cells in enumerate(rows, 1):
        result.rows = n
        if progress is not None and n % 50_000 == 0:
            progress(f"{n:,} rows")
        parsed = reader.parse(n + 1, cells, newest.by_site)
        item = None if parsed is None else reader.look_back(n + 1, *parsed)
        if item is None:
            continue
        if _fold(result, item):
            result.taken += 1
            newest.saw(item.site, item.ts_ms)
        else:
            reader.rejects.add(n + 1, RejectReason.too_old.value, "older than the lateness bound")


def _fold(result: ReplayResult, item: Reading | Inspection) -> bool:
    """Apply one input; False when the engine refused it as older than its horizon."""
    engine = result.engine
    before = engine.stats.too_old
    engine.apply(item)
    if (engine.stats.accepted + engine.stats.duplicates) % DRAIN_EVERY == 0:
        result.settled += engine.drain_settled()
    return engine.stats.too_old == before


# --------------------------------------------------------------------------- table


#: The sensor-health types the table counts.
HEALTH_TYPES = frozenset(cls.TYPE for cls in (SensorStale, SensorRecovered, BatteryLow,
                                              CounterReset, BackgroundMissing, Pegged,
                                              SensorFault, ProbesSuspect))


def _local(site: SiteConfig, when: str | int | None) -> str:
    return local_text(when, site.zone)


def format_table(config: Config, result: ReplayResult) -> str:
    """A readable summary per site: storms, clocks, traps, turbidity, sensor health."""
    events = result.events()
    lines: list[str] = []
    for site in config.sites:
        mine = [e for e in events if e.site == site.id]
        title = f"Site {site.id}" + (f" — {site.name}" if site.name else "")
        lines += [title, "=" * len(title),
                  f"condition {site.condition}; times in {site.timezone}; "
                  + (f"storm rule {site.rain.mode}, {site.rain.threshold_in:.2f} in"
                     if not site.permits else permit_triggers(site))
                  + f", dry gap {site.rain.dry_gap_hours:g} h", ""]
        lines += _storm_lines(site, mine) + [""]
        lines += _clock_lines(site, mine, result.engine) + [""]
        lines += _trap_lines(site, mine) + [""]
        lines += _contrast_lines(site, mine) + [""]
        health = Counter(e.type for e in mine if e.type in HEALTH_TYPES)
        lines.append("Sensor health: " + (", ".join(f"{k} {v}" for k, v in sorted(health.items()))
                                          or "no findings"))
        lines.append("")
    stats = result.engine.stats
    lines.append(f"Rows {result.rows}: accepted {stats.accepted}, duplicates {stats.duplicates}, "
                 f"rejected {sum(result.rejected.values())}"
                 + (f" ({', '.join(f'{k} {v}' for k, v in sorted(result.rejected.items()))})"
                    if result.rejected else ""))
    return "\n".join(lines) + "\n"


def _storm_lines(site: SiteConfig, mine: list[Event]) -> list[str]:
    """Each gauge's storm events: start, end, totals, when it qualified and was due."""
    bodies = [e.body for e in mine]
    qualified = {b.event_id: b for b in bodies if isinstance(b, StormQualified)}
    ended = {b.event_id: b for b in bodies if isinstance(b, StormEnded)}
    storms = [b for b in bodies if isinstance(b, StormStarted)]
    lines = [f"Storms: {NO_GAUGE}" if storm_duty_unwatched(site)
             else f"Storms ({len(storms)}, {len(qualified)} qualifying)"]
    if storms:
        lines.append(f"  {'gauge':<8} {'started':<22} {'ended':<22} {'total':>8} "
                     f"{'max 24h':>8}  {'qualified at':<22} {'inspect by':<22}")
    limit = site.rain.threshold_in
    for s in storms:
        end, q = ended.get(s.event_id), qualified.get(s.event_id)
        # Never rounded across the threshold: 0.496 in is not "0.50 in" (figures.py).
        total = depth_text(end.total_in, limit) if end else "open"
        max24 = depth_text(end.max_24h_in, limit) if end else ""
        unknown = end.uncertain_in if end else (q.uncertain_in if q else 0.0)
        lines.append(f"  {s.gauge:<8} {_local(site, s.started_at):<22} "
                     f"{_local(site, end.ended_at if end else None):<22} {total:>8} "
                     f"{max24:>8}  {_local(site, q.qualified_at if q else None):<22} "
                     f"{_local(site, q.due if q else None):<22}"
                     + (f"  {unknown:.2f} in of unknown timing" if unknown else ""))
    return lines


def _clock_lines(site: SiteConfig, mine: list[Event], engine: Engine) -> list[str]:
    """The clocks closed, and those open at the replay's now as ``status`` shows them."""
    clocks_closed = [e.body for e in mine if isinstance(e.body, ClockClosed)]
    overdue = [e for e in mine if isinstance(e.body, InspectionOverdue)]
    # Open as ``status`` shows them, at the replay's now: begun, not closed, not cut.
    now = engine.now_ms
    open_clocks = site_now(engine, site.id, now).open_clocks if now is not None else ()
    lines = [f"Inspection clocks ({len(clocks_closed)} closed, {len(open_clocks)} open,"
             f" {len(overdue)} overdue notices)"]
    for c in clocks_closed:
        lines.append(f"  {c.clock:<8} {c.clock_id:<36} due {_local(site, c.due)}"
                     f"  inspected {_local(site, c.inspected_at)}  {c.outcome}")
    for oc in open_clocks:
        # Past due is said as such (``clocks.is_overdue``, as ``status`` says it).
        state = (f"OVERDUE by {-oc.hours_left:.1f} h" if oc.overdue and oc.hours_left is not None
                 else "OPEN")
        lines.append(f"  {oc.clock:<8} {oc.clock_id:<36} due {_local(site, oc.due_ms)}  {state}")
    return lines


def _trap_lines(site: SiteConfig, mine: list[Event]) -> list[str]:
    traps = [(e.at_ms, e.type, e.body) for e in mine
             if isinstance(e.body, TrapFill | TrapCleanoutRequired | TrapCleaned)]
    lines = [f"Sediment traps ({len(traps)} events)"]
    for at_ms, kind, b in traps:
        levels = site.fill_levels(b.trap)
        what = (f"fill {fill_text(b.fill_before, *levels)} -> "
                f"{fill_text(b.fill_after, *levels)}" if isinstance(b, TrapCleaned)
                else f"fill {fill_text(b.fill_fraction, *levels)} at {b.depth_in:.1f} in")
        lines.append(f"  {_local(site, at_ms):<22} {b.trap:<10} {kind:<24} {what}")
    return lines


def _contrast_lines(site: SiteConfig, mine: list[Event]) -> list[str]:
    contrast = [(e.at_ms, e.body) for e in mine if isinstance(e.body, TurbidityContrast)]
    unchecked = sum(isinstance(e.body, TurbidityUnmonitored) for e in mine)
    lines = [f"Turbidity contrast ({len(contrast)} events" + (
        f", not monitored {unchecked} time{'s' if unchecked > 1 else ''})" if unchecked
        else ")")]
    for at_ms, t in contrast:
        # Without a usable background (basis absolute) there is no upstream value.
        against = (f"no usable background, limit {t.limit_ntu:g} NTU"
                   if t.upstream_ntu is None
                   else f"up {t.upstream_ntu:g} NTU, limit +{t.limit_ntu:g} NTU")
        lines.append(f"  {_local(site, at_ms):<22} {t.pair:<10} {t.state:<9} "
                     f"since {_local(site, t.started_at)}  down {t.downstream_ntu:g}"
                     f" NTU, {against}")
    for e in mine:
        # § 134-8C could not be checked: said to the qualified professional.
        u = e.body
        if isinstance(u, TurbidityUnmonitored | TurbidityMonitored):
            what = ("NOT MONITORED: contrast unknown since" if isinstance(u, TurbidityUnmonitored)
                    else "monitored again: contrast was unknown from")
            lines.append(f"  {_local(site, e.at_ms):<22} {u.pair:<10} {what} "
                         f"{_local(site, u.since)} ({reason_words(u.reason)})")
    return lines

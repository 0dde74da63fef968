"""What the pages show of a site, read as ``stormwatch status`` reads it.

Never the engine: the recorded state (``views.status.build_status``, judged at
the request's wall clock by the engine's own summary rules), the site's current
events (``EventLog.current``, as ``status`` reads them) for the storm behind each
open clock, the last inspection's findings and the open corrective actions. Every
time is given in the site's local time with its zone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..config import Config, SiteConfig
from ..contract.clocknames import clock_name, deadline, due_words, spoken
from ..contract.events import (
    Event,
    GaugeDisagrees,
    InspectionRecorded,
    StormForecast,
    StormQualified,
)
from ..contract.figures import depth_text, fill_text
from ..contract.localtime import local_text
from ..contract.permits import rule_words
from ..contract.times import MS_PER_HOUR, parse_iso
from ..contract.unmonitored_words import reason_words
from ..rules.permits.duties import citation, clock_duty
from ..store import Store
from ..views.logexport import BookLine, book_lines, photo_hashes
from ..views.report.photos import taken_words
from ..views.status import build_status

#: A disagreement is shown for the 24 hours after its window, the time § 134-9A(2)
#: gives an inspection after a storm: the gauge should have been looked at by then.
DISAGREEMENT_SHOWN_MS = 24 * MS_PER_HOUR

#: How many of the latest log book rows the site page shows.
LOGBOOK_ROWS = 50

#: An open finding: a practice the last inspection did not find ``ok``.
OK_CONDITIONS = ("ok", "not_applicable")


@dataclass(frozen=True, slots=True)
class SiteView:
    """One site for the pages: the ``status --json`` site object, the storm behind
    each open storm clock, the last inspection and its open findings."""

    site: SiteConfig
    status: dict[str, Any]
    storms: dict[str, StormQualified] = field(default_factory=dict)
    last: InspectionRecorded | None = None
    #: The latest log book rows, newest first (each with its sentence, ``logexport``).
    logbook: tuple[BookLine, ...] = ()
    head: str = ""
    #: The engine's current weather facts of the site, and the request's instant.
    forecasts: tuple[StormForecast, ...] = ()
    disagreements: tuple[GaugeDisagrees, ...] = ()
    now_ms: int = 0

    @property
    def weather(self) -> dict[str, Any] | None:
        """The weather source's state as ``status`` has it (``{source, last_ok,
        last_error}``); None without ``weather:`` in the configuration."""
        state: dict[str, Any] | None = self.status.get("weather")
        return state

    @property
    def upcoming(self) -> list[StormForecast]:
        """The storm forecasts whose window has not passed yet."""
        return [f for f in self.forecasts if parse_iso(f.window_to) > self.now_ms]

    @property
    def open_disagreements(self) -> list[GaugeDisagrees]:
        """The gauge disagreements of the last day (``DISAGREEMENT_SHOWN_MS``)."""
        return [d for d in self.disagreements
                if parse_iso(d.window_to) + DISAGREEMENT_SHOWN_MS > self.now_ms]

    @property
    def open_clocks(self) -> list[dict[str, Any]]:
        clocks: list[dict[str, Any]] = self.status.get("open_clocks") or []
        return clocks

    @property
    def overdue(self) -> bool:
        return any(c.get("overdue") for c in self.open_clocks)

    @property
    def open_actions(self) -> list[dict[str, Any]]:
        return [a for a in self.status.get("corrective_actions") or []
                if not a.get("resolved_at")]

    @property
    def open_findings(self) -> list[dict[str, str]]:
        if self.last is None:
            return []
        return [f for f in self.last.findings
                if f.get("condition", "").split(":", 1)[0].strip() not in OK_CONDITIONS]

    def local(self, when: int | str | None) -> str:
        """A time as the pages say it, in the site's zone: ``Thu Dec 3 09:27 EST``."""
        return spoken(when, self.site.zone, empty="-")

    def dated(self, when: int | str | None) -> str:
        """A time with its year (``2026-12-03 09:27 EST``), for what may be months old."""
        return local_text(when, self.site.zone)

    def deadline(self, when: int | str | None) -> str:
        """A corrective action's due time: a due date reads as that day's end."""
        return deadline(when, self.site.zone)

    def finding(self, found: dict[str, str]) -> str:
        """A finding in words: ``Silt fence: needs repair (undermined at 2+40)``."""
        names = {p.id: p.name for p in self.site.practices}
        condition, _, note = found.get("condition", "").partition(":")
        practice = found.get("practice", "")
        words = f"{names.get(practice, practice)}: {condition.strip().replace('_', ' ')}"
        return words + (f" ({note.strip()})" if note.strip() else "")

    def depth(self, depth_in: float, threshold_in: float | None = None) -> str:
        """A storm's depth, never rounded across the site's threshold (or the one given)."""
        return depth_text(depth_in, threshold_in if threshold_in is not None
                          else self.site.rain.threshold_in)

    def fill(self, trap_id: str, fraction: float) -> str:
        """A trap's fill in percent, never rounded across its warning or clean-out level."""
        return fill_text(fraction, *self.site.fill_levels(trap_id))

    def why_unknown(self, reason: str) -> str:
        """Why a pair's contrast cannot be checked, as the alert says it."""
        return reason_words(reason)

    def taken(self, photo: dict[str, Any]) -> str:
        """When a photo was taken, as the report says it (``taken_words``)."""
        return taken_words(photo, self.dated)

    def spoken(self, when: int | str | None) -> str:
        """A time as the sentences say it: ``Wed Dec 2 11:30 EST`` (``clocknames``)."""
        return spoken(when, self.site.zone, empty="-")

    def clock_name(self, clock: dict[str, Any]) -> str:
        """An open clock (``status``'s) by what it is: ``storm of Dec 2``, ``week of Nov 25``."""
        clock_id = str(clock.get("clock_id", ""))
        return clock_name(clock_id, self.site.zone, clock.get("clock"),
                          self.site.cadence_days(clock_id))

    def rule(self, clock: dict[str, Any]) -> str:
        """The rule an open clock keeps, at a site that names its permits: ``Within 24 hours
        of a storm of 0.25 in or more, EPA CGP 2022 Part 4.2``; empty otherwise."""
        permit, section = clock.get("permit"), clock.get("section")
        if not permit or not section:
            return ""
        cite = citation(self.site, str(permit), str(section),
                        clock_duty(str(clock.get("clock")), str(clock.get("clock_id", ""))))
        words = rule_words(str(permit), str(section), str(section))
        if cite is None:
            return words
        return f"{words}: \u201c{cite.quote}\u201d" + ("" if cite.verified
                                                      else " (verify against your permit)")

    def due(self, clock: dict[str, Any]) -> str:
        """``due Thu Dec 3 11:30 EST``, or ``OVERDUE since ...`` at the request's instant."""
        return due_words(clock.get("due"), self.now_ms, self.site.zone)

    def photo_hashes(self, line: BookLine) -> list[str]:
        """The SHA-256 of the photos of a log book row (shown apart from its sentence)."""
        return photo_hashes(line.row.body)


def read_sites(config: Config, store: Store, now_ms: int, sites: list[str] | None = None,
               *, detail: bool = False, events: bool | tuple[str, ...] = True
               ) -> list[SiteView]:
    """The sites (all, or those named) as the pages show them, overdue first; without
    ``events`` only the recorded status (the officer's overview of every site), with a
    tuple of event types only those (a list of sites needs only the storms behind
    their open clocks: parsing every event of a season costs far more)."""
    status = build_status(config, store, now_ms, sites)
    # One read of the events table: of the one site (its own rows), or of all (the
    # whole table ranked once, not once per site).
    by_site: dict[str, list[Event]] = {}
    if events:
        types = events if isinstance(events, tuple) else None
        for event in store.events.current(sites[0] if sites and len(sites) == 1 else None,
                                          types):
            by_site.setdefault(event.fact.site, []).append(event)
    out = []
    head = store.events.logbook_head()[1]
    for site in config.sites:
        if sites is not None and site.id not in sites:
            continue
        # The log book as `stormwatch logbook` exports it: a withdrawn row marked.
        book = book_lines(config, store, site.id, LOGBOOK_ROWS)[::-1] if detail else []
        out.append(_view(site, status["sites"][site.id], by_site.get(site.id, []), book,
                         head, now_ms))
    out.sort(key=lambda v: (not v.overdue, not v.open_clocks, v.site.id))
    return out


def _view(site: SiteConfig, status: dict[str, Any], events: list[Event],
          book: list[BookLine], head: str, now_ms: int) -> SiteView:
    storms: dict[str, StormQualified] = {}
    last: InspectionRecorded | None = None
    for event in events:
        body = event.body
        if isinstance(body, StormQualified) and body.clock_id:
            storms[body.clock_id] = body
        if isinstance(body, InspectionRecorded):
            last = body
    return SiteView(site, status, storms, last, tuple(book), head,
                    tuple(e.body for e in events if isinstance(e.body, StormForecast)),
                    tuple(e.body for e in events if isinstance(e.body, GaugeDisagrees)),
                    now_ms)


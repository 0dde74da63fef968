"""The duties of a site: every rule of every permit it answers to, resolved.

A site without ``permits`` answers to ``village-branch-134`` alone, whose storm
and routine numbers are the site's own ``rain:`` and ``routine_inspection_days``
(Chapter 134 lets a site set them), so it behaves exactly as before permits
existed. Each other permit contributes the rules of its profile that apply to
the site's choices (``frequency``, ``impaired_water``, ``disturbed_acres``),
each with its citation.

The first permit listed is the site's *primary* one: its clocks keep the plain
ids (``storm-…``, ``routine-…``); every other permit's clock ids begin with its
key (``epa-cgp-2022/storm-…``), so each permit's clocks are its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...config import SiteConfig
from ...config.permits import PermitRef, Profile, ProfileRule, interval_days, permit_refs


@dataclass(frozen=True, slots=True)
class Citation:
    """Where a duty comes from: the permit, its rule and the rule's words."""

    permit: str
    profile: str
    rule: str
    section: str
    quote: str
    source: str
    verified: bool
    read_at: str | None = None

    def words(self) -> str:
        """The permit and section as a person reads them beside a deadline."""
        return f"{self.permit}, {self.section}"


@dataclass(frozen=True, slots=True)
class RoutineDuty:
    every_days: float
    times: int
    min_gap_days: int
    due: str
    cite: Citation

    @property
    def interval_days(self) -> float:
        """The days from one inspection to the next deadline (``config.permits``)."""
        return interval_days(self.every_days, self.times)


@dataclass(frozen=True, slots=True)
class StormDuty:
    threshold_in: float
    window: str
    source: str
    probability_min: float | None
    deadline_hours: float
    clock_start: str
    outside_hours: str
    cite: Citation

    @property
    def rule_key(self) -> str:
        """The storm rule's name among a site's gauge folds (same rule, same facts)."""
        return f"{self.threshold_in:g}in-{self.window}"


@dataclass(frozen=True, slots=True)
class SnowDuty:
    threshold_in: float
    window_hours: float
    deadline_hours: float
    cite: Citation


@dataclass(frozen=True, slots=True)
class DeadlineDuty:
    """A corrective action's or maintenance's deadline from discovery."""

    kind: str  # "corrective_action" | "maintenance"
    calendar_days: int | None
    business_days: int | None
    cite: Citation

    def words(self) -> str:
        if self.calendar_days is not None:
            return f"{self.calendar_days} calendar day{'s' * (self.calendar_days != 1)}"
        n = self.business_days or 0
        return ("the close of the next business day" if n == 1
                else f"{n} business days")


@dataclass(frozen=True, slots=True)
class ShutdownDuty:
    every_days: int
    notice: str
    cite: Citation


@dataclass(frozen=True, slots=True)
class BenchmarkDuty:
    ntu: float
    min_samples_per_day: int
    sensors: tuple[str, ...]
    cite: Citation


@dataclass(frozen=True, slots=True)
class Permit:
    """One permit of a site with the duties that apply to it."""

    key: str
    profile: str
    title: str
    primary: bool
    #: Whether the site names its permits: a site without ``permits`` answers to
    #: Chapter 134 alone, and its events stay as they were before permits existed
    #: (no ``permit``/``section`` fields).
    named: bool = True
    routine: RoutineDuty | None = None
    storm: StormDuty | None = None
    snow: SnowDuty | None = None
    corrective_action: DeadlineDuty | None = None
    maintenance: DeadlineDuty | None = None
    shutdown: ShutdownDuty | None = None
    benchmark: BenchmarkDuty | None = None
    #: Every rule that applies, with its citation, in the profile's order.
    rules: tuple[tuple[ProfileRule, Citation], ...] = ()

    @property
    def event_key(self) -> str | None:
        """The ``permit`` of the permit's events (None: the site names no permits)."""
        return self.key if self.named else None

    def clock_id(self, plain: str) -> str:
        """The id of this permit's clock ``plain`` (module docstring)."""
        return plain if self.primary else f"{self.key}/{plain}"

    @property
    def unverified(self) -> tuple[Citation, ...]:
        return tuple(c for _, c in self.rules if not c.verified)


def permits_of(site: SiteConfig) -> tuple[Permit, ...]:
    """Every permit of ``site`` with its duties (module docstring)."""
    return tuple(_permit(site, ref, i == 0, bool(site.permits))
                 for i, ref in enumerate(permit_refs(site.permits)))


def _permit(site: SiteConfig, ref: PermitRef, primary: bool, named: bool) -> Permit:
    profile = ref.rule_book
    found: dict[str, object] = {}
    rules: list[tuple[ProfileRule, Citation]] = []
    for rule in ref.applying():
        cite = Citation(ref.key, profile.id, rule.id, rule.section, rule.quote, rule.source,
                        rule.verified, rule.read_at)
        rules.append((rule, cite))
        duty = _duty(site, profile, rule, cite, ref)
        if duty is not None:
            name = "benchmark" if rule.duty == "turbidity_benchmark" else rule.duty
            found.setdefault(name, duty)
    return Permit(ref.key, profile.id, profile.title, primary, named, rules=tuple(rules),
                  **found)  # type: ignore[arg-type]


def _duty(site: SiteConfig, profile: Profile, rule: ProfileRule, cite: Citation,
          ref: PermitRef) -> object | None:
    own = profile.site_numbers
    if rule.routine is not None:
        r = rule.routine
        return RoutineDuty(site.routine_inspection_days if own else float(r.every_days),
                           r.times, r.min_gap_days, site.routine_due if own else r.due, cite)
    if rule.storm is not None:
        s, rain = rule.storm, site.rain
        if own:
            return StormDuty(rain.threshold_in, rain.mode, "gauge", None,
                             rain.inspect_within_hours, rain.clock_start, s.outside_hours, cite)
        return StormDuty(s.threshold_in, s.window, s.source, s.probability_min, s.deadline_hours,
                         s.clock_start, s.outside_hours, cite)
    if rule.snow is not None:
        return SnowDuty(rule.snow.threshold_in, rule.snow.window_hours,
                        rule.snow.deadline_hours, cite)
    for kind in ("corrective_action", "maintenance"):
        action = getattr(rule, kind)
        if action is not None:
            return DeadlineDuty(kind, action.deadline.calendar_days,
                                action.deadline.business_days, cite)
    if rule.shutdown is not None:
        return ShutdownDuty(rule.shutdown.every_days, rule.shutdown.notice, cite)
    if rule.turbidity_benchmark is not None:
        return BenchmarkDuty(rule.turbidity_benchmark.ntu,
                             rule.turbidity_benchmark.min_samples_per_day, ref.dewatering, cite)
    return None


def citation(site: SiteConfig, permit_key: str, section: str, duty: str | None = None
             ) -> Citation | None:
    """The citation of the rule of ``permit_key`` with ``section`` at ``site``: of the
    rule holding ``duty`` when one does (a section may hold several duties of one
    permit: EPA's Part 4.2 its cadence, its storms and its snowmelt), else the first."""
    for permit in permits_of(site):
        if permit.key == permit_key:
            found = [(r, c) for r, c in permit.rules if c.section == section]
            return next((c for r, c in found if r.duty == duty),
                        found[0][1] if found else None)
    return None


def clock_duty(clock: str, clock_id: str) -> str:
    """The duty a clock keeps: ``routine``, ``snow`` for a snowmelt clock, else ``storm``."""
    if clock == "routine":
        return "routine"
    return "snow" if "snowmelt-" in clock_id else "storm"


def storm_deadline_hours(site: SiteConfig, permit_key: str) -> float | None:
    """The storm deadline in hours of ``permit_key`` at ``site`` (None: no storm rule)."""
    for permit in permits_of(site):
        if permit.key == permit_key and permit.storm is not None:
            return permit.storm.deadline_hours
    return None

"""The vocabulary of permits: the rules a site answers to, as data.

A *profile* is a permit's rule book (``village-branch-134``, ``epa-cgp-2022`` ...).
The built-in ones are YAML files of the rules family ``rules/permits`` and a
``custom`` profile is the user's own file, written in the same vocabulary and
validated by the same models, so a rule the user writes and a rule we ship
mean the same thing (config/README.md, "Permits").

A rule carries where it comes from (``section``, ``quote``, ``source``,
``verified``), when it applies (``applies_when``) and exactly one duty:
``routine``, ``storm``, ``snow``, ``corrective_action``, ``maintenance``,
``shutdown`` or ``turbidity_benchmark``.
"""

from __future__ import annotations

import math
import re
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import ConfigDict, Field, model_validator

from ..contract.permits import BUILTIN_PROFILES, DEFAULT_PROFILE, DUTY_KINDS, FREQUENCIES
from .base import Id, Model, NonNegativeFloat, PositiveFloat, raise_problems

#: The built-in profiles: data files of the permits rule family, read here because a
#: ``custom`` profile is configuration in the same vocabulary (and the configuration
#: names its clocks' cadence, ``SiteConfig.cadence_days``).
PROFILES_DIR = Path(__file__).resolve().parent.parent / "rules" / "permits" / "profiles"

_HOURS = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-4]):([0-5]\d)$")


class RoutineRule(Model):
    """An inspection every ``every_days`` calendar days; ``times`` inspections in each
    such span, at least ``min_gap_days`` full calendar days apart."""

    every_days: Annotated[int, Field(ge=1, le=366)]
    times: Annotated[int, Field(ge=1, le=7)] = 1
    min_gap_days: Annotated[int, Field(ge=0, le=30)] = 0
    due: Literal["end_of_day", "elapsed"] = "end_of_day"


class StormRule(Model):
    """An inspection within ``deadline_hours`` of a storm of ``threshold_in`` (measured
    by the site's gauges, or forecast by the NWS with ``source: forecast``)."""

    threshold_in: Annotated[float, Field(ge=0.01, le=20, allow_inf_nan=False)]
    window: Literal["event_total", "event_24h", "rolling_24h"] = "event_total"
    source: Literal["gauge", "forecast"] = "gauge"
    probability_min: Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)] | None = None
    deadline_hours: PositiveFloat = 24.0
    clock_start: Literal["qualified", "event_end"] = "qualified"
    #: ``next_business_day``: a storm outside business hours is inspected when the
    #: next business day begins (its close is the deadline).
    outside_hours: Literal["next_business_day", "none"] = "none"


class SnowRule(Model):
    """An inspection after ``threshold_in`` of snow within ``window_hours`` (snowmelt)."""

    threshold_in: Annotated[float, Field(gt=0, le=100, allow_inf_nan=False)]
    window_hours: PositiveFloat = 24.0
    deadline_hours: PositiveFloat = 24.0


class Deadline(Model):
    """A number of calendar days or of business days (one of them)."""

    calendar_days: Annotated[int, Field(ge=0, le=366)] | None = None
    business_days: Annotated[int, Field(ge=0, le=60)] | None = None

    @model_validator(mode="after")
    def _one(self) -> Deadline:
        if (self.calendar_days is None) == (self.business_days is None):
            raise_problems(type(self).__name__, [((), "give exactly one of calendar_days "
                                                  "and business_days")], self)
        return self


class ActionRule(Model):
    """A corrective action or routine maintenance, due ``deadline`` after discovery."""

    deadline: Deadline


class ShutdownRule(Model):
    """During a recorded temporary shutdown, inspect every ``every_days`` calendar days."""

    every_days: Annotated[int, Field(ge=1, le=366)]
    notice: Literal["required", "none"] = "required"


class BenchmarkRule(Model):
    """Dewatering turbidity: the weekly average of the daily samples against ``ntu``."""

    ntu: PositiveFloat
    average: Literal["weekly"] = "weekly"
    min_samples_per_day: Annotated[int, Field(ge=1, le=96)] = 1


class AppliesWhen(Model):
    """When a rule applies: the permit's chosen ``frequency``, whether the site
    discharges to impaired water, and how many acres are disturbed at once (a site
    that does not say counts as at most any number: the larger site's rule never
    applies by guess, and ``check-config`` says so)."""

    frequency: Literal["weekly", "biweekly_storm"] | None = None
    impaired_water: bool | None = None
    disturbed_acres_over: NonNegativeFloat | None = None
    disturbed_acres_at_most: NonNegativeFloat | None = None


class ProfileRule(Model):
    """One rule of a profile: its source and exactly one duty (module docstring)."""

    id: Id
    section: Annotated[str, Field(min_length=1, max_length=120)]
    quote: Annotated[str, Field(min_length=1, max_length=2000)]
    source: Annotated[str, Field(min_length=1, max_length=500)]
    verified: bool
    applies_when: AppliesWhen = Field(default_factory=AppliesWhen)
    routine: RoutineRule | None = None
    storm: StormRule | None = None
    snow: SnowRule | None = None
    corrective_action: ActionRule | None = None
    maintenance: ActionRule | None = None
    shutdown: ShutdownRule | None = None
    turbidity_benchmark: BenchmarkRule | None = None
    #: Where the rule was read, in words ("EPA 2022 CGP inspection report template").
    read_at: str | None = None

    @model_validator(mode="after")
    def _one_duty(self) -> ProfileRule:
        given = [k for k in DUTY_KINDS if getattr(self, k) is not None]
        if len(given) > 1:
            raise_problems(type(self).__name__, [((given[1],), (
                f"a rule has one duty; {given[0]} is given too (write two rules)"))], self)
        if not given and self.id != "notes":
            raise_problems(type(self).__name__, [((), (
                "a rule needs one duty: " + ", ".join(DUTY_KINDS)))], self)
        return self

    @property
    def duty(self) -> str:
        """Which duty the rule holds (``routine``, ``storm`` ...)."""
        return next((k for k in DUTY_KINDS if getattr(self, k) is not None), "notes")


class Profile(Model):
    """A permit's rules (a built-in profile file, or a ``custom`` one)."""

    id: Id
    title: Annotated[str, Field(min_length=1, max_length=200)]
    #: The choices a site makes under the permit (``frequency``), with the default.
    frequencies: tuple[str, ...] = ()
    default_frequency: str | None = None
    #: Whether the storm and routine numbers come from the site's own ``rain:`` and
    #: ``routine_inspection_days`` (the village's Chapter 134, which they configure).
    site_numbers: bool = False
    rules: tuple[ProfileRule, ...]

    @model_validator(mode="after")
    def _unique(self) -> Profile:
        seen: set[str] = set()
        problems = []
        for i, rule in enumerate(self.rules):
            if rule.id in seen:
                problems.append((("rules", i, "id"), f"{rule.id!r} is used twice"))
            seen.add(rule.id)
        raise_problems(type(self).__name__, problems, self)
        return self


class PermitRef(Model):
    """A permit a site answers to: a profile and the choices the site made under it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    profile: Literal[BUILTIN_PROFILES + ("custom",)]  # type: ignore[valid-type]
    #: A second permit of the same profile needs its own id (``custom`` always does).
    id: Id | None = None
    frequency: Literal[FREQUENCIES] | None = None  # type: ignore[valid-type]
    impaired_water: bool = False
    disturbed_acres: NonNegativeFloat | None = None
    #: The turbidity probes on dewatering discharges (the benchmark's samples).
    dewatering: tuple[Id, ...] = ()
    #: A custom profile's file (relative to the configuration file) ...
    file: str | None = None
    #: ... or its rules written inline (the file is read into this). A built-in
    #: profile's rules are put here when the reference is validated, so whoever reads
    #: the configuration (the engine) reads rules, never a file.
    definition: Profile | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare(cls, data: Any) -> Any:
        data = {"profile": data} if isinstance(data, str) else data
        if isinstance(data, dict) and data.get("profile") in BUILTIN_PROFILES:
            if "definition" in data or "file" in data:
                raise ValueError(f"only a custom profile has a file; {data['profile']} "
                                 "is built in")
            data = {**data, "definition": builtin_profile(data["profile"])}
        return data

    @model_validator(mode="after")
    def _custom(self) -> PermitRef:
        problems: list[tuple[tuple[str | int, ...], str]] = []
        if self.profile == "custom":
            if self.id is None:
                problems.append((("id",), "a custom profile needs an id"))
            if self.file is None and self.definition is None:
                problems.append((("file",), "a custom profile needs a file"))
        elif self.definition is None or self.definition.id != self.profile:
            problems.append((("profile",), f"{self.profile} is built in: its rules cannot "
                             "be given here"))
        raise_problems(type(self).__name__, problems, self)
        return self

    @property
    def key(self) -> str:
        """The permit's name in events (``permit``) and clock ids."""
        return self.id or self.profile

    @property
    def rule_book(self) -> Profile:
        """The rules of the profile the reference names (``definition``)."""
        if self.definition is None:  # a custom reference refused by validation
            raise ValueError(f"permit {self.key}: no rules")
        return self.definition

    def applying(self) -> tuple[ProfileRule, ...]:
        """The rules of the profile that apply to the site's choices."""
        book = self.rule_book
        return tuple(rule for rule in book.rules if applies(rule, self, book))


@cache
def builtin_profile(profile_id: str) -> Profile:
    """The built-in profile ``profile_id`` (one of ``BUILTIN_PROFILES``), read once: the
    files do not change while a process runs."""
    if profile_id not in BUILTIN_PROFILES:
        raise KeyError(profile_id)
    text = (PROFILES_DIR / f"{profile_id}.yaml").read_text(encoding="utf-8")
    return Profile.model_validate(yaml.safe_load(text))


def applies(rule: ProfileRule, ref: PermitRef, profile: Profile) -> bool:
    """Whether ``rule`` applies to a site that made the choices of ``ref``."""
    when = rule.applies_when
    freq = ref.frequency or profile.default_frequency
    if when.frequency is not None and when.frequency != freq:
        return False
    if when.impaired_water is not None and when.impaired_water != ref.impaired_water:
        return False
    acres = ref.disturbed_acres or 0.0
    if when.disturbed_acres_over is not None and not acres > when.disturbed_acres_over:
        return False
    return not (when.disturbed_acres_at_most is not None
                and acres > when.disturbed_acres_at_most)


def permit_refs(permits: tuple[PermitRef, ...]) -> tuple[PermitRef, ...]:
    """A site's permits as configured, or Chapter 134 alone."""
    return permits or (PermitRef(profile=DEFAULT_PROFILE),)


def interval_days(every_days: float, times: int) -> float:
    """The days from one inspection to the next deadline: ``every_days`` shared out among
    ``times`` inspections (twice in 7 days: due within 4)."""
    return every_days if times == 1 else float(math.ceil(every_days / times))


def cadence_of(permits: tuple[PermitRef, ...], own_days: float, clock_id: str) -> float | None:
    """The routine cadence in days of the permit whose clock ``clock_id`` is (the first
    permit's for an id without a ``<permit>/`` prefix); ``own_days`` where the profile
    takes the site's own numbers; None when the permit has no routine rule."""
    refs = permit_refs(permits)
    key, slash, _ = clock_id.partition("/")
    ref = next((r for r in refs if r.key == key), None) if slash else refs[0]
    if ref is None:
        return None
    if ref.rule_book.site_numbers:
        return own_days
    routine = next((r.routine for r in ref.applying() if r.routine is not None), None)
    return None if routine is None else interval_days(routine.every_days, routine.times)


@cache
def _supported() -> dict[str, list[str]]:
    """The countries the ``holidays`` package knows, with their subdivisions."""
    import holidays

    return dict(holidays.list_supported_countries())


class BusinessDays(Model):
    """The site's business calendar: weekdays, less the public holidays of
    ``country``/``subdiv`` (the ``holidays`` package), within ``hours`` (local)."""

    country: Annotated[str, Field(min_length=2, max_length=3)] = "US"
    subdiv: str | None = None
    hours: str = "07:00-17:00"

    @model_validator(mode="after")
    def _hours(self) -> BusinessDays:
        match = _HOURS.match(self.hours)
        if match is None or match.group(1, 2) >= match.group(3, 4):
            raise_problems(type(self).__name__, [(("hours",), (
                f"{self.hours!r} is not HH:MM-HH:MM with the start before the end "
                "(07:00-17:00)"))], self)
        return self

    @model_validator(mode="after")
    def _known(self) -> BusinessDays:
        # The holidays package knows each country and its subdivisions; an unknown
        # one would only fail when the first business-day deadline is worked out.
        # The default needs no look-up (the package's list costs 70 ms to build).
        if (self.country, self.subdiv) == ("US", None):
            return self
        subdivs = _supported().get(self.country)
        if subdivs is None:
            raise_problems(type(self).__name__, [(("country",), (
                f"{self.country!r} is not a country the holidays package knows: use its "
                "ISO 3166 code in capitals (US, CA, GB)"))], self)
        elif self.subdiv is not None and self.subdiv not in (subdivs or ()):
            raise_problems(type(self).__name__, [(("subdiv",), (
                f"{self.subdiv!r} is not a subdivision of {self.country} the holidays "
                f"package knows ({', '.join(subdivs[:8]) or 'it has none'}"
                f"{', ...' if len(subdivs) > 8 else ''})"))], self)
        return self

    @property
    def minutes(self) -> tuple[int, int]:
        """Business hours as minutes of the local day (start, end)."""
        a, b = self.hours.split("-")
        return (int(a[:2]) * 60 + int(a[3:]), int(b[:2]) * 60 + int(b[3:]))

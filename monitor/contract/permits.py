"""The names of permits every reader shares: the built-in profiles a configuration
may name, the duties a profile rule may hold, and the frequencies a site may
choose (config/README.md, "Permits")."""

from __future__ import annotations

from typing import Final

#: The profiles that ship with stormwatch (``rules/permits/profiles/<id>.yaml``).
BUILTIN_PROFILES: Final = ("village-branch-134", "epa-cgp-2022", "tx-txr150000", "nc-ncg01",
                           "ny-gp-0-25-001")
#: The profile a site without ``permits`` answers to: Chapter 134, as before permits.
DEFAULT_PROFILE: Final = "village-branch-134"
#: The duties a profile rule may hold, one each.
DUTY_KINDS: Final = ("routine", "storm", "snow", "corrective_action", "maintenance", "shutdown",
                     "turbidity_benchmark")
#: The inspection frequencies a site chooses under EPA's and Texas' permits.
FREQUENCIES: Final = ("weekly", "biweekly_storm")

#: The state whose public holidays a built-in state permit's business days leave out,
#: when the site does not set its ``business_days`` (US subdivision codes).
PERMIT_STATES: Final = {"nc-ncg01": "NC", "tx-txr150000": "TX", "ny-gp-0-25-001": "NY"}

#: How a person names each built-in permit before a section ("EPA CGP 2022 Part 4.2").
#: Chapter 134's sections need no name: "§ 134-9A(2)" says it.
PERMIT_NAMES: Final = {"village-branch-134": "", "epa-cgp-2022": "EPA",
                       "tx-txr150000": "Texas", "nc-ncg01": "North Carolina",
                       "ny-gp-0-25-001": "New York"}


def is_chapter_134(permit: str | None) -> bool:
    """Whether a clock event is Chapter 134's: named so, or from a site that names no
    permits (§ 134-12D's separate violations, § 134-9A(2)'s words are its own)."""
    return permit in (None, DEFAULT_PROFILE)


def rule_words(permit: str | None, section: str | None, default: str) -> str:
    """A rule's citation as a sentence ends with it: ``default`` (Chapter 134's section)
    for an event from before permits, else the permit's name and the section."""
    if section is None:
        return default
    name = PERMIT_NAMES.get(permit or "", permit or "")
    return f"{name} {section}".strip()


#: What every reader says of a duty whose trigger needs a sensor the site lacks: a
#: missing measurement is never a met duty (monitor/README.md, "The rules").
NO_GAUGE: Final = "storm duty not monitored: no rain gauge"
NO_SNOW_SENSOR: Final = "snowmelt trigger not monitored: no snow sensor"
NO_DEWATERING: Final = "turbidity benchmark not monitored: no dewatering sensors"
NO_FORECAST: Final = "forecast trigger not monitored: no weather forecast for the site"

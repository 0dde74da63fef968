"""Every event as a sentence a person reads (``monitor/contract/sentences.py``): its
numbers in units, never rounded across their threshold, its times in the site's zone
(never UTC), its clock by name, and the section of Chapter 134 where one applies."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from zoneinfo import ZoneInfo

import pytest

from monitor.contract.clocknames import clock_name, due_words, spoken
from monitor.contract.events import EVENT_TYPES, Event, Fact
from monitor.contract.sentences import SENTENCES, sentence
from monitor.contract.times import parse_iso

from ..support.util import SAMPLE_BODIES

NY = ZoneInfo("America/New_York")
AT = parse_iso("2026-12-02T16:30:00Z")
#: What a sentence must never show: a field by name, an ISO 8601 UTC time, a type name.
RAW = re.compile(r"\b[a-z]+(?:_[a-z]+)+\s*=|\d{4}-\d\d-\d\dT\d\d:\d\d|\d{8}T\d{6}Z|\bUTC\b")


@dataclass(frozen=True)
class Rain:
    threshold_in: float = 0.5


@dataclass(frozen=True)
class Site:
    """What a sentence reads of a site (``SiteWords``): a trap at 40 % and 50 %."""

    zone: ZoneInfo = NY
    rain: Rain = Rain()
    routine_inspection_days: float = 7.0

    def fill_levels(self, trap_id: str) -> tuple[float, ...]:
        return (0.4, 0.5) if trap_id == "trap-1" else ()


def say(kind: str, at_ms: int = AT, *, revision: int = 0, retracted: bool = False,
        site: Site = Site(), **fields: object) -> str:
    body = replace(SAMPLE_BODIES[kind], **fields)
    return sentence(Event(Fact("site-1", at_ms, "id-1", body), revision, retracted), site)


#: A local time as a sentence says it: ``Wed Dec 2 11:30 EST``.
LOCAL = re.compile(r"\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \w{3} \d+ \d\d:\d\d E[SD]T\b")
#: Types whose sentence needs no time of its own (the log book shows the event's).
UNTIMED = {"battery_low", "counter_reset", "background_missing", "pegged", "trap_fill",
           "trap_cleanout_required", "trap_cleaned"}


@pytest.mark.parametrize("kind", sorted(EVENT_TYPES))
def test_every_type_of_the_vocabulary_has_a_sentence_without_raw_fields(kind: str) -> None:
    assert kind in SENTENCES
    text = say(kind)
    assert not RAW.search(text), text
    assert kind not in text, text
    if kind not in UNTIMED:
        assert LOCAL.search(text), text
    for retracted in (False, True):  # a retraction and a revision too
        again = say(kind, revision=2, retracted=retracted)
        assert not RAW.search(again), again


def test_a_qualified_storm_says_its_depth_deadline_and_section() -> None:
    text = say("storm_qualified", total_in=0.53, started_at="2026-12-02T15:36:00Z",
               qualified_at="2026-12-02T16:30:00Z", due="2026-12-03T16:30:00Z",
               clock_id="storm-rg1-20261202T153600Z")
    assert text == ("Storm of 0.53 in qualified Wed Dec 2 11:30 EST — inspect by "
                    "Thu Dec 3 11:30 EST, § 134-9A(2)")


def test_a_storm_a_hair_below_its_threshold_is_not_printed_on_it() -> None:
    assert say("storm_ended", total_in=0.496, qualified=False).startswith(
        "Storm on gauge rg1 ended Mon Nov 30 11:15 EST after 0.496 in: below")


def test_a_trap_at_its_clean_out_level_asks_for_the_clean_out() -> None:
    assert say("trap_cleanout_required", fill_fraction=0.503) == (
        "Sediment trap trap-1 is 50% full — clean it out, § 134-9A(1)")
    # 49.96 % is not "50%": one more digit keeps it below the level.
    assert "is 49.96% full" in say("trap_fill", fill_fraction=0.4996)
    assert say("trap_cleanout_required", fill_fraction=0.55, repeat=2).startswith(
        "Sediment trap trap-1 is still 55% full")


def test_an_overdue_inspection_names_its_storm_and_how_late() -> None:
    text = say("inspection_overdue", clock_id="storm-rg1-20261202T153600Z",
               due="2026-12-03T16:30:00Z", hours_late=2.0)
    assert text == ("OVERDUE: the inspection for the storm of Dec 2 was due by "
                    "Thu Dec 3 11:30 EST (2.0 h late) — inspect now, § 134-9A(2)")


def test_a_turbidity_exceedance_says_the_contrast_and_its_limit() -> None:
    text = say("turbidity_contrast", delta_ntu=30.0, limit_ntu=5.0,
               started_at="2026-12-02T14:05:00Z")
    assert text == ("Turbidity at outfall-1 is 30 NTU over background (limit 5 NTU) since "
                    "Wed Dec 2 09:05 EST — check the discharge and the controls above it, "
                    "§ 134-8C")


def test_a_silent_sensor_says_since_when() -> None:
    assert say("sensor_stale", last_seen="2026-12-02T12:00:00Z") == (
        "Sensor rg1 silent since Wed Dec 2 07:00 EST — check its power and radio")
    assert say("sensor_stale", last_seen=None) == (
        "Sensor rg1 silent since monitoring began (never reported) — check its power and radio")


def test_a_retracted_forecast_is_said_withdrawn_and_a_revision_revised() -> None:
    text = say("storm_forecast", retracted=True, revision=1)
    assert text == ("Withdrawn (no longer holds): Forecast of 0.79 in (80 % chance) from "
                    "Mon Nov 30 13:00 EST to Tue Dec 1 13:00 EST — check the controls before "
                    "the rain, § 134-9A(2)")
    assert say("storm_forecast", revision=1).startswith("Revised: Forecast of 0.79 in")


def test_a_deadline_across_the_change_to_daylight_saving_time_reads_in_local_time() -> None:
    # At 02:00 EST on 2026-03-08 the clocks go forward: 24 hours after 01:30 EST is
    # 02:30 EDT on the wall, and the sentence says so.
    text = say("storm_qualified", qualified_at="2026-03-08T06:30:00Z",
               due="2026-03-09T06:30:00Z", total_in=0.61)
    assert text == ("Storm of 0.61 in qualified Sun Mar 8 01:30 EST — inspect by "
                    "Mon Mar 9 02:30 EDT, § 134-9A(2)")


def test_clocks_are_named_by_the_local_date_of_their_storm_or_week() -> None:
    # 03:00 UTC on Dec 3 is 22:00 EST on Dec 2: the storm of Dec 2.
    assert clock_name("storm-rg-north-1-20261203T030000Z", NY) == "storm of Dec 2"
    assert clock_name("routine-2026-11-25T05:00:00Z", NY) == "week of Nov 25"
    assert clock_name("routine-2026-11-25T05:00:00Z#2", NY) == "week of Nov 25 (2)"
    assert clock_name("storm-e1", NY, "storm") == "storm clock storm-e1"
    due = parse_iso("2026-12-03T16:30:00Z")
    assert due_words(due, due - 1, NY) == "due Thu Dec 3 11:30 EST"
    assert due_words(due, due + 1, NY) == "OVERDUE since Thu Dec 3 11:30 EST"
    assert due_words(None, due, NY) == "due when the storm ends"
    assert spoken("not a time", NY) == "not a time" and spoken(None, NY) == "an unknown time"


def test_a_routine_clock_is_named_by_the_sites_own_cadence() -> None:
    """A site inspected every 14 days (or monthly in a shutdown) has no "week": every
    place that names a routine clock reads the configured days, as the alerts do."""
    routine = "routine-2026-11-25T05:00:00Z"
    assert clock_name(routine, NY) == "week of Nov 25"
    assert clock_name(routine, NY, days=14) == "14 days from Nov 25"
    assert clock_name(routine, NY, days=30) == "30 days from Nov 25"
    fortnight = Site(routine_inspection_days=14.0)
    for kind in ("inspection_due_soon", "inspection_overdue", "clock_closed",
                 "inspection_missed"):
        text = say(kind, site=fortnight, clock_id=routine, clock="routine")
        assert "week of" not in text and "14 days from Nov 25" in text, text
        assert "week of Nov 25" in say(kind, clock_id=routine, clock="routine")

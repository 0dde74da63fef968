"""``weather.reference_opens_clock``: a storm only the reference stations saw opens the
§ 134-9A(2) storm clock, as a storm of the site gauge would, marked as the reference's.

Numbers as in ``test_weather_engine.py``: KHPN 2 mm in each of the hours 0..9 from
``T0`` (2026-05-01T00:00Z); the first 24 hours that reach 12.7 mm (0.5 in) end at
T0+7h (7 x 2 = 14 mm), so the clock starts then and is due 24 h later, T0+31h.
"""

from __future__ import annotations

from typing import Any

from monitor.contract.events import Event, StormQualified, make_id
from monitor.contract.inputs import Inspection, Reading
from monitor.contract.times import MS_PER_HOUR, iso
from monitor.engine.core import Engine
from monitor.rules.rain.sitestorms import GaugeStorm, SiteStorm, with_references

from ..support.weatherkit import REFERENCE, SITE, T0, counter, observations, of_type, weather_config

H = MS_PER_HOUR
#: rg1 dies an hour before the storm (stale from T0-0.75h: 15 minutes of silence).
DEAD = counter([], until_h=-1)
CLOCK_EVENTS = ("storm_qualified", "inspection_due_soon", "inspection_overdue", "clock_closed")


def run(items: list[Any], opens: bool = True, until_h: float = 32) -> Engine:
    eng = Engine(weather_config(reference_opens_clock=opens))
    for it in items:
        eng.apply(it)
    eng.tick(T0 + round(until_h * H))
    return eng


def clock_events(eng: Engine) -> list[Event]:
    return [e for e in eng.current_events() if e.type in CLOCK_EVENTS]


def test_a_reference_storm_opens_the_storm_clock_due_24_hours_after_the_reference() -> None:
    eng = run([*DEAD, *observations(REFERENCE)])
    (dis,) = of_type(eng.current_events(), "gauge_disagrees")
    (q,) = of_type(eng.current_events(), "storm_qualified")
    assert isinstance(q.body, StormQualified)
    assert q.at_ms == T0 + 7 * H
    assert (q.body.source, q.body.reference, q.body.reference_in, q.body.gauge) == (
        "reference", "KHPN", 0.787, "rg1")
    assert q.body.qualified_at == iso(T0 + 7 * H) and q.body.due == iso(T0 + 31 * H)
    assert q.body.event_id == dis.id and q.body.clock_id == f"storm-{dis.id}"
    (clock,) = eng.clocks(SITE)[:1]
    assert (clock.clock, clock.start, clock.due) == ("storm", T0 + 7 * H, T0 + 31 * H)
    # The clock's life is a storm clock's: reminders 6 h and 1 h before, overdue at due.
    notices = [(e.type, e.at_ms, e.to_json().get("source")) for e in clock_events(eng)
               if e.type != "storm_qualified"]
    assert notices == [("inspection_due_soon", T0 + 25 * H, "reference"),
                       ("inspection_due_soon", T0 + 30 * H, "reference"),
                       ("inspection_overdue", T0 + 31 * H, "reference")]


def test_without_the_option_no_clock() -> None:
    eng = run([*DEAD, *observations(REFERENCE)], opens=False)
    assert len(of_type(eng.current_events(), "gauge_disagrees")) == 1
    assert clock_events(eng) == []
    assert [c.clock for c in eng.clocks(SITE)] == ["routine"]


def test_an_inspection_closes_the_reference_clock() -> None:
    inspection = Inspection(SITE, "J. Rivera", T0 + 20 * H, "storm")
    eng = run([*DEAD, *observations(REFERENCE), inspection])
    (closed,) = [e for e in of_type(eng.current_events(), "clock_closed")
                 if e.to_json()["clock"] == "storm"]
    body = closed.to_json()
    assert (body["outcome"], body["inspected_at"], body["source"]) == (
        "met", iso(T0 + 20 * H), "reference")
    assert of_type(eng.current_events(), "inspection_overdue") == []


def test_the_gauge_qualifying_the_same_storm_is_one_clock() -> None:
    # rg1 comes back at T0+10h with 70 tips (0.70 in) revealed after its silence: its
    # own storm qualifies then, three hours after the reference did. One storm, one
    # clock: the reference's, which qualified first (and is due earlier).
    back = [Reading(SITE, "rg1", "rain", T0 + 10 * H + m * 300_000, tips_total=1070,
                    seq=1000 + m) for m in range(12)]
    eng = run([*DEAD, *observations(REFERENCE), *back])
    qualified = of_type(eng.current_events(), "storm_qualified")
    assert [e.to_json().get("source") for e in qualified] == ["reference"]
    assert [c.clock for c in eng.clocks(SITE)].count("storm") == 1
    # Without the reference's clock, the gauge's storm opens its own, as before.
    alone = run([*DEAD, *observations(REFERENCE), *back], opens=False)
    (own,) = of_type(alone.current_events(), "storm_qualified")
    assert own.to_json().get("source") is None and own.at_ms == T0 + 10 * H


def test_a_gauge_storm_first_keeps_its_clock_and_the_reference_joins_it() -> None:
    # The disagreement's own facts (the gauge stale), then a gauge storm that
    # qualified at T0+6h, before the reference reached the threshold: the gauge's
    # clock stands, and the reference storm opens nothing.
    gauge = GaugeStorm("rg1", "e1", T0, T0 + 8 * H, T0 + 6 * H)
    ref = GaugeStorm("reference:rg1", "d1", T0 - 17 * H, T0 + 10 * H, T0 + 7 * H,
                     reference="KHPN")
    later = GaugeStorm("reference:rg1", "d2", T0 + 40 * H, T0 + 50 * H, T0 + 45 * H,
                       reference="KHPN")
    got = with_references([SiteStorm(gauge, [gauge], ("rg1",))], [ref, later], 6 * H)
    assert [s.rep.event_id for s in got] == ["e1", "d2"]


def test_the_reference_storm_id_is_the_disagreements() -> None:
    eng = run([*DEAD, *observations(REFERENCE)])
    (q,) = of_type(eng.current_events(), "storm_qualified")
    dis = make_id("gauge_disagrees", SITE, "rg1", T0 - 17 * H)
    assert q.body == StormQualified(
        gauge="rg1", event_id=dis, started_at=iso(T0 - 17 * H), qualified_at=iso(T0 + 7 * H),
        total_in=0.787, max_24h_in=0.787, due=iso(T0 + 31 * H), uncertain_in=0.0, gauges=(),
        threshold_in=0.5, mode="event_total", clock_id=f"storm-{dis}", source="reference",
        reference="KHPN", reference_in=0.787)

"""The weather rules inside the engine: revisions, retractions, the gauge's own readings,
and the invariants of monitor/README.md, "Architecture" (order, duplicates, a snapshot restored)
with the new
inputs (hypothesis).

Numbers as in ``test_weather.py``: threshold 0.5 in = 12.7 mm, ``T0`` 2026-05-01T00:00Z.
"""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor.config import Config
from monitor.config.file import parse_config
from monitor.contract.events import Event, GaugeDisagrees, StormForecast, make_id
from monitor.contract.inputs import Inspection
from monitor.engine.core import Engine
from monitor.engine.window import MemoryWindow

from ..support.properties import examples
from ..support.weatherkit import (
    CHANCE,
    REFERENCE,
    SITE,
    STORM,
    T0,
    TENTH,
    H,
    counter,
    issue,
    nws_interval,
    observations,
    of_type,
    weather_config,
)


def run(items: list[Any], config: Config | None = None, window: bool = False
        ) -> tuple[Engine, list[Event]]:
    eng = Engine(config or weather_config(), MemoryWindow() if window else None)
    out: list[Event] = []
    for it in items:
        out += eng.apply(it)
    out += eng.tick(T0 + 12 * H)
    return eng, out




def test_a_forecast_is_published_revised_and_retracted() -> None:
    revised = [nws_interval(6, "PT6H", 5.0), *STORM[1:]]
    dry = [nws_interval(6, "PT6H", 1.0)]
    eng = Engine(weather_config())
    first = eng.apply(issue(0, STORM, CHANCE))
    second = eng.apply(issue(1, revised, CHANCE))
    again = eng.apply(issue(1, revised, CHANCE))
    third = eng.apply(issue(2, dry))
    fid = make_id("storm_forecast", SITE, "nws", T0, T0 + 6 * H)
    assert [(e.id, e.revision, e.retracted) for e in first] == [(fid, 0, False)]
    assert isinstance(first[0].body, StormForecast) and first[0].body.forecast_in == 0.512
    assert [(e.id, e.revision, e.retracted) for e in second] == [(fid, 1, False)]
    assert isinstance(second[0].body, StormForecast) and second[0].body.forecast_in == 0.551
    assert again == [] and eng.stats.duplicates == 1
    assert [(e.id, e.revision, e.retracted) for e in third] == [(fid, 2, True)]
    assert of_type(eng.current_events(), "storm_forecast") == []


def test_no_weather_section_no_weather_events() -> None:
    plain = parse_config({"sites": [{"id": SITE, "sensors": [
        {"id": "rg1", "kind": "rain"}]}]}, env={})
    eng = Engine(plain)
    assert eng.apply(issue(0, STORM, CHANCE)) == [] and eng.current_events() == []




def test_a_gauge_reading_a_tenth_of_the_reference_disagrees() -> None:
    for window in (False, True):
        items = [*counter(TENTH), *observations(REFERENCE)]
        eng, _ = run(items, window=window)
        (e,) = of_type(eng.current_events(), "gauge_disagrees")
        assert e.id == make_id("gauge_disagrees", SITE, "rg1", T0 - 17 * H)
        assert e.at_ms == T0 + 7 * H
        assert e.body == GaugeDisagrees(
            gauge="rg1", gauge_in=0.08, reference_in=0.787, reference="KHPN",
            window_from="2026-04-30T10:00:00Z", window_to="2026-05-01T10:00:00Z",
            stale=False, threshold_in=0.5, opens_clock=False, reference_unknown_hours=0)


def test_readings_after_the_reference_can_withdraw_the_disagreement() -> None:
    # The reference first, then a gauge that saw 0.7 in (17.8 mm > a quarter of
    # 20 mm): the next tick retracts what the reference alone had concluded.
    eng = Engine(weather_config())
    early = counter([], until_h=-0.5)
    for r in early:
        eng.apply(r)
    published = [e for o in observations(REFERENCE) for e in eng.apply(o)]
    assert {e.type for e in published} == {"gauge_disagrees"}
    for r in counter([h / 10 for h in range(70)], from_h=-0.5 + 5 / 60):
        eng.apply(r)
    eng.tick(T0 + 12 * H)
    assert of_type(eng.current_events(), "gauge_disagrees") == []


def test_a_dead_gauge_in_a_reference_storm() -> None:
    eng, _ = run([*counter([], until_h=-1), *observations(REFERENCE)],
                 config=weather_config(reference_opens_clock=True))
    (e,) = of_type(eng.current_events(), "gauge_disagrees")
    assert isinstance(e.body, GaugeDisagrees)
    assert (e.body.stale, e.body.gauge_in, e.body.opens_clock) == (True, 0.0, True)


# --------------------------------------------------------------------------- invariants


def scenario(seed: int) -> list[Any]:
    rng = random.Random(seed)
    tips = sorted(rng.uniform(-6, 10) for _ in range(rng.randrange(0, 60)))
    until = rng.choice([12, 3, -2])  # the gauge may die during the storm
    items: list[Any] = counter(tips, until_h=until, every_minutes=10)
    values: dict[int, float | None] = {}
    for h in range(-4, 11):
        values[h] = rng.choice([None, 0.0, 1.0, 2.0, 3.5])
    items += observations(values)
    for n in range(rng.randrange(1, 4)):
        precip = [nws_interval(6 * k, "PT6H", rng.choice([0.0, 2.0, 5.0]))
                  for k in range(n, 8)]
        items.append(issue(n, precip, CHANCE))
    # With reference_opens_clock a disagreement opens a storm clock: inspections
    # before, during and after it close it, or not.
    for _ in range(rng.randrange(0, 3)):
        items.append(Inspection(SITE, "J. Rivera", T0 + rng.randrange(-4 * H, 12 * H),
                                rng.choice(("storm", "routine", "other"))))
    return items


#: The invariants hold with and without the reference's clocks.
OPENS = {False: weather_config(), True: weather_config(reference_opens_clock=True)}


def final(items: list[Any], window: bool = False, opens: bool = False
          ) -> list[dict[str, Any]]:
    eng, _ = run(items, config=OPENS[opens], window=window)
    return [{k: v for k, v in e.to_json().items() if k != "revision"}
            for e in eng.current_events()]


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), shuffle_seed=st.integers(0, 2**32), opens=st.booleans())
def test_order_and_duplicates_of_weather_inputs_do_not_change_events(
        seed: int, shuffle_seed: int, opens: bool) -> None:
    """25 examples in CI, 5 locally (tests/support/properties.py): every scenario holds
    forecast issues, revisions, observations and gauge readings together, each
    checked shuffled, duplicated and through the bounded window."""
    rnd = random.Random(shuffle_seed)
    items = scenario(seed)
    expected = final(items, opens=opens)
    shuffled = list(items)
    rnd.shuffle(shuffled)
    assert final(shuffled, opens=opens) == expected
    duplicated = items + rnd.sample(items, len(items) // 3)
    rnd.shuffle(duplicated)
    assert final(duplicated, opens=opens) == expected
    assert final(shuffled, window=True, opens=opens) == expected


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), cut=st.floats(0.1, 0.9), opens=st.booleans())
def test_a_snapshot_restored_mid_stream_changes_nothing(seed: int, cut: float,
                                                        opens: bool) -> None:
    """10 examples in CI, 5 locally: one random cut of a whole scenario each, where a
    lost snapshot field shows at almost any cut."""
    items = scenario(seed)
    rnd = random.Random(seed)
    rnd.shuffle(items)
    k = int(len(items) * cut)
    config = OPENS[opens]
    whole = Engine(config)
    half = Engine(config)
    for it in items[:k]:
        whole.apply(it)
        half.apply(it)
    resumed = Engine.restore(config, json.loads(json.dumps(half.dump())))
    for it in items[k:]:
        assert [e.to_json() for e in resumed.apply(it)] == [e.to_json() for e in whole.apply(it)]
    end = T0 + 12 * H
    assert [e.to_json() for e in resumed.tick(end)] == [e.to_json() for e in whole.tick(end)]

"""Turbidity that cannot be checked is said (§ 134-8C; monitor/README.md "Turbidity").

A dead background probe, a silent or a pegged downstream probe: once the pair's
contrast has been unknown for ``unknown_notice_hours`` [2] of the site's active
period, the qualified professional gets ``turbidity_unmonitored``, and
``turbidity_monitored`` when it is known again. Through the real engine, times
hand-worked: the probes and the gauge report every 5 minutes, a probe is stale
15 minutes after its last reading (``stale_after_minutes``), a background is
usable up to 60 minutes old or within 10 minutes either side.
"""

from __future__ import annotations

import json
import random
from typing import Any

from monitor.config import SensorConfig, TurbidityPair
from monitor.contract.inputs import Reading, SiteClosure
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE, iso
from monitor.engine.core import Engine
from monitor.engine.summary import at_now, site_status, summarize
from monitor.engine.timeline import Timeline
from monitor.rules.readout import SiteSummary
from monitor.rules.turbidity.turbidity import PairFold

from ..support.turbiditykit import feed, probes
from ..support.util import SITE, site_config, ts

NOTICES = ("turbidity_unmonitored", "turbidity_monitored")
DAY = 24 * MS_PER_HOUR


def notices(eng: Engine) -> list[tuple[str, str, dict[str, Any]]]:
    """The current notices: (type, at, fields without pair and probes)."""
    out = []
    for e in eng.current_events():
        if e.type in NOTICES:
            fields = e.body.to_json()
            assert (fields.pop("pair"), fields.pop("upstream"), fields.pop("downstream")) == (
                "outfall-1", "tb-up", "tb-down")
            out.append((e.type, iso(e.at_ms), fields))
    return out


def stale(since: str, at: str, known: str | None) -> list[tuple[str, str, dict[str, Any]]]:
    """The notices of a silent downstream probe: nothing else is checked meanwhile."""
    body = {"reason": "downstream_stale", "since": since, "absolute_ntu": None}
    out = [("turbidity_unmonitored", at, body)]
    if known is not None:
        out.append(("turbidity_monitored", known, {**body, "known_at": known}))
    return out


# --------------------------------------------------------------------------- the notice


def test_a_silent_downstream_probe_is_said_after_two_hours_and_its_return_too() -> None:
    # Last downstream reading 12:55, stale from 12:55 + 15 min = 13:10; unknown for 2 h
    # at 15:10, while nothing came: the notice. Back at 16:00: known again.
    eng = feed(probes("12:00", 6, down_off=("13:00", "16:00")))
    assert notices(eng) == stale(iso(ts("13:10")), iso(ts("15:10")), iso(ts("16:00")))
    # Operations heard of the probe as before.
    assert [(e.type, iso(e.at_ms)) for e in eng.current_events()
            if e.type in ("sensor_stale", "sensor_recovered") and e.body.to_json()["sensor"]
            == "tb-down"] == [("sensor_stale", iso(ts("13:10"))),
                              ("sensor_recovered", iso(ts("16:00")))]


def test_known_again_before_two_hours_says_nothing() -> None:
    # Unknown 13:10 to 15:10: known again at the very instant the notice would fall due.
    assert notices(feed(probes("12:00", 6, down_off=("13:00", "15:10")))) == []
    # Still unknown at 15:10: said then, and its end at 15:15.
    assert notices(feed(probes("12:00", 6, down_off=("13:00", "15:15")))) == stale(
        iso(ts("13:10")), iso(ts("15:10")), iso(ts("15:15")))


def test_a_dead_background_probe_is_said_and_the_absolute_rule_still_watches() -> None:
    # tb-up silent 13:00-17:00. The 12:55 background serves downstream readings younger
    # than 60 min: up to 13:50; 13:55 has none (60 min is not younger than 60): unknown
    # from 13:55, the notice at 15:55. The 17:00 background is within 10 min of the
    # 16:50 downstream reading (nearest, after it): known again at 16:50.
    # Meanwhile 300 NTU downstream 14:00-14:10 is still caught by the absolute rule
    # (exceeded at 14:10 after sustain_minutes 10): gross turbidity is seen, an increase
    # over natural conditions below 250 NTU is not. So the pair is unmonitored, and
    # the notice names the level still watched.
    spike = {ts("14:00") + i * 5 * MS_PER_MINUTE: 300.0 for i in range(3)}
    eng = feed(probes("12:00", 6, up_off=("13:00", "17:00"), down_ntu=spike))
    body = {"reason": "background_missing", "since": iso(ts("13:55")), "absolute_ntu": 250.0}
    assert notices(eng) == [
        ("turbidity_unmonitored", iso(ts("15:55")), body),
        ("turbidity_monitored", iso(ts("16:50")), {**body, "known_at": iso(ts("16:50"))})]
    contrast = [(iso(e.at_ms), e.body.to_json()["state"], e.body.to_json()["basis"])
                for e in eng.current_events() if e.type == "turbidity_contrast"]
    assert contrast[0] == (iso(ts("14:10")), "exceeded", "absolute")


def test_a_pegged_downstream_probe_is_said() -> None:
    # tb-down (full scale 400) pegged 13:00-15:55: compared as read it still exceeds
    # (400 - 10 > 5: turbidity_contrast at 13:10), but how far is unknown from 13:00:
    # the notice at 15:00, known again at 16:00.
    pegged = {ts("13:00") + i * 5 * MS_PER_MINUTE: 400.0 for i in range(36)}
    sensors = [{"id": "rg1", "kind": "rain"}, {"id": "tb-up", "kind": "turbidity"},
               {"id": "tb-down", "kind": "turbidity", "max_ntu": 400}]
    eng = feed(probes("12:00", 6, down_ntu=pegged), sensors=sensors, traps=[])
    body = {"reason": "downstream_pegged", "since": iso(ts("13:00")), "absolute_ntu": None}
    assert notices(eng) == [
        ("turbidity_unmonitored", iso(ts("15:00")), body),
        ("turbidity_monitored", iso(ts("16:00")), {**body, "known_at": iso(ts("16:00"))})]
    assert [e.type for e in eng.current_events() if e.type == "pegged"] == ["pegged"]


def test_the_notice_hours_are_the_pairs() -> None:
    # unknown_notice_hours 0.5: unknown 13:10, said at 13:40.
    pairs = [{"id": "outfall-1", "upstream": "tb-up", "downstream": "tb-down",
              "unknown_notice_hours": 0.5}]
    eng = feed(probes("12:00", 6, down_off=("13:00", "16:00")), turbidity_pairs=pairs)
    assert notices(eng) == stale(iso(ts("13:10")), iso(ts("13:40")), iso(ts("16:00")))


def test_arrival_order_and_duplicates_change_no_notice() -> None:
    items = probes("12:00", 6, up_off=("13:00", "14:30"), down_off=("14:00", "17:00"))
    expected = notices(feed(items))
    # Background missing 13:55 (13:00 + 55 min of fallback), then at 14:00 the
    # downstream probe silent too (one episode: its reason at the notice is the silence,
    # from 14:00 - 5 + 15 = 14:10). Said at 13:55 + 2 h = 15:55, known at 17:00.
    body = {"reason": "downstream_stale", "since": iso(ts("13:55")), "absolute_ntu": None}
    assert expected == [
        ("turbidity_unmonitored", iso(ts("15:55")), body),
        ("turbidity_monitored", iso(ts("17:00")), {**body, "known_at": iso(ts("17:00"))})]
    rnd = random.Random(28)
    shuffled = items + rnd.sample(items, len(items) // 4)
    rnd.shuffle(shuffled)
    assert notices(feed(shuffled, max(i.ts_ms for i in items))) == expected


# --------------------------------------------------------------------------- the active period


def test_counted_from_active_since_not_before() -> None:
    # Readings from May 1 12:00 UTC; the site is active from May 2 (New York midnight,
    # 04:00 UTC). tb-down silent from May 1 13:00 to May 2 10:00: unknown since 13:10
    # May 1, but the two hours count from 04:00 May 2: said at 06:00 May 2.
    items = probes("2026-05-01T12:00:00Z", 24, down_off=("2026-05-01T13:00:00Z",
                                                        "2026-05-02T10:00:00Z"))
    eng = feed(items, active_since="2026-05-02")
    assert notices(eng) == stale(iso(ts("13:10")), "2026-05-02T06:00:00Z",
                                 "2026-05-02T10:00:00Z")


def test_a_pause_stops_the_count() -> None:
    # Unknown from May 2 02:10 UTC (last reading 01:55 + 15 min). The pause (May 2, New
    # York) is 04:00 UTC May 2 to 04:00 UTC May 3: 02:10 + 2 h = 04:10 falls in it, and
    # the count starts again at 04:00 May 3: due 06:00, after the probe came back at 05:00.
    def run(back: str) -> list[tuple[str, str, dict[str, Any]]]:
        items = probes("2026-05-01T20:00:00Z", 36, down_off=("2026-05-02T02:00:00Z", back))
        return notices(feed(items, active_since="2026-05-01",
                            pauses=[{"from": "2026-05-02", "to": "2026-05-02"}]))
    assert run("2026-05-03T05:00:00Z") == []
    # Back at 07:00 instead: said at 06:00 May 3, unknown since May 2 02:10.
    assert run("2026-05-03T07:00:00Z") == stale("2026-05-02T02:10:00Z", "2026-05-03T06:00:00Z",
                                                "2026-05-03T07:00:00Z")


def test_nothing_after_the_site_is_closed() -> None:
    # Unknown from 13:10; due 15:10, but final stabilization was recorded at 14:00.
    items: list[Any] = probes("12:00", 6, down_off=("13:00", "18:00"))
    assert notices(feed(items)) == stale(iso(ts("13:10")), iso(ts("15:10")), None)
    assert notices(feed([*items, SiteClosure(SITE, ts("14:00"))])) == []


def test_a_site_without_data_hears_nothing_and_a_pair_never_heard_from_is_said() -> None:
    # Active since May 1 but nothing deployed yet: no notice, however long.
    quiet = Engine(site_config(active_since="2026-05-01"))
    quiet.tick(ts("2026-05-03T00:00:00Z"))
    assert notices(quiet) == []
    # The gauge reports from 12:00, the probes never: the downstream probe is stale 15
    # minutes after the start of monitoring (12:00, the site's first message), as
    # sensor_stale says; unknown from 12:15, said at 14:15.
    gauge = [r for r in probes("12:00", 6) if r.sensor == "rg1"]
    assert notices(feed(gauge)) == stale(iso(ts("12:15")), iso(ts("14:15")), None)


# --------------------------------------------------------------------------- status


def test_a_recorded_summary_read_later_is_not_ok_once_the_reading_is_stale() -> None:
    # Recorded at 12:58 (last downstream reading 12:55, contrast +1 NTU: ok). Read at
    # 13:30 with nothing recorded since: 12:55 + 15 min = 13:10 is past, unknown.
    eng = feed(probes("12:00", 1), ts("12:58"))
    recorded = summarize(eng, SITE).to_json()
    assert recorded["turbidity"]["outfall-1"]["state"] == "ok"
    assert at_now(recorded, ts("13:05"))["turbidity"]["outfall-1"]["state"] == "ok"
    late = at_now(SiteSummary.from_json(recorded), ts("13:30"))["turbidity"]["outfall-1"]
    assert (late["state"], late["unknown"]) == ("unknown", {
        "reason": "downstream_stale", "since": iso(ts("13:10")), "notice_at": None})


def test_a_pegged_downstream_reading_that_does_not_exceed_is_unknown_not_ok() -> None:
    # Background 395, downstream pegged at 400: 5 NTU over is within 10 % (39.5), but the
    # true downstream value is anything above 400.
    sensors = [{"id": "rg1", "kind": "rain"}, {"id": "tb-up", "kind": "turbidity"},
               {"id": "tb-down", "kind": "turbidity", "max_ntu": 400}]
    pegged = {ts("12:00") + i * 5 * MS_PER_MINUTE: 400.0 for i in range(12)}
    eng = feed(probes("12:00", 1, up_ntu=395.0, down_ntu=pegged), sensors=sensors, traps=[])
    pair = site_status(eng, SITE, ts("12:55"))["turbidity"]["outfall-1"]
    assert (pair["state"], pair["unknown"]["reason"]) == ("unknown", "downstream_pegged")


# --------------------------------------------------------------------------- the engine's memory


def test_a_snapshot_mid_episode_changes_nothing() -> None:
    items = probes("12:00", 6, down_off=("13:00", "16:00"))
    config = site_config()
    whole, resumed = Engine(config), Engine(config)
    cut = next(i for i, r in enumerate(items) if r.ts_ms >= ts("14:00"))
    for item in items[:cut]:
        whole.apply(item)
    resumed = Engine.restore(config, json.loads(json.dumps(whole.dump())))
    rest = [e.to_json() for it in items[cut:] for e in whole.apply(it)]
    assert [e.to_json() for it in items[cut:] for e in resumed.apply(it)] == rest
    assert [t for t, _, _ in notices(resumed)] == list(NOTICES)


def test_an_episode_long_past_leaves_memory_with_its_notices() -> None:
    # Four days every 5 minutes, the downstream probe silent for three hours on the first:
    # with lateness_days 1 the horizon passes it, its runs leave the engine's memory and
    # its notices are handed out as settled.
    items = probes("2026-05-01T12:00:00Z", 96, down_off=("2026-05-01T13:00:00Z",
                                                        "2026-05-01T16:00:00Z"))
    eng = Engine(site_config(lateness_days=1))
    for item in items:
        eng.apply(item)
    settled = [(e.type, iso(e.at_ms)) for e in eng.drain_settled() if e.type in NOTICES]
    assert settled == [("turbidity_unmonitored", iso(ts("15:10"))),
                       ("turbidity_monitored", iso(ts("16:00")))]
    assert notices(eng) == []
    se = eng.site_engine(SITE)
    assert len(se.unknown_runs) <= 2 and se.notices == {}


def test_a_silence_is_a_run_from_last_reading_plus_stale_to_the_next_whatever_the_skew() -> None:
    # The fold's own record (internal runs): tb-down stale after 5 minutes, paired within
    # 10. Readings at 0 and from 20 each minute, tb-up each minute throughout: unknown
    # (downstream_stale) from 0 + 5 = 5 to 20, in any arrival order; before the first
    # reading, a run from "before it" (null) that ends at the first one.
    down_probe = SensorConfig(id="tb-down", kind="turbidity", stale_after_minutes=5)
    pair = TurbidityPair(id="outfall-1", upstream="tb-up", downstream="tb-down")
    t0 = ts("12:00")
    items = [Reading(SITE, "tb-up", "turbidity", t0 + m * MS_PER_MINUTE, ntu=10.0)
             for m in range(40)]
    items += [Reading(SITE, "tb-down", "turbidity", t0 + m * MS_PER_MINUTE, ntu=11.0)
              for m in [0, *range(20, 40)]]
    for order in (items, list(reversed(items))):
        tl = Timeline(PairFold(SITE, pair, SensorConfig(id="tb-up", kind="turbidity"),
                               down_probe))
        for r in order:
            tl.insert(r)
        runs = sorted((f.body.to_json()["since"] or "", f.body.to_json()["until"],
                       f.body.to_json()["reason"]) for f in tl.facts())
        assert runs == [("", iso(t0), "downstream_stale"),
                        (iso(t0 + 5 * MS_PER_MINUTE), iso(t0 + 20 * MS_PER_MINUTE),
                         "downstream_stale")]

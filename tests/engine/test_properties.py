"""Invariants of the engine (monitor/README.md, "Architecture" "Event time, not arrival time").

Arrival order within the lateness bound, duplicated messages (and steps of
corrective actions: sent, reported done) and a
``precip_in`` reading split into several at the same instant must not change
the final set of latest revisions; neither may a snapshot taken mid-stream and
restored. Revision numbers legitimately depend on arrival order, so the final
sets are compared without them.
"""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor.contract.inputs import (
    ActionStep,
    CorrectiveAction,
    Inspection,
    Location,
    Photo,
    Reading,
    SiteClosure,
    StepKind,
)
from monitor.contract.times import MS_PER_DAY, MS_PER_HOUR, MS_PER_MINUTE
from monitor.engine.core import Engine
from monitor.engine.window import MemoryWindow

from ..support.properties import examples
from ..support.util import SITE, site_config, ts

START = ts("2026-05-01T00:00:00Z")
SPAN_MIN = 12 * 60  # half a day: two storms and a silence fit in every example

#: rg1 publishes its counter every 5 minutes (with a 40-minute silence, rain
#: revealed after it, sometimes a 16-bit wrap, and sometimes a reboot to 0,
#: near its maximum a wrap too much rain to be one), rg2 only when it rains
#: (stale most of the time), rg3 never (stale from the start): with gauges
#: all or mean, which gauges count changes all the time. rg4 and rg5
#: report only when they tip (``on_tip``), rg4 with heartbeats (its own status
#: and its node's, tb-up's, which sometimes stop), rg5 without (health unknown);
#: rg1's node status sometimes says it holds a backlog (``buffered``).
SENSORS = [
    {"id": "rg1", "kind": "rain", "in_per_tip": 0.01},
    {"id": "rg2", "kind": "rain"},
    {"id": "rg3", "kind": "rain"},
    {"id": "rg4", "kind": "rain", "reporting": "on_tip", "heartbeat_minutes": 30,
     "node": "pi-1"},
    {"id": "rg5", "kind": "rain", "reporting": "on_tip"},
    {"id": "tb-up", "kind": "turbidity", "max_ntu": 400, "node": "pi-1"},
    {"id": "tb-down", "kind": "turbidity", "max_ntu": 400},
    {"id": "trap1-depth", "kind": "sediment", "sensor_height_in": 60},
]
#: Suspect probes on (a swapped stretch is generated), a re-arm delay short
#: enough to pass within the span. The notice of unknown contrast within it.
PAIRS = [{"id": "outfall-1", "upstream": "tb-up", "downstream": "tb-down",
          "suspect_delta_ntu": 3, "suspect_hours": 0.5, "unknown_notice_hours": 0.75}]
TRAPS = [{"id": "trap-1", "sensor": "trap1-depth", "shape": "trapezoidal",
          "bottom_length_ft": 20, "bottom_width_ft": 10, "side_slope": 2, "design_depth_ft": 4,
          "rearm_hours": 1}]
CONFIGS = {mode: site_config(sensors=SENSORS, rain={"gauges": mode}, turbidity_pairs=PAIRS,
                             traps=TRAPS)
           for mode in ("any", "all", "mean")}
#: A site whose active period begins inside the span (local midnight of
#: 2026-05-01 in New York is 04:00Z), so storms before it are informational.
CONFIGS["active_since"] = site_config(sensors=SENSORS, turbidity_pairs=PAIRS, traps=TRAPS,
                                      active_since="2026-05-01")
#: A stray row a routine period and an hour before the span (isolated: not
#: the start of a site without active_since), yet within the lateness bound of it.
#: A site under three permits (config/README.md, "Permits"): the village's 0.5 in, EPA's
#: 0.25 in within 24 hours and its 14-day cadence, North Carolina's 1.0 in with a deadline
#: on the next business day: three storm rules on the same gauges, three chains.
CONFIGS["permits"] = site_config(
    sensors=SENSORS, turbidity_pairs=PAIRS, traps=TRAPS,
    permits=["village-branch-134", {"profile": "epa-cgp-2022", "frequency": "biweekly_storm"},
             "nc-ncg01"], business_days={"country": "US", "subdiv": "NY"})
STRAY_MS = START - 7 * MS_PER_DAY - MS_PER_HOUR
CONFIG = CONFIGS["any"]
gauge_modes = st.sampled_from(sorted(CONFIGS))

storms = st.lists(
    st.tuples(st.integers(0, SPAN_MIN - 300), st.integers(1, 240), st.integers(1, 4)),
    max_size=4)


def scenario(seed: int, storm_list: list[tuple[int, int, int]], n_insp: int) -> list[Any]:
    """Readings of every kind over the span, in event-time order."""
    rng = random.Random(seed)
    rate = [0] * SPAN_MIN
    for start, minutes, intensity in storm_list:
        for m in range(start, min(SPAN_MIN, start + minutes)):
            rate[m] += rng.choice([0, intensity])
    items: list[Any] = []
    total, seq = rng.choice([0, 65_500]), 0
    gone_quiet = rng.randrange(SPAN_MIN)
    swapped = rng.randrange(SPAN_MIN)
    cleaned = rng.choice([None, rng.randrange(SPAN_MIN)])
    on_tip_total = 0
    node_quiet = rng.randrange(SPAN_MIN)
    reboot = rng.choice([None, rng.randrange(SPAN_MIN)])
    # A stray row (a qualifying one of rg2, or a status of rg1), and final
    # stabilization recorded within the span (storms after it informational, clocks cut).
    stray = rng.choice([None, "rain", "status"])
    if stray == "rain":
        items.append(Reading(SITE, "rg2", "rain", STRAY_MS, precip_in=0.6, seq=1))
    elif stray == "status":
        items.append(Reading(SITE, "rg1", "status", STRAY_MS, battery_v=3.9))
    closed = rng.choice([None, None, START + rng.randrange(SPAN_MIN) * MS_PER_MINUTE])
    if closed is not None:
        items.append(SiteClosure(SITE, closed, closed))
    # A probe of the pair dead for a while (contrast unknown: background
    # missing, or the downstream probe stale), sometimes long enough for a notice.
    up_dead = rng.randrange(SPAN_MIN), rng.choice([0, 30, 90, 150])
    down_dead = rng.randrange(SPAN_MIN), rng.choice([0, 30, 90, 150])
    for m in range(0, SPAN_MIN, 5):
        t = START + m * MS_PER_MINUTE
        tips = sum(rate[m:m + 5])
        total += tips
        if reboot is not None and m >= reboot:
            total, reboot = 0, None
        if not (gone_quiet <= m < gone_quiet + 40):  # a gap: stale, then recovered
            items.append(Reading(SITE, "rg1", "rain", t, tips_total=total % 65_536,
                                 battery_v=3.9))
        if m % 15 == 0:
            items.append(Reading(SITE, "rg1", "status", t + 30_000,
                                 buffered=rng.choice([0, 0, 4])))
        if tips:
            seq += 1
            items.append(Reading(SITE, "rg2", "rain", t, precip_in=tips / 100, seq=seq * 10))
            on_tip_total += tips
            items.append(Reading(SITE, "rg4", "rain", t + 20_000, tips_total=on_tip_total))
            items.append(Reading(SITE, "rg5", "rain", t + 40_000, tips_total=on_tip_total))
        if m % 20 == 0 and not (node_quiet <= m < node_quiet + 90):
            items.append(Reading(SITE, rng.choice(["rg4", "tb-up"]), "status", t + 10_000,
                                 battery_v=3.8, buffered=rng.choice([0, 1])))
        up = 8 + rng.random() * 4 + tips
        down = up + (rng.random() * 12 if any(rate[max(0, m - 60):m + 1]) else rng.random())
        if swapped <= m < swapped + 60:  # Probes swapped for an hour
            up, down = down + 5, up
        if rng.random() < 0.03:  # The upstream probe pegged (max_ntu 400)
            up = 400.0
        if not up_dead[0] <= m < sum(up_dead):
            items.append(Reading(SITE, "tb-up", "turbidity", t, ntu=round(up, 2)))
        if not down_dead[0] <= m < sum(down_dead):
            items.append(Reading(SITE, "tb-down", "turbidity", t + 60_000,
                                 ntu=400.0 if rng.random() < 0.02 else round(down, 2)))
        if m % 10 == 0:
            items.append(_sediment(rng, t, m, cleaned))
    for i in range(n_insp):
        # Any kind (``other`` closes nothing), some entered a day and more
        # late (backdated), asking for corrective actions and resolving earlier ones.
        t = START + rng.randrange(SPAN_MIN) * MS_PER_MINUTE
        items.append(Inspection(
            SITE, "J. Rivera", t, rng.choice(("storm", "routine", "other")),
            entered_ms=t + rng.choice((0, 30 * 3_600_000)),
            corrective_actions=(
                CorrectiveAction(f"ca-{i}", "fix", t + rng.randrange(48) * 3_600_000),),
            resolves=tuple(f"ca-{j}" for j in range(i) if rng.random() < 0.5),
            # Some from the field app, with a photo, a location and certified.
            **({"via": "web", "certified": True, "location": Location(40.7, -74.0, 9.0),
                "photos": (Photo(f"{i:064x}", None, 40.7, -74.0, f"resolves ca-{i - 1}"),)}
               if rng.random() < 0.4 else {"via": rng.choice(("mqtt", "cli", None))})))
        # Steps of the action (sent to the contractor, reported done), some before it
        # was asked for or after it was verified, two sometimes at one instant.
        steps: list[StepKind] = ["sent", "done", "done"]
        for step in rng.sample(steps, rng.randrange(4)):
            at = t + rng.randrange(-60, 600) * MS_PER_MINUTE
            items.append(ActionStep(SITE, f"ca-{i}", step, at, rng.choice(("J. Rivera",
                                                                           "contractor")),
                                    "fix", note=rng.choice((None, "done"))))
    items.sort(key=lambda i: i.ts_ms)
    return items


def _sediment(rng: random.Random, t: int, m: int, cleaned: int | None) -> Reading:
    """A trap filling up to and about the 50 % line (31.8 in in this trap) with
    noise, perhaps cleaned out, and faulty readings: past the bottom, above the maximum,
    impossible steps; as depth_in or as distance_in from 60 in up (in whole
    centimetres, as a laser range finder reads)."""
    depth = 24 + min(1.0, 2 * m / SPAN_MIN) * 8 + rng.uniform(-1.5, 1.5)
    if cleaned is not None and m >= cleaned:
        # The excavator takes two hours, in four passes with pauses, down to
        # 2 in (the fall settles only after it); then the trap refills.
        passes = min(4, (m - cleaned) // 30 + 1) / 4
        depth = depth + (2 - depth) * passes if m < cleaned + 120 else \
            2 + (m - cleaned - 120) / 60 + rng.uniform(-0.3, 0.3)
    fault = rng.random()
    if fault < 0.04:
        depth = -rng.uniform(0.1, 3)   # beyond_bottom
    elif fault < 0.06:
        depth = 80.0                   # above_max_fill (1.5 x 48 in = 72 in)
    elif fault < 0.1:
        depth += 20                    # a step that does not last
    if rng.random() < 0.5:
        return Reading(SITE, "trap1-depth", "sediment", t,
                       distance_in=round((60 - depth) * 2.54) / 2.54)
    return Reading(SITE, "trap1-depth", "sediment", t, depth_in=round(depth, 2))


def split(items: list[Any], rng: random.Random) -> list[Any]:
    """Split each precip_in reading into parts at the same instant (micro-inches exact)."""
    out = []
    for it in items:
        if isinstance(it, Reading) and it.precip_in is not None and it.seq is not None:
            micro = round(it.precip_in * 1_000_000)
            cuts = sorted(rng.randrange(micro + 1) for _ in range(rng.randrange(3)))
            parts = [b - a for a, b in zip([0, *cuts], [*cuts, micro], strict=True)]
            for j, part in enumerate(parts):
                out.append(Reading(SITE, it.sensor, "rain", it.ts_ms, precip_in=part / 1_000_000,
                                   seq=it.seq + j))
        else:
            out.append(it)
    return out


def final_set(items: list[Any], window: bool = False, mode: str = "any"
              ) -> list[dict[str, Any]]:
    eng = Engine(CONFIGS[mode], MemoryWindow() if window else None)
    for it in items:
        eng.apply(it)
    eng.tick(max(i.ts_ms for i in items))
    return [_without_revision(e.to_json()) for e in eng.current_events()]


def _without_revision(e: dict[str, Any]) -> dict[str, Any]:
    e = dict(e)
    e.pop("revision")
    return e


#: The two snapshot properties: 20 examples in CI (5 locally); their docstrings say why.
PROPERTY = settings(max_examples=examples(20), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=examples(200), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), storm_list=storms, n_insp=st.integers(0, 3),
       shuffle_seed=st.integers(0, 2**32), mode=gauge_modes)
def test_order_duplicates_and_splitting_do_not_change_events(
        seed: int, storm_list: list[tuple[int, int, int]], n_insp: int,
        shuffle_seed: int, mode: str) -> None:
    """200 examples in CI, the same on every run; 25 new ones on each local run
    (tests/support/properties.py). Each example is a half-day scenario of eight
    sensors with storms, a silence, wraps and reboots, and is checked three ways
    (shuffled, duplicated, split), so 25 examples cover every gauge mode about six
    times a run; the scenario generator, not the count, is where the power lies."""
    rnd = random.Random(shuffle_seed)
    items = scenario(seed, storm_list, n_insp)
    expected = final_set(items, mode=mode)

    shuffled = list(items)
    rnd.shuffle(shuffled)
    assert final_set(shuffled, mode=mode) == expected

    duplicated = items + rnd.sample(items, len(items) // 3)
    rnd.shuffle(duplicated)
    assert final_set(duplicated, mode=mode) == expected

    assert final_set(split(items, rnd), mode=mode) == expected


def disorder(items: list[Any], rnd: random.Random, share: float) -> list[Any]:
    """What a live site sends: in order, but some readings hours late (a node that
    buffered), some a little late (two probes on two nodes), some twice."""
    out = list(items)
    for _ in range(int(len(out) * share)):
        i = rnd.randrange(len(out))
        j = min(len(out) - 1, i + rnd.choice([1, 2, 5, 40, 200]))
        out.insert(j, out.pop(i))
    return out + rnd.sample(items, len(items) // 20)


@PROPERTY
@given(seed=st.integers(0, 2**32), storm_list=storms, n_insp=st.integers(0, 3),
       shuffle_seed=st.integers(0, 2**32), cut=st.floats(0.05, 0.95), mode=gauge_modes)
def test_bounded_memory_mode_gives_the_same_events(
        seed: int, storm_list: list[tuple[int, int, int]], n_insp: int, shuffle_seed: int,
        cut: float, mode: str) -> None:
    """The daemon's engine keeps two hours of readings and re-reads older ones from its
    window (the journal): late readings, duplicates and a snapshot taken mid-stream
    give the same final set as everything in order. ``PROPERTY``'s 20 examples in CI
    (5 locally) suffice: every one replays a whole scenario through the window, which
    the order property's many scenarios have already searched in memory."""
    rnd = random.Random(shuffle_seed)
    items = scenario(seed, storm_list, n_insp)
    expected = final_set(items, mode=mode)
    late = disorder(items, rnd, 0.1)
    assert final_set(late, window=True, mode=mode) == expected

    config = CONFIGS[mode]
    k = int(len(late) * cut)
    whole = Engine(config, MemoryWindow())
    for it in late[:k]:
        whole.apply(it)
    resumed = Engine.restore(config, json.loads(json.dumps(whole.dump())))
    assert [e.to_json() for it in late[k:] for e in resumed.apply(it)] == [
        e.to_json() for it in late[k:] for e in whole.apply(it)]
    end = max(i.ts_ms for i in items)
    resumed.tick(end)
    assert [_without_revision(e.to_json()) for e in resumed.current_events()] == expected


@PROPERTY
@given(seed=st.integers(0, 2**32), storm_list=storms, n_insp=st.integers(0, 3),
       cut=st.floats(0.05, 0.95), shuffle_seed=st.integers(0, 2**32))
def test_snapshot_restore_mid_stream_changes_nothing(
        seed: int, storm_list: list[tuple[int, int, int]], n_insp: int, cut: float,
        shuffle_seed: int) -> None:
    """A snapshot taken mid-stream and restored changes no later event. ``PROPERTY``'s
    20 examples in CI (5 locally) suffice: a field the snapshot loses shows at almost
    any cut of a whole scenario."""
    rnd = random.Random(shuffle_seed)
    items = scenario(seed, storm_list, n_insp)
    # Some late arrivals, so the snapshot holds out-of-order history too.
    for _ in range(len(items) // 20):
        i, j = rnd.randrange(len(items)), rnd.randrange(len(items))
        items[i], items[j] = items[j], items[i]
    k = int(len(items) * cut)

    whole = Engine(CONFIG)
    for it in items[:k]:
        whole.apply(it)
    snapshot = json.loads(json.dumps(whole.dump()))  # must survive real JSON
    resumed = Engine.restore(CONFIG, snapshot)

    rest_whole = [e.to_json() for it in items[k:] for e in whole.apply(it)]
    rest_resumed = [e.to_json() for it in items[k:] for e in resumed.apply(it)]
    assert rest_resumed == rest_whole
    end = max(i.ts_ms for i in items)
    assert [e.to_json() for e in resumed.tick(end)] == [e.to_json() for e in whole.tick(end)]
    assert [e.to_json() for e in resumed.current_events()] == [
        e.to_json() for e in whole.current_events()]

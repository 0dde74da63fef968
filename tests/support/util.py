"""Small builders shared by the tests: configurations and reading series."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from monitor.config import Config
from monitor.config.file import parse_config
from monitor.contract.events import (
    BackgroundMissing,
    BatteryLow,
    Body,
    ClockClosed,
    CorrectiveActionDone,
    CorrectiveActionDue,
    CorrectiveActionOverdue,
    CorrectiveActionSent,
    CounterReset,
    Event,
    Fact,
    GaugeDisagrees,
    InspectionBackdated,
    InspectionDueSoon,
    InspectionMissed,
    InspectionOverdue,
    InspectionRecorded,
    Pegged,
    ProbesSuspect,
    SensorFault,
    SensorRecovered,
    SensorStale,
    SiteClosed,
    SiteShutdown,
    SnowEvent,
    StormEnded,
    StormForecast,
    StormQualified,
    StormStarted,
    TrapCleaned,
    TrapCleanoutRequired,
    TrapFill,
    TurbidityBenchmarkExceeded,
    TurbidityContrast,
    TurbidityMonitored,
    TurbidityUnmonitored,
)
from monitor.contract.inputs import ActionStep, Inspection, Reading, SiteClosure
from monitor.contract.times import MS_PER_MINUTE, parse_iso
from monitor.engine import Engine

SITE = "branch-meadows"


def ts(text: str) -> int:
    """ms from an ISO time; a bare ``HH:MM`` is on 2026-05-01 UTC."""
    if len(text) <= 5:
        text = f"2026-05-01T{text}:00Z"
    return parse_iso(text)


def site_config(**overrides: Any) -> Config:
    """One site with a gauge, a turbidity pair and a trap; overrides merge into the site."""
    site: dict[str, Any] = {
        "id": SITE,
        "name": "Branch Meadows Subdivision",
        "timezone": "America/New_York",
        "condition": "B",
        "sensors": [
            {"id": "rg1", "kind": "rain", "in_per_tip": 0.01},
            {"id": "tb-up", "kind": "turbidity"},
            {"id": "tb-down", "kind": "turbidity"},
            {"id": "trap1-depth", "kind": "sediment"},
        ],
        "turbidity_pairs": [{"id": "outfall-1", "upstream": "tb-up", "downstream": "tb-down"}],
        "traps": [{"id": "trap-1", "sensor": "trap1-depth", "shape": "trapezoidal",
                   "bottom_length_ft": 20, "bottom_width_ft": 10, "side_slope": 2,
                   "design_depth_ft": 4}],
    }
    rain = overrides.pop("rain", None)
    site.update(overrides)
    if rain is not None:
        site["rain"] = rain
    return parse_config({"state_dir": "/tmp/stormwatch-test", "sites": [site]}, env={})


def rain(sensor: str, at_ms: int, precip_in: float, seq: int) -> Reading:
    return Reading(site=SITE, sensor=sensor, kind="rain", ts_ms=at_ms, precip_in=precip_in, seq=seq)


def tips(sensor: str, at_ms: int, total: int) -> Reading:
    return Reading(site=SITE, sensor=sensor, kind="rain", ts_ms=at_ms, tips_total=total)


def counter_series(start_ms: int, minutes: int, tips_at: dict[int, int],
                   sensor: str = "rg1", base: int = 0) -> list[Reading]:
    """A gauge publishing its counter every minute; ``tips_at[m]`` tips fall in minute m."""
    out, total = [], base
    for m in range(minutes):
        total += tips_at.get(m, 0)
        out.append(tips(sensor, start_ms + m * MS_PER_MINUTE, total))
    return out


def inspection(at_ms: int, inspector: str = "J. Rivera, CPESC", kind: str = "storm") -> Inspection:
    return Inspection(site=SITE, inspector=inspector, ts_ms=at_ms, kind=kind)  # type: ignore[arg-type]


def of_type(events: list[Any], kind: str) -> list[dict[str, Any]]:
    return [e.to_json() for e in events if e.type == kind]


def run(items: Sequence[Reading | Inspection | SiteClosure | ActionStep], now_ms: int | None = None,
        **site: Any) -> tuple[Engine, list[Event]]:
    """A fresh engine for ``site_config(**site)`` fed ``items``, then ticked to ``now_ms``."""
    eng = Engine(site_config(**site))
    events: list[Event] = []
    for item in items:
        events += eng.apply(item)
    if now_ms is not None:
        events += eng.tick(now_ms)
    return eng, events


def final(eng: Engine, kind: str) -> list[dict[str, Any]]:
    """The engine's current events of one type, as JSON."""
    return of_type(eng.current_events(), kind)


# --------------------------------------------------------------------------- events

#: A complete example body of every event type (the values of an ordinary site).
SAMPLE_BODIES: dict[str, Body] = {body.TYPE: body for body in (
    StormStarted(gauge="rg1", event_id="e1", started_at="2026-11-30T10:15:00Z"),
    StormQualified(gauge="rg1", event_id="e1", started_at="2026-11-30T10:15:00Z",
                   qualified_at="2026-11-30T14:15:00Z", total_in=0.5, max_24h_in=0.5,
                   due="2026-12-01T14:15:00Z", uncertain_in=0.0, gauges=("rg1",),
                   threshold_in=0.5, mode="event_total", clock_id="storm-e1"),
    StormEnded(gauge="rg1", event_id="e1", started_at="2026-11-30T10:15:00Z",
               ended_at="2026-11-30T16:15:00Z", total_in=0.8, max_24h_in=0.8, qualified=True,
               uncertain_in=0.0),
    InspectionRecorded(inspector="J. Rivera, CPESC", kind="storm",
                       inspected_at="2026-12-01T10:00:00Z", closes=("storm-e1",),
                       entered_at="2026-12-01T10:05:00Z", backdated=False,
                       findings=({"practice": "silt-fence-north", "condition": "intact"},),
                       corrective_actions=(), inspectors=("J. Rivera, CPESC",),
                       credentials=("CPESC 1234",), resolves=()),
    InspectionBackdated(inspector="J. Rivera, CPESC", inspected_at="2026-11-28T10:00:00Z",
                        entered_at="2026-12-01T10:05:00Z", closes=("storm-e1",),
                        hours_late=72.08),
    CorrectiveActionSent(action_id="ca-1", text="repair the silt fence at 2+40",
                         sent_by="J. Rivera", to="crew@example.org"),
    CorrectiveActionDone(action_id="ca-1", text="repair the silt fence at 2+40",
                         done_by="contractor", note="restaked",
                         photos=({"sha256": "ab" * 32, "taken_at": None, "lat": None,
                                  "lon": None, "caption": None},), via="link"),
    CorrectiveActionDue(action_id="ca-1", text="repair the silt fence at 2+40",
                        due="2026-12-03T05:00:00Z", opened_at="2026-12-01T10:00:00Z",
                        inspector="J. Rivera, CPESC"),
    InspectionMissed(clock_id="routine-2026-11-20T05:00:00Z", clock="routine",
                     due="2026-11-27T05:00:00Z", week=1, week_from="2026-11-27T05:00:00Z",
                     week_to="2026-12-04T05:00:00Z"),
    SiteClosed(closed_at="2026-12-15T05:00:00Z", entered_at="2026-12-15T14:00:00Z",
               by="J. Rivera, CPESC", notes="final stabilization certified"),
    InspectionDueSoon(clock_id="storm-e1", clock="storm", due="2026-12-01T14:15:00Z",
                      hours_left=6.0),
    InspectionOverdue(clock_id="storm-e1", clock="storm", due="2026-12-01T14:15:00Z",
                      hours_late=0.0),
    ClockClosed(clock_id="storm-e1", clock="storm", due="2026-12-01T14:15:00Z",
                inspected_at="2026-12-01T10:00:00Z", outcome="met",
                entered_at="2026-12-01T10:05:00Z", backdated=False),
    TrapFill(trap="trap-1", fill_fraction=0.41, depth_in=20.0, sensor="trap1-depth",
             threshold=0.4),
    TrapCleanoutRequired(trap="trap-1", fill_fraction=0.5, depth_in=24.0, sensor="trap1-depth",
                         threshold=0.5, repeat=0),
    TrapCleaned(trap="trap-1", fill_before=0.5, fill_after=0.05, sensor="trap1-depth"),
    TurbidityContrast(pair="outfall-1", state="exceeded", basis="background",
                      started_at="2026-11-30T14:05:00Z",
                      upstream_ntu=10.0, downstream_ntu=40.0, delta_ntu=30.0, limit_ntu=5.0,
                      upstream_at="2026-11-30T14:14:00Z"),
    SensorStale(sensor="rg1", last_seen="2026-11-30T12:00:00Z", stale_after_minutes=60.0),
    SensorRecovered(sensor="rg1", last_seen="2026-11-30T15:00:00Z",
                    stale_since="2026-11-30T13:00:00Z"),
    BatteryLow(sensor="rg1", battery_v=3.41, battery_low_v=3.5),
    CounterReset(sensor="rg1", tips_before=1234, tips_after=0),
    BackgroundMissing(sensor="tb-up", pair="outfall-1", downstream_ntu=25.0),
    Pegged(sensor="tb-down", pair="outfall-1", ntu=1000.0, max_ntu=1000.0),
    SensorFault(sensor="trap1-depth", reason="beyond_bottom", value=-1.5,
                since="2026-11-30T12:00:00Z", trap="trap-1", distance_in=67.5,
                last_valid_in=20.0),
    ProbesSuspect(pair="outfall-1", upstream_ntu=30.0, downstream_ntu=10.0, hours=6.0,
                  since="2026-11-30T08:00:00Z", upstream="tb-up", downstream="tb-down",
                  suspect_delta_ntu=10.0),
    TurbidityUnmonitored(pair="outfall-1", reason="background_missing",
                         since="2026-11-30T12:14:00Z", upstream="tb-up", downstream="tb-down",
                         absolute_ntu=250.0),
    TurbidityMonitored(pair="outfall-1", reason="background_missing",
                       since="2026-11-30T12:14:00Z", upstream="tb-up", downstream="tb-down",
                       absolute_ntu=250.0, known_at="2026-11-30T16:40:00Z"),
    StormForecast(source="nws", forecast_in=0.79, window_from="2026-11-30T18:00:00Z",
                  window_to="2026-12-01T18:00:00Z", issued_at="2026-11-30T13:00:00Z",
                  probability=80.0, grid="OKX/33,37", threshold_in=0.5),
    GaugeDisagrees(gauge="rg1", gauge_in=0.08, reference_in=0.79, reference="KHPN",
                   window_from="2026-11-29T14:00:00Z", window_to="2026-11-30T14:00:00Z",
                   stale=False, threshold_in=0.5, opens_clock=False, reference_unknown_hours=0),
    SnowEvent(sensor="sn1", started_at="2026-11-29T14:00:00Z",
              qualified_at="2026-11-30T10:00:00Z", total_in=3.5, threshold_in=3.25,
              window_hours=24.0),
    CorrectiveActionOverdue(action_id="a1", text="Repair the silt fence", due=
                            "2026-12-07T17:00:00Z", permit="epa-cgp-2022",
                            section="CGP 2022 Part 5.2", hours_late=4.0),
    TurbidityBenchmarkExceeded(sensor="tb-dw", week_from="2026-11-23T05:00:00Z",
                               week_to="2026-11-30T05:00:00Z", mean_ntu=62.5, samples=7,
                               benchmark_ntu=50.0, permit="epa-cgp-2022",
                               section="CGP 2022 Part 3.3.1, 5.2.2"),
    SiteShutdown(started_at="2026-11-30T12:00:00Z", ended_at=None,
                 notice="Winter shutdown, notice sent to DEC Nov 28", by="J. Rivera"),
)}


def event(type_: str, id_: str, at_ms: int, revision: int = 0, *, site: str = SITE,
          retracted: bool = False, **fields: Any) -> Event:
    """A published event of ``type_``: its sample body with ``fields`` replaced."""
    body = dataclasses.replace(SAMPLE_BODIES[type_], **fields)
    return Event(Fact(site, at_ms, id_, body), revision, retracted)


def changed(e: Event, *, site: str | None = None, revision: int | None = None,
          retracted: bool | None = None, **fields: Any) -> Event:
    """``e`` with its site, revision, retraction or body fields changed."""
    fact = Fact(site if site is not None else e.site, e.at_ms, e.id,
                dataclasses.replace(e.body, **fields))
    return Event(fact, e.revision if revision is None else revision,
                 e.retracted if retracted is None else retracted)


def ev(at_ms: int, body: Body, n: int = 0) -> Event:
    return Event(Fact(SITE, at_ms, f"{body.TYPE}-{at_ms}-{n}", body))


def contrast(at_iso: str, state: str, started: str, pair: str = "outfall-1") -> Event:
    return ev(parse_iso(at_iso), TurbidityContrast(
        pair=pair, state=state, basis="background", started_at=started,  # type: ignore[arg-type]
        upstream_ntu=5.0, downstream_ntu=20.0, delta_ntu=15.0, limit_ntu=5.0,
        upstream_at=started))


def storm(start_ms: int, hundredths: int = 60, seq0: int = 0) -> list[Reading]:
    """0.01 in a minute from ``start_ms``: 60 of them qualify at minute 49 (0.50 in)."""
    return [rain("rg1", start_ms + i * MS_PER_MINUTE, 0.01, seq0 + i) for i in range(hundredths)]


def insp(at_ms: int, inspector: str = "J. Rivera", kind: str = "routine", **more: Any
         ) -> Inspection:
    """An inspection (routine unless ``kind`` says) with any more fields of ``Inspection``."""
    return Inspection(site=SITE, inspector=inspector, ts_ms=at_ms, kind=kind,  # type: ignore[arg-type]
                      **more)

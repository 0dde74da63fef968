"""Rain revealed after a silence may have qualified a storm long before the reveal
(monitor/README.md, "The rules" and "Events").

A gauge that publishes every interval and falls silent, then comes back with
more tips, reveals rain of unknown timing: it fell somewhere in the silence.
If that rain qualified the storm, the storm may have qualified as early as the
silence began (``qualified_not_before``), the 24-hour inspection may be due
from then (``due_not_before``), and the deadline counted from the reveal
(``due``) is only the latest one: the alert says "inspect now", and the report
marks the storm. Hand-worked times throughout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monitor.config import Config
from monitor.config.file import parse_config
from monitor.contract.events import Event
from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_HOUR, MS_PER_MINUTE, iso, parse_iso
from monitor.engine.core import Engine
from monitor.host.engine import EngineHost
from monitor.host.rows import journal_in
from monitor.sinks.notify.messages import Alert, render
from monitor.store.opening import open_store
from monitor.views.report.build import build_report

SITE = "branch-meadows"
T0 = parse_iso("2026-05-01T12:00:00Z")  # 8:00 AM EDT
MIN = MS_PER_MINUTE
H = MS_PER_HOUR


def config(tmp: str = "/tmp/stormwatch-test", **site: Any) -> Config:
    doc: dict[str, Any] = {
        "id": SITE, "name": "Branch Meadows", "timezone": "America/New_York",
        "condition": "B",
        "sensors": [{"id": "rg1", "kind": "rain", "in_per_tip": 0.01},
                    {"id": "rg2", "kind": "rain", "reporting": "on_tip"}]}
    doc.update(site)
    return parse_config({"state_dir": tmp, "sites": [doc]}, env={})


def silent_gauge(tip_at: int | None = None) -> list[Reading]:
    """rg1: 0.30 in over minutes 1..30, its counter every minute to 13:00; silent ten
    hours; back at 23:00 with 40 tips more (0.70 in in all), then dry for eight hours
    but for one tip ``tip_at`` minutes after 23:00."""
    rows = [(T0 + m * MIN, min(m, 30)) for m in range(61)]
    rows += [(T0 + 11 * H + m * MIN, 70 if tip_at is None or m < tip_at else 71)
             for m in range(8 * 60)]
    return [Reading(SITE, "rg1", "rain", t, tips_total=tips) for t, tips in rows]


def final(cfg: Config, readings: list[Reading]) -> list[dict[str, Any]]:
    eng = Engine(cfg)
    for r in readings:
        eng.apply(r)
    eng.tick(max(r.ts_ms for r in readings))
    return [e.to_json() for e in eng.current_events()]


def qualified(events: list[dict[str, Any]]) -> dict[str, Any]:
    (q,) = [e for e in events if e["type"] == "storm_qualified"]
    return q


def test_event_end_clock_is_due_from_the_silence_when_the_reveal_ends_the_storm() -> None:
    q = qualified(final(config(rain={"clock_start": "event_end"}), silent_gauge()))
    # The storm's last rain is the revealing reading (23:00): it may have ended as early
    # as the silence began (13:00), so due 23:00 + 24 h at the latest, 13:00 + 24 h at
    # the earliest.
    assert (q["qualified_at"], q["qualified_not_before"], q["due"], q["due_not_before"]) == (
        iso(T0 + 11 * H), iso(T0 + H), iso(T0 + 35 * H), iso(T0 + 25 * H))


def test_a_later_known_end_leaves_only_the_qualification_uncertain() -> None:
    # A tip at 23:30 ends the storm at a known time: the event_end deadline is certain.
    q = qualified(final(config(rain={"clock_start": "event_end"}), silent_gauge(tip_at=30)))
    assert (q["qualified_not_before"], q["due"], q["due_not_before"]) == (
        iso(T0 + H), iso(T0 + 11 * H + 30 * MIN + 24 * H), iso(T0 + 11 * H + 30 * MIN + 24 * H))


def test_no_deadline_at_a_site_without_clocks_but_the_doubt_is_said() -> None:
    q = qualified(final(config(condition="none"), silent_gauge()))
    assert (q["qualified_not_before"], q["due"], q["due_not_before"], q["informational"]) == (
        iso(T0 + H), None, None, True)


def test_rain_that_did_not_qualify_the_storm_leaves_both_null() -> None:
    """Revealed rain before the qualifying reading does not make the qualification
    uncertain: 0.05 in, a silence, 0.40 in revealed at 23:00, then 0.05 in timed tip by
    tip: 0.50 in at 23:05, a known time."""
    rows = [(T0 + m * MIN, min(m, 5)) for m in range(61)]
    rows += [(T0 + 11 * H + m * MIN, 45 + min(m, 10)) for m in range(8 * 60)]
    events = final(config(), [Reading(SITE, "rg1", "rain", t, tips_total=n) for t, n in rows])
    q = qualified(events)
    assert (q["qualified_at"], q["uncertain_in"], q["qualified_not_before"],
            q["due_not_before"]) == (iso(T0 + 11 * H + 5 * MIN), 0.4, None, None)


def storm_event(**fields: Any) -> Event:
    q = qualified(final(config(), silent_gauge()))
    q.update(fields)
    return Event.from_json(q)


def test_the_alert_says_it_may_have_qualified_early_and_to_inspect_now() -> None:
    event = storm_event()
    site = config().sites[0]
    # Sent at the reveal (23:00 UTC, 7:00 PM EDT): the earliest deadline (13:00 UTC the
    # next day) is still ahead.
    m = render(Alert("a:0", event, T0 + 11 * H, site))
    assert m.title == ("Branch Meadows: storm 0.70 in: INSPECT NOW, the deadline may have "
                       "passed")
    assert m.notify_type == "warning"
    assert m.text.startswith(
        "A storm event qualified on rain a silent gauge revealed: it may have qualified as "
        "early as Fri May 1, 2026 9:00 AM EDT, so the 24-hour storm inspection may already "
        "be due or past due. Inspect now.\n")
    assert ("May have qualified as early as: Fri May 1, 2026 9:00 AM EDT: the gauge was "
            "silent from then until Fri May 1, 2026 7:00 PM EDT") in m.text
    assert ("Inspection may be due as early as: Sat May 2, 2026 9:00 AM EDT (14.0 hours "
            "left)\n") in m.text
    assert ("Inspection due at the latest: Sat May 2, 2026 7:00 PM EDT (24.0 hours left), "
            "counted from the reading\n") in m.text
    assert "To do: inspect now: have the qualified professional inspect" in m.text
    # Delivered after the earliest deadline (a node's backlog, a late reveal): it has
    # passed, and the alert is a failure, not a warning.
    late = render(Alert("a:0", event, T0 + 26 * H, site))
    assert late.notify_type == "failure"
    assert ("Inspection may be due as early as: Sat May 2, 2026 9:00 AM EDT (1.0 hours "
            "overdue); that has already passed\n") in late.text


def test_a_storm_of_known_timing_keeps_its_plain_alert() -> None:
    event = storm_event(qualified_not_before=None, due_not_before=None, uncertain_in=0.0)
    m = render(Alert("a:0", event, T0 + 11 * H, config().sites[0]))
    assert m.title == "Branch Meadows: storm 0.70 in, inspect by Sat May 2, 7:00 PM EDT"
    assert "INSPECT NOW" not in m.title and "as early as" not in m.text


def test_the_report_marks_the_storm_and_shows_an_on_tip_gauge_unknown(tmp_path: Path) -> None:
    cfg = config(str(tmp_path / "state"))
    readings = silent_gauge()
    with open_store(cfg) as store:
        # The report is made at 19:00, a minute after rg1's last reading.
        host = EngineHost.restore(cfg, store, clock=lambda: (T0 + 19 * H) / 1000)
        store.journal.commit([journal_in(r, topic=None, received_ms=None) for r in readings])
        host.catch_up()
        host.tick()
        html = build_report(cfg, store, SITE, T0 - H, T0 + 24 * H, T0 + 19 * H)
    assert ("Fri May 1, 2026" not in html)  # the report's own time format is used
    assert ("2026-05-01 19:00 EDT (rain revealed after a silence: may have qualified as "
            "early as 2026-05-01 09:00 EDT; inspection may have been due as early as "
            "2026-05-02 09:00 EDT)") in html
    assert ("<tr><td>rg2</td><td>rain</td><td>on_tip</td><td>unknown (reporting: on_tip "
            "without heartbeat_minutes: a dry gauge and a dead one look alike)</td>") in html
    assert "<tr><td>rg1</td><td>rain</td><td>interval</td><td>ok</td>" in html

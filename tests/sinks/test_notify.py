"""Alert routing, texts, delivery rules and the outbox worker (monitor/notify).

Real receivers throughout (tests/support/receivers.py: an aiosmtpd server, an
http.server for Apprise's json://), a real SQLite store, and Apprise itself:
nothing of Apprise or smtplib is mocked. The worker runs on a fake clock with
``drain`` so backoff and escalation are checked to the millisecond without
sleeping; the daemon end to end is in test_notify_daemon.py.
"""

from __future__ import annotations

import io
import json
import logging
import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from monitor.config import Config
from monitor.config.file import ConfigError, load_config, parse_config
from monitor.contract.events import EVENT_FIELDS, Event, Fact, GaugeQualified
from monitor.contract.message import md_escape
from monitor.contract.routes import ROUTE_KEYS
from monitor.contract.times import iso, parse_iso
from monitor.logs import configure
from monitor.sinks.notify.build import build_router
from monitor.sinks.notify.messages import Alert, Escalation, local_time, render
from monitor.sinks.notify.policy import backoff_s
from monitor.sinks.notify.routing import DEFAULT_ROUTES, URGENT_TYPES, Router, is_urgent
from monitor.sinks.notify.secrets import mask
from monitor.sinks.notify.targets import NotifySetupError, load_targets
from monitor.sinks.notify.worker import NotifyWorker
from monitor.store import OutboxRow, Store

from ..support.notifykit import (
    MIN,
    SITE,
    SITE_DOC,
    T0,
    FakeClock,
    H,
    alert,
    ev,
    json_url,
    notice,
    storm,
)
from ..support.receivers import HttpReceiver, SmtpReceiver, closed_port
from ..support.util import changed

NY = ZoneInfo("America/New_York")

#: The event types of monitor/README.md, "Events", as its table lists them.
VOCABULARY_TYPES = [
    "storm_started", "storm_qualified", "storm_ended", "inspection_recorded",
    "inspection_due_soon", "inspection_overdue", "clock_closed", "trap_fill",
    "trap_cleanout_required", "trap_cleaned", "turbidity_contrast", "sensor_stale",
    "sensor_recovered", "battery_low", "counter_reset", "background_missing", "pegged",
    # The inspection record.
    "inspection_backdated", "inspection_missed", "corrective_action_due", "site_closed",
    # Sensor faults and suspect probes.
    "sensor_fault", "probes_suspect",
    # The weather.
    "storm_forecast", "gauge_disagrees",
    # Turbidity that cannot be checked.
    "turbidity_unmonitored", "turbidity_monitored",
    # Corrective actions between asking and verifying: sent to the contractor, done.
    "corrective_action_sent", "corrective_action_done",
    # Snow whose melt is a storm event's discharge.
    "snow_event",
    # Permits: corrective actions past their deadline, the dewatering benchmark, a shutdown.
    "corrective_action_overdue", "turbidity_benchmark_exceeded", "site_shutdown",
]



def make_config(tmp_path: Path, targets: list[dict[str, Any]], *,
                env: dict[str, str] | None = None, sites: list[dict[str, Any]] | None = None,
                **notify: Any) -> Config:
    return parse_config({"state_dir": str(tmp_path / "state"),
                         "notify": {"targets": targets, **notify},
                         "sites": sites or [SITE_DOC]}, env=env or {})










@pytest.fixture
def http2() -> Iterator[HttpReceiver]:
    with HttpReceiver() as receiver:
        yield receiver


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)




class Harness:
    """A store, a router and a worker on a fake clock, for one configuration."""

    def __init__(self, config: Config, clock: FakeClock) -> None:
        self.config = config
        self.clock = clock
        self.store = Store.in_dir(config.state_dir)
        router = build_router(config)
        assert router is not None
        self.router = router
        self.worker = NotifyWorker(config, clock, rand=lambda: 0.0)
        self.seq = 0

    def record(self, *events: Event) -> None:
        self.seq += 1
        self.store.events.record(list(events), self.seq, recorded_ms=self.clock.ms,
                                 routes=self.router)

    def drain(self) -> int:
        total = 0
        while n := self.worker.drain(self.store):  # escalation rows are due at once
            total += n
        return total

    def rows(self) -> dict[tuple[str, str], OutboxRow]:
        return {(r.alert_id, r.tag): r for r in self.store.outbox.rows()}

    def close(self) -> None:
        self.store.close()


@pytest.fixture
def harnesses() -> Iterator[list[Harness]]:
    made: list[Harness] = []
    yield made
    for h in made:
        h.close()


def harness(made: list[Harness], config: Config, now: int = T0) -> Harness:
    h = Harness(config, FakeClock(now))
    made.append(h)
    return h


# --------------------------------------------------------------------------- routing table


def test_every_design_5_event_type_has_a_decided_default_route() -> None:
    assert sorted(EVENT_FIELDS) == sorted(VOCABULARY_TYPES)
    assert [t for t in VOCABULARY_TYPES if t not in DEFAULT_ROUTES] == []
    assert set(DEFAULT_ROUTES) <= set(ROUTE_KEYS)
    # Every urgent type reaches the qualified professional by default.
    assert all("qp" in DEFAULT_ROUTES[t] for t in URGENT_TYPES)
    # An overdue clock also notifies the officer.
    assert DEFAULT_ROUTES["inspection_overdue"] == ("qp", "officer")


@pytest.mark.parametrize(("event", "tags", "urgent"), [
    (storm(), ["qp", "officer"], True),
    (storm(informational=True, due=None), ["qp"], False),
    (ev("storm_started", "a", T0, gauge="rg1"), [], False),
    (ev("storm_ended", "a", T0, gauge="rg1"), [], False),
    (notice("inspection_due_soon", "a", T0), ["qp"], True),
    (notice("inspection_overdue", "a", T0), ["qp", "officer"], True),
    (ev("clock_closed", "a", T0, outcome="met"), ["qp"], False),
    (ev("clock_closed", "a", T0, outcome="late"), ["qp", "officer"], False),
    (ev("inspection_recorded", "a", T0, inspector="J"), [], False),
    (ev("trap_fill", "a", T0, trap="trap-1"), ["qp"], False),
    (ev("trap_cleanout_required", "a", T0, trap="trap-1"), ["qp"], True),
    (ev("trap_cleaned", "a", T0, trap="trap-1"), [], False),
    (ev("turbidity_contrast", "a", T0, state="exceeded"), ["qp"], True),
    (ev("turbidity_contrast", "a", T0, state="cleared"), ["qp"], False),
    (ev("sensor_stale", "a", T0, sensor="rg1"), ["ops"], False),
    (ev("battery_low", "a", T0, sensor="rg1"), ["ops"], False),
    (ev("sensor_fault", "a", T0), ["qp", "ops"], False),
    (ev("probes_suspect", "a", T0), ["qp", "ops"], False),
    (ev("turbidity_unmonitored", "a", T0), ["qp", "ops"], False),
    (ev("turbidity_monitored", "a", T0), ["qp", "ops"], False),
    (ev("storm_forecast", "a", T0), ["qp"], False),
    (ev("gauge_disagrees", "a", T0), ["qp", "ops"], False),
])
def test_default_routes_and_urgency(event: Event, tags: list[str],
                                    urgent: bool) -> None:
    assert Router()(event) == tags
    assert is_urgent(event) is urgent


def test_a_site_override_replaces_the_route_for_its_site_only(tmp_path: Path) -> None:
    other = {**SITE_DOC, "id": "mill-road-lot", "name": "Mill Road"}
    here = {**SITE_DOC, "notify": {"routes": {"trap_fill": ["ops"], "storm_qualified": [],
                                              "clock_closed.late": ["officer"]}}}
    config = make_config(tmp_path, [{"url": "console://"}], sites=[here, other],
                         routes={"trap_fill": ["officer"], "clock_closed": ["qp"]})
    router = build_router(config)
    assert router is not None
    fill = ev("trap_fill", "f", T0, trap="trap-1")
    assert router(fill) == ["ops"]                                   # site override
    assert router(changed(fill, site="mill-road-lot")) == ["officer"]  # global override
    assert router(storm()) == []                                     # [] = log book only
    assert router(changed(storm(), site="mill-road-lot")) == ["qp", "officer"]  # default
    late = ev("clock_closed", "c", T0, outcome="late")
    assert router(late) == ["officer"]
    # A global route for the type covers its variants too.
    assert router(changed(late, site="mill-road-lot")) == ["qp"]


def test_what_is_never_routed() -> None:
    router = Router()
    assert router(changed(storm(), retracted=True, revision=1)) == []
    gauge = GaugeQualified(gauge="rg1", event_id="e1", started_at=iso(T0), qualified_at=iso(T0),
                           total_in=0.5, max_24h_in=0.5, last_rain=iso(T0), uncertain_in=0.0,
                           gauges=("rg1",))
    assert router(Event(Fact(SITE, T0, "g", gauge))) == []
    # Revisions: only the storm, whose deadline a late reading can move (monitor/README.md,
    # "Architecture").
    assert router(ev("trap_fill", "f", T0, revision=1, trap="trap-1")) == []
    assert router(notice("inspection_overdue", "o", T0, revision=1)) == []
    assert router(storm(revision=2)) == ["qp", "officer"]


def test_tags_no_target_receives_are_dropped_and_named() -> None:
    router = Router.build({}, {}, available={"qp"})
    assert router(storm()) == ["qp"]
    gaps = router.gaps([SITE])
    assert "storm_qualified" in gaps["officer"] and "inspection_overdue" in gaps["officer"]
    assert "sensor_stale" in gaps["ops"]
    assert "qp" not in gaps
    assert Router.build({}, {}, available=None).gaps([SITE]) == {}  # a catch-all target


def test_route_names_are_checked_in_the_configuration() -> None:
    doc = {"notify": {"routes": {"storm_qualifed": ["qp"], "trap_fill": ["Not A Tag"]}},
           "sites": [{**SITE_DOC, "notify": {"routes": {"clock_closed.maybe": []}}}]}
    with pytest.raises(ConfigError) as info:
        parse_config(doc, env={})
    lines = info.value.lines
    assert any(line.startswith("notify.routes.storm_qualifed: unknown event type "
                               "'storm_qualifed' (one of: storm_started, ") for line in lines)
    assert any(line.startswith("notify.routes.trap_fill.0: ") for line in lines)
    assert any(line.startswith("sites.branch-meadows.notify.routes.clock_closed.maybe: unknown "
                               "event type")
               for line in lines)
    with pytest.raises(ConfigError) as info:
        parse_config({"notify": {"retry_initial_s": 60, "retry_max_s": 30},
                      "sites": [SITE_DOC]}, env={})
    assert info.value.lines == ["notify.retry_max_s: must be at least retry_initial_s (60)"]


# --------------------------------------------------------------------------- texts


def test_the_command_a_storm_alert_prints_works_as_printed(tmp_path: Path,
                                                           http: HttpReceiver) -> None:
    """The alert's "To do" records the inspection when typed as printed, from another
    directory: it names the program and the configuration file the daemon runs with, and
    the site's one qualified professional."""
    path = tmp_path / "stormwatch.yaml"
    path.write_text(json.dumps({
        "state_dir": str(tmp_path / "state"), "sites": [SITE_DOC],
        "notify": {"targets": [{"url": json_url(http), "tags": ["qp"]}]},
        "qualified_professionals": [{"name": "J. Rivera", "credential": "CPESC 12345"}]}))
    config = load_config(path, env={})
    router = build_router(config)
    with Store.in_dir(config.state_dir) as store:
        store.events.record([storm()], 1, recorded_ms=T0, routes=router)
        worker = NotifyWorker(config, FakeClock(T0 + MIN), rand=lambda: 0.0,
                              config_path=path)
        assert worker.drain(store) == 1
    (post,) = http.posts
    found = re.search(r"record it in the site log book \((.+?)\)\.\n", post.body["message"])
    assert found is not None, post.body["message"]
    command = shlex.split(found.group(1))
    assert command[1:] == ["inspect", "--config", str(path.resolve()), "--site", SITE,
                           "--inspector", "J. Rivera", "--kind", "storm"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run(command, capture_output=True, text=True, cwd=elsewhere, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Inspection by J. Rivera at "), done.stdout




def test_storm_alert_text_exactly() -> None:
    m = render(alert(storm(), grafana_url="https://grafana.example.org/d/sw?orgId=1",
                     inspect_command="stormwatch inspect --config /etc/stormwatch/sw.yaml"))
    assert m.title == "Branch Meadows Subdivision: storm 0.50 in, inspect by Tue Dec 1, 9:15 AM EST"
    assert m.notify_type == "warning"
    assert m.text == (
        "A storm event qualified: a storm inspection is due within 24 hours.\n"
        "\n"
        "Site: Branch Meadows Subdivision (branch-meadows), 1 Meadow Lane, Village of the "
        "Branch, NY\n"
        "Rain: 0.50 in this storm, 0.50 in within 24 hours (threshold 0.50 in), gauge rg1\n"
        "Qualified at: Mon Nov 30, 2026 9:15 AM EST\n"
        "Inspection due: Tue Dec 1, 2026 9:15 AM EST (23.2 hours left)\n"
        "\n"
        "Chapter 134 § 134-9A(2) requires: \"...the applicant shall have a qualified "
        "professional conduct site inspections and document the effectiveness of all erosion "
        "and sediment control practices every seven days and within 24 hours of any storm "
        "event producing 0.5 inch of precipitation or more. Inspection reports shall be "
        "maintained in a site log book.\"\n"
        "To do: have the qualified professional inspect the erosion and sediment controls and "
        "record it in the site log book (stormwatch inspect --config /etc/stormwatch/sw.yaml "
        "--site branch-meadows --inspector NAME --kind storm).\n"
        "\n"
        "Dashboard: https://grafana.example.org/d/sw?orgId=1&var-site=branch-meadows"
        f"&from={T0 - 24 * H}&to={T0 + 45 * MIN + H}\n"
        "Alert id: storm-1:0\n")
    assert "  \n**Inspection due:** Tue Dec 1, 2026 9:15 AM EST (23.2 hours left)\n" in m.markdown
    assert f"<https://grafana.example.org/d/sw?orgId=1&var-site=branch-meadows&from={T0 - 24 * H}" \
        in m.markdown
    assert "**Alert id:** storm-1:0" in m.markdown


def test_local_time_follows_the_site_zone_and_daylight_saving() -> None:
    assert local_time(parse_iso("2026-07-01T13:00:00Z"), NY) == "Wed Jul 1, 2026 9:00 AM EDT"
    assert local_time(parse_iso("2026-11-30T17:05:00Z"), NY) == "Mon Nov 30, 2026 12:05 PM EST"
    assert local_time(parse_iso("2026-11-30T05:00:00Z"), NY, year=False) == \
        "Mon Nov 30, 12:00 AM EST"
    assert local_time(T0, ZoneInfo("UTC")) == "Mon Nov 30, 2026 2:15 PM UTC"


def test_hours_left_are_those_at_sending_time() -> None:
    reminder = notice("inspection_due_soon", "r", T0 + 18 * H)
    early = render(alert(reminder, now=T0 + 18 * H))
    late = render(alert(reminder, now=T0 + 21 * H + 30 * MIN))
    assert "(6.0 hours left)" in early.text and early.title.startswith(
        "Branch Meadows Subdivision: storm inspection due in 6.0 h, by Tue Dec 1, 9:15 AM EST")
    assert "(2.5 hours left)" in late.text and "due in 2.5 h" in late.title


def test_amounts_carry_their_units() -> None:
    cleanout = render(alert(ev("trap_cleanout_required", "t", T0, trap="trap-1",
                               fill_fraction=0.5305, depth_in=33.0, threshold=0.5)))
    assert cleanout.title == ("Branch Meadows Subdivision: clean out sediment trap trap-1: "
                              "53.0% of design capacity filled")
    assert "Fill: 53.0% of design capacity (sediment 33.00 in deep)" in cleanout.text
    assert "§ 134-9A(1)" in cleanout.text and "reduced by 50%" in cleanout.text
    turbidity = render(alert(ev("turbidity_contrast", "c", T0, pair="outfall-1",
                                state="exceeded", started_at=iso(T0 - 10 * MIN),
                                upstream_ntu=10.0, downstream_ntu=40.0, delta_ntu=30.0,
                                limit_ntu=5.0)))
    assert turbidity.title == ("Branch Meadows Subdivision: turbidity +30.0 NTU over "
                               "background at outfall-1")
    for line in ("Downstream: 40.0 NTU", "Upstream (background): 10.0 NTU",
                 "Difference: +30.0 NTU (limit 5.0 NTU over background)",
                 "Since: Mon Nov 30, 2026 9:05 AM EST", "§ 134-8C"):
        assert line in turbidity.text
    overdue = render(alert(notice("inspection_overdue", "o", T0, due=T0), now=T0 + 4 * H))
    assert overdue.notify_type == "failure"
    assert overdue.title == ("Branch Meadows Subdivision: OVERDUE storm inspection (was due "
                             "Mon Nov 30, 9:15 AM EST)")
    assert "Overdue by: 4.0 hours" in overdue.text
    assert "Penalty (§ 134-12D): a fine of up to $350" in overdue.text


def test_absolute_turbidity_alert_says_there_was_no_background() -> None:
    def absolute(state: str, downstream_ntu: float) -> Any:
        return render(alert(ev("turbidity_contrast", "c", T0, pair="outfall-1", state=state,
                               basis="absolute", started_at=iso(T0 - 10 * MIN),
                               upstream_ntu=None, delta_ntu=None, upstream_at=None,
                               downstream_ntu=downstream_ntu, limit_ntu=250.0)))

    m = absolute("exceeded", 800.0)
    assert m.title == ("Branch Meadows Subdivision: turbidity 800.0 NTU at outfall-1, no "
                       "background reading")
    assert m.notify_type == "warning"
    assert m.text.startswith(
        "No background (upstream) reading was available for outfall-1, and the turbidity "
        "below the discharge has stayed above the absolute limit of 250.0 NTU: a visible "
        "contrast in the receiving water is likely.\n")
    for line in ("Downstream: 800.0 NTU", "Upstream (background): no reading available",
                 "Limit: 250.0 NTU (absolute, used while no background reading is available)",
                 "Since: Mon Nov 30, 2026 9:05 AM EST",
                 "Chapter 134 § 134-8C: \"Any land development activity shall not cause an "
                 "increase in turbidity"):
        assert line in m.text
    for absent in ("? NTU", "Difference", "over background"):
        assert absent not in m.text and absent not in m.title
    below = absolute("cleared", 20.0)
    assert below.title == ("Branch Meadows Subdivision: turbidity at outfall-1 back below the "
                           "absolute limit")
    assert below.notify_type == "success"
    assert "Episode: Mon Nov 30, 2026 9:05 AM EST to" in below.text
    assert "§ 134-8C" in below.text and "? NTU" not in below.text
    # Ended because a background reading came back (still above the absolute limit).
    back = absolute("cleared", 800.0)
    assert back.title == ("Branch Meadows Subdivision: turbidity at outfall-1: background "
                          "reading available again")
    assert "judged against it from now on" in back.text
    assert "Upstream (background): reporting again" in back.text
    assert "? NTU" not in back.text


def test_every_event_type_renders_with_site_and_alert_id() -> None:
    for kind in EVENT_FIELDS:
        m = render(alert(ev(kind, "x", T0)))
        assert m.title.startswith("Branch Meadows Subdivision: "), kind
        assert "Alert id: x:0" in m.text and "1 Meadow Lane" in m.text, kind


def test_markdown_escapes_names_but_not_text() -> None:
    site = {**SITE_DOC, "name": "Lot_5 *North*"}
    config = parse_config({"sites": [site]}, env={})
    m = render(Alert("a:0", storm(), T0, config.sites[0]))
    assert "Lot\\_5 \\*North\\*" in m.markdown
    assert "Lot_5 *North*" in m.text and m.title.startswith("Lot_5 *North*: ")
    assert md_escape("a_b [c]") == "a\\_b \\[c\\]"


def test_correction_and_escalation_say_so() -> None:
    old = storm(due=T0 + 24 * H)
    new = storm(revision=1, due=T0 + 22 * H)
    m = render(alert(new, previous=old))
    assert m.title.startswith("[CORRECTION] Branch Meadows Subdivision: ")
    assert ("Correction: the deadline moved EARLIER, from Tue Dec 1, 2026 9:15 AM EST to "
            "Tue Dec 1, 2026 7:15 AM EST") in m.text
    esc = render(alert(storm(), escalation=Escalation("qp", 3, T0, "qp-mail: refused")))
    assert esc.title.startswith("[ESCALATED] ") and esc.notify_type == "failure"
    assert ("Escalated: stormwatch could not deliver this alert to 'qp' (3 attempts in "
            "45 minutes). Last error: qp-mail: refused.") in esc.text
    assert "Alert id: storm-1:0" in esc.text


def test_backoff_is_exponential_capped_and_jittered() -> None:
    assert [backoff_s(n, 30, 900, 0.2, lambda: 0.0) for n in (1, 2, 3, 6, 7, 50)] == \
        [30, 60, 120, 900, 900, 900]
    assert backoff_s(3, 30, 900, 0.2, lambda: 1.0) == pytest.approx(96.0)


# --------------------------------------------------------------------------- delivery


def test_one_target_on_two_tags_gets_each_alert_once(
        tmp_path: Path, http: HttpReceiver, harnesses: list[Harness]) -> None:
    config = make_config(tmp_path, [{"url": json_url(http), "tags": ["qp", "officer"]}])
    h = harness(harnesses, config)
    h.record(storm())
    h.drain()
    assert len(http.posts) == 1
    post = http.posts[0].body
    assert post["title"].startswith("Branch Meadows Subdivision: storm 0.50 in")
    assert post["type"] == "warning" and "Alert id: storm-1:0" in post["message"]
    rows = h.rows()
    assert {k: (r.status, r.attempts) for k, r in rows.items()} == {
        ("storm-1:0", "qp"): ("delivered", 1), ("storm-1:0", "officer"): ("delivered", 1)}
    h.drain()
    assert len(http.posts) == 1


def test_retries_back_off_and_an_urgent_alert_escalates(
        tmp_path: Path, http: HttpReceiver, harnesses: list[Harness]) -> None:
    config = make_config(
        tmp_path, [{"url": f"json://127.0.0.1:{closed_port()}/qp", "tags": ["qp"],
                    "name": "qp-hook"},
                   {"url": json_url(http, "officer"), "tags": ["officer"]}],
        retry_initial_s=10, retry_max_s=40, escalate_after_attempts=3)
    h = harness(harnesses, config)
    h.record(storm(), ev("trap_fill", "fill-1", T0, trap="trap-1", fill_fraction=0.41,
                         depth_in=20.0, threshold=0.4))
    schedule = []
    for _ in range(5):
        h.drain()
        qp = h.rows()[("storm-1:0", "qp")]
        schedule.append((qp.attempts, qp.next_attempt_ms - h.clock.ms))
        h.clock.ms = qp.next_attempt_ms
    assert schedule == [(1, 10_000), (2, 20_000), (3, 40_000), (4, 40_000), (5, 40_000)]
    qp = h.rows()[("storm-1:0", "qp")]
    assert qp.status == "pending"
    assert (qp.last_error or "").startswith("qp-hook: A Connection error occurred sending JSON")
    titles = [p.body["title"] for p in http.posts]
    # The officer's own copy at once; the escalation after the third attempt, once.
    assert titles == ["Branch Meadows Subdivision: storm 0.50 in, inspect by Tue Dec 1, "
                      "9:15 AM EST",
                      "[ESCALATED] Branch Meadows Subdivision: storm 0.50 in, inspect by "
                      "Tue Dec 1, 9:15 AM EST"]
    escalation = http.posts[1].body["message"]
    assert "could not deliver this alert to 'qp' (3 attempts in 30 seconds)" in escalation
    assert escalation.endswith("\nAlert id: storm-1:0")
    assert h.rows()[("storm-1:0/esc-qp", "officer")].status == "delivered"
    # The informational trap_fill to the same unreachable tag is retried, never escalated.
    assert h.rows()[("fill-1:0", "qp")].attempts == 5
    assert not any(a.startswith("fill-1") and t == "officer" for a, t in h.rows())


def test_escalation_also_after_minutes(tmp_path: Path, http: HttpReceiver,
                                       harnesses: list[Harness]) -> None:
    config = make_config(
        tmp_path, [{"url": f"json://127.0.0.1:{closed_port()}/qp", "tags": ["qp"]},
                   {"url": json_url(http), "tags": ["officer"]}],
        routes={"storm_qualified": ["qp"]}, retry_initial_s=600, retry_max_s=600,
        escalate_after_attempts=100, escalate_after_minutes=15)
    h = harness(harnesses, config)
    h.record(storm())
    h.drain()
    assert http.posts == []
    h.clock.advance(16 * MIN)
    h.drain()
    assert [p.body["title"][:12] for p in http.posts] == ["[ESCALATED] "]


def test_a_partial_failure_resends_only_to_the_target_that_failed(
        tmp_path: Path, http: HttpReceiver, http2: HttpReceiver,
        harnesses: list[Harness]) -> None:
    config = make_config(tmp_path, [{"url": json_url(http), "tags": ["qp"]},
                                    {"url": json_url(http2), "tags": ["qp"]}],
                         routes={"storm_qualified": ["qp"]}, retry_initial_s=1)
    h = harness(harnesses, config)
    http2.fail_next = 1
    h.record(storm())
    h.drain()
    assert (len(http.posts), len(http2.posts)) == (1, 0)
    assert h.rows()[("storm-1:0", "qp")].status == "pending"
    h.clock.advance(2_000)
    h.drain()
    assert (len(http.posts), len(http2.posts)) == (1, 1)
    row = h.rows()[("storm-1:0", "qp")]
    assert (row.status, row.attempts) == ("delivered", 2)
    # No escalation: the tag was reached on the first attempt.
    assert ("storm-1:0/esc-qp", "officer") not in h.rows()


def test_giving_up_is_loud(tmp_path: Path, harnesses: list[Harness],
                           caplog: pytest.LogCaptureFixture) -> None:
    config = make_config(tmp_path, [{"url": f"json://127.0.0.1:{closed_port()}/", "tags": ["qp"]}],
                         give_up_after_hours=1, retry_initial_s=600, escalate_to=None)
    h = harness(harnesses, config)
    h.record(ev("trap_fill", "fill-1", T0, trap="trap-1", fill_fraction=0.41, depth_in=20.0))
    h.drain()
    h.clock.advance(2 * H)
    with caplog.at_level(logging.ERROR, "stormwatch.notify"):
        h.drain()
    assert h.rows()[("fill-1:0", "qp")].status == "failed"
    assert "ALERT NOT DELIVERED: fill-1:0 (trap_fill, branch-meadows) to qp, gave up after " \
        "2 attempt(s)" in caplog.text


# --------------------------------------------------------------------------- noise rules


def test_catch_up_sends_only_the_newest_notice_per_clock(
        tmp_path: Path, http: HttpReceiver, harnesses: list[Harness]) -> None:
    config = make_config(tmp_path, [{"url": json_url(http), "tags": ["qp", "officer"]}])
    due = T0 + 24 * H
    h = harness(harnesses, config, now=due + 9 * H)  # back after a day away
    h.record(notice("inspection_due_soon", "soon-6", due - 6 * H),
             notice("inspection_due_soon", "soon-1", due - H, hours_left=1.0),
             notice("inspection_overdue", "late-0", due),
             notice("inspection_overdue", "late-1", due + 4 * H, hours_late=4.0),
             notice("inspection_overdue", "late-2", due + 8 * H, hours_late=8.0))
    h.drain()
    assert [p.body["title"] for p in http.posts] == [
        "Branch Meadows Subdivision: OVERDUE storm inspection (was due Tue Dec 1, 9:15 AM EST)"]
    assert "Overdue by: 9.0 hours" in http.posts[0].body["message"]
    withheld = {a: r.withheld for (a, t), r in h.rows().items() if t == "qp"}
    assert withheld["late-2:0"] is None
    assert withheld["late-0:0"] == ("superseded by alert late-2:0, a later notice for clock "
                                    "storm-e1")
    assert (withheld["soon-6:0"] or "").startswith("superseded by alert late-2:0")
    assert all(r.status == "delivered" for r in h.rows().values())


def test_a_recorded_inspection_silences_the_clock_notices(
        tmp_path: Path, http: HttpReceiver, harnesses: list[Harness]) -> None:
    config = make_config(tmp_path, [{"url": json_url(http), "tags": ["qp", "officer"]}])
    due = T0 + 24 * H
    h = harness(harnesses, config, now=due + 5 * H)
    h.record(notice("inspection_overdue", "late-0", due),
             ev("clock_closed", "closed", due + 2 * H, clock_id="storm-e1", clock="storm",
                due=iso(due), inspected_at=iso(due + 2 * H), outcome="late"))
    h.drain()
    assert [p.body["title"] for p in http.posts] == [
        "Branch Meadows Subdivision: storm inspection recorded LATE (2.0 hours after the "
        "deadline)"]
    assert h.rows()[("late-0:0", "qp")].withheld == \
        f"clock closed: inspection recorded at {iso(due + 2 * H)}"


def cleanout(id_: str, at: int, repeat: int, trap: str = "trap-1") -> Event:
    return ev("trap_cleanout_required", id_, at, trap=trap, fill_fraction=0.6, depth_in=36.0,
              repeat=repeat)


def test_a_catch_up_sends_only_the_newest_clean_out_demand_per_trap(
        tmp_path: Path, http: HttpReceiver, harnesses: list[Harness]) -> None:
    config = make_config(tmp_path, [{"url": json_url(http), "tags": ["qp", "officer"]}])
    h = harness(harnesses, config, now=T0 + 49 * H)  # back after two days away
    h.record(cleanout("dem-1", T0, 1), cleanout("dem-2", T0 + 24 * H, 2),
             cleanout("dem-3", T0 + 48 * H, 3), cleanout("other", T0, 5, trap="trap-2"))
    h.drain()
    newest = ("Branch Meadows Subdivision: clean out sediment trap trap-1: still at 60.0% of "
              "design capacity (repeat 3)")
    assert sorted(p.body["title"] for p in http.posts) == sorted([
        newest, "Branch Meadows Subdivision: clean out sediment trap trap-2: still at 60.0% of "
                "design capacity (repeat 5)"])
    (sent,) = [p.body["message"] for p in http.posts if p.body["title"] == newest]
    # Three repeats of 24 hours (trap-1's default) before Wed Dec 2, 9:15 AM EST.
    assert ("Sediment trap trap-1 is still at 60.0% of its design capacity: clean-out has "
            "been demanded since Sun Nov 29, 2026 9:15 AM EST or earlier (repeat 3), and the "
            "sediment must be removed.") in sent
    assert "Alert id: dem-3:0" in sent
    rows = h.rows()
    assert {k for k in rows} == {("dem-1:0", "qp"), ("dem-2:0", "qp"), ("dem-3:0", "qp"),
                                 ("other:0", "qp")}
    for older in ("dem-1:0", "dem-2:0"):
        assert rows[(older, "qp")].withheld == \
            "superseded by alert dem-3:0, a later clean-out demand for trap trap-1"
    assert rows[("dem-3:0", "qp")].withheld is None
    assert rows[("other:0", "qp")].withheld is None  # another trap's demand stands
    assert all(r.status == "delivered" for r in rows.values())


def test_a_clean_out_demand_queued_before_the_trap_was_cleaned_is_withheld(
        tmp_path: Path, http: HttpReceiver, harnesses: list[Harness]) -> None:
    config = make_config(tmp_path, [{"url": json_url(http), "tags": ["qp", "officer"]}])
    h = harness(harnesses, config, now=T0 + 30 * H)
    # Not a cleaning of this demand: one before it, one of another trap, one retracted.
    retracted = ev("trap_cleaned", "clean-r", T0 + 2 * H, trap="trap-1")
    h.record(ev("trap_cleaned", "clean-0", T0 - H, trap="trap-1"),
             ev("trap_cleaned", "clean-x", T0 + H, trap="trap-2"),
             retracted, changed(retracted, revision=1, retracted=True),
             cleanout("dem-1", T0, 1))
    h.drain()
    assert [p.body["title"] for p in http.posts] == [
        "Branch Meadows Subdivision: clean out sediment trap trap-1: still at 60.0% of design "
        "capacity (repeat 1)"]
    assert h.rows()[("dem-1:0", "qp")].withheld is None

    # The next repeat is still queued when the trap is cleaned: it is moot.
    h.record(cleanout("dem-2", T0 + 24 * H, 2),
             ev("trap_cleaned", "clean-1", T0 + 26 * H, trap="trap-1", fill_before=0.6,
                fill_after=0.1))
    h.drain()
    assert len(http.posts) == 1
    row = h.rows()[("dem-2:0", "qp")]
    assert row.withheld == f"trap trap-1 cleaned at {iso(T0 + 26 * H)}: the demand was met"
    assert row.status == "delivered"
    # trap_cleaned goes to the log book only: no row of its own.
    assert not [k for k in h.rows() if k[0].startswith("clean-")]


def test_revisions_alert_only_as_corrections(tmp_path: Path, http: HttpReceiver,
                                             harnesses: list[Harness]) -> None:
    config = make_config(tmp_path, [{"url": json_url(http), "tags": ["qp"]}],
                         routes={"storm_qualified": ["qp"]})
    h = harness(harnesses, config)
    h.record(storm(due=T0 + 24 * H))
    h.drain()
    h.record(storm(revision=1, due=T0 + 24 * H - 4 * MIN))     # 4 minutes: not worth it
    h.drain()
    h.record(storm(revision=2, due=T0 + 24 * H + 30 * MIN))    # later: not alerted
    h.drain()
    assert len(http.posts) == 1
    assert h.rows()[("storm-1:1", "qp")].withheld == \
        "revision 1 changes the deadline by -4 minutes; not a correction to alert"
    h.record(storm(revision=3, due=T0 + 22 * H))               # 2 hours earlier
    h.drain()
    assert len(http.posts) == 2
    assert http.posts[1].body["title"].startswith("[CORRECTION] ")
    assert ("the deadline moved EARLIER, from Tue Dec 1, 2026 9:15 AM EST to Tue Dec 1, 2026 "
            "7:15 AM EST") in http.posts[1].body["message"]
    assert "Alert id: storm-1:3" in http.posts[1].body["message"]


def test_a_revision_queued_behind_its_original_replaces_it(
        tmp_path: Path, http: HttpReceiver, harnesses: list[Harness]) -> None:
    config = make_config(tmp_path, [{"url": json_url(http), "tags": ["qp"]}],
                         routes={"storm_qualified": ["qp"]})
    h = harness(harnesses, config)
    h.record(storm(due=T0 + 24 * H))
    h.record(storm(revision=1, due=T0 + 23 * H))
    h.record(storm("storm-2"), changed(storm("storm-2"), revision=1, retracted=True))
    h.drain()
    assert [p.body["title"] for p in http.posts] == [
        "Branch Meadows Subdivision: storm 0.50 in, inspect by Tue Dec 1, 8:15 AM EST"]
    assert h.rows()[("storm-1:0", "qp")].withheld == "superseded by revision 1 (storm-1:1)"
    assert h.rows()[("storm-2:0", "qp")].withheld == \
        "retracted in revision 1: the fact no longer holds"


def test_a_deadline_that_becomes_known_is_sent(tmp_path: Path, http: HttpReceiver,
                                               harnesses: list[Harness]) -> None:
    config = make_config(tmp_path, [{"url": json_url(http), "tags": ["qp"]}],
                         routes={"storm_qualified": ["qp"]})
    h = harness(harnesses, config)
    h.record(changed(storm(), due=None))   # clock_start: event_end, still raining
    h.drain()
    h.record(storm(revision=1, due=T0 + 30 * H))
    h.drain()
    assert len(http.posts) == 2
    assert "24 hours after the rain stops" in http.posts[0].body["message"]
    assert "Update: the inspection clock has started; the deadline is Tue Dec 1, 2026 3:15 " \
        "PM EST." in http.posts[1].body["message"]


# --------------------------------------------------------------------------- targets


def test_apprise_configuration_files_with_env_secrets(
        tmp_path: Path, http: HttpReceiver) -> None:
    yaml_file = tmp_path / "apprise.yaml"
    yaml_file.write_text(
        "urls:\n"
        f"  - json://hook:${{HOOK_TOKEN}}@{http.base}/qp:\n"
        "      - tag: qp\n"
        f"  - json://{http.base}/team:\n"
        "      - tag: officer, ops\n")
    text_file = tmp_path / "apprise.txt"
    text_file.write_text(f"qp=json://{http.base}/qp\nofficer,ops=console://\n")
    for path in (yaml_file, text_file):
        config = make_config(tmp_path, [], config_file=str(path))
        targets = load_targets(config.notify, env={"HOOK_TOKEN": "tok-9876"})
        assert [sorted(t.tags) for t in targets] == [["qp"], ["officer", "ops"]], path
    config = make_config(tmp_path, [], config_file=str(yaml_file))
    (qp, _) = load_targets(config.notify, env={"HOOK_TOKEN": "tok-9876"})
    assert "tok-9876" not in qp.label
    assert qp.send(render(alert(storm()))).ok
    assert http.posts[-1].basic_auth() == ("hook", "tok-9876")
    with pytest.raises(NotifySetupError) as info:
        load_targets(config.notify, env={})
    assert info.value.lines == ["notify.config_file: environment variable HOOK_TOKEN is not set"]


def test_unusable_targets_are_configuration_errors(tmp_path: Path) -> None:
    config = make_config(tmp_path, [{"url": "nope://secret@host"}, {"url": "console://"}],
                         config_file=str(tmp_path / "missing.yaml"))
    with pytest.raises(NotifySetupError) as info:
        load_targets(config.notify)
    assert info.value.lines[0] == ("notify.targets.0.url: Apprise cannot use this nope:// URL "
                                   "(unknown scheme, or a part of it is invalid)")
    assert info.value.lines[1].startswith(f"notify.config_file: cannot read {tmp_path}")
    assert "secret" not in "\n".join(info.value.lines)


def test_console_prints_the_alert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = make_config(tmp_path, [{"url": "console://"}])
    (console,) = load_targets(config.notify)
    assert console.body_format == "text"
    assert console.send(render(alert(storm()))).ok
    out = capsys.readouterr().out
    assert "==== stormwatch alert [warning] " in out
    assert "Branch Meadows Subdivision: storm 0.50 in, inspect by Tue Dec 1, 9:15 AM EST" in out
    assert "Alert id: storm-1:0" in out


def test_mail_gets_html_with_a_readable_text_part(tmp_path: Path) -> None:
    with SmtpReceiver(login="qp", password="pw-12345") as smtp:
        config = make_config(tmp_path, [{
            "url": f"mailto://qp:pw-12345@127.0.0.1:{smtp.port}?mode=insecure"
                   "&from=stormwatch@example.org&to=qp@example.org", "tags": ["qp"]}],
            grafana_url="https://grafana.example.org/d/sw")
        (mail_target,) = load_targets(config.notify)
        assert mail_target.body_format == "markdown"
        assert mail_target.send(render(alert(storm(), grafana_url=config.notify.grafana_url)))
        (mail,) = smtp.mails
    assert mail.rcpt_tos == ["qp@example.org"] and mail.login == "qp"
    assert mail.subject == ("Branch Meadows Subdivision: storm 0.50 in, inspect by Tue Dec 1, "
                            "9:15 AM EST")
    text = " ".join(mail.text().split())
    assert "Inspection due: Tue Dec 1, 2026 9:15 AM EST (23.2 hours left)" in text
    assert "https://grafana.example.org/d/sw?var-site=branch-meadows" in text
    html = mail.html()
    assert html is not None and "<strong>Inspection due:</strong>" in html


# --------------------------------------------------------------------------- secrets


def test_no_secret_reaches_a_log_line_or_an_error(
        tmp_path: Path, restore_logging: None, capsys: pytest.CaptureFixture[str]) -> None:
    secrets = {"SMTP_PASSWORD": "smtp-Pa55word", "HOOK_TOKEN": "hook-t0ken-xyz"}
    configure("text", logging.DEBUG)
    config = make_config(tmp_path, [
        {"url": f"mailto://qp:${{SMTP_PASSWORD}}@127.0.0.1:{closed_port()}?mode=insecure"
                "&from=stormwatch@example.org&to=qp@example.org", "tags": ["qp"]},
        {"url": f"json://127.0.0.1:{closed_port()}/hook?+Authorization=Bearer%20"
                "${HOOK_TOKEN}", "tags": ["officer"]}], env=secrets)
    targets = load_targets(config.notify)
    errors = [t.send(render(alert(storm()))).error or "" for t in targets]
    log = logging.getLogger("stormwatch.test")
    log.warning("a careless line: %s and %s", config.notify.targets[0].url,
                config.notify.targets[1].url)
    try:
        raise RuntimeError(f"failed with {secrets['HOOK_TOKEN']}")
    except RuntimeError:
        log.exception("and a traceback")
    err = capsys.readouterr().err
    labels = " ".join(t.label for t in targets)
    assert "a careless line" in err and "and a traceback" in err and errors[0]
    for value in secrets.values():
        for where in (err, labels, *errors, mask(config.notify.targets[1].url)):
            assert value not in where
    assert re.search(r"mailto://qp:\*\*\*@127\.0\.0\.1", err)


def test_mask_in_json_logs(restore_logging: None) -> None:
    stream = io.StringIO()
    configure("json", logging.INFO)
    logging.getLogger().handlers[0].stream = stream  # type: ignore[attr-defined]
    make_targets = load_targets(parse_config({"notify": {"targets": [
        {"url": "json://127.0.0.1:9/?+X-Api-Key=k3y-abcdef"}]}, "sites": [SITE_DOC]},
        env={}).notify)
    assert make_targets
    try:
        raise ValueError("bad k3y-abcdef")
    except ValueError:
        logging.getLogger("stormwatch.test").exception("boom")
    assert "k3y-abcdef" not in stream.getvalue() and "boom" in stream.getvalue()


# --------------------------------------------------------------------------- store additions


def test_store_receipts_withholding_and_escalation_rows(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        store.events.record([storm()], 1, recorded_ms=T0, routes=lambda e: ["qp", "officer"])
        qp, officer = (r.id for r in store.outbox.due(T0))
        assert [r.created_ms for r in store.outbox.due(T0)] == [T0, T0]
        store.outbox.receipt(qp, "mail-1", now_ms=T0 + 1)
        store.outbox.receipt(qp, "mail-1", now_ms=T0 + 2)  # a repeat is harmless
        assert store.outbox.receipts("storm-1:0") == {"mail-1"}
        assert store.outbox.receipts("other:0") == set()
        assert store.outbox.escalate(qp, "officer", now_ms=T0 + 5) == "storm-1:0/esc-qp"
        assert store.outbox.escalate(qp, "officer", now_ms=T0 + 6) is None
        esc = [r for r in store.outbox.due(T0 + 5) if r.alert_id == "storm-1:0/esc-qp"]
        assert [(r.tag, r.created_ms, r.event.id) for r in esc] == [
            ("officer", T0 + 5, "storm-1")]
        store.outbox.withhold(officer, "superseded", now_ms=T0 + 7)
        with pytest.raises(Exception, match="not pending"):
            store.outbox.withhold(officer, "again", now_ms=T0 + 8)
        rows = {r.id: r for r in store.outbox.rows()}
        assert (rows[officer].status, rows[officer].withheld,
                rows[officer].delivered_ms) == ("delivered", "superseded", None)
        alerts = store.outbox.alerts(event_id="storm-1", tag="officer")
        assert [(a.alert_id, a.revision, a.withheld) for a in alerts] == [
            ("storm-1:0", 0, "superseded"), ("storm-1:0/esc-qp", 0, None)]
        assert store.events.latest("storm-1") == storm()
        assert store.events.latest("nope") is None


def test_a_version_1_database_gains_the_delivery_columns(tmp_path: Path) -> None:
    import sqlite3

    from monitor.store.schema import MIGRATIONS

    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value NOT NULL) WITHOUT ROWID")
    for statement in MIGRATIONS[0]:
        con.execute(statement)
    con.execute("INSERT INTO meta VALUES ('schema_version', 1)")
    body = json.dumps(ev("trap_fill", "e", T0).to_json())
    con.execute("INSERT INTO events (id, revision, type, site, at, at_ms, body, recorded_ms)"
                " VALUES ('e', 0, 'trap_fill', ?, ?, ?, ?, ?)", (SITE, iso(T0), T0, body, T0 + 9))
    con.execute("INSERT INTO outbox (event_seq, alert_id, tag, next_attempt_ms)"
                " VALUES (1, 'e:0', 'qp', ?)", (T0,))
    con.commit()
    con.close()
    with Store(db) as store:
        (row,) = store.outbox.due(T0)
        assert row.created_ms == T0 + 9  # from the event: the column is new
        store.outbox.receipt(row.id, "t", now_ms=T0)
        assert store.outbox.rows()[0].withheld is None


def test_no_escalation_to_the_target_that_failed(
        tmp_path: Path, harnesses: list[Harness], caplog: pytest.LogCaptureFixture) -> None:
    config = make_config(tmp_path, [{"url": f"json://127.0.0.1:{closed_port()}/"}],
                         escalate_after_attempts=1, retry_initial_s=1)
    h = harness(harnesses, config)
    h.record(storm())
    with caplog.at_level(logging.ERROR, "stormwatch.notify"):
        h.drain()
    assert set(h.rows()) == {("storm-1:0", "qp"), ("storm-1:0", "officer")}
    assert "ALERT storm-1:0 to qp cannot be escalated: no other target receives tag " \
        "'officer'" in caplog.text


# --------------------------------------------------------------------------- more


def test_a_sensor_fault_says_what_the_sensor_read_and_what_it_means() -> None:
    sensors = [{**s, "sensor_height_in": 66} if s["id"] == "trap1-depth" else s
               for s in SITE_DOC["sensors"]]
    config = parse_config({"sites": [{**SITE_DOC, "sensors": sensors}]}, env={})
    m = render(Alert("f:0", ev("sensor_fault", "f", T0), T0 + 45 * MIN, config.sites[0]))
    assert m.title == ("Branch Meadows Subdivision: sediment sensor trap1-depth over trap trap-1"
                       " faulty: reads past the trap bottom")
    assert ("Sediment sensor trap1-depth over trap trap-1 reads 67.50 in from the sensor, "
            "mounted 66.00 in above the bottom: past the trap bottom, a depth of -1.50 in. "
            "Such readings are kept but not used") in m.text
    assert "Since: Mon Nov 30, 2026 7:00 AM EST" in m.text
    assert "Last valid depth: 20.00 in" in m.text
    assert '§ 134-9A(1) requires: "Sediment shall be removed' in m.text
    step = render(alert(ev("sensor_fault", "g", T0, reason="impossible_step", value=40.0,
                           distance_in=None)))
    assert ("jumped from 20.00 in to 40.00 in between two readings (more than 12.00 in) and "
            "did not stay there") in step.text
    assert m.notify_type == step.notify_type == "warning"


def test_a_repeat_at_a_faulty_reading_says_the_fill_is_the_last_valid_one() -> None:
    m = render(alert(ev("trap_cleanout_required", "t", T0, repeat=2, fault="beyond_bottom")))
    assert "Repeated at: Mon Nov 30, 2026 9:15 AM EST" in m.text
    assert ("Sensor: faulty (reads past the trap bottom): the fill is the last valid "
            "reading's; check the trap by eye") in m.text
    assert "Sensor: faulty" not in render(alert(ev("trap_cleanout_required", "t", T0))).text


def test_storm_forecast_says_check_controls_before_the_rain() -> None:
    m = render(alert(ev("storm_forecast", "f", T0)))
    assert m.title == "Branch Meadows Subdivision: storm forecast: 0.79 in within 24 hours"
    assert ("The forecast (NWS gridpoint OKX/33,37, issued Mon Nov 30, 2026 8:00 AM EST) puts "
            "0.79 in of rain on the site from Mon Nov 30, 2026 1:00 PM EST to Tue Dec 1, 2026 "
            "1:00 PM EST (chance of precipitation 80 %)") in m.text
    assert "Check the controls before the rain." in m.text
    assert '§ 134-9A(2) requires: "...the applicant shall have' in m.text
    assert "chance" not in render(alert(ev("storm_forecast", "f", T0, probability=None))).text


def test_gauge_disagrees_says_the_gauge_may_be_clogged_or_dead() -> None:
    m = render(alert(ev("gauge_disagrees", "g", T0)))
    assert m.title == "Branch Meadows Subdivision: rain gauge rg1 may be clogged or dead"
    assert ("The gauge may be clogged or dead: the station KHPN saw 0.79 in from Sun Nov 29, "
            "2026 9:00 AM EST to Mon Nov 30, 2026 9:00 AM EST, while rain gauge rg1 saw "
            "0.08 in. It opens no clock: a station miles away is a second opinion, not the "
            "site's rain.") in m.text
    stale = render(alert(ev("gauge_disagrees", "g", T0, stale=True, gauge_in=0.0,
                            opens_clock=True, reference_unknown_hours=2))).text
    assert "saw 0.79 in (2 hours unreported, so at least that)" in stale
    assert "rain gauge rg1 was silent in that time (stale), 0.00 in reported" in stale
    assert ("weather.reference_opens_clock is set: this is a storm of the site, and its "
            "storm inspection clock is open (due 24 hours after the station reached the "
            "threshold).") in stale


def test_a_storm_the_reference_opened_says_so() -> None:
    m = render(alert(ev("storm_qualified", "q", T0, source="reference", reference="KHPN",
                        reference_in=0.79, total_in=0.79, max_24h_in=0.79)))
    assert ("Rain: 0.79 in within 24 hours at the reference station KHPN (threshold 0.50 in), "
            "while gauge rg1 was silent or saw under a quarter of it") in m.text
    assert "a storm inspection is due within 24 hours" in m.text


def test_turbidity_unmonitored_says_why_what_is_still_checked_and_what_to_do() -> None:
    # Unknown since 7:15 AM EST, said at 9:15 AM (T0): 2.0 hours.
    m = render(alert(ev("turbidity_unmonitored", "u", T0, since="2026-11-30T12:15:00Z")))
    assert m.title == ("Branch Meadows Subdivision: turbidity at outfall-1 not monitored: "
                       "§ 134-8C cannot be checked")
    assert m.notify_type == "warning"
    assert ("For 2.0 hours the turbidity contrast at outfall-1 has been unknown: no usable "
            "background reading from the upstream probe tb-up (silent, too old, or at its "
            "full scale). Whether the site causes a visible contrast with natural conditions "
            "cannot be checked: a person must look at the water.") in m.text
    # The absolute rule still watches the downstream level: partly monitored, said so.
    assert ("Still checked: only the downstream level: above 250 NTU it is still alerted "
            "(absolute limit); an increase over natural conditions below that goes unseen"
            ) in m.text
    assert "Unknown since: Mon Nov 30, 2026 7:15 AM EST" in m.text
    assert '§ 134-8C: "Any land development activity' in m.text
    assert "To do: get the upstream probe reporting" in m.text
    silent = render(alert(ev("turbidity_unmonitored", "u", T0, reason="downstream_stale",
                             absolute_ntu=None)))
    assert "no readings from the downstream probe tb-down" in silent.text
    assert "Still checked: nothing of the pair" in silent.text
    assert "To do: check the downstream probe and its node" in silent.text
    pegged = render(alert(ev("turbidity_unmonitored", "u", T0, reason="downstream_pegged",
                             absolute_ntu=None)))
    assert "the downstream probe tb-down at its full scale" in pegged.text
    assert "Still checked: a contrast that shows even at full scale is still alerted" in (
        pegged.text)


def test_turbidity_monitored_says_the_duty_is_checked_again() -> None:
    # Unknown 7:14 AM to 11:40 AM EST (the sample body): 4.4 hours.
    m = render(alert(ev("turbidity_monitored", "m", T0)))
    assert m.title == "Branch Meadows Subdivision: turbidity at outfall-1 monitored again"
    assert m.notify_type == "success"
    assert ("The turbidity contrast at outfall-1 is known again from Mon Nov 30, 2026 11:40 AM "
            "EST: § 134-8C is checked again") in m.text
    assert "It had been unknown since Mon Nov 30, 2026 7:14 AM EST (4.4 hours)" in m.text


def test_probes_suspect_says_why_and_quotes_134_8c() -> None:
    m = render(alert(ev("probes_suspect", "p", T0)))
    assert m.title == ("Branch Meadows Subdivision: turbidity probes of outfall-1 suspect: "
                       "upstream above downstream for 6 hours")
    assert ("For 6 hours the upstream (background) probe tb-up has read more than 10.0 NTU "
            "above the downstream probe tb-down.") in m.text
    assert "Upstream (background): 30.0 NTU\nDownstream: 10.0 NTU" in m.text
    assert '§ 134-8C: "Any land development activity' in m.text

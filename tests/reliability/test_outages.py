"""Reliability scenarios: the real daemon through the outages of a season.

Each test runs ``stormwatch run`` as a child process against real services
(Mosquitto, InfluxDB 1.x, an aiosmtpd mail server, an HTTP hook), breaks one
thing in the middle of the traffic, mends it, and then asserts *counts*:

* readings published (acknowledged to the publisher at QoS 1) = journal rows,
  each reading once (``scenarios.assert_journaled_once``);
* journal rows = points in InfluxDB, counted by InfluxQL, where there is an export;
* alerts expected = alerts received, each once (by the alert id every message
  ends with).

A count can only be final once nothing more is on its way, so each "nothing
twice" assertion comes after a positive condition the daemon reports: the
journal holds every published reading, the outbox has no pending (or
deferred) row, the export cursor reached the journal's end, the daemon
stopped cleanly (SIGTERM drains). The counts go into ``counts`` and are
printed in the run's summary (``conftest.py``).

Timestamps: readings less than an hour old are live (their alerts go out at
once); older ones are a backfill, whose log book and alert rows the daemon
holds back until the backlog has been quiet for 10 s (README, "Backfill").
The scenarios use live storms where an alert must race a failure, and old
readings where the volume matters.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MakeMosquitto
from tests.support import scenarios
from tests.support.daemonkit import (
    Background,
    Daemons,
    counter_storm,
    events_of,
    journal_count,
    reading_topic,
    ticked_after_input,
    wait_until,
    write_config,
)
from tests.support.diskfull import Readings, fill
from tests.support.influxd import Influxd
from tests.support.receivers import HttpReceiver, SmtpReceiver
from tests.support.scenarios import CountingPublisher, Message, ScenarioCounts

pytest_plugins = ("tests.support.conftest_influx",)
pytestmark = pytest.mark.integration

#: ``tests.support.conftest_influx.MakeInfluxd`` (not imported: pytest loads that module as a
#: plugin, and imported first it could not rewrite its asserts).
MakeInfluxd = Callable[..., Influxd]


def _now_s() -> int:
    return int(time.time()) // 60 * 60


def live_site(start_s: int, steps: int, every_s: int, storm: range) -> list[Message]:
    """The four sensors of the test site every ``every_s`` seconds: the gauge's counter
    one tip (0.01 in) up at each step of ``storm`` (so it qualifies at its 50th step),
    a quiet turbidity pair (1 NTU over background) and a steady sediment depth."""
    out: list[Message] = []
    tips = 0
    for k in range(steps):
        t = start_s + k * every_s
        if k in storm:
            tips += 1
        out += [(reading_topic("rg1"), {"ts": t, "tips_total": tips}),
                (reading_topic("tb-up"), {"ts": t, "ntu": 10.0}),
                (reading_topic("tb-down"), {"ts": t, "ntu": 11.0}),
                (reading_topic("trap1-depth"), {"ts": t, "depth_in": 10.0})]
    return out


def hook_alert_ids(http: HttpReceiver) -> list[str]:
    return [scenarios.alert_id_in(p.body["message"]) for p in http.posts]


def applied_and_settled(cfg: Path, alerts: int) -> bool:
    """The engine has applied (and ticked past) every journaled reading, and the
    outbox holds at least ``alerts`` rows, none pending or deferred."""
    return ticked_after_input(cfg) and scenarios.outbox_settled(cfg, alerts)


# --------------------------------------------------------------------------- 1


def test_sigkill_during_storm(tmp_path: Path, make_mosquitto: MakeMosquitto,
                              daemons: Daemons, http: HttpReceiver,
                              counts: ScenarioCounts) -> None:
    """SIGKILL of the daemon in the middle of a storm's burst of readings, after the
    storm has qualified and its alert has gone out.

    Proves the journal-before-acknowledge contract (monitor/README.md, "Architecture") and event
    identity across a crash: the readings the daemon had not committed were
    never acknowledged, so the broker delivers them to the next start (no
    loss), those it had committed are recognised when delivered again (no
    duplicate row), and the restarted engine, replaying the journal from its
    snapshot, re-derives ``storm_qualified`` without alerting it a second time.
    The kill comes after the outbox recorded the delivery: the one window where
    a repeat is allowed (killed between a send and its receipt) is left out on
    purpose, as the README says.
    """
    broker = make_mosquitto()
    cfg = write_config(tmp_path, broker.port,
                       sections=scenarios.notify_section(http_base=http.base))
    daemon = daemons.start(cfg)

    # 48 minutes of readings every 4 s ending now: live, so the alert goes out at once.
    # The storm tips at every step from step 100: the 50th tip (0.50 in) is step 149.
    messages = live_site(_now_s() - 50 * 60, 720, 4, storm=range(100, 400))
    counts.published = len(messages)
    counts.alerts_expected = 1
    pub = CountingPublisher(broker.port)
    sender = Background(lambda: pub.send_paced(messages, chunk=100, pause_s=0.1))
    sender.start()
    # Only the storm is routed to the officer: the first delivered row is its alert.
    wait_until(lambda: scenarios.sent_alert_ids(cfg, "officer"), 60,
               "the storm alert delivered and recorded", interval_s=0.02)
    assert len(http.posts) == 1
    daemon.kill()
    killed_at = journal_count(cfg)
    assert killed_at < len(messages), "the kill should come in the middle of the burst"
    sender.join_checked()
    daemon.start()
    wait_until(lambda: journal_count(cfg) == len(messages), 60, "every reading journaled")
    wait_until(lambda: applied_and_settled(cfg, 1), 30, "the engine caught up, the outbox settled")
    assert daemon.stop() == 0
    pub.close()

    assert pub.acked == len(messages)
    counts.journaled = scenarios.assert_journaled_once(cfg, messages)
    (storm,) = events_of(cfg, "storm_qualified")
    # Derived again by the replay after the restart, recognised as recorded: one revision.
    assert scenarios.revisions_of(cfg, storm["id"]) == 1
    counts.alerts_received = len(http.posts)
    scenarios.assert_each_once(hook_alert_ids(http), [f"{storm['id']}:0"])
    assert scenarios.sent_alert_ids(cfg, "officer") == [f"{storm['id']}:0"]


# --------------------------------------------------------------------------- 2


def test_broker_restart_with_persistence(tmp_path: Path, make_mosquitto: MakeMosquitto,
                                         daemons: Daemons, counts: ScenarioCounts) -> None:
    """Mosquitto restarted mid-burst, and killed with readings queued in its persistence
    file: every reading it acknowledged to the publisher is journaled once.

    The broker runs with the shipped ``autosave_interval`` (deploy/mosquitto). First
    a restart (SIGTERM, as ``systemctl restart``) in the middle of a burst while
    the daemon runs: the daemon reconnects to its persistent session, the
    publisher sends its unacknowledged messages again (as a node does), and what
    the broker had queued or had in flight to the daemon comes back from the
    persistence file; redeliveries are recognised by content. Then, with the
    daemon stopped (the broker holds its session), readings are queued, the
    broker saves them at its next autosave (waited for: the file is rewritten
    after the last PUBACK), and is killed like a power cut; the daemon started
    on the restarted broker gets them all. What the README says a kill can
    still lose, the readings accepted since the last save, is excluded by that
    wait, not by luck.
    """
    autosave_s = scenarios.shipped_autosave_s()
    broker = make_mosquitto(autosave_interval_s=autosave_s)
    cfg = write_config(tmp_path, broker.port)
    daemon = daemons.start(cfg)
    messages: list[Message] = list(counter_storm(_now_s() - 48 * 3600, 2400, storm_from=600,
                                                 storm_tips=80))
    counts.published = len(messages)
    first, second = messages[:1600], messages[1600:]

    pub = CountingPublisher(broker.port)
    sender = Background(lambda: pub.send_paced(first, chunk=100, pause_s=0.05))
    sender.start()
    wait_until(lambda: journal_count(cfg) > 300, 60, "part of the burst", interval_s=0.02)
    broker.restart()  # SIGTERM: the broker saves its database, then starts on the same port
    assert journal_count(cfg) < len(first), "the restart should come in the middle of the burst"
    sender.join_checked()
    wait_until(lambda: journal_count(cfg) == len(first), 60, "the first part journaled")
    assert daemon.log_text().count("connected to") >= 2

    assert daemon.stop() == 0  # the broker keeps the daemon's session and queues for it
    assert pub.send_counted(second) == len(second)
    acked_s = pub.last_ack_s
    wait_until(lambda: broker.persistence_file.stat().st_mtime > acked_s + 0.05,
               autosave_s + 10, "the broker's autosave after the last PUBACK")
    broker.kill()  # a power cut: only the persistence file is left
    broker.start()
    daemon.start()
    wait_until(lambda: journal_count(cfg) == len(messages), 60, "every reading journaled")
    pub.close()
    assert daemon.stop() == 0

    assert pub.acked == len(messages)
    counts.journaled = scenarios.assert_journaled_once(cfg, messages)
    assert "NO session" not in daemon.log_text()


# --------------------------------------------------------------------------- 3


def test_influxdb_outage(tmp_path: Path, make_mosquitto: MakeMosquitto,
                         make_influxd: MakeInfluxd, daemons: Daemons,
                         counts: ScenarioCounts) -> None:
    """InfluxDB stopped while readings flow, started again: the exported points equal
    the journaled readings, per measurement, counted by InfluxQL on the server.

    Proves that the journal is the export's spool (README, "Nothing can be lost
    on the way"): the export cursor moves only once InfluxDB stored the points,
    so what was journaled during the outage is exported once InfluxDB answers
    again, and the points are identified by series and time, so the batch that
    failed and is written again does not double anything. Half the readings are
    published after the stop, so they flow during the outage by construction.
    """
    broker = make_mosquitto()
    server: Influxd = make_influxd()
    server.create_database("sw")
    cfg = write_config(tmp_path, broker.port,
                       sections=f"influx: {{url: '{server.url}', api: v1, database: sw}}\n")
    daemons.start(cfg)
    start = _now_s() - 30 * 3600
    messages: list[Message] = []
    for topic, body in counter_storm(start, 1200, storm_from=300, storm_tips=70):
        messages.append((topic, body))
        if (body["ts"] - start) // 60 % 2 == 0:
            messages.append((reading_topic("tb-up"), {"ts": body["ts"], "ntu": 10.0}))
            messages.append((reading_topic("tb-down"), {"ts": body["ts"] + 30, "ntu": 12.0}))
    counts.published = len(messages)
    half = len(messages) // 2

    pub = CountingPublisher(broker.port)
    sender = Background(lambda: pub.send_paced(messages[:half], chunk=100, pause_s=0.05))
    sender.start()
    wait_until(lambda: scenarios.status(cfg)["export"]["cursor"] > 0, 60, "a first export",
               interval_s=0.05)
    server.stop()
    sender.join_checked()
    pub.send_paced(messages[half:], chunk=200, pause_s=0.0)
    wait_until(lambda: journal_count(cfg) == len(messages), 60, "every reading journaled")
    down = wait_until(lambda: (s := scenarios.status(cfg))["export"]["error"] and s, 30,
                      "the export to report the outage")
    assert down["export"]["behind_rows"] >= len(messages) - half

    server.start()
    wait_until(lambda: scenarios.export_caught_up(cfg, len(messages)), 90,
               "the export cursor at the journal's end", interval_s=0.5)
    pub.close()
    counts.journaled = scenarios.assert_journaled_once(cfg, messages)
    assert pub.acked == len(messages)
    points = scenarios.influx_reading_points(server, "sw")
    assert points == scenarios.journal_kinds(cfg) == {"rain": 1200, "turbidity": 1200,
                                                      "sediment": 0}
    counts.exported = sum(points.values())
    assert scenarios.influx_event_ids(server, "sw") == scenarios.stored_event_ids(cfg)


# --------------------------------------------------------------------------- 4


def test_smtp_outage(tmp_path: Path, make_mosquitto: MakeMosquitto, daemons: Daemons,
                     smtp: SmtpReceiver, counts: ScenarioCounts) -> None:
    """The mail server is down when a storm alert falls due and comes back later: the
    qualified professional gets the alert exactly once.

    Proves the transactional outbox (monitor/README.md, "Architecture"): the alert is written with
    its
    event, survives failed attempts (each recorded, with its error, in the
    store) and is delivered once the server answers; a receipt per target
    keeps the retries from sending it twice.
    """
    broker = make_mosquitto()
    cfg = write_config(tmp_path, broker.port,
                       sections=scenarios.notify_section(smtp_port=smtp.port))
    daemons.start(cfg)
    # The gauge every 10 s for 50 minutes up to now, a tip a step from step 20: live.
    messages = [m for m in live_site(_now_s() - 50 * 60, 300, 10, storm=range(20, 200))
                if "/rg1/" in m[0]]
    counts.published = len(messages)
    counts.alerts_expected = 1
    pub = CountingPublisher(broker.port)
    pub.send_counted(messages)
    pub.close()

    def failed_attempts() -> int:
        rows = [r for r in scenarios.outbox_rows(cfg) if r.tag == "qp"]
        return rows[0].attempts if rows and rows[0].status == "pending" else 0

    wait_until(lambda: failed_attempts() >= 1, 60, "a failed attempt while the server is down")
    (row,) = scenarios.outbox_rows(cfg)
    assert row.last_error is not None and row.last_error.startswith("qp-mail: ")
    assert smtp.mails == []
    smtp.start()
    wait_until(lambda: journal_count(cfg) == len(messages), 30, "every reading journaled")
    wait_until(lambda: applied_and_settled(cfg, 1), 60, "the alert delivered")
    assert smtp.wait_for(lambda ms: len(ms) >= 1, 10)
    assert daemons[0].stop() == 0

    counts.journaled = scenarios.assert_journaled_once(cfg, messages)
    (storm,) = events_of(cfg, "storm_qualified")
    counts.alerts_received = len(smtp.mails)
    scenarios.assert_each_once([scenarios.alert_id_in(m.text()) for m in smtp.mails],
                               [f"{storm['id']}:0"])
    (row,) = scenarios.outbox_rows(cfg)
    assert row.status == "delivered" and row.attempts >= 2


# --------------------------------------------------------------------------- 5


def disk_full_run(tmp_path: Path, state: Path, make_mosquitto: MakeMosquitto,
                  daemons: Daemons, http: HttpReceiver, counts: ScenarioCounts, *,
                  hook_back_while_full: bool) -> None:
    """A storm alert pending in the outbox (the hook answers 500), the state directory's
    file system filled, readings published until the daemon reports the disk full and
    then some, the space freed; the hook answers again after the space is freed, or
    (``hook_back_while_full``) while the disk is still full."""
    broker = make_mosquitto()
    # Hook back while full: retries 5 s apart, and the disk is full (the daemon
    # says so) between the first attempt and the second. A failed attempt while
    # the disk is full stops the notify worker until the store takes writes, so
    # the hook must answer at the second one.
    retry_s = 5.0 if hook_back_while_full else 0.5
    notify = scenarios.notify_section(http_base=http.base, retry_s=retry_s)
    cfg = write_config(tmp_path, broker.port, sections=notify)
    http.fail_next = 1_000_000
    daemon = daemons.start(cfg)
    # The gauge alone (tb-up is what fills the disk below), every 10 s up to now: live.
    storm = [m for m in live_site(_now_s() - 50 * 60, 300, 10, storm=range(20, 200))
             if "/rg1/" in m[0]]
    counts.alerts_expected = 1
    pub = CountingPublisher(broker.port)
    pub.send_counted(storm)
    wait_until(lambda: any(r.attempts >= 1 for r in scenarios.outbox_rows(cfg)), 60,
               "the storm alert in the outbox, its first attempt failed", interval_s=0.05)
    failed_at = time.monotonic()
    assert http.posts == []

    filler = fill(state)
    readings = Readings(_now_s() - 40 * 60)  # tb-up, one a second of event time: live
    full = readings.until_full(pub, cfg)
    assert full["ingest"]["store_error"] and "full" in full["ingest"]["store_error"]
    readings.send(pub, 20)  # more while it waits: the broker keeps them
    assert journal_count(cfg) < len(storm) + len(readings.sent)
    assert daemon.running
    if hook_back_while_full:
        took = time.monotonic() - failed_at
        assert took < retry_s - 0.5, f"the disk took {took:.1f} s to fill: too slow for this test"
        http.fail_next = 0
        assert http.wait_for(lambda ps: len(ps) >= 1, 30), "no attempt while the disk was full"
        assert scenarios.status(cfg)["ingest"]["disk_full_since"] is not None
    os.unlink(filler)
    http.fail_next = 0

    published: list[Message] = [*storm, *((reading_topic("tb-up"), {"ts": ms // 1000, "ntu": 4.0})
                                          for ms in readings.sent)]
    counts.published = len(published)
    wait_until(lambda: journal_count(cfg) == len(published), 60,
               "the held readings journaled once there is space")
    wait_until(lambda: scenarios.status(cfg)["ingest"]["disk_full_since"] is None, 30,
               "status to clear the disk-full state")
    wait_until(lambda: applied_and_settled(cfg, 1), 60, "the alert delivered")
    assert daemon.stop() == 0
    pub.close()

    counts.journaled = scenarios.assert_journaled_once(cfg, published)
    (q,) = events_of(cfg, "storm_qualified")
    counts.alerts_received = len(http.posts)
    scenarios.assert_each_once(hook_alert_ids(http), [f"{q['id']}:0"])


def test_disk_full(tmp_path: Path, small_state: Path, make_mosquitto: MakeMosquitto,
                   daemons: Daemons, http: HttpReceiver, counts: ScenarioCounts) -> None:
    """The state directory's file system fills up while readings come in and an alert
    waits in the outbox; space is freed: every reading is journaled once, and the
    alert goes out once.

    Proves the disk-full contract of the README: a commit that fails for lack of
    space is not acknowledged (the broker keeps the messages), the daemon waits
    and carries on where it stopped; and that the outbox, whose bookkeeping
    cannot be written while the disk is full (a failed attempt cannot even be
    counted), keeps the alert and delivers it once the store takes writes and
    the hook answers. The hook answers 500 until the space is freed, so the
    alert is pending in the outbox all through the disk-full episode.
    """
    disk_full_run(tmp_path, small_state, make_mosquitto, daemons, http, counts,
                  hook_back_while_full=False)


def test_disk_full_alert_sent_while_full(tmp_path: Path, small_state: Path,
                                         make_mosquitto: MakeMosquitto, daemons: Daemons,
                                         http: HttpReceiver, counts: ScenarioCounts) -> None:
    """The disk-full scenario with the hook answering again while the disk is still
    full: the alert reaches the hook then, but the notify worker cannot commit its
    receipt (``Outbox.receipt``: "database or disk is full"). Found by this suite:
    once the store took writes again, the worker sent the same alert a second
    time. It now keeps the receipt in memory, writes it first and never sends
    that alert to that target again meanwhile: received once.
    """
    disk_full_run(tmp_path, small_state, make_mosquitto, daemons, http, counts,
                  hook_back_while_full=True)


# --------------------------------------------------------------------------- 6


def day_of_readings(start_s: int) -> dict[str, list[Message]]:
    """A day of one site at one reading per sensor per 5 minutes (288 steps), by sensor:

    * rg1: dry, then 4 tips (0.04 in) a step from step 48 (hour 4) for two hours:
      0.96 in; the 50th tip falls at step 60 and qualifies the storm;
    * tb-up 10 NTU; tb-down 40 NTU from step 60 for an hour, else 11: one
      exceedance of the 5 NTU over background of § 134-8C, then cleared;
    * trap1-depth: sediment from 10 to 36 in, linearly: past 40 % of the design
      volume around hour 16 and past the 50 % of § 134-9A(1) around hour 20.
    """
    out: dict[str, list[Message]] = {s: [] for s in ("rg1", "tb-up", "tb-down", "trap1-depth")}
    tips = 0
    for k in range(288):
        t = start_s + k * 300
        if 48 <= k < 72:
            tips += 4
        out["rg1"].append((reading_topic("rg1"), {"ts": t, "tips_total": tips}))
        out["tb-up"].append((reading_topic("tb-up"), {"ts": t, "ntu": 10.0}))
        out["tb-down"].append((reading_topic("tb-down"),
                               {"ts": t, "ntu": 40.0 if 60 <= k < 72 else 11.0}))
        out["trap1-depth"].append((reading_topic("trap1-depth"),
                                   {"ts": t, "depth_in": round(10 + 26 * k / 287, 2)}))
    return out


#: The alerts of that day the officer's hook is to receive (one each).
DAY_ROUTES = {"turbidity_contrast.exceeded": ["officer"], "trap_cleanout_required": ["officer"]}
DAY_ALERTS = ("storm_qualified", "turbidity_contrast", "trap_cleanout_required")


def test_day_burst_after_outage(tmp_path: Path, make_mosquitto: MakeMosquitto,
                                influx_server: Influxd, influx_db: str, daemons: Daemons,
                                http: HttpReceiver, counts: ScenarioCounts) -> None:
    """A day of buffered readings arriving in one burst (the site's nodes back after
    24 hours offline): journaled = published, exported = journaled, each of the
    day's three alerts received once, and a log book without the noise of the
    backlog.

    The nodes replay their buffers at once, each in order, but not in step: the
    downstream turbidity probe's whole day comes first, so for a while the
    engine sees downstream readings without a background and revises its facts
    as the upstream readings arrive. Proves the backfill rules of the README:
    every revision is stored and exported, but the log book and the outbox get
    only the revision that settled: one log book row per fact, no retraction,
    and one alert per fact (the storm to the officer, the turbidity exceedance,
    the clean-out demand).
    """
    broker = make_mosquitto()
    sections = (f"influx: {{url: '{influx_server.url}', api: v1, database: {influx_db}}}\n"
                + scenarios.notify_section(http_base=http.base, routes=DAY_ROUTES))
    cfg = write_config(tmp_path, broker.port, sections=sections)
    daemon = daemons.start(cfg)
    by_sensor = day_of_readings(_now_s() - 287 * 300 - 60)
    others = [m for k in range(288) for m in (by_sensor["rg1"][k], by_sensor["tb-up"][k],
                                               by_sensor["trap1-depth"][k])]
    messages = [*by_sensor["tb-down"], *others]
    counts.published = len(messages)
    counts.alerts_expected = len(DAY_ALERTS)

    pub = CountingPublisher(broker.port)
    assert pub.send_counted(messages) == len(messages)
    pub.close()
    wait_until(lambda: journal_count(cfg) == len(messages), 60, "every reading journaled")
    wait_until(lambda: applied_and_settled(cfg, len(DAY_ALERTS)), 90,
               "the backlog settled and its alerts delivered", interval_s=0.5)
    wait_until(lambda: scenarios.export_caught_up(cfg, len(messages)), 60,
               "the export cursor at the journal's end", interval_s=0.5)
    assert daemon.stop() == 0

    counts.journaled = scenarios.assert_journaled_once(cfg, messages)
    points = scenarios.influx_reading_points(influx_server, influx_db)
    assert points == scenarios.journal_kinds(cfg) == {"rain": 288, "turbidity": 576,
                                                      "sediment": 288}
    counts.exported = sum(points.values())
    assert scenarios.influx_event_ids(influx_server, influx_db) == scenarios.stored_event_ids(cfg)

    sent = scenarios.sent_alert_ids(cfg, "officer")
    counts.alerts_received = len(http.posts)
    scenarios.assert_each_once(hook_alert_ids(http), sent)
    current = {e["id"]: e for e in scenarios.current_events(cfg)}
    assert sorted(current[a.split(":")[0]]["type"] for a in sent) == sorted(DAY_ALERTS)

    # The backlog's noise was there (revisions, retractions: every one stored and
    # exported), and none of it reached the log book.
    assert scenarios.stored_revisions(cfg) > 2 * len(current)
    book = scenarios.logbook(cfg)
    retracted = [r for r in book if r.body.get("retracted")]
    assert not retracted, [(r.type, r.revision) for r in retracted]
    logged = [r.event_id for r in book]
    assert len(logged) == len(set(logged)), "a fact logged more than once"
    assert set(logged) == set(current), _differences(set(logged), current)


def _differences(logged: set[str], current: dict[str, Any]) -> str:
    return (f"logged, not current: {sorted(logged - current.keys())}; "
            f"current, not logged: {[current[i]['type'] for i in current.keys() - logged]}")

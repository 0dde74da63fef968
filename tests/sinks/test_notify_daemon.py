"""Alerts end to end: the daemon against a real Mosquitto, a real SMTP server and an HTTP hook.

A storm is published over MQTT; the qualified professional's mail arrives at an
aiosmtpd server (plain SMTP with a login, as Apprise's ``mailto://...?mode=
insecure`` speaks it) and the officer's copy at an ``http.server`` taking
Apprise's ``json://`` posts. The receivers count what arrives, which is how
"nothing twice" is checked across SIGKILLs of the daemon. Secrets come from
the environment (``${SMTP_PASSWORD}``, ``${HOOK_TOKEN}``) and are grepped for
in everything the daemon and ``notify-test`` print.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from monitor.contract.times import parse_iso
from monitor.sinks.notify.messages import local_time
from monitor.store import OutboxRow, Store

from ..conftest import MakeMosquitto
from ..support import daemonkit
from ..support.daemonkit import (
    Daemons,
    Publisher,
    cli,
    counter_storm,
    events_of,
    reading_topic,
    wait_until,
)
from ..support.receivers import HttpReceiver, Mail, SmtpReceiver, closed_port

pytestmark = pytest.mark.integration

NY = ZoneInfo("America/New_York")
SMTP_PASSWORD = "smtp-Pa55-9f3k"
HOOK_TOKEN = "hook-T0ken-77aa"
SITE_NAME = "Branch Meadows Subdivision"

NOTIFY = """\
notify:
  targets:
    - url: "mailto://qp:${{SMTP_PASSWORD}}@127.0.0.1:{smtp}?mode=insecure&from=stormwatch@example.org&to=qp@example.org"
      tags: [qp]
      name: qp-mail
    - url: "json://stormwatch:${{HOOK_TOKEN}}@{http}/officer"
      tags: [officer]
{extra_targets}  grafana_url: https://grafana.example.org/d/stormwatch?orgId=1
  poll_s: 0.2
  retry_initial_s: 0.5
  retry_max_s: 1
  escalate_after_attempts: 3
"""


def write_config(tmp_path: Path, broker_port: int, smtp_port: int, http_base: str,
                 extra_targets: str = "") -> Path:
    """``http_base`` is ``HttpReceiver.base`` (host, port and its random path)."""
    notify = NOTIFY.format(smtp=smtp_port, http=http_base, extra_targets=extra_targets)
    return daemonkit.write_config(tmp_path, broker_port, "stormwatch-notify-test",
                                  sections=notify,
                                  address="1 Meadow Lane, Village of the Branch, NY")


@pytest.fixture
def secrets_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMTP_PASSWORD", SMTP_PASSWORD)
    monkeypatch.setenv("HOOK_TOKEN", HOOK_TOKEN)


@pytest.fixture
def smtp() -> Iterator[SmtpReceiver]:
    receiver = SmtpReceiver(login="qp", password=SMTP_PASSWORD)
    yield receiver
    receiver.stop()


def assert_no_secrets(*texts: str) -> None:
    for text in texts:
        for secret in (SMTP_PASSWORD, HOOK_TOKEN):
            assert secret not in text


def one_line(text: str) -> str:
    """Whitespace collapsed: the text part of an HTML mail wraps and indents lines."""
    return " ".join(text.split())


def hours_left_in(text: str) -> float:
    match = re.search(r"\((\d+\.\d) hours left\)", text)
    assert match, text
    return float(match.group(1))


def trap_fill_fraction(depth_ft: float) -> float:
    """monitor/README.md, "The rules" trapezoid, 20 × 10 ft bottom, 2:1 slopes, design depth 4 ft
    (by hand)."""
    def volume(h: float) -> float:
        return 20 * 10 * h + (20 + 10) * 2 * h ** 2 + 4 / 3 * 2 ** 2 * h ** 3
    return volume(depth_ft) / volume(4.0)


def storm_messages(start: int) -> list[tuple[str, dict[str, Any]]]:
    # One tip a minute from minute 10: tip 50 (0.50 in) falls in minute 59.
    return counter_storm(start, 180, storm_from=10, storm_tips=60)


def nothing_pending(cfg: Path) -> bool:
    with Store(cfg.parent / "state" / "stormwatch.db", readonly=True) as store:
        rows = store.outbox.rows()
    return bool(rows) and all(r.status != "pending" for r in rows)


def escalation_settled(db: Path) -> bool:
    with Store(db, readonly=True) as store:
        return any(r.tag == "officer" and "/esc-" in r.alert_id
                   and r.status == "delivered" for r in store.outbox.rows())


def test_a_storm_reaches_the_qp_by_mail_and_the_officer_by_hook(
        tmp_path: Path, make_mosquitto: MakeMosquitto, daemons: Daemons,
        smtp: SmtpReceiver, http: HttpReceiver, secrets_env: None) -> None:
    smtp.start()
    broker = make_mosquitto()
    cfg = write_config(tmp_path, broker.port, smtp.port, http.base)
    daemon = daemons.start(cfg)

    start = int(time.time()) // 60 * 60 - 3 * 3600
    messages = storm_messages(start)
    for i in range(5):  # 33 in of sediment (2.75 ft): 53.0 % of the design volume
        messages.append((reading_topic("trap1-depth"), {"ts": start + 300 + i * 60,
                                                        "depth_in": 33.0}))
    for m in range(60, 80):  # 30 NTU over a 10 NTU background for 20 minutes
        messages.append((reading_topic("tb-up"), {"ts": start + m * 60, "ntu": 10.0}))
        messages.append((reading_topic("tb-down"), {"ts": start + m * 60 + 30, "ntu": 40.0}))
    pub = Publisher(broker.port)
    pub.send_many(messages)
    pub.close()

    assert smtp.wait_for(lambda ms: len(ms) >= 4, 60), [m.subject for m in smtp.mails]
    assert http.wait_for(lambda ps: len(ps) >= 1, 30)
    # Every outbox row settled: nothing more is on its way (counts below are final).
    wait_until(lambda: nothing_pending(cfg), 30, "the outbox to settle")
    (q,) = events_of(cfg, "storm_qualified")
    due = parse_iso(q["due"])
    assert q["qualified_at"] == time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                              time.gmtime(start + 59 * 60))
    storm_subject = f"{SITE_NAME}: storm 0.50 in, inspect by {local_time(due, NY, year=False)}"
    fill = f"{trap_fill_fraction(33 / 12) * 100:.1f}%"
    assert fill == "53.0%"
    by_subject: dict[str, Mail] = {m.subject: m for m in smtp.mails}
    assert sorted(by_subject) == sorted([
        storm_subject,
        f"{SITE_NAME}: sediment trap trap-1 at {fill} of design capacity",
        f"{SITE_NAME}: clean out sediment trap trap-1: {fill} of design capacity filled",
        f"{SITE_NAME}: turbidity +30.0 NTU over background at outfall-1"])
    assert len(smtp.mails) == 4
    for mail in smtp.mails:
        assert mail.rcpt_tos == ["qp@example.org"]
        assert mail.mail_from == "stormwatch@example.org" and mail.login == "qp"

    mail = by_subject[storm_subject]
    text = one_line(mail.text())
    for line in (
            f"Site: {SITE_NAME} (branch-meadows), 1 Meadow Lane, Village of the Branch, NY",
            "Rain: 0.50 in this storm, 0.50 in within 24 hours (threshold 0.50 in), gauge rg1",
            f"Qualified at: {local_time(parse_iso(q['qualified_at']), NY)}",
            f"Inspection due: {local_time(due, NY)} (",
            "Chapter 134 § 134-9A(2) requires:", "within 24 hours of any storm event",
            "https://grafana.example.org/d/stormwatch?orgId=1&var-site=branch-meadows&from=",
            f"Alert id: {q['id']}:0"):
        assert line in text, line
    assert abs(hours_left_in(text) - (due / 1000 - mail.received_s) / 3600) <= 0.11

    cleanout = one_line(by_subject[f"{SITE_NAME}: clean out sediment trap trap-1: {fill} of "
                                   "design capacity filled"].text())
    assert f"Fill: {fill} of design capacity (sediment 33.00 in deep)" in cleanout
    assert "§ 134-9A(1)" in cleanout
    turbidity = one_line(by_subject[f"{SITE_NAME}: turbidity +30.0 NTU over background at "
                                    "outfall-1"].text())
    for line in ("Downstream: 40.0 NTU", "Upstream (background): 10.0 NTU",
                 "Difference: +30.0 NTU (limit 5.0 NTU over background)",
                 f"Since: {local_time((start + 60 * 60 + 30) * 1000, NY)}", "§ 134-8C"):
        assert line in turbidity, line

    (post,) = http.posts
    assert post.path == "/officer" and post.basic_auth() == ("stormwatch", HOOK_TOKEN)
    assert post.body["title"] == storm_subject and post.body["type"] == "warning"
    assert f"Inspection due: {local_time(due, NY)} (" in post.body["message"]
    assert abs(hours_left_in(post.body["message"]) - (due / 1000 - post.received_s) / 3600) \
        <= 0.11
    assert post.body["message"].endswith(f"Alert id: {q['id']}:0")

    assert daemon.stop() == 0
    log = daemon.log_text()
    assert "no target receives tag 'ops'" in log
    assert_no_secrets(log)


def test_an_overdue_clock_reaches_qp_and_officer_once(
        tmp_path: Path, make_mosquitto: MakeMosquitto, daemons: Daemons,
        smtp: SmtpReceiver, http: HttpReceiver, secrets_env: None) -> None:
    """A storm 28 hours ago arrives now (a node's buffer, or the daemon back after a day):
    both reminders and the overdue notice fall due at once; the overdue one is sent."""
    smtp.start()
    broker = make_mosquitto()
    cfg = write_config(tmp_path, broker.port, smtp.port, http.base)
    daemon = daemons.start(cfg)
    start = int(time.time()) // 60 * 60 - 28 * 3600
    pub = Publisher(broker.port)
    pub.send_many(storm_messages(start))
    pub.close()
    # The site's turbidity probes never report here, so 28 hours on § 134-8C
    # has gone unchecked for most of them (stale 600 minutes after the first message,
    # then two hours): the qualified professional hears that too, the officer does not.
    assert smtp.wait_for(lambda ms: len(ms) >= 3, 60), [m.subject for m in smtp.mails]
    wait_until(lambda: nothing_pending(cfg), 30, "the outbox to settle")
    assert daemon.stop() == 0

    due = (start + 59 * 60 + 24 * 3600) * 1000
    overdue_subject = (f"{SITE_NAME}: OVERDUE storm inspection (was due "
                       f"{local_time(due, NY, year=False)})")
    storm_subject = f"{SITE_NAME}: storm 0.50 in, inspect by {local_time(due, NY, year=False)}"
    assert sorted(m.subject for m in smtp.mails) == sorted([
        overdue_subject, storm_subject,
        f"{SITE_NAME}: turbidity at outfall-1 not monitored: § 134-8C cannot be checked"])
    assert sorted(p.body["title"] for p in http.posts) == sorted([overdue_subject,
                                                                 storm_subject])
    overdue = one_line(next(m for m in smtp.mails if m.subject == overdue_subject).text())
    assert f"Was due: {local_time(due, NY)}" in overdue
    match = re.search(r"Overdue by: (\d+\.\d) hours", overdue)
    assert match and abs(float(match.group(1)) - (time.time() - due / 1000) / 3600) <= 0.11
    assert "Penalty (§ 134-12D): a fine of up to $350" in overdue
    with Store(cfg.parent / "state" / "stormwatch.db", readonly=True) as store:
        withheld = [r.withheld for r in store.outbox.rows() if r.withheld]
    # Both reminders (qp only) were superseded by the overdue notice.
    assert len(withheld) == 2 and all(w.startswith("superseded by alert ") for w in withheld)


def test_mail_server_down_escalates_then_delivers_once_across_kills(
        tmp_path: Path, make_mosquitto: MakeMosquitto, daemons: Daemons,
        smtp: SmtpReceiver, http: HttpReceiver, secrets_env: None) -> None:
    broker = make_mosquitto()  # the SMTP server is not started: it is down
    cfg = write_config(tmp_path, broker.port, smtp.port, http.base)
    db = cfg.parent / "state" / "stormwatch.db"
    daemon = daemons.start(cfg)
    start = int(time.time()) // 60 * 60 - 3 * 3600
    pub = Publisher(broker.port)
    pub.send_many(storm_messages(start))
    pub.close()

    def qp_row() -> OutboxRow | None:
        if not db.exists():
            return None
        with Store(db, readonly=True) as store:
            rows = [r for r in store.outbox.rows() if r.tag == "qp" and "/" not in r.alert_id]
        return rows[0] if rows else None

    wait_until(lambda: (row := qp_row()) is not None and row.attempts >= 1, 30,
               "a first failed attempt")
    daemon.kill()  # between attempts: the next one is scheduled in the store
    daemon.start()
    assert http.wait_for(lambda ps: any(p.body["title"].startswith("[ESCALATED] ")
                                        for p in ps), 30), [p.body for p in http.posts]
    # Kill between attempts, not inside one: a send whose receipt is not yet
    # committed is the one window where a repeat is allowed (and recognisable
    # by its alert id).
    wait_until(lambda: escalation_settled(db), 10, "the escalation's receipt")
    row = qp_row()
    assert row is not None and row.status == "pending" and row.attempts >= 3
    assert row.last_error is not None and row.last_error.startswith("qp-mail: ")
    daemon.kill()

    smtp.start()  # the mail server comes back; so does the daemon
    tick_before = daemonkit.last_tick_ms(cfg)
    daemon.start()
    assert smtp.wait_for(lambda ms: len(ms) >= 1, 30)
    # Nothing is left that could send again: this run replayed the journal and ticked
    # (recording any alert that caused), then every alert was settled.
    wait_until(lambda: daemonkit.ticked_after_input_since(cfg, tick_before), 30,
               "a tick of the new run after the last reading")
    wait_until(lambda: daemonkit.outbox_settled(cfg) and nothing_pending(cfg), 30,
               "the outbox to settle")
    assert daemon.stop() == 0

    (q,) = events_of(cfg, "storm_qualified")
    alert_id = f"{q['id']}:0"
    (mail,) = smtp.mails
    assert mail.subject.startswith(f"{SITE_NAME}: storm 0.50 in, inspect by ")
    assert f"Alert id: {alert_id}" in one_line(mail.text())
    # The officer's own copy, and the escalation: each once.
    assert sorted(p.body["title"] for p in http.posts) == sorted(
        [f"[ESCALATED] {mail.subject}", mail.subject])
    escalation = next(p.body["message"] for p in http.posts
                      if p.body["title"].startswith("[ESCALATED]"))
    assert "could not deliver this alert to 'qp'" in escalation
    assert "Last error: qp-mail: " in escalation
    assert escalation.endswith(f"Alert id: {alert_id}")

    final = qp_row()
    assert final is not None and final.status == "delivered" and final.attempts >= 4
    with Store(db, readonly=True) as store:
        rows = {(r.alert_id, r.tag): r for r in store.outbox.rows()}
        errors = " ".join(str(r.last_error) for r in rows.values())
    assert rows[(f"{alert_id}/esc-qp", "officer")].status == "delivered"
    assert rows[(alert_id, "officer")].attempts == 1
    log = daemon.log_text()
    assert "ALERT ESCALATED: " in log and "delivered to qp via qp-mail" in log
    assert_no_secrets(log, errors, escalation)


def test_notify_test_reports_each_target(
        tmp_path: Path, smtp: SmtpReceiver, http: HttpReceiver, secrets_env: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    smtp.start()
    extra = (f'    - {{url: "json://127.0.0.1:{closed_port()}/ops?+X-Token=${{HOOK_TOKEN}}", '
             "tags: [ops], name: ops-hook}\n")
    cfg = write_config(tmp_path, 1883, smtp.port, http.base, extra_targets=extra)

    out = cli("notify-test", "--config", str(cfg))
    assert out.returncode == 1, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "ok     qp-mail [qp]"
    assert lines[1] == f"ok     json://stormwatch:***@{http.base}/officer [officer]"
    assert lines[2].startswith("FAILED ops-hook [ops]: A Connection error occurred")
    assert out.stderr.strip().endswith(
        "notify-test: 1 of 3 target(s) did not take the message: ops-hook")
    (mail,) = smtp.mails
    assert mail.subject == f"stormwatch test message ({SITE_NAME})"
    assert "If you can read it, alerts routed to this target reach you here." in \
        one_line(mail.text())
    assert http.posts[0].body["title"] == f"stormwatch test message ({SITE_NAME})"
    assert_no_secrets(out.stdout, out.stderr)

    out = cli("notify-test", "--config", str(cfg), "--tag", "qp")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines() == ["ok     qp-mail [qp]",
                                       "notify-test: all 1 target(s) took the message"]
    assert len(smtp.mails) == 2

    monkeypatch.setenv("SMTP_PASSWORD", "wrong-Pa55word")
    out = cli("notify-test", "--config", str(cfg), "--tag", "qp")
    assert out.returncode == 1
    assert out.stdout.startswith("FAILED qp-mail [qp]: ")
    assert "qp-mail" in out.stderr and smtp.failed_logins >= 1
    assert "535" in out.stdout  # the server's own answer, from Apprise's debug log
    assert "wrong-Pa55word" not in out.stdout + out.stderr

    out = cli("notify-test", "--config", str(cfg), "--tag", "nobody")
    assert out.returncode == 2 and "no notification target receives tag 'nobody'" in out.stderr

    bad = tmp_path / "bad.yaml"
    bad.write_text(cfg.read_text().replace("json://stormwatch", "jsonn://stormwatch"))
    out = cli("notify-test", "--config", str(bad))
    assert out.returncode == 2
    assert out.stderr.strip() == ("notify.targets.1.url: Apprise cannot use this jsonn:// URL "
                                  "(unknown scheme, or a part of it is invalid)")

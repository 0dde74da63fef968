"""The reliability suite's scenarios: counting what went in and came out.

The scenarios drive the real daemon (``tests/support/daemonkit.py``) against real
services; what they assert are counts. This module holds what they share on
top of ``daemonkit``: the per-scenario ``ScenarioCounts`` (printed by the
suite's ``pytest_terminal_summary``, see ``conftest.py``), a publisher that
counts the broker's acknowledgements, probes of the daemon's own records
(journal keys, outbox rows, log book, ``status --json``), the ``notify:``
section for the alert receivers, and the small tmpfs for the disk-full case.

Waiting is always on a condition the daemon reports (``wait_until`` with a
probe below), never a fixed sleep before a "nothing twice" assertion.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.reasoncodes import ReasonCode

from monitor.store import LogbookRow, OutboxRow, Store
from tests.support.daemonkit import ROOT, Publisher, cli, ticked_after_input
from tests.support.influxd import Influxd

Message = tuple[str, Mapping[str, Any]]

SHIPPED_BROKER_CONF = ROOT / "deploy" / "mosquitto" / "stormwatch.conf"


# --------------------------------------------------------------------------- the report


@dataclass
class ScenarioCounts:
    """What one scenario put in and got out; one line of the suite's summary.

    ``exported`` and ``alerts_received`` stay None where the scenario has no
    InfluxDB or no alert receiver (printed as ``-``).
    """

    published: int = 0
    journaled: int = 0
    exported: int | None = None
    alerts_expected: int = 0
    alerts_received: int | None = None

    def line(self, name: str) -> str:
        exported = "-" if self.exported is None else str(self.exported)
        alerted = ("-" if self.alerts_received is None
                   else f"{self.alerts_received}/{self.alerts_expected}")
        return (f"reliability: {name} published={self.published} journaled={self.journaled} "
                f"exported={exported} alerted={alerted}")


# --------------------------------------------------------------------------- publishing


class CountingPublisher(Publisher):
    """``Publisher`` (QoS 1, MQTT v5) that counts the PUBACKs it got.

    paho keeps every unacknowledged QoS 1 message, also one published while the
    connection is down, and sends it (again) after the reconnect, as a sensor
    node keeps a reading in its buffer until the broker confirms it: a broker
    restart delays messages, and ``acked`` counts each message once, when the
    broker has taken it (a PUBACK whose reason code is not a refusal).
    """

    def __init__(self, port: int) -> None:
        super().__init__(port)
        self.acked = 0
        self.last_ack_s = 0.0
        self._done = threading.Condition()
        self._acked_mids: set[int] = set()
        self._refused_mids: set[int] = set()
        self.client.on_publish = self._on_publish

    def _on_publish(self, client: mqtt.Client, userdata: Any, mid: int, reason: ReasonCode,
                    properties: Any) -> None:
        with self._done:
            (self._refused_mids if reason.is_failure else self._acked_mids).add(mid)
            self._done.notify_all()

    def send_counted(self, messages: Sequence[Message], timeout_s: float = 60) -> int:
        """Publish, wait for the PUBACKs (``timeout_s`` in all); how many the broker took."""
        mids = {self.client.publish(topic, json.dumps(dict(body)).encode(), qos=1).mid
                for topic, body in messages}
        with self._done:
            self._done.wait_for(lambda: mids <= self._acked_mids | self._refused_mids,
                                timeout_s)
            acked = len(mids & self._acked_mids)
            self._acked_mids -= mids
            self._refused_mids -= mids
        self.acked += acked
        self.last_ack_s = time.time()
        return acked

    def send_paced(self, messages: Sequence[Message], chunk: int, pause_s: float) -> None:
        """In chunks with pauses, so that an outage can fall in the middle of the burst."""
        for k in range(0, len(messages), chunk):
            self.send_counted(messages[k:k + chunk])
            time.sleep(pause_s)


def shipped_autosave_s() -> int:
    """``autosave_interval`` of the shipped Mosquitto configuration (deploy/mosquitto)."""
    for line in SHIPPED_BROKER_CONF.read_text().splitlines():
        name, _, value = line.strip().partition(" ")
        if name == "autosave_interval":
            return int(value)
    raise AssertionError(f"no autosave_interval in {SHIPPED_BROKER_CONF}")


# --------------------------------------------------------------------------- the daemon's records


def db_path(cfg: Path) -> Path:
    return cfg.parent / "state" / "stormwatch.db"


def journal_keys(cfg: Path) -> list[tuple[str, int]]:
    """(sensor, event time) of every reading row in the journal, in journal order.

    The rows themselves, not the ``accepted`` counter: a reading journaled
    twice shows here as a repeated key.
    """
    if not db_path(cfg).exists():
        return []
    with Store(db_path(cfg), readonly=True) as store:
        return [(r.body["sensor"], int(r.body["ts_ms"]))
                for r in store.journal.after(0, limit=1_000_000) if r.kind == "reading"]


def published_keys(messages: Sequence[Message]) -> list[tuple[str, int]]:
    """(sensor, event time in ms) of each published reading: what ``journal_keys`` must hold."""
    return [(topic.split("/")[-2], int(body["ts"]) * 1000) for topic, body in messages]


def assert_journaled_once(cfg: Path, messages: Sequence[Message]) -> int:
    """Every published reading is in the journal exactly once, and nothing else is."""
    keys = journal_keys(cfg)
    repeated = [k for k, n in Counter(keys).items() if n > 1]
    assert not repeated, f"journaled twice: {repeated[:5]}"
    expected = published_keys(messages)
    missing = set(expected) - set(keys)
    assert not missing, f"{len(missing)} published reading(s) not journaled: {sorted(missing)[:5]}"
    assert len(keys) == len(expected), (len(keys), len(expected))
    return len(keys)


def status(cfg: Path) -> dict[str, Any]:
    """``stormwatch status --json``, the command itself."""
    out = cli("status", "--config", str(cfg), "--json")
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def outbox_rows(cfg: Path) -> list[OutboxRow]:
    if not db_path(cfg).exists():
        return []
    with Store(db_path(cfg), readonly=True) as store:
        return store.outbox.rows()


def outbox_settled(cfg: Path, at_least: int = 1) -> bool:
    """At least ``at_least`` outbox rows exist, none pending and none waiting to be
    written (a backfill's rows are deferred until its backlog is quiet)."""
    if not db_path(cfg).exists():
        return False
    with Store(db_path(cfg), readonly=True) as store:
        rows = store.outbox.rows()
        deferred = store.events.deferred_count()
    return deferred == 0 and len(rows) >= at_least and all(r.status != "pending" for r in rows)


def sent_alert_ids(cfg: Path, tag: str) -> list[str]:
    """Alert ids the outbox says were delivered to ``tag`` (withheld ones are not sent)."""
    return [r.alert_id for r in outbox_rows(cfg)
            if r.tag == tag and r.status == "delivered" and r.withheld is None]


ALERT_ID = re.compile(r"Alert id: (\S+)\s*$")


def alert_id_in(text: str) -> str:
    """The alert id every message ends with (``messages.render``)."""
    match = ALERT_ID.search(text.strip())
    assert match, f"no alert id in {text!r}"
    return match.group(1)


def assert_each_once(received: Sequence[str], expected: Sequence[str]) -> None:
    """The received alert ids are the expected ones, each exactly once."""
    counted = Counter(received)
    assert not [a for a, n in counted.items() if n > 1], f"received twice: {counted}"
    assert sorted(received) == sorted(expected), (sorted(received), sorted(expected))


def logbook(cfg: Path) -> list[LogbookRow]:
    with Store(db_path(cfg), readonly=True) as store:
        return store.events.logbook()


def current_events(cfg: Path) -> list[dict[str, Any]]:
    with Store(db_path(cfg), readonly=True) as store:
        return [e.to_json() for e in store.events.current()]


def export_caught_up(cfg: Path, journal_total: int) -> bool:
    """The export cursor has reached the journal's end (``status --json``: nothing
    behind), after ``journal_total`` readings were journaled and the engine has
    ticked since it applied the last of them.

    The tick matters: the engine runs behind the journal, and a tick records the
    events it raises before it records itself, so only then are the events the
    readings cause in the events table. Without it, ``behind_events == 0`` can hold
    while the engine has yet to raise most of them (CI saw 3 of 10 events exported
    "when caught up"). The tick is read before the status, so the status sees them.
    """
    if not ticked_after_input(cfg):
        return False
    now = status(cfg)
    export = now["export"]
    return bool(now["ingest"]["accepted"] == journal_total and export["behind_rows"] == 0
                and export["behind_events"] == 0)


#: The measurement and field of each raw reading kind in InfluxDB (README, "What is written").
RAW_FIELDS = {"rain": "tips_total", "turbidity": "ntu", "sediment": "depth_in"}


def influx_reading_points(server: Influxd, db: str) -> dict[str, int]:
    """Points per raw measurement, counted by InfluxQL on the server."""
    return {m: server.count(f'SELECT count("{f}") FROM "{m}"', db) for m, f in RAW_FIELDS.items()}


def journal_kinds(cfg: Path) -> dict[str, int]:
    """Journaled readings per sensor kind (the raw measurement they are exported to)."""
    with Store(db_path(cfg), readonly=True) as store:
        kinds = Counter(r.body["kind"] for r in store.journal.after(0, limit=1_000_000)
                        if r.kind == "reading")
    return {m: kinds.get(m, 0) for m in RAW_FIELDS}


def influx_event_ids(server: Influxd, db: str) -> int:
    return server.count('SELECT count(distinct("id")) FROM "event"', db)


def revisions_of(cfg: Path, event_id: str) -> int:
    """How many revisions of one event the events table holds."""
    with Store(db_path(cfg), readonly=True) as store:
        return len(store.events.revisions(event_id))


def stored_revisions(cfg: Path) -> int:
    """Every event revision in the events table (retractions included)."""
    with Store(db_path(cfg), readonly=True) as store:
        return len(store.events.all())


def stored_event_ids(cfg: Path) -> int:
    with Store(db_path(cfg), readonly=True) as store:
        return len({s.event.id for s in store.events.after(0, limit=1_000_000)})


# --------------------------------------------------------------------------- alerts


def notify_section(*, http_base: str | None = None, smtp_port: int | None = None,
                   routes: Mapping[str, Sequence[str]] | None = None,
                   escalate: bool = False, retry_s: float = 0.5) -> str:
    """A ``notify:`` section: the officer's hook (``json://`` to an ``HttpReceiver``) and/or
    the qualified professional's mail (``mailto://`` to an ``SmtpReceiver`` that asks
    for the login ``qp`` and the password in ``${SMTP_PASSWORD}``), retries after
    ``retry_s`` without jitter, no escalation unless asked (it would add a row to count)."""
    lines = ["notify:", "  targets:"]
    if smtp_port is not None:
        lines.append(f'    - {{url: "mailto://qp:${{SMTP_PASSWORD}}@127.0.0.1:{smtp_port}'
                     '?mode=insecure&from=stormwatch@example.org&to=qp@example.org", '
                     "tags: [qp], name: qp-mail}")
    if http_base is not None:
        lines.append(f'    - {{url: "json://{http_base}/officer", tags: [officer], '
                     "name: officer-hook}")
    if routes:
        lines.append("  routes:")
        lines += [f"    {key}: [{', '.join(tags)}]" for key, tags in routes.items()]
    lines += ["  poll_s: 0.2", f"  retry_initial_s: {retry_s:g}",
              f"  retry_max_s: {max(1.0, retry_s):g}", "  retry_jitter: 0"]
    if not escalate:
        lines.append("  escalate_to: null")
    return "\n".join(lines) + "\n"

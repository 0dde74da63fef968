"""``stormwatch inspect``: record an inspection, whether the daemon runs or not.

When a daemon holds the state directory, the inspection is published on the
site's inspection topic (DESIGN § 3), so it takes the same path as one from
the field; if the broker cannot be reached, it is written straight into the
journal, which the running daemon picks up within its next loop. When no
daemon runs, this command takes the state lock itself, journals the
inspection and brings the engine up to date, so the clock it satisfies is
closed in the database at once.
"""

from __future__ import annotations

import json
import time

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from .config import Config
from .configfile import read_secret
from .engine.events import ClockClosed, InspectionRecorded
from .engine.inputs import Inspection
from .engine.times import iso
from .host import EngineHost, daemon_lock, journal_in, open_store

WAIT_FOR_DAEMON_S = 20.0


class InspectError(Exception):
    """The inspection could not be recorded."""


def record_inspection(config: Config, site: str, inspector: str, at_ms: int, kind: str,
                      notes: str | None) -> str:
    """Record it; return a one-paragraph report of what it closed."""
    insp = Inspection(site=site, inspector=inspector, ts_ms=at_ms,
                      kind=kind, notes=notes)  # type: ignore[arg-type]
    with daemon_lock(config) as held:
        if held is not None:
            with open_store(config) as store:
                store.journal.commit([journal_in(insp, topic=None,
                                               received_ms=round(time.time() * 1000))])
                host = EngineHost.restore(config, store)
                host.catch_up()
                host.record_status()
                host.snapshot()
                return _report(config, insp, "recorded in the database (no daemon running)")
    via = "sent to the running daemon through the broker"
    if not _publish(config, insp):
        with open_store(config) as store:
            store.journal.commit([journal_in(insp, topic=None,
                                           received_ms=round(time.time() * 1000))])
        via = "written to the database for the running daemon (broker unreachable)"
    deadline = time.monotonic() + WAIT_FOR_DAEMON_S
    while time.monotonic() < deadline:
        if _recorded(config, insp) is not None:
            return _report(config, insp, via)
        time.sleep(0.2)
    return (f"Inspection by {inspector} at {iso(at_ms)} {via}; the daemon has not confirmed it "
            f"within {WAIT_FOR_DAEMON_S:.0f} s (see `stormwatch status`).")


def _publish(config: Config, insp: Inspection) -> bool:
    """Publish with QoS 1 and wait for the broker's acknowledgement."""
    b = config.broker
    client = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    if b.username:
        client.username_pw_set(b.username, read_secret(b.password_file))
    if b.tls is not None:
        client.tls_set(ca_certs=b.tls.ca_file, certfile=b.tls.cert_file, keyfile=b.tls.key_file)
        client.tls_insecure_set(b.tls.insecure)
    payload = {"inspector": insp.inspector, "kind": insp.kind, "ts": iso(insp.ts_ms)}
    if insp.notes:
        payload["notes"] = insp.notes
    try:
        client.connect(b.host, b.port, keepalive=30)
    except OSError:
        return False
    client.loop_start()
    try:
        info = client.publish(f"{b.topic_prefix.rstrip('/')}/{insp.site}/inspection",
                              json.dumps(payload).encode(), qos=1)
        info.wait_for_publish(timeout=10)
        return info.is_published()
    except (RuntimeError, ValueError):
        return False
    finally:
        client.disconnect()
        client.loop_stop()


def _recorded(config: Config, insp: Inspection) -> InspectionRecorded | None:
    with open_store(config, readonly=True) as store:
        for e in store.events.current(insp.site):
            if isinstance(e.body, InspectionRecorded) and e.at_ms == insp.ts_ms \
                    and e.body.inspector == insp.inspector:
                return e.body
    return None


def _report(config: Config, insp: Inspection, via: str) -> str:
    rec = _recorded(config, insp)
    head = f"Inspection by {insp.inspector} at {iso(insp.ts_ms)} {via}."
    if rec is None:
        return head
    if not rec.closes:
        return head + " It closed no open clock."
    with open_store(config, readonly=True) as store:
        closed = {e.body.clock_id: e.body for e in store.events.current(insp.site)
                  if isinstance(e.body, ClockClosed)}
    parts = []
    for cid in rec.closes:
        c = closed.get(cid)
        parts.append(f"{cid} ({c.outcome}, due {c.due})" if c else cid)
    return head + " Closed: " + "; ".join(parts) + "."

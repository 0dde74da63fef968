"""The notification worker: drains the outbox through Apprise, on its own thread.

Theory of operation
-------------------
The engine thread writes outbox rows in the same transaction as their events
(monitor/README.md, "Architecture") and never waits for a network. This worker, a daemon thread with
its own SQLite connection, reads ``Outbox.due`` when the engine thread
wakes it (``wake``, right after it committed events with alerts) and at least
every ``notify.poll_s`` seconds (retries come due with time), and, for each
due row (one alert × one tag):

1. asks ``policy.decide`` whether it is still worth sending (catch-up noise,
   corrections); if not, settles it as withheld;
2. renders it (``messages.render``) in the site's time zone, at the moment
   of sending, with the signed link to the site's inspection form when the
   event is routed to ``qp`` and ``web:`` is configured (``host/links.py``; the
   link expires ``web.link_hours`` after the send);
3. sends it to every target that receives the tag and has no receipt for
   this alert yet, recording each target's receipt the moment it confirms:
   a target never gets the same alert twice through a retry, a second tag or
   a restart (a crash between a send and its receipt's commit is the one
   window left, and the alert id in the body makes that repeat
   recognisable); a receipt the store refuses (disk full) is kept in memory
   and written first once it takes writes, never sent again meanwhile;
4. marks the row ``delivered`` when every target has it; otherwise counts the
   attempt, keeps the error (masked) and schedules the next attempt with
   capped exponential backoff and jitter (``policy.backoff_s``), or gives up
   after ``give_up_after_hours`` (``failed``, logged at ERROR).

Escalation: an *urgent* alert (``routing.is_urgent``) that no target of its
tag has confirmed after ``escalate_after_attempts`` attempts or
``escalate_after_minutes`` minutes gets one more row, to the
``escalate_to`` tag (``officer``), with alert id ``{alert id}/esc-{tag}``
and a body that says whom it could not reach; that is logged at ERROR. The
original row keeps retrying. Everything lives in the store, so attempts,
receipts and escalations survive restarts.

``clock`` is the daemon's clock (seconds): the demo runs it faster than the
wall clock, and timing in the store (next attempt, escalation age) follows
it. Waiting between polls is in real seconds.
"""

from __future__ import annotations

import logging
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from ...config import Config
from ...config.invocation import command_for
from ...contract.events import Event
from ...contract.times import MS_PER_HOUR, MS_PER_MINUTE, WallClock
from ...host.links import FormLinks
from ...store import DueAlert, Store
from . import policy, secrets
from .messages import Alert, Escalation, render
from .routing import QP_TAG, Router, is_urgent
from .targets import Target, load_targets

log = logging.getLogger("stormwatch.notify")

BATCH: Final = 50
ESCALATION_MARK: Final = "/esc-"


def escalated_from(alert_id: str) -> tuple[str, str] | None:
    """(original alert id, tag it could not reach) of an escalation row's alert id."""
    base, sep, tag = alert_id.rpartition(ESCALATION_MARK)
    return (base, tag) if sep else None


class NotifyWorker:
    """``Worker`` of ``monitor.sinks.registry``: delivers the outbox. See the module docstring."""

    name = "notify"

    def __init__(self, config: Config, clock: WallClock = time.time, *,
                 targets: list[Target] | None = None,
                 rand: Callable[[], float] = random.random,
                 links: FormLinks | None = None,
                 config_path: str | Path | None = None) -> None:
        """``config_path``: the file the daemon read ``config`` from, for the commands
        alerts print (``command_for``: they work as printed)."""
        self.config = config
        self.inspect_command = command_for(config_path, "inspect")
        self.notify = config.notify
        #: Form links for alerts routed to ``qp`` (``web:`` configured; key read by
        #: ``build.py``), and the routing tables that say which alerts those are.
        self.links = links
        self.routes = Router.build(config.notify.routes, {
            s.id: s.notify.routes for s in config.sites if s.notify.routes})
        self.clock = clock
        self.targets = targets if targets is not None else load_targets(config.notify)
        self.rand = rand
        self._wake = threading.Event()
        #: Sends a target confirmed whose receipt the store refused (disk full), by
        #: (outbox row, target): written before anything else is sent, and never sent
        #: again meanwhile. The worker object outlives its restarts (``daemon.py``).
        self._unrecorded: dict[tuple[int, str], int] = {}

    # -- the loop -------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        secrets.install()
        with Store.in_dir(self.config.state_dir) as store:
            while not stop.is_set():
                rows = store.outbox.due(self.now_ms(), limit=BATCH)
                for row in rows:
                    if stop.is_set():
                        return
                    self.process(store, row)
                if len(rows) < BATCH and self._wake.wait(self.notify.poll_s):
                    self._wake.clear()

    def wake(self) -> None:
        """Alerts were just recorded: look at the outbox now, not at the next poll."""
        self._wake.set()

    def drain(self, store: Store) -> int:
        """Process every row due now, once (for tests and tools); the number processed."""
        rows = store.outbox.due(self.now_ms(), limit=10_000)
        for row in rows:
            self.process(store, row)
        return len(rows)

    def now_ms(self) -> int:
        return round(self.clock() * 1000)

    # -- one row --------------------------------------------------------------

    def process(self, store: Store, row: DueAlert) -> None:
        """Withhold, send, or count a failed attempt of one due outbox row."""
        now = self.now_ms()
        alert_id, tag = row.alert_id, row.tag
        event = row.event
        self._record_receipts(store)
        try:
            decision = policy.decide(store, row)
            if decision.withheld is not None:
                store.outbox.withhold(row.id, decision.withheld, now_ms=now)
                log.info("alert %s (%s, %s) to %s withheld: %s", alert_id, event.type,
                         event.site, tag, decision.withheld)
                return
            targets = [t for t in self.targets if t.receives(tag)]
            if not targets:
                self._fail(store, row, now, f"no target receives tag {tag!r}", final=True)
                return
            have = store.outbox.receipts(alert_id)
            pending = [t for t in targets
                       if t.key not in have and (row.id, t.key) not in self._unrecorded]
            errors: list[str] = []
            message = render(self._alert(store, row, now, decision.previous))
            for target in pending:
                result = target.send(message)
                sent_ms = self.now_ms()
                if result.ok:
                    self._unrecorded[(row.id, target.key)] = sent_ms
                    self._record_receipts(store)
                    log.info("alert %s (%s, %s) delivered to %s via %s", alert_id,
                             event.type, event.site, tag, target.label)
                else:
                    errors.append(f"{target.label}: {result.error}")
            if not errors:
                store.outbox.mark(row.id, delivered=True, now_ms=self.now_ms())
                return
            reached = len(targets) > len(errors)
            self._fail(store, row, now, "; ".join(errors), reached=reached)
        except sqlite3.OperationalError:
            raise  # the store refuses writes: the worker waits until it takes them again
        except Exception as exc:  # a bug or a broken row must not wedge the queue
            log.exception("alert %s to %s: unexpected error; retrying later", alert_id, tag)
            self._fail(store, row, now, f"internal error: {type(exc).__name__}: {exc}")

    def _record_receipts(self, store: Store) -> None:
        """Write the receipts of confirmed sends the store refused before."""
        for (row_id, key), sent_ms in list(self._unrecorded.items()):
            store.outbox.receipt(row_id, key, now_ms=sent_ms)
            del self._unrecorded[(row_id, key)]

    def _alert(self, store: Store, row: DueAlert, now: int,
               previous: Event | None) -> Alert:
        event = row.event
        alert_id = row.alert_id
        escalation = None
        origin = escalated_from(alert_id)
        if origin is not None:
            alert_id, from_tag = origin
            # The original row as it stands now (it has been retried since).
            escalation = Escalation(from_tag, 0, row.created_ms)
            for other in store.outbox.alerts(event_id=event.id, tag=from_tag):
                if other.alert_id == alert_id:
                    escalation = Escalation(from_tag, other.attempts, other.created_ms,
                                            other.last_error)
        link = None
        if self.links is not None and QP_TAG in self.routes.table_tags(event):
            # The route's, not the row's tag: a target taking every tag gets the
            # alert once, through whichever row comes first, and the link with it.
            link = self.links.for_event(event, now)
        site = self.config.site(event.site)
        roster = tuple(q.name for q in self.config.roster(site)) if site is not None else ()
        return Alert(alert_id, event, now, site, self.notify.grafana_url, previous, escalation,
                     link, self.inspect_command, roster)

    def _fail(self, store: Store, row: DueAlert, now: int, error: str, *,
              final: bool = False, reached: bool = False) -> None:
        """Count a failed attempt: schedule the next, or give up; escalate if due."""
        error = secrets.mask(error)
        alert_id, tag = row.alert_id, row.tag
        attempts = row.attempts + 1
        age_ms = now - row.created_ms
        give_up = final or age_ms >= self.notify.give_up_after_hours * MS_PER_HOUR
        if give_up:
            store.outbox.mark(row.id, delivered=False, now_ms=now, error=error)
            log.error("ALERT NOT DELIVERED: %s (%s, %s) to %s, gave up after %d attempt(s): %s",
                      alert_id, row.event.type, row.event.site, tag,
                      attempts, error)
        else:
            wait_s = policy.backoff_s(attempts, self.notify.retry_initial_s,
                                      self.notify.retry_max_s, self.notify.retry_jitter,
                                      self.rand)
            store.outbox.mark(row.id, delivered=False, now_ms=now, error=error,
                              next_attempt_ms=now + round(wait_s * 1000))
            log.warning("alert %s (%s, %s) to %s failed (attempt %d), next in %.1f s: %s",
                        alert_id, row.event.type, row.event.site, tag,
                        attempts, wait_s, error)
        if not reached:
            self._maybe_escalate(store, row, now, attempts, age_ms, error, give_up)

    def _maybe_escalate(self, store: Store, row: DueAlert, now: int, attempts: int,
                        age_ms: int, error: str, give_up: bool) -> None:
        fallback = self.notify.escalate_to
        tag = row.tag
        if fallback is None or tag == fallback or escalated_from(row.alert_id) \
                or not is_urgent(row.event):
            return
        if not (give_up or attempts >= self.notify.escalate_after_attempts
                or age_ms >= self.notify.escalate_after_minutes * MS_PER_MINUTE):
            return
        failing = {t.key for t in self.targets if t.receives(tag)}
        if all(t.key in failing for t in self.targets if t.receives(fallback)):
            # No target, or only the ones that just failed (an untagged catch-all):
            # an escalation would go nowhere new. Say so instead, once per attempt.
            log.error("ALERT %s to %s cannot be escalated: no other target receives tag %r",
                      row.alert_id, tag, fallback)
            return
        new_id = store.outbox.escalate(row.id, fallback, now_ms=now)
        if new_id is not None:
            log.error("ALERT ESCALATED: %s (%s, %s) could not be delivered to %s after %d "
                      "attempt(s) in %.0f min (%s); sending it to %s as %s", row.alert_id,
                      row.event.type, row.event.site, tag, attempts,
                      age_ms / MS_PER_MINUTE, error, fallback, new_id)

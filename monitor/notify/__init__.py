"""Alerts that reach the qualified professional: routing, messages, delivery, escalation.

The alert path of DESIGN § 2 ("Alerts go through a transactional outbox")
and the ``notify`` section of DESIGN § 7. An alert that is lost or late can
cost a site a violation (§ 134-12D: up to $350, each week a separate one),
so every step either succeeds, retries, escalates, or says loudly that it
did not.

``routing``   event → tags, on the engine thread, pure (defaults, overrides, urgency)
``messages``  title and text/Markdown bodies in the site's time zone, pure
``policy``    at delivery time: withheld (catch-up noise, superseded notices,
              corrections), and retry backoff
``targets``   Apprise targets from ``notify.targets`` and ``notify.config_file``;
              one send per target
``worker``    the outbox worker thread: send, receipts, retries, escalation
``console``   the ``console://`` Apprise plugin (alerts in the terminal)
``secrets``   masking of every target's secrets in logs and error messages
``probe``     ``stormwatch notify-test``

``build_router`` and ``build_worker`` are what ``monitor.workers`` calls. This
module imports Apprise only when they run, so the configuration (which
checks route names against ``routing``) stays light.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..config import Config
from .routing import DEFAULT_ROUTES, Router, is_urgent

if TYPE_CHECKING:
    from .targets import Target
    from .worker import NotifyWorker

__all__ = ["DEFAULT_ROUTES", "Router", "build_router", "build_worker", "is_urgent",
           "load_or_exit"]

log = logging.getLogger("stormwatch.notify")


def configured(config: Config) -> bool:
    """Whether any target is configured (inline or in an Apprise configuration file)."""
    return bool(config.notify.targets or config.notify.config_file)


def load_or_exit(config: Config) -> list[Target]:
    """The targets; on a configuration problem log each line and exit 2 (no traceback)."""
    from .targets import NotifySetupError, load_targets

    try:
        return load_targets(config.notify)
    except NotifySetupError as exc:
        for line in exc.lines:
            log.error("%s", line)
        raise SystemExit(2) from None


def build_router(config: Config) -> Router | None:
    """The routing function for ``Store.record_events``; None when nothing is configured."""
    if not configured(config):
        return None
    from .targets import tags_received

    targets = load_or_exit(config)
    router = Router.build(config.notify.routes,
                          {s.id: s.notify.routes for s in config.sites if s.notify.routes},
                          tags_received(targets))
    for tag, keys in router.gaps(s.id for s in config.sites).items():
        log.warning("notify: no target receives tag %r; these alerts are recorded in the log "
                    "book but not sent: %s", tag, ", ".join(keys))
    return router


def build_worker(config: Config, clock: Callable[[], float] = time.time) -> NotifyWorker | None:
    """The outbox delivery worker; None (and a warning) when no target is configured."""
    if not configured(config):
        log.warning("notify: no targets configured (notify.targets, notify.config_file): "
                    "alerts are recorded in the log book only; nobody is told")
        return None
    from .worker import NotifyWorker

    worker = NotifyWorker(config, clock, targets=load_or_exit(config))
    n = config.notify
    log.info("notify: %d target(s): %s", len(worker.targets),
             "; ".join(t.describe() for t in worker.targets))
    if n.escalate_to is None:
        log.warning("notify: escalation is off (notify.escalate_to: null)")
    elif not any(t.receives(n.escalate_to) for t in worker.targets):
        log.warning("notify: no target receives the escalation tag %r: an urgent alert that "
                    "cannot be delivered is only logged", n.escalate_to)
    else:
        log.info("notify: urgent alerts undelivered after %d attempts or %g min are escalated "
                 "to %r", n.escalate_after_attempts, n.escalate_after_minutes, n.escalate_to)
    return worker

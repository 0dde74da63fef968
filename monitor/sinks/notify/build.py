"""The notification side as the daemon wires it: the router and the delivery worker.

``monitor.sinks.registry`` calls ``build_router`` (routes of every event, on the engine
thread) and ``build_worker`` (the outbox worker thread, with its Apprise targets).
"""


from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ...config import Config
from ...contract.times import WallClock
from .routing import Router

if TYPE_CHECKING:
    from ...host.links import FormLinks
    from .targets import Target
    from .worker import NotifyWorker

log = logging.getLogger("stormwatch.notify")


def configured(config: Config) -> bool:
    """Whether any target is configured (inline or in an Apprise configuration file)."""
    return bool(config.notify.targets or config.notify.config_file)


def load_or_exit(config: Config) -> list[Target]:
    """The targets; a configuration problem is a ``NotifySetupError`` (a line per
    problem), which ``cli.main`` prints (exit 2, no traceback)."""
    from .targets import load_targets

    return load_targets(config.notify)


def build_router(config: Config) -> Router | None:
    """The routing function for ``EventLog.record``; None when nothing is configured."""
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


def form_links(config: Config) -> FormLinks | None:
    """The form links of alerts routed to ``qp``: ``web:`` and its key, read here, once;
    a key that cannot be read is a ``UserError`` (exit 2, the line ``check-config`` prints)."""
    if config.web is None:
        return None
    from ...host.links import FormLinks, read_secret

    return FormLinks(config.web, read_secret(config.web.secret_file))


def build_worker(config: Config, clock: WallClock = time.time,
                 config_path: str | Path | None = None) -> NotifyWorker | None:
    """The outbox delivery worker; None (and a warning) when no target is configured.
    ``config_path``: the file ``config`` was read from (the commands alerts print)."""
    if not configured(config):
        log.warning("notify: no targets configured (notify.targets, notify.config_file): "
                    "alerts are recorded in the log book only; nobody is told")
        return None
    from .worker import NotifyWorker

    worker = NotifyWorker(config, clock, targets=load_or_exit(config),
                          links=form_links(config), config_path=config_path)
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

"""``stormwatch web``: the field app, its own process beside the daemon.

Theory of operation: uvicorn serves ``web.create_app(config)`` on
``web.listen``. uvicorn catches SIGTERM and SIGINT, finishes the requests in
flight and returns; it then re-raises the signal it caught to the handler
that was there before it, which here is one that does nothing, so the command
returns exit 0 without a traceback (systemd's ``stop`` is an ordinary stop).
The access log is off: a URL may carry a sign-in or alert token, and no token
goes into a log line; the app logs its own refusals without them.
"""

from __future__ import annotations

import argparse
import signal
from types import FrameType

from ..errors import EXIT_OK, UserError
from .common import CONFIG_HELP, load, setup_logging
from .helptext import command_help


def _ignore(sig: int, frame: FrameType | None) -> None:
    """What a stop signal does once uvicorn has shut down on it: nothing more."""


def cmd_web(args: argparse.Namespace) -> int:
    import uvicorn

    from ..web.app import create_app

    config = load(args.config)
    if config.web is None:
        raise UserError("web: not configured; add a web: section (config/README.md, `web`)")
    host, _, port = config.web.listen.rpartition(":")
    setup_logging(config, args.log_level)
    app = create_app(config)
    # The TLS proxy on loopback says who the phone is (X-Forwarded-For), for the sign-in
    # limit per address. Any local process can say it too: failed sign-ins are limited
    # for the whole app as well (web/auth.py), so no header lifts that limit.
    server = uvicorn.Server(uvicorn.Config(
        app, host=host.strip("[]"), port=int(port), access_log=False, log_config=None,
        log_level=args.log_level, proxy_headers=True, forwarded_allow_ips="127.0.0.1",
        server_header=False))
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _ignore)
    server.run()
    return EXIT_OK


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("web", **command_help("web"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    p.set_defaults(func=cmd_web)

"""``stormwatch-node``: the sensor-node runtime's command line.

    stormwatch-node --config /etc/stormwatch-node/node.yaml [--log-level info]
    stormwatch-node check-config FILE

Exit codes as the daemon's: 0 ok, 1 the node could not start (a sensor's
hardware missing: one line, and systemd tries again), 2 bad usage or bad
configuration (one ``path.to.field: message`` line per problem, never a
traceback). SIGTERM and
SIGINT stop the loop; readings in flight stay in the buffer for next time.
The broker password is read from ``broker.password_file`` and never printed.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from .config import NodeConfig
from .configfile import ConfigError, check_files, load_config, read_password

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

log = logging.getLogger(__name__)


def _fail(lines: Sequence[str]) -> int:
    for line in lines:
        print(line, file=sys.stderr)
    return EXIT_USAGE


def summarise(config: NodeConfig) -> str:
    """One line: what this node will do (no secrets)."""
    sensors = ", ".join(f"{s.id} ({s.kind}, {getattr(s, 'driver', '?')})" for s in config.sensors)
    tls = " with TLS" if config.broker.tls else ""
    return (f"OK: node {config.client_id} of site {config.site}: {sensors}; broker "
            f"{config.broker.host}:{config.broker.port}{tls}; buffer {config.buffer.path} "
            f"(at most {config.buffer.max_mb:g} MB); status every {config.status_every_s:g} s.")


def cmd_check_config(path: str) -> int:
    try:
        config = load_config(path)
    except ConfigError as exc:
        return _fail(exc.lines)
    problems = check_files(config)
    if problems:
        return _fail(problems)
    print(summarise(config))
    return EXIT_OK


def cmd_run(path: str) -> int:
    from .node import Node  # paho and the drivers only for a run, not for check-config

    try:
        config = load_config(path)
        password = read_password(config)
    except ConfigError as exc:
        return _fail(exc.lines)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("signal %d: stopping", signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        node = Node(config, password=password)
    except Exception as exc:
        # The hardware or a file is not there (no I2C device at the address, no
        # serial port, a hardware library not installed, an unwritable buffer): one
        # line, exit 1, and systemd tries again. The traceback is for --log-level debug.
        log.debug("start-up failed", exc_info=True)
        print(f"cannot start: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    try:
        node.run(stop)
    finally:
        node.close()
    return EXIT_OK


_DESCRIPTION = """\
The stormwatch sensor-node runtime, for the site's Raspberry Pi: it reads the
sensors on a schedule, commits every reading to an on-disk buffer, publishes
it (QoS 1, MQTT v5) and deletes it only when the broker acknowledges it.
Offline, readings wait in the buffer and go out in order, with their own
timestamps, when the link returns. SIGTERM or Ctrl-C stops it within a few
seconds, exit 0: it stops reading, waits up to 2 s for the acknowledgements
in flight and keeps everything else in the buffer."""

_EPILOG = """\
  stormwatch-node --config /etc/stormwatch-node/node.yaml   run the node
  stormwatch-node check-config FILE                        validate a file

Wiring, calibration, offline behaviour, adding a sensor: sensors/README.md.
exit codes: 0 ok, 1 it could not start (hardware or a file missing; the
reason on one line), 2 bad usage or bad configuration."""

_CHECK_DESCRIPTION = """\
Validates the file and the files it names (the broker password, the CA
certificate, a csv driver's input, the buffer's directory): exit 0 with a
one-line summary, or exit 2 with one `path.to.field: message` line per
problem.

config/node.example.yaml names the paths of a set-up Pi, so on any other
machine this reports them missing (exit 2). To try it elsewhere, use a copy
whose paths exist (sensors/README.md, "Trying check-config", shows how)."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="stormwatch-node", description=_DESCRIPTION, epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", metavar="FILE",
                        help="the node's YAML configuration (config/node.example.yaml)")
    parser.add_argument("--log-level", default="info",
                        choices=("debug", "info", "warning", "error"))
    sub = parser.add_subparsers(dest="command")
    check = sub.add_parser("check-config", help="validate a configuration file and exit",
                           description=_CHECK_DESCRIPTION,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("file")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "check-config":
        return cmd_check_config(args.file)
    if not args.config:
        parser.error("--config FILE is required (or: check-config FILE)")
    return cmd_run(args.config)


if __name__ == "__main__":
    sys.exit(main())

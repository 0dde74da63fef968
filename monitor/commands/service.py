"""Commands that run something: ``run`` (the daemon), ``demo``, ``notify-test``
(README.md, "Commands").

``run`` checks its ``state_dir`` before the daemon starts: the daemon creates
the directory, takes the lock and opens the database deep inside its start,
where a file in the way was a traceback; here it is one line naming the path.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
from pathlib import Path

from ..config.plausible import warnings
from ..errors import EXIT_CHECK_FAILED, EXIT_OK, UserError
from ..rules.permits.checks import permit_warnings
from .common import CONFIG_HELP, check_state_dir, emit, load, setup_logging
from .helptext import command_help

log = logging.getLogger("stormwatch.daemon")


def cmd_run(args: argparse.Namespace) -> int:
    from ..daemon.loop import Daemon, install_signal_handlers

    # Handlers first: a SIGTERM while the sinks load must still mean "drain and exit 0".
    stop = threading.Event()
    install_signal_handlers(stop)
    config = load(args.config)
    check_state_dir(config, write=True, create=True)
    setup_logging(config, args.log_level)
    # What check-config warns about, in the log a deployment is watched through.
    for line in warnings(config) + permit_warnings(config):
        log.warning("configuration: %s", line)
    daemon = Daemon(config, stop_event=stop, mqtt_process=True, config_path=args.config)
    return daemon.run()


def cmd_demo(args: argparse.Namespace) -> int:
    from ..daemon.demo import run_demo

    return run_demo(sys.stdout, speed=args.speed, keep=args.keep,
                    state_dir=Path(args.state_dir) if args.state_dir else None,
                    inspect_yourself=args.inspect_yourself)


def cmd_notify_test(args: argparse.Namespace) -> int:
    """Send one test message to every target (or to one tag's) and report each."""
    from ..sinks.notify.probe import run_test
    from ..sinks.notify.secrets import mask

    config = load(args.config)
    setup_logging(config, "error")
    # Apprise's own warnings would repeat, less clearly, what the verdicts say
    # (each verdict carries them).
    logging.getLogger("apprise").propagate = False
    verdicts = run_test(config, args.tag)
    if not verdicts:
        where = f"receives tag {args.tag!r}" if args.tag else "is configured"
        raise UserError(f"no notification target {where} (notify.targets, notify.config_file)")
    for v in verdicts:
        state = "ok    " if v.result.ok else "FAILED"
        detail = "" if v.result.ok else f": {v.result.error}"
        emit(mask(f"{state} {v.target.describe()}{detail}") + "\n")
    failed = [v.target.label for v in verdicts if not v.result.ok]
    if failed:
        print(mask(f"notify-test: {len(failed)} of {len(verdicts)} target(s) did not take the "
                   f"message: {', '.join(failed)}"), file=sys.stderr)
        return EXIT_CHECK_FAILED
    emit(f"notify-test: all {len(verdicts)} target(s) took the message\n")
    return EXIT_OK




def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The parsers of this family's commands, each bound to its function."""
    p = sub.add_parser("run", **command_help("run"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--log-level", default="info",
                   choices=("debug", "info", "warning", "error"))
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("demo", **command_help("demo"))
    # The range is demo.MIN_SPEED..MAX_SPEED (why: there); demo.py is not imported
    # here, as every command would then pay for the daemon's imports.
    p.add_argument("--speed", type=float, default=1800.0,
                   help="simulated seconds per real second, 1 to 3600 "
                        "(default 1800: a day in 48 s)")
    p.add_argument("--keep", action="store_true",
                   help="keep the demo's state directory, with a configuration to look at it")
    p.add_argument("--state-dir", help="use this state directory (kept afterwards)")
    p.add_argument("--inspect-yourself", action="store_true",
                   help="no simulated inspector: the clock waits while you record the storm"
                        " inspection in the field app (the link is printed)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("simulate", **command_help("simulate"))
    # The simulated sites run the node runtime; only its arguments are built
    # here, paho loads when it runs.
    from ..sources.simulate import add_arguments

    add_arguments(p)  # its own func: sources.simulate.run_args

    p = sub.add_parser("notify-test", **command_help("notify-test"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--tag", help="only the targets that receive this tag")
    p.set_defaults(func=cmd_notify_test)

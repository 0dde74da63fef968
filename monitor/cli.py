"""The ``stormwatch`` command line: the parser, and ``main``.

The commands themselves live in ``commands/`` (``files.py``, ``state.py``,
``service.py``); this module says which flags each takes and turns what they
raise into exit codes. Exit codes: 0 ok, 1 a check failed, 2 bad usage or
bad configuration. A user error is one readable line on stderr, never a
traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

# The simulated sites run the node runtime ("published through the node
# runtime"); only its arguments are built here, paho loads when it runs.
from monitor.sources.simulate import add_arguments as add_simulate_arguments

from . import __version__
from .commands.common import discard_output, flush_output
from .commands.files import cmd_acl, cmd_backtest, cmd_check_config, cmd_replay
from .commands.helptext import TOP_EPILOG, command_help
from .commands.service import cmd_demo, cmd_notify_test, cmd_run
from .commands.state import cmd_inspect, cmd_logbook, cmd_report, cmd_site_close, cmd_status
from .errors import EXIT_OK, OutputError, StormwatchError

CONFIG_HELP = "the configuration (YAML; config/example.yaml documents it)"


class _ActionArg(argparse.Action):
    """``--corrective-action TEXT [--due DATE]``, repeated: pairs kept in order."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        from dataclasses import replace

        from .host.inspections import ActionArg

        actions = list(getattr(namespace, "corrective_action", None) or [])
        if option_string == "--due":
            if not actions or actions[-1].due is not None:
                parser.error("--due must follow a --corrective-action")
            actions[-1] = replace(actions[-1], due=str(values))
        else:
            actions.append(ActionArg(str(values)))
        namespace.corrective_action = actions


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stormwatch",
        description="Stormwater compliance monitor for construction sites (Chapter 134).",
        epilog=TOP_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"stormwatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("check-config", **command_help("check-config"))
    p.add_argument("file", metavar="FILE", help="the configuration to check (YAML)")
    p.add_argument("--strict", action="store_true",
                   help="refuse implausible values too (exit 2), not only warn about them")
    p.set_defaults(func=cmd_check_config)

    p = sub.add_parser("replay", **command_help("replay"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--input", required=True, metavar="FILE.csv",
                   help="CSV with ts,site,sensor,... ('-' = stdin)")
    p.add_argument("--format", choices=("jsonl", "table"), default="jsonl")
    p.add_argument("--quiet", action="store_true", help="no progress or reject summary")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("backtest", **command_help("backtest"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--input", required=True, metavar="FILE.csv",
                   help="replay CSV ('-' = stdin)")
    p.add_argument("--format", choices=("jsonl", "table"), default="jsonl")
    p.set_defaults(func=cmd_backtest)

    p = sub.add_parser("run", **command_help("run"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--log-level", default="info",
                   choices=("debug", "info", "warning", "error"))
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("status", **command_help("status"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--json", action="store_true", help="one JSON object (its keys: above)")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("inspect", **command_help("inspect"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--site", required=True)
    p.add_argument("--inspector", required=True, action="append",
                   help="who inspected (repeat for a joint inspection)")
    p.add_argument("--at", help="ISO 8601 time with offset (default: now)")
    p.add_argument("--kind", choices=("storm", "routine", "other"), default="routine")
    p.add_argument("--notes")
    p.add_argument("--finding", action="append", metavar="'PRACTICE: condition'",
                   help="what was found at one practice (repeatable)")
    p.add_argument("--corrective-action", action=_ActionArg, metavar="TEXT",
                   help="a repair asked for (repeatable; each may be followed by --due)")
    p.add_argument("--due", action=_ActionArg, metavar="DATE",
                   help="when the preceding --corrective-action is due (date or ISO time)")
    p.add_argument("--resolved", action="append", metavar="ID",
                   help="a corrective action found done (repeatable)")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("site", **command_help("site"))
    site_sub = p.add_subparsers(dest="site_command", metavar="ACTION")
    site_sub.required = True
    p = site_sub.add_parser("close", **command_help("site close"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--site", required=True)
    p.add_argument("--at", help="date (local midnight) or ISO time with offset (default: now)")
    p.add_argument("--by", help="who certifies it")
    p.add_argument("--notes")
    p.set_defaults(func=cmd_site_close)

    p = sub.add_parser("logbook", **command_help("logbook"))
    p.add_argument("action", nargs="?", choices=("export", "verify", "anchor"), default="export")
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--site", help="export: the site whose log book to export")
    p.add_argument("--format", choices=("csv", "md"), default="csv", help="export: the format")
    p.add_argument("--anchor", metavar="SEQ:HASH",
                   help="verify: also check against a head taken earlier (`logbook anchor`)")
    p.add_argument("--json", action="store_true", help="anchor: one JSON object")
    p.add_argument("--send", action="store_true",
                   help="anchor: send the head to the notification targets of --tag")
    p.add_argument("--tag", help="anchor --send: the tag whose targets receive it "
                                 "(default: officer)")
    p.set_defaults(func=cmd_logbook)

    p = sub.add_parser("demo", **command_help("demo"))
    # The range is demo.MIN_SPEED..MAX_SPEED (why: there); demo.py is not imported
    # here, as every command would then pay for the daemon's imports.
    p.add_argument("--speed", type=float, default=1800.0,
                   help="simulated seconds per real second, 1 to 3600 "
                        "(default 1800: a day in 48 s)")
    p.add_argument("--keep", action="store_true",
                   help="keep the demo's state directory, with a configuration to look at it")
    p.add_argument("--state-dir", help="use this state directory (kept afterwards)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("simulate", **command_help("simulate"))
    add_simulate_arguments(p)  # its own func: sources.simulate.run_args

    p = sub.add_parser("notify-test", **command_help("notify-test"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--tag", help="only the targets that receive this tag")
    p.set_defaults(func=cmd_notify_test)

    p = sub.add_parser("acl", **command_help("acl"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--out", help="file to write (default: stdout)")
    p.set_defaults(func=cmd_acl)

    p = sub.add_parser("report", **command_help("report"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--site", required=True)
    p.add_argument("--from", dest="from_", required=True, metavar="DATE",
                   help="first day YYYY-MM-DD (site time) or ISO time with offset")
    p.add_argument("--to", required=True, metavar="DATE",
                   help="last day YYYY-MM-DD (inclusive) or ISO time with offset")
    p.add_argument("--out", required=True, metavar="FILE.html", help="HTML file to write")
    p.set_defaults(func=cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    name = " ".join(filter(None, (args.command, getattr(args, "site_command", None))))
    try:
        code: int = args.func(args)
        flush_output()
    except StormwatchError as exc:
        # The one place errors become output and exit codes (``errors.py``).
        if isinstance(exc, OutputError):
            discard_output()
        for line in exc.lines:
            print(f"stormwatch {name}: {line}" if exc.prefixed else line, file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `stormwatch replay ... | head` closes the pipe early; that is not an error.
        discard_output()
        return EXIT_OK
    return code


if __name__ == "__main__":
    raise SystemExit(main())

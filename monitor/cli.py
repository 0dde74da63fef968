"""The ``stormwatch`` command line: the parser, and ``main``.

The commands live in ``commands/`` (``files.py``, ``state.py``, ``people.py``,
``service.py``, ``web.py``, ``weather.py``, ``duties.py``, ``shards.py``), each
family with the flags of its commands (``add_parsers``); this module puts the
parser together and is the one place that turns what a command raises into an
exit code (``errors.py``). Exit codes: 0 ok, 1 a check failed, 2 bad usage or bad
configuration. A user error is one readable line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__
from .commands import archive, duties, files, people, service, shards, state, weather, web
from .commands.common import discard_output, flush_output
from .commands.helptext import TOP_EPILOG
from .errors import EXIT_OK, OutputError, StormwatchError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stormwatch",
        description="Stormwater compliance monitor for construction sites (Chapter 134).",
        epilog=TOP_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"stormwatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    # Each family declares its commands' flags next to the commands themselves.
    for add_parsers in (files.add_parsers, state.add_parsers, people.add_parsers,
                        web.add_parsers, service.add_parsers, weather.add_parsers,
                        archive.add_parsers, duties.add_parsers, shards.add_parsers):
        add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    name = " ".join(filter(None, (args.command, getattr(args, "site_command", None),
                                  getattr(args, "user_command", None))))
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

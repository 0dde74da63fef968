"""The ``stormwatch`` command line (DESIGN § 6).

Exit codes: 0 ok, 1 a check failed, 2 bad usage or bad configuration. A user
error is one readable line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from . import __version__
from .config import Config
from .configfile import ConfigError, load_config

if TYPE_CHECKING:
    from .store import Store

EXIT_OK, EXIT_CHECK_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A user error: printed as one line, exit 2."""


def _load(path: str) -> Config:
    try:
        return load_config(path)
    except ConfigError as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None


def cmd_check_config(args: argparse.Namespace) -> int:
    config = _load(args.file)
    print(summarise(config))
    return EXIT_OK


def summarise(config: Config) -> str:
    """One paragraph: what this configuration will watch."""
    parts = []
    for site in config.sites:
        kinds = {k: sum(1 for s in site.sensors if s.kind == k)
                 for k in ("rain", "turbidity", "sediment")}
        clocks = ("storm and 7-day inspection clocks" if site.clocks_apply
                  else "storms recorded as informational (no inspection clocks)")
        parts.append(
            f"{site.id} ({site.name or 'unnamed'}, condition {site.condition}, {site.timezone}): "
            f"{kinds['rain']} rain gauge(s), {kinds['turbidity']} turbidity probe(s), "
            f"{kinds['sediment']} sediment sensor(s); storms of {site.rain.threshold_in:.2f} in "
            f"by {site.rain.mode} with a {site.rain.dry_gap_hours:g} h dry gap; "
            f"{len(site.traps)} trap(s), {len(site.turbidity_pairs)} turbidity pair(s); {clocks}")
    return (f"OK: {len(config.sites)} site(s). " + "; ".join(parts) + ". "
            f"Broker {config.broker.host}:{config.broker.port}, state in {config.state_dir}, "
            f"InfluxDB {'off' if config.influx is None else config.influx.url}, "
            f"{len(config.notify.targets)} notification target(s).")


def cmd_replay(args: argparse.Namespace) -> int:
    from .replay import ReplayInputError, format_table, replay

    config = _load(args.config)
    show_progress = sys.stderr.isatty() and not args.quiet

    def progress(rows: int) -> None:
        print(f"\rreplay: {rows:,} rows", end="", file=sys.stderr, flush=True)

    try:
        result = replay(config, args.input, progress if show_progress else None)
    except ReplayInputError as exc:
        raise UsageError(str(exc)) from None
    if show_progress:
        print("", file=sys.stderr)
    out = sys.stdout
    if args.format == "jsonl":
        for event in result.events():
            out.write(json.dumps(event.to_json(), separators=(",", ":")) + "\n")
    else:
        out.write(format_table(config, result))
    if result.rejected and not args.quiet:
        total = sum(result.rejected.values())
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(result.rejected.items()))
        print(f"replay: {result.rows} rows, {total} rejected ({reasons})", file=sys.stderr)
        for line in result.first_rejects[:5]:
            print(f"  {line}", file=sys.stderr)
    return EXIT_OK


def cmd_backtest(args: argparse.Namespace) -> int:
    import pandas as pd

    from .csvio import backtest_csv, event_rows

    config = _load(args.config)
    try:
        result = backtest_csv(config, args.input)
    except FileNotFoundError:
        raise UsageError(f"--input: {args.input}: no such file") from None
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise UsageError(f"--input: {args.input}: {str(exc).splitlines()[0]}") from None
    rows = event_rows(result.events)
    if args.format == "jsonl":
        for row in rows:
            sys.stdout.write(json.dumps(row, separators=(",", ":")) + "\n")
    else:
        print(f"{'site':<16} {'gauge':<10} {'started':<21} {'ended':<21} {'total':>7} "
              f"{'max 24h':>8}  qualified at")
        for r in rows:
            total = f"{r['total_in']:.2f}"
            print(f"{r['site']:<16} {r['gauge']:<10} {r['started_at']:<21} "
                  f"{r['ended_at'] or 'open':<21} {total:>7} {r['max_24h_in']:8.2f}  "
                  f"{r['qualified_at'] or '-'}")
    if result.skipped:
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(result.skipped.items()))
        print(f"backtest: {result.rows} rows, skipped {reasons}", file=sys.stderr)
    return EXIT_OK


def _setup_logging(config: Config, level: str) -> None:
    import logging

    from .logs import configure

    configure(config.log_format, getattr(logging, level.upper(), logging.INFO))


def cmd_run(args: argparse.Namespace) -> int:
    import threading

    from .daemon import Daemon, install_signal_handlers

    # Handlers first: a SIGTERM while the sinks load must still mean "drain and exit 0".
    stop = threading.Event()
    install_signal_handlers(stop)
    config = _load(args.config)
    _setup_logging(config, args.log_level)
    daemon = Daemon(config, stop_event=stop, mqtt_process=True)
    return daemon.run()


def _require_database(config: Config) -> Path:
    """The state database's path; a usage error naming it when it is missing or not a
    file (a command that would answer from no data must not answer at all)."""
    from .host import db_path

    path = db_path(config)
    try:
        found = path.is_file()
        missing = not found and not path.exists()
    except OSError as exc:  # e.g. no permission to look into state_dir
        raise UsageError(f"state_dir: cannot read the database {path}: "
                         f"{exc.strerror or exc}") from None
    if missing:
        raise UsageError(f"state_dir: no database at {path} (has `stormwatch run` run with"
                         " this configuration?)")
    if not found:
        raise UsageError(f"state_dir: {path} is not a database file")
    return path


@contextmanager
def _state_store(config: Config) -> Iterator[Store]:
    """The state database, opened read-only, for a command that reads it (``status``,
    ``logbook``, ``report``).

    A missing or unreadable database is a usage error (exit 2) naming its path:
    the command cannot know the state, and an empty answer ("OK (0 rows)", a
    report saying there is no data) would read as good news. Errors met while
    reading (a damaged file, a lock held past the busy timeout) say the same.
    """
    import sqlite3

    from .host import open_store
    from .store import StoreError

    path = _require_database(config)
    try:
        store = open_store(config, readonly=True)
    except StoreError as exc:
        # Its message starts with the path already.
        raise UsageError(f"state_dir: {exc}") from None
    except (sqlite3.Error, OSError) as exc:
        # sqlite3 says "file is not a database" for a text file at the path.
        raise UsageError(f"state_dir: cannot read the database {path}: {exc}") from None
    try:
        with store:
            yield store
    except sqlite3.Error as exc:
        raise UsageError(f"state_dir: cannot read the database {path}: {exc}") from None


def cmd_status(args: argparse.Namespace) -> int:
    import time

    from .status import build_status, format_status

    config = _load(args.config)
    with _state_store(config) as store:
        status = build_status(config, store, round(time.time() * 1000))
    if args.json:
        print(json.dumps(status, indent=2, sort_keys=False))
    else:
        print(format_status(config, status))
    return EXIT_OK


def _site_config(args: argparse.Namespace) -> Config:
    config = _load(args.config)
    if config.site(args.site) is None:
        raise UsageError(f"--site: unknown site {args.site!r} "
                         f"(configured: {', '.join(s.id for s in config.sites)})")
    return config


def cmd_inspect(args: argparse.Namespace) -> int:
    import time

    from .inspect import InspectError, build_inspection, record_inspection

    config = _site_config(args)
    try:
        insp = build_inspection(
            config, args.site, args.inspector, at=args.at, kind=args.kind, notes=args.notes,
            findings=args.finding or (), actions=args.corrective_action or (),
            resolves=args.resolved or (), now_ms=round(time.time() * 1000))
        _require_database(config)
        print(record_inspection(config, insp))
    except InspectError as exc:
        raise UsageError(str(exc)) from None
    return EXIT_OK


def cmd_site_close(args: argparse.Namespace) -> int:
    import time

    from .engine.inputs import SiteClosure
    from .inspect import InspectError, check_not_ahead, parse_time, record_closure

    config = _site_config(args)
    now_ms = round(time.time() * 1000)
    try:
        at_ms = parse_time("--at", args.at, config, args.site) if args.at else now_ms
        check_not_ahead("--at", at_ms, now_ms)
    except InspectError as exc:
        raise UsageError(str(exc)) from None
    _require_database(config)
    print(record_closure(config, SiteClosure(args.site, at_ms, now_ms, args.by, args.notes)))
    return EXIT_OK


def cmd_logbook(args: argparse.Namespace) -> int:
    from .logbook import export_logbook, verify_logbook

    config = _load(args.config)
    if args.action == "verify":
        with _state_store(config) as store:
            problems, rows = verify_logbook(store)
        if problems:
            for line in problems:
                print(line, file=sys.stderr)
            print(f"logbook verify: FAILED ({len(problems)} problem(s) in {rows} rows)",
                  file=sys.stderr)
            return EXIT_CHECK_FAILED
        print(f"logbook verify: OK ({rows} rows, hash chain intact)")
        return EXIT_OK
    if args.site is None:
        raise UsageError("--site is required to export the log book")
    if config.site(args.site) is None:
        raise UsageError(f"--site: unknown site {args.site!r}")
    with _state_store(config) as store:
        text = export_logbook(config, store, args.site, args.format)
    sys.stdout.write(text)
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .demo import run_demo

    if args.speed <= 0:
        raise UsageError("--speed: must be positive")
    return run_demo(sys.stdout, speed=args.speed, keep=args.keep,
                    state_dir=Path(args.state_dir) if args.state_dir else None)


def cmd_acl(args: argparse.Namespace) -> int:
    from .acl import AclError, render_acl

    config = _load(args.config)
    try:
        text = render_acl(config)
    except AclError as exc:
        raise UsageError(str(exc)) from None
    if args.out:
        from pathlib import Path

        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_notify_test(args: argparse.Namespace) -> int:
    """Send one test message to every target (or to one tag's) and report each."""
    import logging

    from .notify.probe import run_test
    from .notify.secrets import mask
    from .notify.targets import NotifySetupError

    config = _load(args.config)
    _setup_logging(config, "error")
    # Apprise's own warnings would repeat, less clearly, what the verdicts say
    # (each verdict carries them).
    logging.getLogger("apprise").propagate = False
    try:
        verdicts = run_test(config, args.tag)
    except NotifySetupError as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        return EXIT_USAGE
    if not verdicts:
        where = f"receives tag {args.tag!r}" if args.tag else "is configured"
        raise UsageError(f"no notification target {where} (notify.targets, notify.config_file)")
    for v in verdicts:
        state = "ok    " if v.result.ok else "FAILED"
        detail = "" if v.result.ok else f": {v.result.error}"
        print(mask(f"{state} {v.target.describe()}{detail}"))
    failed = [v.target.label for v in verdicts if not v.result.ok]
    if failed:
        print(mask(f"notify-test: {len(failed)} of {len(verdicts)} target(s) did not take the "
                   f"message: {', '.join(failed)}"), file=sys.stderr)
        return EXIT_CHECK_FAILED
    print(f"notify-test: all {len(verdicts)} target(s) took the message")
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from .report import build_report, parse_bound

    config = _load(args.config)
    site = config.site(args.site)
    if site is None:
        raise UsageError(f"--site: unknown site {args.site!r} "
                         f"(configured: {', '.join(s.id for s in config.sites)})")
    bounds = []
    for name, text, end in (("--from", args.from_, False), ("--to", args.to, True)):
        try:
            bounds.append(parse_bound(text, site, end=end))
        except ValueError as exc:
            raise UsageError(f"{name}: {exc} (use YYYY-MM-DD or ISO 8601 with an offset)"
                             ) from None
    from_ms, to_ms = bounds
    if from_ms >= to_ms:
        raise UsageError(f"--from {args.from_} is not before --to {args.to}")
    # Refused before anything is written: no file is better than one that looks
    # like a report of a site with nothing to report.
    with _state_store(config) as store:
        html = build_report(config, store, site.id, from_ms, to_ms, round(time.time() * 1000))
    try:
        Path(args.out).write_text(html, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--out: cannot write {args.out}: {exc.strerror or exc}") from None
    print(f"wrote {args.out}", file=sys.stderr)
    return EXIT_OK


class _ActionArg(argparse.Action):
    """``--corrective-action TEXT [--due DATE]``, repeated: pairs kept in order."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        from dataclasses import replace

        from .inspect import ActionArg

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
        description="Stormwater compliance monitor for construction sites (Chapter 134).")
    parser.add_argument("--version", action="version", version=f"stormwatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("check-config", help="validate a configuration file")
    p.add_argument("file")
    p.set_defaults(func=cmd_check_config)

    p = sub.add_parser("replay", help="run the engine over recorded readings (CSV)")
    p.add_argument("--config", required=True)
    p.add_argument("--input", required=True, help="CSV with ts,site,sensor,... ('-' = stdin)")
    p.add_argument("--format", choices=("jsonl", "table"), default="jsonl")
    p.add_argument("--quiet", action="store_true", help="no progress or reject summary")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("backtest", help="storm events of every gauge in a CSV, vectorised")
    p.add_argument("--config", required=True)
    p.add_argument("--input", required=True, help="replay CSV (DESIGN § 6)")
    p.add_argument("--format", choices=("jsonl", "table"), default="jsonl")
    p.set_defaults(func=cmd_backtest)

    p = sub.add_parser("run", help="the daemon (foreground; SIGTERM drains and exits 0)")
    p.add_argument("--config", required=True)
    p.add_argument("--log-level", default="info",
                   choices=("debug", "info", "warning", "error"))
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("status", help="per-site clocks, traps, turbidity, sensors, ingest")
    p.add_argument("--config", required=True)
    p.add_argument("--json", action="store_true", help="one JSON object (DESIGN § 6 shape)")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("inspect", help="record an inspection by the qualified professional")
    p.add_argument("--config", required=True)
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

    p = sub.add_parser("site", help="site life cycle: `site close` records final stabilization")
    site_sub = p.add_subparsers(dest="site_command", metavar="ACTION")
    site_sub.required = True
    p = site_sub.add_parser("close", help="record final stabilization (routine clocks end)")
    p.add_argument("--config", required=True)
    p.add_argument("--site", required=True)
    p.add_argument("--at", help="date (local midnight) or ISO time with offset (default: now)")
    p.add_argument("--by", help="who certifies it")
    p.add_argument("--notes")
    p.set_defaults(func=cmd_site_close)

    p = sub.add_parser("logbook", help="export the site log book, or verify its hash chain")
    p.add_argument("action", nargs="?", choices=("export", "verify"), default="export")
    p.add_argument("--config", required=True)
    p.add_argument("--site")
    p.add_argument("--format", choices=("csv", "md"), default="csv")
    p.set_defaults(func=cmd_logbook)

    p = sub.add_parser("demo", help="a simulated site with an embedded broker, time accelerated")
    p.add_argument("--speed", type=float, default=1800.0,
                   help="simulated seconds per real second (default 1800: a day in 48 s)")
    p.add_argument("--keep", action="store_true", help="keep the demo's state directory")
    p.add_argument("--state-dir", help="use this state directory (kept afterwards)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("notify-test", help="send a test message to every notification target")
    p.add_argument("--config", required=True)
    p.add_argument("--tag", help="only the targets that receive this tag")
    p.set_defaults(func=cmd_notify_test)

    p = sub.add_parser("acl", help="write the Mosquitto ACL for the configured nodes")
    p.add_argument("--config", required=True)
    p.add_argument("--out", help="file to write (default: stdout)")
    p.set_defaults(func=cmd_acl)

    p = sub.add_parser("report", help="compliance report with plots (HTML)")
    p.add_argument("--config", required=True)
    p.add_argument("--site", required=True)
    p.add_argument("--from", dest="from_", required=True,
                   help="first day YYYY-MM-DD (site time) or ISO time with offset")
    p.add_argument("--to", required=True,
                   help="last day YYYY-MM-DD (inclusive) or ISO time with offset")
    p.add_argument("--out", required=True, help="HTML file to write")
    p.set_defaults(func=cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except UsageError as exc:
        print(f"stormwatch {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `stormwatch replay ... | head` closes the pipe early; that is not an error.
        sys.stderr.close()
        return EXIT_OK
    return code


if __name__ == "__main__":
    raise SystemExit(main())

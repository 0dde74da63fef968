"""Commands on files: ``check-config``, ``replay``, ``backtest``, ``acl`` (README.md, "Commands").

None of them touches the state directory. What they can meet is a bad file
(a configuration with mistakes, a CSV that is not UTF-8 or names a column
twice) or a place the output cannot go (a missing folder for ``--out``, a
full disk behind standard output): each is one line and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..config import Config, SiteConfig
from ..config.file import ConfigError
from ..config.plausible import storm_duty_unwatched, warnings
from ..config.web import secret_file_problem
from ..contract.localtime import local_text
from ..contract.permits import NO_GAUGE
from ..contract.rejects import RejectReason
from ..errors import EXIT_OK, EXIT_USAGE, CheckFailed, UserError
from ..ingest.checks import NaiveZone
from ..rules.active import cadence_words
from ..rules.permits.checks import permit_warnings, to_verify
from ..rules.registry import KINDS
from ..sources.filerows import Rejects
from ..sources.pertip import PerTipRows
from ..views.duties import permit_triggers
from .common import CONFIG_HELP, emit, load, write_file
from .helptext import command_help


def cmd_check_config(args: argparse.Namespace) -> int:
    config = load(args.file)
    if config.web is not None:
        # The key must exist where the configuration is checked: alert links
        # and the web app cannot be made without it.
        problem = secret_file_problem(config.web.secret_file)
        if problem is not None:
            raise ConfigError([problem])
    found = warnings(config) + permit_warnings(config)
    for line in found:
        # --strict: the same lines as errors (a deployment check that must fail).
        print(line if args.strict else f"warning: {line}", file=sys.stderr)
    # Not warnings: nothing in the file silences them, so --strict does not refuse
    # them; the user checks each rule against the permit they hold.
    for line in to_verify(config):
        print(line, file=sys.stderr)
    if found and args.strict:
        return EXIT_USAGE
    emit(summarise(config) + "\n")
    return EXIT_OK


def _routine(site: SiteConfig) -> str:
    """The routine clock as check-config states it: its cadence and where it starts (a
    site without active_since starts as its readings show: period.FirstRun)."""
    period = (f"from {site.active_since}" if site.active_since is not None else
              "from its first readings (no active_since: a lone reading followed by a "
              "longer silence does not start it)")
    if site.active_until is not None:
        period += f" until {site.active_until}"
    period += "".join(f", paused {p.from_} to {p.to}" for p in site.pauses)
    cadence = "at each permit's cadence" if site.permits else cadence_words(site)
    return f"routine inspection clocks {cadence} {period}"


def summarise(config: Config) -> str:
    """One paragraph: what this configuration will watch."""
    parts = []
    for site in config.sites:
        counts = {k: sum(1 for s in site.sensors if s.kind == k) for k in KINDS}
        kinds = ", ".join(f"{n} {KINDS[k].noun}" for k, n in counts.items()
                          if n or KINDS[k].counted_when_absent)
        clocks = (f"{_routine(site)}; {NO_GAUGE}" if storm_duty_unwatched(site)
                  else f"storm inspection clocks and {_routine(site)}" if site.clocks_apply
                  else "storms recorded as informational (no inspection clocks)")
        storms = (f"storms of {site.rain.threshold_in:.2f} in by {site.rain.mode}"
                  if not site.permits else permit_triggers(site))
        parts.append(
            f"{site.id} ({site.name or 'unnamed'}, condition {site.condition}, {site.timezone}): "
            f"{kinds}; {storms} with a {site.rain.dry_gap_hours:g} h dry gap; "
            f"{len(site.traps)} trap(s), {len(site.turbidity_pairs)} turbidity pair(s); {clocks}")
    return (f"OK: {len(config.sites)} site(s). " + "; ".join(parts) + ". "
            f"Broker {config.broker.host}:{config.broker.port}, state in {config.state_dir}, "
            f"InfluxDB {'off' if config.influx is None else config.influx.url}, "
            f"{len(config.notify.targets)} notification target(s).")


def cmd_replay(args: argparse.Namespace) -> int:
    from ..views.replay import format_table, replay

    config = load(args.config)
    now_ms, zone = _file_times(args)
    show_progress = sys.stderr.isatty() and not args.quiet

    def progress(where: str) -> None:
        print(f"\rreplay: {where:<40}", end="", file=sys.stderr, flush=True)

    result = replay(config, args.input, progress if show_progress else None, now_ms=now_ms,
                    zone=zone, arrival_order=args.arrival_order)
    if show_progress:
        print("", file=sys.stderr)
    _nothing_taken("replay", args.input, result.rows, result.taken, result.rejects)
    if args.format == "jsonl":
        for event in result.events():
            emit(json.dumps(event.to_json(), separators=(",", ":")) + "\n")
    else:
        emit(format_table(config, result))
    if not args.quiet:
        _say_what_was_not_taken("replay", result.rows, result.rejects, result.per_tip)
    return EXIT_OK


def cmd_backtest(args: argparse.Namespace) -> int:
    from ..views.backtest import backtest, event_rows

    config = load(args.config)
    now_ms, zone = _file_times(args)
    result = backtest(config, args.input, now_ms=now_ms, zone=zone)
    _nothing_taken("backtest", args.input, result.rows, result.taken, result.rejects)
    rows = event_rows(result.events)
    if args.format == "jsonl":
        for row in rows:
            emit(json.dumps(row, separators=(",", ":")) + "\n")
    else:
        emit(_backtest_table(config, rows))
    _say_what_was_not_taken("backtest", result.rows, result.rejects, result.per_tip)
    return EXIT_OK


def _file_times(args: argparse.Namespace) -> tuple[int, NaiveZone]:
    """The wall clock at the time of the run (the rows' future bound: the rules read no
    clock) and how a time without an offset is read (``--timezone``)."""
    text = args.timezone
    if text is None or text == "site":
        return round(time.time() * 1000), text
    try:
        return round(time.time() * 1000), ZoneInfo(text)
    except (ValueError, ZoneInfoNotFoundError):
        raise UserError(f"--timezone: {text!r} is neither an IANA time zone (America/New_York;"
                        " Etc/GMT+5 for a logger on standard time all year) nor 'site'"
                        ) from None


#: What to do about a reason a file's rows were refused for, said once under the counts.
_HINTS = {
    RejectReason.no_timezone.value:
        "no_timezone: times without an offset (or a local time its zone repeats or skips);"
        " say how to read them: --timezone ZONE (the logger's clock) or --timezone site",
    RejectReason.future_timestamp.value:
        "future_timestamp: later than the time of this run plus 5 minutes (a year typed"
        " wrong? a logger's clock?)",
}


def _say_what_was_not_taken(command: str, rows: int, rejects: Rejects,
                            per_tip: PerTipRows | None) -> None:
    """The rejections by reason and the first few, and the per-tip counts, on stderr."""
    if rejects.counts:
        print(f"{command}: {rejects.summary(rows)}", file=sys.stderr)
        for line in rejects.first[:5]:
            print(f"  {line}", file=sys.stderr)
        for reason in sorted(rejects.counts.keys() & _HINTS.keys()):
            print(f"  {_HINTS[reason]}", file=sys.stderr)
    # Per-tip rows: how many, and the double tips dropped (sources/pertip.py).
    for line in per_tip.summary() if per_tip else ():
        print(f"{command}: {line}", file=sys.stderr)


def _nothing_taken(command: str, source: str, rows: int, taken: int, rejects: Rejects) -> None:
    """A file that gave the engine nothing is no answer (exit 1), never an empty one."""
    if taken:
        return
    if rows:
        _say_what_was_not_taken(command, rows, rejects, None)
    raise CheckFailed(f"{source}: no row taken: "
                      + (f"every one of its {rows} rows was refused" if rows
                         else "it has no rows below its header"))


def cmd_acl(args: argparse.Namespace) -> int:
    from ..sources.acl import render_acl

    config = load(args.config)
    text = render_acl(config)
    if args.out:
        write_file("--out", args.out, text)
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        emit(text)
    return EXIT_OK




def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The parsers of this family's commands, each bound to its function."""
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
    _add_timezone(p)
    p.add_argument("--arrival-order", action="store_true",
                   help="fold the rows in file order under the daemon's lateness rule, as "
                   "messages arriving (to compare with a daemon); default: in event time")
    p.add_argument("--quiet", action="store_true", help="no progress or reject summary")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("backtest", **command_help("backtest"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--input", required=True, metavar="FILE.csv",
                   help="replay CSV ('-' = stdin)")
    p.add_argument("--format", choices=("jsonl", "table"), default="jsonl")
    _add_timezone(p)
    p.set_defaults(func=cmd_backtest)

    p = sub.add_parser("acl", **command_help("acl"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--out", help="file to write (default: stdout)")
    p.set_defaults(func=cmd_acl)


def _add_timezone(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timezone", metavar="ZONE|site",
                   help="read times without an offset in this IANA zone (the logger's "
                   "clock), or each row's site's timezone ('site'); without it they are "
                   "refused (no_timezone)")


def _backtest_table(config: Config, rows: list[dict[str, object]]) -> str:
    """The storms as a table, each time in its site's local time with the zone named,
    as ``replay --format table`` prints them."""
    lines = [f"{'site':<16} {'gauge':<10} {'started':<22} {'ended':<22} {'total':>7} "
             f"{'max 24h':>8}  qualified at"]
    for r in rows:
        site = config.site(str(r["site"]))
        zone = site.zone if site is not None else ZoneInfo("UTC")
        local = [local_text(v if isinstance(v := r[k], str) else None, zone, empty=empty)
                 for k, empty in (("started_at", "-"), ("ended_at", "open"),
                                  ("qualified_at", "-"))]
        total, max24 = float(str(r["total_in"])), float(str(r["max_24h_in"]))
        lines.append(f"{r['site']!s:<16} {r['gauge']!s:<10} {local[0]:<22} {local[1]:<22} "
                     f"{total:7.2f} {max24:8.2f}  {local[2]}")
    return "\n".join(lines) + "\n"

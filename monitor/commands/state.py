"""Commands on the state database: ``status``, ``inspect``, ``site close``/``shutdown``/
``resume``, ``logbook``
(export, verify, anchor), ``report`` (README.md, "Commands").

Each refuses an unusable ``state_dir`` or a missing database with one line
naming the path (``common.require_database``): no data is not an all clear,
and a file where the directory should be is not "no database yet".
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from ..config import Config, photos_dir_of
from ..config.invocation import program
from ..contract.localtime import local_text
from ..errors import EXIT_CHECK_FAILED, EXIT_OK, UserError
from .common import (
    CONFIG_HELP,
    emit,
    load,
    require_database,
    setup_logging,
    site_config,
    state_store,
    write_file,
)
from .helptext import command_help

if TYPE_CHECKING:
    from ..sinks.notify.probe import Verdict
    from ..views.logbook import Verification


def _now_ms() -> int:
    return round(time.time() * 1000)


def cmd_status(args: argparse.Namespace) -> int:
    from ..views.status import build_status, format_status

    config = load(args.config)
    with state_store(config) as store:
        status = build_status(config, store, _now_ms())
    if args.json:
        emit(json.dumps(status, indent=2, sort_keys=False) + "\n")
    else:
        emit(format_status(config, status) + "\n")
    return EXIT_OK


def cmd_inspect(args: argparse.Namespace) -> int:
    from ..host.inspections import build_inspection, record_inspection

    config = site_config(args.config, args.site)
    insp = build_inspection(
        config, args.site, args.inspector, at=args.at, kind=args.kind, notes=args.notes,
        findings=args.finding or (), actions=args.corrective_action or (),
        resolves=args.resolved or (), now_ms=_now_ms())
    require_database(config, write=True)
    emit(record_inspection(config, insp) + "\n")
    return EXIT_OK


def cmd_site_close(args: argparse.Namespace) -> int:
    from ..contract.inputs import SiteClosure
    from ..host.inspections import check_not_ahead, parse_time, record_closure

    config = site_config(args.config, args.site)
    now_ms = _now_ms()
    at_ms = parse_time("--at", args.at, config, args.site) if args.at else now_ms
    check_not_ahead("--at", at_ms, now_ms)
    require_database(config, write=True)
    emit(record_closure(config, SiteClosure(args.site, at_ms, now_ms, args.by, args.notes))
         + "\n")
    return EXIT_OK


def cmd_site_shutdown(args: argparse.Namespace) -> int:
    from ..contract.inputs import ShutdownNotice
    from ..host.inspections import check_not_ahead, parse_time, record_shutdown

    config = site_config(args.config, args.site)
    now_ms = _now_ms()
    at_ms = parse_time("--at", args.at, config, args.site) if args.at else now_ms
    check_not_ahead("--at", at_ms, now_ms)
    resume = args.site_command == "resume"
    notice = getattr(args, "notice", None)
    if not resume and not (notice or "").strip():
        raise UserError("--notice: the written notice of the shutdown is required (what was "
                        "sent, to whom, when)")
    require_database(config, write=True)
    emit(record_shutdown(config, ShutdownNotice(args.site, at_ms, notice, resume, now_ms,
                                                args.by)) + "\n")
    return EXIT_OK


#: Who receives ``logbook anchor --send`` unless ``--tag`` says otherwise: the anchor
#: is for someone outside the site's control (the village's stormwater officer).
ANCHOR_TAG = "officer"


def cmd_logbook(args: argparse.Namespace) -> int:
    from ..views.logexport import export_logbook

    config = load(args.config)
    for flag, value, action in (("--anchor", args.anchor, "verify"),
                                ("--json", args.json, "anchor"), ("--send", args.send, "anchor"),
                                ("--tag", args.tag, "anchor")):
        if value and args.action != action:
            raise UserError(f"{flag} goes with `logbook {action}`")
    if args.tag and not args.send:
        raise UserError("--tag goes with --send")
    if args.action == "verify":
        return _logbook_verify(config, args)
    if args.action == "anchor":
        return _logbook_anchor(config, args)
    if args.site is None:
        raise UserError("--site is required to export the log book")
    if config.site(args.site) is None:
        raise UserError(f"--site: unknown site {args.site!r}")
    with state_store(config) as store:
        text = export_logbook(config, store, args.site, args.format)
    emit(text)
    return EXIT_OK


def _logbook_verify(config: Config, args: argparse.Namespace) -> int:
    from ..views.logbook import parse_anchor, verify_logbook

    anchor = None
    if args.anchor is not None:
        # Refused before the database is opened: a mistyped anchor is not a
        # verdict on the log book.
        try:
            anchor = parse_anchor(args.anchor)
        except ValueError as exc:
            raise UserError(f"--anchor: {exc}") from None
    with state_store(config) as store:
        verdict = verify_logbook(store, anchor, photos_dir_of(config),
                                 sites=[s.id for s in config.sites])
    if verdict.problems:
        for line in verdict.problems:
            print(line, file=sys.stderr)
        print(f"logbook verify: FAILED ({len(verdict.problems)} problem(s) in {verdict.rows}"
              " rows)", file=sys.stderr)
        return EXIT_CHECK_FAILED
    anchored = f"; {verdict.anchored}" if verdict.anchored else ""
    emit(f"logbook verify: OK ({verdict.rows} rows, hash chain intact{anchored})\n")
    return EXIT_OK


def _logbook_anchor(config: Config, args: argparse.Namespace) -> int:
    """Print the head (and send it): exit 1 when the chain does not verify, as such a
    head is no anchor, or when a target did not take it."""
    from ..sinks.notify.secrets import mask
    from ..views.logbook import chain_zone, verify_logbook

    with state_store(config) as store:
        verdict = verify_logbook(store, photos_dir=photos_dir_of(config),
                                 sites=[s.id for s in config.sites])
    head, config_path = verdict.head, os.path.abspath(args.config)
    sent = _send_anchor(config, args, verdict, config_path) if args.send else None
    if args.json:
        out: dict[str, Any] = {
            "seq": head.seq, "hash": head.hash, "anchor": head.anchor,
            "recorded_at": head.recorded_at,
            "recorded_local": local_text(head.recorded_at, chain_zone(config), empty=""
                                         ) or None,
            "rows": verdict.rows, "intact": not verdict.problems, "problems": verdict.problems}
        if sent is not None:
            out["sent"] = [{"target": v.target.label, "ok": v.result.ok, "error": v.result.error}
                           for v in sent]
        emit(mask(json.dumps(out, indent=2)) + "\n")
    else:
        emit(f"log book head: {head.describe(chain_zone(config))}\n")
        if not verdict.problems:
            emit(f"hash chain intact ({verdict.rows} rows); check later with: {program()}"
                 f" logbook verify --config {config_path} --anchor {head.anchor}\n")
        for v in sent or []:
            detail = "" if v.result.ok else f": {v.result.error}"
            emit(mask(f"{'sent  ' if v.result.ok else 'FAILED'} {v.target.describe()}{detail}")
                 + "\n")
    code = EXIT_OK
    if verdict.problems:
        for line in verdict.problems:
            print(line, file=sys.stderr)
        print(f"logbook anchor: the hash chain does not verify ({len(verdict.problems)}"
              f" problem(s) in {verdict.rows} rows): this head is no anchor to trust",
              file=sys.stderr)
        code = EXIT_CHECK_FAILED
    failed = [v.target.label for v in sent or [] if not v.result.ok]
    if failed:
        print(mask(f"logbook anchor: {len(failed)} of {len(sent or [])} target(s) did not take"
                   f" the anchor: {', '.join(failed)}"), file=sys.stderr)
        code = EXIT_CHECK_FAILED
    return code


def _send_anchor(config: Config, args: argparse.Namespace, verdict: Verification,
                 config_path: str) -> list[Verdict]:
    """The head to the targets of ``--tag`` (``officer``), through the daemon's targets."""
    from ..sinks.notify.probe import send_to
    from ..views.logbook import anchor_message

    setup_logging(config, "error")
    # As in notify-test: Apprise's warnings would repeat what each verdict says.
    logging.getLogger("apprise").propagate = False
    tag = args.tag or ANCHOR_TAG
    message = anchor_message(config, verdict, config_path, _now_ms())
    verdicts = send_to(config, tag, lambda _target: message)
    if not verdicts:
        raise UserError(f"--send: no notification target receives tag {tag!r}"
                         " (notify.targets, notify.config_file); the anchor was not sent")
    return verdicts


def cmd_report(args: argparse.Namespace) -> int:
    from ..views.logbook import LogbookUnreadable
    from ..views.report.build import build_report, parse_bound

    config = site_config(args.config, args.site)
    site = config.site(args.site)
    assert site is not None  # site_config refused an unknown one
    bounds = []
    for name, text, end in (("--from", args.from_, False), ("--to", args.to, True)):
        try:
            bounds.append(parse_bound(text, site, end=end))
        except ValueError as exc:
            raise UserError(f"{name}: {exc} (use YYYY-MM-DD or ISO 8601 with an offset)"
                             ) from None
    from_ms, to_ms = bounds
    if from_ms >= to_ms:
        raise UserError(f"--from {args.from_} is not before --to {args.to}")
    # Refused before anything is written: no file is better than one that looks
    # like a report of a site with nothing to report.
    with state_store(config) as store:
        try:
            html = build_report(config, store, site.id, from_ms, to_ms, _now_ms())
        except LogbookUnreadable as exc:
            # The events come from the log book: with a row that cannot be read, a
            # report would silently leave it out.
            print(f"stormwatch report: {exc}; no report written", file=sys.stderr)
            return EXIT_CHECK_FAILED
    fmt = args.format or ("pdf" if args.out.lower().endswith(".pdf") else "html")
    if fmt == "pdf":
        from ..views.report.pdf import render_pdf

        write_file("--out", args.out, render_pdf(html))
    else:
        write_file("--out", args.out, html)
    print(f"wrote {args.out}", file=sys.stderr)
    return EXIT_OK


class _ActionArg(argparse.Action):
    """``--corrective-action TEXT [--due DATE]`` and ``--maintenance TEXT [--due DATE]``,
    repeated: pairs kept in order."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        from dataclasses import replace

        from ..host.inspections import ActionArg

        actions = list(getattr(namespace, "corrective_action", None) or [])
        if option_string == "--due":
            if not actions or actions[-1].due is not None:
                parser.error("--due must follow a --corrective-action or --maintenance")
            actions[-1] = replace(actions[-1], due=str(values))
        else:
            kind = "maintenance" if option_string == "--maintenance" else "corrective"
            actions.append(ActionArg(str(values), kind=kind))
        namespace.corrective_action = actions


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The parsers of this family's commands, each bound to its function."""
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
    p.add_argument("--maintenance", action=_ActionArg, metavar="TEXT", dest="corrective_action",
                   help="routine maintenance found (repeatable): due by the permits' "
                        "maintenance rule (EPA CGP 2022 Part 2.1.4.b: the close of the next "
                        "business day)")
    p.add_argument("--due", action=_ActionArg, metavar="DATE",
                   help="when the preceding --corrective-action or --maintenance is due "
                        "(date or ISO time)")
    p.add_argument("--resolved", action="append", metavar="ID",
                   help="a corrective action found done (repeatable)")
    p.set_defaults(func=cmd_inspect)

    _site_parsers(sub)

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

    _report_parser(sub)


def _site_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``site close``, ``site shutdown`` and ``site resume``: the site's life cycle."""
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
    for action in ("shutdown", "resume"):
        p = site_sub.add_parser(action, **command_help(f"site {action}"))
        p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
        p.add_argument("--site", required=True)
        p.add_argument("--at", help="date (local midnight) or ISO time with offset "
                                    "(default: now)")
        p.add_argument("--by", help="who records it")
        if action == "shutdown":
            p.add_argument("--notice", required=True,
                           help="the written notice of the shutdown the permit asks for")
        p.set_defaults(func=cmd_site_shutdown)


def _report_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``report``: the period, the site, and the file (HTML or PDF) to write."""
    p = sub.add_parser("report", **command_help("report"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--site", required=True)
    p.add_argument("--from", dest="from_", required=True, metavar="DATE",
                   help="first day YYYY-MM-DD (site time) or ISO time with offset")
    p.add_argument("--to", required=True, metavar="DATE",
                   help="last day YYYY-MM-DD (inclusive) or ISO time with offset")
    p.add_argument("--out", required=True, metavar="FILE.html",
                   help="file to write (HTML, or PDF with --format pdf or a .pdf name)")
    p.add_argument("--format", choices=("html", "pdf"), default=None,
                   help="html (one file, plots inline) or pdf (the same report laid out "
                        "for paper); default: pdf for an --out ending in .pdf, else html")
    p.set_defaults(func=cmd_report)

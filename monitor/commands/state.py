"""Commands on the state database: ``status``, ``inspect``, ``site close``, ``logbook``
(export, verify, anchor), ``report`` (DESIGN § 6).

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

from ..config import Config
from ..contract.localtime import local_text
from ..errors import EXIT_CHECK_FAILED, EXIT_OK, UserError
from ..views.invocation import program
from .common import (
    emit,
    load,
    require_database,
    setup_logging,
    site_config,
    state_store,
    write_file,
)

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


#: Who receives ``logbook anchor --send`` unless ``--tag`` says otherwise: the anchor
#: is for someone outside the site's control (the village's stormwater officer).
ANCHOR_TAG = "officer"


def cmd_logbook(args: argparse.Namespace) -> int:
    from ..views.logbook import export_logbook

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
        verdict = verify_logbook(store, anchor)
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
        verdict = verify_logbook(store)
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
    write_file("--out", args.out, html)
    print(f"wrote {args.out}", file=sys.stderr)
    return EXIT_OK

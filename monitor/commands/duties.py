"""``duties``: each duty of a site's permits, with its source, trigger, deadline rule
and state now (``views/duties.py``; README.md, "Commands").

The duties come from the configuration alone; the state is read from the state
directory as ``status`` reads it. A state directory without a database yet is
"no state yet" for each clocked duty, not a refusal: the duties are worth
reading before the daemon first runs. A database that exists but cannot be
read is refused as ``status`` refuses it.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from ..config import Config
from ..errors import EXIT_OK
from ..store.opening import db_path
from .common import CONFIG_HELP, check_state_dir, emit, site_config, state_store
from .helptext import command_help


def _entry(config: Config, site_id: str) -> dict[str, Any] | None:
    """The site's ``status`` object, or None when the daemon has never run."""
    from ..views.status import build_status

    check_state_dir(config, write=False)
    if not db_path(config).exists():
        return None
    with state_store(config) as store:
        status = build_status(config, store, round(time.time() * 1000), only={site_id})
    # When it was judged: an action's permit deadline has passed or not at this instant.
    entry: dict[str, Any] = {**status["sites"][site_id], "generated_at": status["generated_at"]}
    return entry


def cmd_duties(args: argparse.Namespace) -> int:
    from ..views.duties import build_duties, format_duties

    config = site_config(args.config, args.site)
    site = config.site(args.site)
    assert site is not None  # site_config refused an unknown one
    shown = build_duties(site, _entry(config, site.id), config.weather is not None)
    if args.json:
        emit(json.dumps(shown, indent=2) + "\n")
    else:
        emit(format_duties(site, shown) + "\n")
    return EXIT_OK


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The parser of ``duties``, bound to its function."""
    p = sub.add_parser("duties", **command_help("duties"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--site", required=True)
    p.add_argument("--json", action="store_true", help="one JSON object (its keys: above)")
    p.set_defaults(func=cmd_duties)

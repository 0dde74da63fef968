"""``stormwatch shards``: whether the daemons' configurations work side by side as site
shards, and who owns what (deploy/README.md, "Beyond one machine")."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..config.file import load_config
from ..config.shards import Shard, check_shards
from ..errors import EXIT_CHECK_FAILED, EXIT_OK, UserError
from .common import emit
from .helptext import command_help


def cmd_shards(args: argparse.Namespace) -> int:
    from sensors.configfile import load_config as load_node

    shards = [Shard(Path(p), load_config(p)) for p in args.config]
    nodes = [(Path(p), load_node(p).site) for p in args.nodes or ()]
    found = check_shards(shards, nodes)
    if found.usage:
        raise UserError(*found.usage)
    lines = []
    for shard in shards:
        c = shard.config
        sites = [s.id for s in c.sites]
        lines.append(f"shard {shard.name} ({shard.path}): client {c.broker.client_id}, "
                     f"account {c.broker.username or 'stormwatch'}, state {c.state_dir}; "
                     f"{len(sites)} site(s): {', '.join(sites)}")
    for problem in found.ownership:
        lines.append(f"FAILED: {problem}")
    if not found.ownership:
        lines.append(f"OK: {len(found.owners)} site(s), each owned by exactly one of "
                     f"{len(shards)} shard(s)")
    emit("\n".join(lines) + "\n")
    return EXIT_CHECK_FAILED if found.ownership else EXIT_OK


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The parser of ``shards``, bound to its function."""
    p = sub.add_parser("shards", **command_help("shards"))
    p.add_argument("--config", required=True, nargs="+", metavar="FILE",
                   help="each shard daemon's configuration")
    p.add_argument("--nodes", nargs="+", metavar="NODE.yaml",
                   help="the sensor nodes' files: a site one publishes for and no shard "
                        "owns is refused")
    p.set_defaults(func=cmd_shards)

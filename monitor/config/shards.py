"""Site shards: several daemons, each owning the sites its configuration lists
(deploy/README.md, "Beyond one machine").

``check_shards`` reads the configurations of every shard (and, when given, the
sensor nodes' files) and says what keeps them from working side by side: a site
owned twice (two daemons journaling and confirming the same readings) or by
nobody (a node publishing for a site no daemon reads), two shards with one
client id (the broker keeps one session per id: they would take it from each
other), one state directory or one broker account, or different topic prefixes.
Pure: the files are read by the command.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import Config


@dataclass(frozen=True, slots=True)
class Shard:
    """One shard's configuration and the file it came from."""

    path: Path
    config: Config

    @property
    def name(self) -> str:
        return self.config.shard.id if self.config.shard is not None else f"({self.path})"


@dataclass(slots=True)
class ShardCheck:
    """What ``check_shards`` found: ``usage`` problems (the files cannot work together
    as shards: exit 2), ``ownership`` problems (a site owned twice or by nobody: exit
    1), and who owns what."""

    usage: list[str] = field(default_factory=list)
    ownership: list[str] = field(default_factory=list)
    owners: dict[str, list[str]] = field(default_factory=dict)


def check_shards(shards: Sequence[Shard], node_sites: Sequence[tuple[Path, str]] = ()
                 ) -> ShardCheck:
    """Every problem of running ``shards`` side by side (module docstring)."""
    out = ShardCheck()
    for shard in shards:
        if shard.config.shard is None:
            out.usage.append(f"{shard.path}: shard: missing (give each daemon's "
                             "configuration its shard: {id: ...})")
    for what, key in (("shard id", lambda c: c.shard.id if c.shard else None),
                      ("broker.client_id", lambda c: c.broker.client_id),
                      ("state_dir", lambda c: str(Path(c.state_dir).resolve())),
                      ("broker.username", lambda c: c.broker.username or "stormwatch")):
        seen: dict[object, Shard] = {}
        for shard in shards:
            value = key(shard.config)
            if value is None:
                continue
            if value in seen:
                out.usage.append(f"{shard.path}: {what}: {value} is shard {seen[value].name}'s "
                                 "too; each shard needs its own")
            else:
                seen[value] = shard
    prefixes = {s.config.broker.topic_prefix.rstrip("/") for s in shards}
    if len(prefixes) > 1:
        out.usage.append("broker.topic_prefix: the shards use " + ", ".join(sorted(prefixes))
                         + "; nodes publish under one prefix, so the shards need one")
    for shard in shards:
        for site in shard.config.sites:
            out.owners.setdefault(site.id, []).append(shard.name)
    for site_id, owners in sorted(out.owners.items()):
        if len(owners) > 1:
            out.ownership.append(f"site {site_id}: owned by {len(owners)} shards ("
                                 + ", ".join(owners) + "); each site needs exactly one")
    for path, site_id in node_sites:
        if site_id not in out.owners:
            out.ownership.append(f"site {site_id}: owned by nobody (the node of {path} "
                                 "publishes for it); list it in one shard's sites")
    return out

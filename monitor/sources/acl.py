"""Mosquitto access control generated from the site configuration.

Theory of operation
-------------------
The MQTT topics are a contract (``sensors/README.md``)::

    {prefix}/{site}/{sensor}/reading    a sensor node's readings
    {prefix}/{site}/{sensor}/status     a sensor node's health (and its last will)
    {prefix}/{site}/{sensor}/journaled  the daemon's confirmation of what it journaled
    {prefix}/{site}/inspection          an inspection recorded from the field

Once ``acl_file`` is set, Mosquitto denies every topic that the file does not
grant, so this module only ever grants. There are three kinds of account:

* the **daemon** (``broker.username``, ``stormwatch`` when unset) reads
  ``{prefix}/#`` and writes the confirmations ``{prefix}/+/+/journaled``
  (sensors/README.md, "MQTT contract", "End-to-end confirmation"); it may also write
  ``{prefix}/+/inspection`` (an inspection published with its account is
  recorded like any other), which stormwatch itself does not need:
  ``stormwatch inspect`` writes the daemon's journal and never logs in to
  the broker;
* one **node** account per node, ``{site}.{node}`` for the sensors that name
  their node (``node`` on the sensor), ``{site}.{sensor}`` for a sensor that
  names none; it writes the reading and status topics of its sensors and
  reads their ``journaled`` confirmations, and nothing else, so a stolen node
  can neither read the site's data nor learn about another node's, nor speak
  for another node or site;
* one **qualified-professional** account per site, ``{site}.qp``, which writes
  that site's inspection topic only (field inspections from a phone app).

Nobody but the daemon reads readings, and nodes read only their own
confirmations; the file has no lines before its
first ``user`` line, so anonymous clients (if ``allow_anonymous`` were ever
turned on) get nothing either.

Account names use ``.``, which ids cannot contain (``config.ID_PATTERN``), so
``{site}.{sensor}`` is unambiguous and can never clash with the daemon's
default name. The one clash possible is a sensor with the id ``qp``; it is
refused with a clear message rather than merged with the site's qualified
professional.

A node that carries several sensors (a Pi with a gauge and a probe) needs the
grants of all of them over its one connection: sensors of one site that name
the same ``node`` share one account ``{site}.{node}`` with all their topics.

The output is deterministic (accounts and topics sorted), so a regenerated
file that did not change is byte-for-byte the same and diffs stay readable.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ..config import Config, SensorConfig, SiteConfig
from ..errors import UserError

#: The daemon's account when ``broker.username`` is not set.
DEFAULT_DAEMON_USERNAME = "stormwatch"

#: Suffix of a site's qualified-professional account, ``{site}.qp``.
QP_SUFFIX = "qp"

Role = Literal["daemon", "node", "qp"]

#: Characters that would break a line of the ACL or of the password file.
_UNSAFE_IN_USERNAME = frozenset(":\n\r\t\0")


class AclError(UserError, ValueError):
    """The configuration cannot be expressed as a safe Mosquitto ACL."""


@dataclass(frozen=True, slots=True)
class Account:
    """One broker account and the topics it may read and write."""

    username: str
    role: Role
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    note: str = ""


# --------------------------------------------------------------------------- topics


def topic_prefix(config: Config) -> str:
    """The contract's topic prefix, normalised as the daemon uses it (no trailing ``/``)."""
    prefix = config.broker.topic_prefix.rstrip("/")
    if not prefix:
        raise AclError("broker.topic_prefix: must not be empty")
    if any(c in prefix for c in "+#\n\r\0"):
        raise AclError(f"broker.topic_prefix: {prefix!r} must not contain the MQTT wildcards "
                       "+ or #, or line breaks")
    if prefix != prefix.strip():
        raise AclError(f"broker.topic_prefix: {prefix!r} must not start or end with blanks")
    return prefix


def reading_topic(prefix: str, site: str, sensor: str) -> str:
    return f"{prefix}/{site}/{sensor}/reading"


def status_topic(prefix: str, site: str, sensor: str) -> str:
    return f"{prefix}/{site}/{sensor}/status"


def journaled_topic(prefix: str, site: str, sensor: str) -> str:
    return f"{prefix}/{site}/{sensor}/journaled"


def inspection_topic(prefix: str, site: str) -> str:
    return f"{prefix}/{site}/inspection"


# --------------------------------------------------------------------------- accounts


def daemon_username(config: Config) -> str:
    """The account the daemon connects with."""
    return config.broker.username or DEFAULT_DAEMON_USERNAME


def _node_id(sensor: SensorConfig) -> str:
    # A sensor that names no node is its own node.
    return sensor.node or sensor.id


def _sorted_sites(config: Config) -> list[SiteConfig]:
    return sorted(config.sites, key=lambda s: s.id)


def node_accounts(config: Config) -> dict[str, list[str]]:
    """Each sensor-node account and the topics it may write, sorted by account name."""
    prefix = topic_prefix(config)
    grants: dict[str, set[str]] = {}
    for site in _sorted_sites(config):
        for sensor in site.sensors:
            topics = grants.setdefault(f"{site.id}.{_node_id(sensor)}", set())
            topics.add(reading_topic(prefix, site.id, sensor.id))
            topics.add(status_topic(prefix, site.id, sensor.id))
    return {name: sorted(grants[name]) for name in sorted(grants)}


def node_confirmations(config: Config) -> dict[str, list[str]]:
    """Each sensor-node account and the ``journaled`` topics it may read: its sensors'."""
    prefix = topic_prefix(config)
    grants: dict[str, set[str]] = {}
    for site in _sorted_sites(config):
        for sensor in site.sensors:
            grants.setdefault(f"{site.id}.{_node_id(sensor)}", set()).add(
                journaled_topic(prefix, site.id, sensor.id))
    return {name: sorted(grants[name]) for name in sorted(grants)}


def _sensors_of(config: Config, username: str) -> str:
    """``site rg1 (rain)``: the sensors whose topics a node account writes."""
    site_id, _, node = username.partition(".")
    site = config.site(site_id)
    sensors = [f"{s.id} ({s.kind})" for s in (site.sensors if site else [])
               if _node_id(s) == node]
    return f"{site_id} " + ", ".join(sorted(sensors))


def qp_accounts(config: Config) -> dict[str, list[str]]:
    """Each site's qualified-professional account and the topic it may write."""
    prefix = topic_prefix(config)
    return {f"{site.id}.{QP_SUFFIX}": [inspection_topic(prefix, site.id)]
            for site in _sorted_sites(config)}


def accounts(config: Config, *, qualified_professionals: bool = True) -> list[Account]:
    """Every account of the ACL: the daemon first, then nodes and qualified professionals.

    Raises ``AclError`` when two roles would share one username.
    """
    prefix = topic_prefix(config)
    if config.shard is None:
        daemon = Account(daemon_username(config), "daemon", read=(f"{prefix}/#",),
                         write=(f"{prefix}/+/+/journaled", f"{prefix}/+/inspection"),
                         note="the stormwatch daemon: reads every topic, publishes the "
                              "confirmations (and may publish inspections)")
    else:
        # A shard's daemon owns its sites and no other (deploy/README.md, "Beyond one
        # machine"): its account reads and confirms those sites' topics only.
        sites = [site.id for site in _sorted_sites(config)]
        daemon = Account(daemon_username(config), "daemon",
                         read=tuple(f"{prefix}/{s}/#" for s in sites),
                         write=tuple(t for s in sites for t in (
                             f"{prefix}/{s}/+/journaled", inspection_topic(prefix, s))),
                         note=f"the stormwatch daemon of shard {config.shard.id}: reads its "
                              "sites' topics, publishes their confirmations")
    reads = node_confirmations(config)
    nodes = [Account(name, "node", read=tuple(reads.get(name, ())), write=tuple(topics),
                     note=f"sensor node of {_sensors_of(config, name)}: writes its readings "
                          "and status, reads its confirmations, nothing else")
             for name, topics in node_accounts(config).items()]
    qps = ([Account(name, "qp", write=tuple(topics),
                    note="qualified professional: field inspections of this site only")
            for name, topics in qp_accounts(config).items()]
           if qualified_professionals else [])
    result = [daemon, *nodes, *qps]
    _check_usernames(result)
    return result


def _check_usernames(accounts: Iterable[Account]) -> None:
    seen: dict[str, Role] = {}
    for account in accounts:
        name = account.username
        if not name or name != name.strip() or any(c in _UNSAFE_IN_USERNAME for c in name):
            raise AclError(f"{name!r}: not usable as a Mosquitto username (empty, surrounding "
                           "blanks, ':' or control characters)")
        if name in seen:
            if account.role == "qp" and seen[name] == "node":
                raise AclError(f"{name}: a sensor (or node) with the id {QP_SUFFIX!r} clashes "
                               "with the site's qualified-professional account; rename the "
                               "sensor")
            raise AclError(f"{name}: used by both the {seen[name]} and a {account.role} "
                           "account; choose another broker.username")
        seen[name] = account.role


# --------------------------------------------------------------------------- rendering

_HEADER = """\
# Mosquitto ACL for stormwatch. GENERATED from the site configuration: do not
# edit by hand, regenerate after adding or removing sites or sensors:
#
#   stormwatch acl --config /etc/stormwatch/stormwatch.yaml \\
#       --out /etc/mosquitto/stormwatch.acl
#   systemctl reload mosquitto      # SIGHUP re-reads acl_file and password_file
#
# Topics (the MQTT contract: sensors/README.md):
#   {prefix}/SITE/SENSOR/reading
#   {prefix}/SITE/SENSOR/status
#   {prefix}/SITE/SENSOR/journaled   (the daemon's confirmations to the node)
#   {prefix}/SITE/inspection
# With acl_file set, Mosquitto denies every topic not granted below. There are
# no lines before the first `user`, so anonymous clients get nothing; only the
# daemon may read readings, and a node reads only its own confirmations.
#
# Every username below needs a password in the password_file:
#
#   mosquitto_passwd -c /etc/mosquitto/stormwatch.passwd {daemon}
#       (-c creates the file and REPLACES an existing one; use it once)
#   mosquitto_passwd /etc/mosquitto/stormwatch.passwd SITE.NODE
#       (prompts for the password; `-b FILE USER PASSWORD` for scripts, but the
#       password then shows in the process list and shell history)
#
# The daemon logs in only when its configuration names the account: set
# broker.username: {daemon} and put the password in broker.password_file.
# Each node's account and password go into that node's configuration.
#
# Accounts:
#   {daemon}: the daemon; reads every topic and publishes the `journaled`
#       confirmations (its grant to publish inspections is not used by
#       stormwatch itself). No other program needs this account:
#       `stormwatch inspect` writes the daemon's journal and does not use the
#       broker. With use_username_as_clientid (deploy/mosquitto/stormwatch.conf)
#       a second login with this account would take over the daemon's session.
#   SITE.NODE: a sensor node (a Pi) and the sensors that name it (`node:` in the
#       configuration): writes their reading and status topics and reads their
#       journaled confirmations, nothing else. A sensor
#       that names no node has an account of its own, SITE.SENSOR.
#   SITE.qp: the site's qualified professional: its inspection topic only.
"""


def render_acl(config: Config, *, qualified_professionals: bool = True) -> str:
    """The Mosquitto ``acl_file`` text for ``config`` (deterministic)."""
    prefix = topic_prefix(config)
    lines = [_HEADER.format(prefix=prefix, daemon=daemon_username(config))]
    for account in accounts(config, qualified_professionals=qualified_professionals):
        lines.append(f"# {account.note}")
        lines.append(f"user {account.username}")
        lines.extend(f"topic read {topic}" for topic in account.read)
        lines.extend(f"topic write {topic}" for topic in account.write)
        lines.append("")
    return "\n".join(lines)

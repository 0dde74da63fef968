"""Commands on the field app's people: ``user add``, ``user link``, ``user token``,
``user list``, ``user sites``, ``user revoke``, ``user remove``.

They write ``state_dir/users.sqlite`` (``store/users.py``), never the
daemon's database, so they run beside a running daemon and web app; the web
app looks every session and token up there at every request, so what
``revoke``, ``remove`` and ``sites`` change holds from the person's very next
request. What they refuse is a usage error naming the flag (exit 2): a ``qp``
who is not on the roster of a site they would record on (§ 134-9A(2): "a
qualified professional"), an unknown site, a person who does not exist.
Tokens are printed once and stored only as hashes; none is logged.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from ..config import Config
from ..contract.inputs import CONTRACTOR
from ..errors import EXIT_CHECK_FAILED, EXIT_OK, UserError
from ..store.users import API_TOKEN_DAYS, ROLES, SIGNIN_MINUTES, Access, User, Users
from .common import CONFIG_HELP, check_state_dir, emit, load, setup_logging
from .helptext import command_help

#: The longest an API token may be made to work: it is a password nobody changes.
MAX_TOKEN_DAYS = 366
#: Enough to refuse a typo (a missing @, a space), not a full RFC 5322 parser.
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _now_ms() -> int:
    return round(time.time() * 1000)


def _users(config: Config) -> Users:
    check_state_dir(config, write=True, create=True)
    return Users.open(Path(config.state_dir))


def _person(users: Users, name: str) -> User:
    user = users.get(name)
    if user is None:
        known = ", ".join(u.name for u in users.all()) or "none yet"
        raise UserError(f"--name: there is no user named {name!r} (users: {known}; "
                         "add one with `stormwatch user add`)")
    return user


def roster_problem(config: Config, name: str, sites: list[str]) -> str | None:
    """Why ``name`` may not be a ``qp`` on ``sites`` (every site when empty), or None:
    each such site with a roster must list them."""
    for site in [config.site(s) for s in sites] if sites else config.sites:
        assert site is not None  # unknown sites are refused before
        roster = [p.name for p in config.roster(site)]
        if roster and name not in roster:
            hint = "" if sites else "; --site limits the sites they record on"
            return (f"--name: {name!r} is not on the qualified_professionals roster of site "
                    f"{site.id} ({', '.join(roster)}){hint}")
    return None


def _sites(config: Config, given: list[str] | None) -> list[str]:
    """The ``--site`` values, each once; an unknown site refused."""
    sites: list[str] = list(dict.fromkeys(given or ()))
    for site in sites:
        if config.site(site) is None:
            raise UserError(f"--site: unknown site {site!r} "
                             f"(configured: {', '.join(s.id for s in config.sites)})")
    return sites


def _reach(user: User) -> str:
    """Where ``user`` reads or records, in words."""
    if user.role != "qp":
        return "reads every site"
    return "records on " + (", ".join(user.sites) if user.sites else "every site")


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _held(access: Access) -> str:
    """What of a person's access works, in words."""
    token = (f"an API token until {_when(access.api_until_ms)}"
             if access.api_until_ms is not None else "no API token")
    return (f"{_count(access.sessions, 'session')}, {token}, "
            f"{_count(access.links, 'unused sign-in link')}")


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def cmd_user_add(args: argparse.Namespace) -> int:
    config = load(args.config)
    sites = _sites(config, args.site)
    if args.role == "officer" and sites:
        raise UserError("--site goes with --role qp (an officer reads every site and "
                         "records nothing)")
    name = args.name.strip()
    if not name:
        raise UserError("--name: must not be empty")
    if name.casefold() == CONTRACTOR:
        raise UserError(f"--name: {name!r} is reserved: the log book says {CONTRACTOR!r} of a"
                        " repair reported done through a contractor's link")
    if not _EMAIL.match(args.email):
        raise UserError(f"--email: {args.email!r} is not an e-mail address")
    if args.role == "qp":
        problem = roster_problem(config, name, sites)
        if problem is not None:
            raise UserError(problem)
    with _users(config) as users:
        if users.get(name) is not None:
            raise UserError(f"--name: there is already a user named {name!r}")
        user = User(name=name, role=args.role, email=args.email, sites=tuple(sites))
        users.add(user)
    emit(f"added {name} ({args.role}, {args.email}): {_reach(user)}\n")
    return EXIT_OK


def cmd_user_link(args: argparse.Namespace) -> int:
    config = load(args.config)
    if config.web is None:
        raise UserError("web: not configured; a sign-in link needs web.public_url "
                         "(config/README.md, `web`)")
    if not 1 <= args.valid_minutes <= 24 * 60:
        raise UserError(f"--valid-minutes: must be 1 to 1440 (got {args.valid_minutes})")
    now = _now_ms()
    with _users(config) as users:
        user = _person(users, args.name)
        if args.send and not user.email:
            raise UserError(f"--send: {user.name} has no e-mail address; without --send the "
                             "link is printed")
        token = users.issue_signin(user.name, now, ttl_s=args.valid_minutes * 60)
    link = f"{config.web.public_url}/signin/{token}"
    if not args.send:
        emit(link + "\n")
        return EXIT_OK
    return _send_link(config, user, link, args.valid_minutes, now)


def _send_link(config: Config, user: User, link: str, minutes: int, now_ms: int) -> int:
    from ..sinks.notify.probe import send_to_address, signin_message

    assert user.email is not None
    setup_logging(config, "error")
    # As in notify-test: Apprise's warnings would repeat what each verdict says.
    logging.getLogger("apprise").propagate = False
    message = signin_message(user.name, link, now_ms + minutes * 60_000, config.sites[0].zone)
    verdicts = send_to_address(config, user.email, message)
    if not verdicts:
        raise UserError("--send: no mail target (mailto:// or mailtos://) in notify.targets "
                         "to send it through; without --send the link is printed")
    for v in verdicts:
        if not v.result.ok:
            print(f"FAILED via {v.target.label}: {v.result.error}", file=sys.stderr)
    if not verdicts[-1].result.ok:
        return EXIT_CHECK_FAILED
    emit(f"sent a sign-in link to {user.name} <{user.email}> via {verdicts[-1].target.label}"
         f" (valid {minutes} minutes, once)\n")
    return EXIT_OK


def cmd_user_token(args: argparse.Namespace) -> int:
    config = load(args.config)
    if not 1 <= args.valid_days <= MAX_TOKEN_DAYS:
        raise UserError(f"--valid-days: must be 1 to {MAX_TOKEN_DAYS} (got {args.valid_days})")
    now = _now_ms()
    with _users(config) as users:
        user = _person(users, args.name)
        token = users.issue_api_token(user.name, now, args.valid_days)
    emit(token + "\n")
    # On stderr: standard output is the token alone, for TOKEN=$(stormwatch user token ...).
    until = _when(now + args.valid_days * 86_400_000)
    print(f"valid {_count(args.valid_days, 'day')}, until {until}; any earlier token of "
          f"{user.name} stops working", file=sys.stderr)
    return EXIT_OK


def cmd_user_list(args: argparse.Namespace) -> int:
    config = load(args.config)
    with _users(config) as users:
        people, access = users.all(), users.access(_now_ms())
    if not people:
        emit("no users yet; add one with `stormwatch user add`\n")
    for user in people:
        emit(f"{user.name} ({user.role}, {user.email or 'no e-mail'}): {_reach(user)}; "
             f"{_held(access.get(user.name, Access()))}\n")
    return EXIT_OK


def cmd_user_sites(args: argparse.Namespace) -> int:
    config = load(args.config)
    if bool(args.site) == args.all_sites:  # one line each, not argparse's usage
        raise UserError("--all-sites: not together with --site" if args.all_sites else
                         "--site: give the sites they record on (repeatable), or --all-sites")
    sites = _sites(config, args.site)
    with _users(config) as users:
        user = _person(users, args.name)
        if user.role != "qp":
            raise UserError(f"--name: {user.name} is an officer, who reads every site and "
                             "records nothing (--site goes with a qp)")
        problem = roster_problem(config, user.name, sites)
        if problem is not None:
            raise UserError(problem)
        users.set_sites(user.name, tuple(sites))
    now = User(user.name, user.role, user.email, tuple(sites))
    emit(f"{user.name} (qp) {_reach(now)} from their next request (before: {_reach(user)})\n")
    return EXIT_OK


def cmd_user_revoke(args: argparse.Namespace) -> int:
    return _end_access(args, remove=False)


def cmd_user_remove(args: argparse.Namespace) -> int:
    return _end_access(args, remove=True)


def _end_access(args: argparse.Namespace, *, remove: bool) -> int:
    """``user revoke`` (every token of the person ends) or ``user remove`` (the person too)."""
    config = load(args.config)
    with _users(config) as users:
        user = _person(users, args.name)
        ended = (users.remove if remove else users.revoke)(user.name, _now_ms())
    if remove:
        emit(f"removed {user.name} ({user.role}): ended {_held(ended)}; the inspections they "
             "recorded keep their name in the log book\n")
    else:
        emit(f"revoked {user.name}'s access: ended {_held(ended)}; they stay ({user.role}, "
             f"{_reach(user)}), and `stormwatch user link` signs them in again\n")
    return EXIT_OK


def _person_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                   name: str) -> argparse.ArgumentParser:
    """A ``user`` action's parser with the flags they all have: --config, --name."""
    p = sub.add_parser(name, **command_help(f"user {name}"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--name", required=True)
    return p


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The parsers of this family's commands, each bound to its function."""
    p = sub.add_parser("user", **command_help("user"))
    user_sub = p.add_subparsers(dest="user_command", metavar="ACTION")
    user_sub.required = True

    p = user_sub.add_parser("add", **command_help("user add"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--name", required=True, help="as on the qualified_professionals roster")
    p.add_argument("--role", required=True, choices=ROLES)
    p.add_argument("--email", required=True, metavar="ADDR", help="where sign-in links go")
    p.add_argument("--site", action="append", metavar="ID",
                   help="qp: a site they record on (repeatable; default every site)")
    p.set_defaults(func=cmd_user_add)

    p = _person_parser(user_sub, "link")
    p.add_argument("--send", action="store_true",
                   help="mail it to the person's address instead of printing it")
    p.add_argument("--valid-minutes", type=int, default=SIGNIN_MINUTES, metavar="N",
                   help=f"how long it works (default {SIGNIN_MINUTES})")
    p.set_defaults(func=cmd_user_link)

    p = _person_parser(user_sub, "token")
    p.add_argument("--valid-days", type=int, default=API_TOKEN_DAYS, metavar="D",
                   help=f"how long it works (default {API_TOKEN_DAYS}, at most "
                        f"{MAX_TOKEN_DAYS})")
    p.set_defaults(func=cmd_user_token)

    p = user_sub.add_parser("list", **command_help("user list"))
    p.add_argument("--config", required=True, metavar="FILE", help=CONFIG_HELP)
    p.set_defaults(func=cmd_user_list)

    p = _person_parser(user_sub, "sites")
    p.add_argument("--site", action="append", metavar="ID",
                   help="a site they record on (repeatable)")
    p.add_argument("--all-sites", action="store_true", help="every site (instead of --site)")
    p.set_defaults(func=cmd_user_sites)

    _person_parser(user_sub, "revoke").set_defaults(func=cmd_user_revoke)
    _person_parser(user_sub, "remove").set_defaults(func=cmd_user_remove)

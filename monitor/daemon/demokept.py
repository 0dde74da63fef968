"""What ``stormwatch demo --keep`` leaves to explore, and the commands that explore it.

The demo's clock replays the hours that end when it starts (``demo.py``), so
what it keeps lies in the past of the wall clock: ``status``, ``logbook``,
``report``, ``inspect`` and ``stormwatch web`` run now against the kept
configuration see a finished story, not one dated tomorrow, and a sign-in link
made now (by the demo at its end, or by ``user link``) is valid where the field
app checks it, on the wall clock.

The kept configuration (``stormwatch-demo.yaml``) is a real one: ``web:`` on the
loopback port the demo's field app used, its key (0600) and photos in the kept
directory, the site's roster of qualified professionals; the people of the
field app are added as ``stormwatch user add`` adds them (``users.sqlite``): the
qualified professional on the roster, recording on the demo's site, and a
municipal officer, who reads every site. ``explore`` prints the commands, each
as it works when pasted (``config/invocation.py``).
"""

from __future__ import annotations

import shlex
import time
from datetime import datetime
from pathlib import Path
from typing import Final
from zoneinfo import ZoneInfo

from ..config import Config
from ..config.invocation import program
from ..store.users import User, Users

#: The demo's qualified professional (the roster, the field app, the inspection).
QP_NAME: Final = "J. Rivera"
QP_ROSTER: Final = {"name": QP_NAME, "credential": "CPESC", "contact": "j.rivera@example.org"}
OFFICER_NAME: Final = "M. Chen"
OFFICER_EMAIL: Final = "m.chen@example.org"
#: How long the sign-in link printed at the end works (real minutes).
EXPLORE_LINK_MINUTES: Final = 60


def add_people(state_dir: Path, site: str) -> None:
    """The demo's people, as ``stormwatch user add`` would add them (once)."""
    with Users.open(state_dir) as users:
        if users.get(QP_NAME) is None:
            users.add(User(QP_NAME, "qp", QP_ROSTER["contact"], (site,)))
        if users.get(OFFICER_NAME) is None:
            users.add(User(OFFICER_NAME, "officer", OFFICER_EMAIL, ()))


def explore(config: Config, config_path: Path, site: str, span_s: tuple[int, int],
            zone: ZoneInfo) -> str:
    """The block that ends a kept demo: a sign-in link for the qualified professional,
    valid ``EXPLORE_LINK_MINUTES`` on the wall clock, and the commands that look at
    what the demo kept (``span_s``: its first and last simulated second)."""
    assert config.web is not None  # the demo configures it
    with Users.open(Path(config.state_dir)) as users:
        token = users.issue_signin(QP_NAME, round(time.time() * 1000),
                                   ttl_s=EXPLORE_LINK_MINUTES * 60)
    me, cfg = program(), shlex.quote(str(config_path))
    report = shlex.quote(str(config_path.parent / "demo-report.html"))
    first, last = (datetime.fromtimestamp(s, tz=zone).date() for s in span_s)
    return "\n".join([
        f"Kept in {config_path.parent}. Explore it (each command works as printed):",
        f"  $ {me} web --config {cfg}",
        f"    the field app, at {config.web.public_url}; then sign in as {QP_NAME} "
        f"(qualified professional) within {EXPLORE_LINK_MINUTES} minutes:",
        f"    {config.web.public_url}/signin/{token}",
        f"  $ {me} user link --config {cfg} --name {shlex.quote(OFFICER_NAME)}",
        "    a sign-in link for the municipal officer (every site, read only)",
        f"  $ {me} status --config {cfg}",
        f"  $ {me} logbook --config {cfg} --site {site} --format md",
        f"  $ {me} report --config {cfg} --site {site} --from {first} --to {last}"
        f" --out {report}"])

"""Deadlines the permits of a site set for corrective actions and routine maintenance.

    "... complete the installation of the new or modified control or complete
    the repair no later than 7 calendar days from the time of discovery"
    — EPA CGP 2022 Part 5.2

    "... initiate work to fix the problem immediately ... and complete such work
    by the close of the next business day" — EPA CGP 2022 Part 2.1.4.b

An action found at an inspection is discovered at the inspection's time. It
is routine maintenance when the inspection says so (``kind: maintenance`` on
the action), else a corrective action. Each permit of the site with a rule for
that kind (``corrective_action`` or ``maintenance``, ``permits/duties.py``)
gives it a deadline of its own, beside the action's own ``due`` (which stays
as it is: ``corrective_action_due``):

* calendar days are counted as ``routine_due: end_of_day`` counts them: the
  end of the local day that many days after the day of discovery (found on a
  Monday at 10:00, 7 calendar days: due the next Monday, 23:59:59.999 local);
* business days are the site's ``business_days`` calendar
  (``permits/calendar.py``): the close of the ``n``-th business day after the
  day of discovery (found on Thursday Dec 24, 2026, before Christmas on the
  Friday: due at the close of Monday Dec 28).

An action not fixed by a deadline is one ``corrective_action_overdue`` per
action and permit (``actions.action_facts``). A site whose permits have no
such rule (Chapter 134 alone) has no deadline here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from ...config import SiteConfig
from ...contract.events import make_id
from ..active import end_of_local_day_ms, local_day
from ..permits.calendar import BusinessCalendar
from ..permits.duties import DeadlineDuty, Permit, permits_of


@dataclass(frozen=True, slots=True)
class PermitDeadline:
    """When one permit wants an action done, and the rule that says so."""

    permit: str
    section: str
    due_ms: int


def deadline_ms(site: SiteConfig, duty: DeadlineDuty, discovered_ms: int) -> int:
    """The deadline of ``duty`` for an action found at ``discovered_ms`` (module
    docstring: calendar days to the end of a local day, business days to a close)."""
    zone = site.zone
    if duty.calendar_days is not None:
        day = local_day(zone, discovered_ms) + timedelta(days=duty.calendar_days)
        return end_of_local_day_ms(zone, day)
    calendar = BusinessCalendar(site.calendar, zone)
    return calendar.close_after_business_days(discovered_ms, duty.business_days or 0)


def permit_deadlines(site: SiteConfig, permits: Iterable[Permit], kind: str,
                     discovered_ms: int) -> tuple[PermitDeadline, ...]:
    """The deadline of each permit with a rule for ``kind`` (``maintenance`` or a
    corrective action), in the order the site lists its permits."""
    out = []
    for permit in permits:
        duty = permit.maintenance if kind == "maintenance" else permit.corrective_action
        if duty is not None:
            out.append(PermitDeadline(permit.key, duty.cite.section,
                                      deadline_ms(site, duty, discovered_ms)))
    return tuple(out)


def overdue_id(site_id: str, action_id: str, permit: str) -> str:
    """The id of an action's ``corrective_action_overdue`` under ``permit``: one each."""
    return make_id("corrective_action_overdue", site_id, action_id, permit)


def overdue_ids(site: SiteConfig, action_id: str) -> list[str]:
    """The ids every ``corrective_action_overdue`` of an action could have (one per
    permit of the site), for settling what is final."""
    return [overdue_id(site.id, action_id, p.key) for p in permits_of(site)]

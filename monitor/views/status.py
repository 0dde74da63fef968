"""``stormwatch status``: the state of every site, as the daemon recorded it.

The daemon records each site's state in the store (``site_status``, kept
current at every tick; ``stormwatch inspect`` does the same when no daemon
runs), so this command reads a few rows and answers at once at any journal
size; it never rebuilds the engine. What depends on time (hours left, which
sensors are stale) is worked out here by the engine's own rules
(``engine/summary.py``), at the later of the command's wall clock and the
engine's recorded event time, so a clock the engine closed is never shown
open. The ``--json`` shape is the contract of README.md, "Commands".

Missing data is never good news: the caller refuses a missing or unreadable
database (``cli.py``); a site the daemon has not recorded yet is shown as
unknown, not as "no open clocks"; journal rows the engine has not applied yet
are counted; and the header says how old the newest input and the recorded
state are, with a warning when the daemon has stopped recording.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import Any

from ..config import Config, SiteConfig
from ..config.plausible import storm_duty_unwatched
from ..contract.figures import fill_text
from ..contract.localtime import local_text
from ..contract.permits import NO_GAUGE, rule_words
from ..contract.rejects import RejectReason
from ..contract.times import iso, parse_iso
from ..contract.unmonitored_words import reason_words
from ..engine import PairSummary, SiteNow, SiteSummary, judged_at, status_at
from ..rules.clocks.actions import ActionState
from ..rules.permits.checks import not_monitored
from ..store import Store
from ..store.deadletters import PRUNED_COUNTER
from ..store.exportstate import export_status
from ..store.health import read_health
from ..store.sourcenotes import CLOCKS_META, CONFIRM_META, clock_of, confirm_of, weather_status
from ..store.state import SiteStatus as RecordedStatus

INGEST_REASONS = frozenset(r.value for r in RejectReason)
#: An instant (ms, or ISO text) in the site's local time, as ``status`` prints it.
Local = Callable[[int | str | None], str]

#: The recorded state is stale after this long without a write. The daemon
#: records every site's status at each tick: every 5 s when it is caught up,
#: and at least every ``daemon.TICK_AT_LEAST_EVERY_S`` (60 s) while a backlog
#: drains. The 30 s on top are for a slow commit (the store's busy timeout is
#: 5 s) or a snapshot holding the loop; longer means the daemon is stopped or
#: stuck. (Not imported from ``daemon.py``: that would load MQTT for a query;
#: ``tests/store/test_missing_db.py`` keeps the two in step.)
STATE_STALE_AFTER_S = 90.0
#: A recorded time more than this ahead of the command's clock was written by
#: another clock (a demo's simulated time, or a clock set wrong): the daemon and
#: this command read the same machine's clock, so only an NTP step explains a
#: few seconds.
CLOCK_AHEAD_TOLERANCE_S = 5.0


def newest_received_ms(store: Store) -> int | None:
    """When the newest journaled input arrived; None when there is none, or when its
    row has no arrival time (rows imported without one).

    Readings and inspections only: ticks are the daemon's own clock, not input.
    Ticks are journaled only when they changed something, so the step back from
    the newest row over them is short. (The journal's own API has no such query;
    this one is read-only and walks the primary key from its end.)
    """
    row = store.db.conn.execute(
        "SELECT received_ms FROM journal WHERE kind IN ('reading', 'inspection')"
        " ORDER BY seq DESC LIMIT 1").fetchone()
    return None if row is None or row[0] is None else int(row[0])


def _node_clocks(store: Store) -> dict[str, Any]:
    """The sensors whose readings came with a timestamp off (``nodeclocks.py``)."""
    text = store.state.meta_get(CLOCKS_META)
    try:
        notes = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}
    return notes if isinstance(notes, dict) else {}


def _step_s(step_ms: int | str | None) -> float | None:
    """The wall clock's step the daemon's ticks are ignoring (``tickclock.py``), in s."""
    return round(int(step_ms) / 1000, 1) if step_ms else None


def _age_s(then_ms: int | None, now_ms: int) -> float | None:
    """Seconds from ``then_ms`` to ``now_ms`` (negative: ``then_ms`` is ahead)."""
    return None if then_ms is None else round((now_ms - then_ms) / 1000, 1)


def _state_stale(age_s: float | None) -> bool:
    """Not known to be fresh: never recorded, too old, or recorded by a clock ahead of
    this one (its age cannot be judged)."""
    return age_s is None or age_s > STATE_STALE_AFTER_S or age_s < -CLOCK_AHEAD_TOLERANCE_S


def build_status(config: Config, store: Store, now_ms: int,
                 only: Collection[str] | None = None) -> dict[str, Any]:
    """The ``status --json`` object at wall-clock ``now_ms``, from an open (read-only)
    store; with ``only``, of those sites alone (a page of one site: each site's
    summary is judged anew at every call, the bulk of the work at 100 sites)."""
    recorded = store.state.site_statuses()
    # What the daemon could not write to the database (health.py): the store
    # refusing writes (disk full) and the broker connection.
    health = read_health(store.path.parent)
    ingest = _ingest(store, recorded, health)
    notify = _notify(store)
    if config.influx is not None:
        export = export_status(store, now_ms)
    else:
        export = {"behind_rows": 0, "enabled": False}
    received = newest_received_ms(store)
    clocks = _node_clocks(store)
    confirmations = store.state.meta_get(CONFIRM_META)
    sites = {}
    for site in config.sites:
        if only is not None and site.id not in only:
            continue
        shown = sites[site.id] = _site_entry(site, recorded.get(site.id), now_ms,
                                             config.weather is not None)
        for sid, sensor in shown["sensors"].items():
            sensor["clock"] = clock_of(clocks, site.id, sid)
            # The node's mode from its newest status, and the mark the daemon confirms.
            sensor["confirm"], sensor["journaled_seq"] = confirm_of(confirmations, site.id, sid)
        if config.weather is not None:
            # The source's own state: unreachable is said, never "no storm forecast".
            shown["weather"] = weather_status(store, site.id)
    broker = health.get("broker") or {}
    since = broker.get("since_ms")
    return {"generated_at": iso(now_ms // 1000 * 1000), "sites": sites, "ingest": ingest,
            "broker": {"state": broker.get("state", "unknown"),
                       "since": iso(int(since)) if since else None},
            "export": export, "notify": notify,
            "journal": {"newest_received_at": iso(received) if received is not None else None,
                        "age_s": _age_s(received, now_ms),
                        # Rows moved out of the database (``stormwatch archive``).
                        "archive": store.journal.archive.summary()},
            "daemon": _daemon(store, recorded, now_ms)}


def _site_entry(site: SiteConfig, found: RecordedStatus | None, now_ms: int,
                forecasts: bool) -> dict[str, Any]:
    """A site's object: its recorded summary judged at ``now_ms`` (``judged_at``), when
    and at which event time it was recorded, its storm duty, and at a site that names
    its permits the duties it cannot watch (``not_monitored``; ``forecasts``: whether
    the configuration fetches the weather a forecast trigger needs)."""
    if found is None:
        entry = unknown_site(site)
    else:
        summary = SiteSummary.from_json(found.data)
        event_time = summary.event_time_ms
        entry = {**status_at(summary, judged_at(summary, now_ms)).to_json(),
                 "recorded_at": iso(found.updated_ms),
                 "event_time": iso(event_time) if event_time is not None else None}
    entry["storm_duty"] = storm_duty(site)
    if site.permits:
        entry["not_monitored"] = not_monitored(site, forecasts)
    return entry


def _ingest(store: Store, recorded: dict[str, RecordedStatus],
            health: dict[str, Any]) -> dict[str, Any]:
    """What was taken in and refused, how far the engine has applied it, and what the
    store could not write."""
    lag = store.state.meta_get("lag_ms")
    # The running totals, not the dead-letter table: that is bounded and pruned
    # (dead_letters.max_mb). It also keeps points InfluxDB refused; those are
    # the export's (export.dead_letters), not ingest rejects.
    counters = store.journal.counters()
    rejected = {name[len("rejected."):]: n for name, n in counters.items()
                if name.startswith("rejected.") and name[len("rejected."):] in INGEST_REASONS}
    applied = max([store.events.applied_seq(), *(r.applied_seq for r in recorded.values())])
    full_since = health.get("disk_full_since_ms")
    return {"accepted": store.journal.count(), "rejected": rejected,
            "lag_s": round(int(lag) / 1000, 3) if lag is not None else None,
            "duplicates": counters.get("duplicates", 0),
            "journal_seq": store.journal.max_seq(), "applied_seq": applied,
            "dead_letters_pruned": counters.get(PRUNED_COUNTER, 0),
            "disk_full_since": iso(int(full_since)) if full_since else None,
            "store_error": health.get("store_error")}


def _notify(store: Store) -> dict[str, Any]:
    """The alert outbox: pending, delivered, failed, withheld, the oldest pending."""
    outbox = store.outbox.summary()
    oldest = outbox.oldest_pending_ms
    return {"pending": outbox.pending, "delivered": outbox.delivered,
            "failed": outbox.failed, "withheld": outbox.withheld,
            "oldest_pending_at": iso(oldest) if oldest is not None else None}


def _daemon(store: Store, recorded: dict[str, RecordedStatus], now_ms: int) -> dict[str, Any]:
    """When the daemon last recorded the sites and ticked, and whether that is stale."""
    # Every site's status is rewritten at each tick (its event time moves), so
    # the newest row dates the daemon's last write.
    written = max((r.updated_ms for r in recorded.values()), default=None)
    age = _age_s(written, now_ms)
    # The engine's own clock: its last tick (event time passing without readings).
    ticked = store.state.meta_get("tick_ms")
    return {"state_written_at": iso(written) if written is not None else None,
            "age_s": age, "stale": _state_stale(age),
            "stale_after_s": STATE_STALE_AFTER_S,
            "ticked_at": iso(int(ticked)) if ticked is not None else None,
            "wall_clock_step_s": _step_s(store.state.meta_get("wall_step_ms"))}


def storm_duty(site: SiteConfig) -> str:
    """The § 134-9A(2) storm duty of a site: ``monitored``, ``none`` (condition outside
    A–C), or ``NO_GAUGE`` ("storm duty not monitored: no rain gauge")."""
    if storm_duty_unwatched(site):
        return NO_GAUGE
    return "monitored" if site.clocks_apply else "none"


def unknown_site(site: SiteConfig) -> dict[str, Any]:
    """A site the daemon has not recorded: every value unknown, every sensor stale."""
    return {
        "name": site.name,
        "condition": site.condition,
        "open_clocks": [],
        "last_inspection": None,
        "traps": {t.id: {"fill_fraction": None, "depth_in": None, "state": "unknown",
                         "level": "unknown", "sensor_fault": None} for t in site.traps},
        "turbidity": {p.id: {"state": "unknown", "delta_ntu": None}
                      for p in site.turbidity_pairs},
        "sensors": {s.id: {"last_seen": None, "stale": True, "health": "stale", "battery_v": None,
                           "kind": s.kind, "readings": 0, "buffered": None, "dropped": None}
                    for s in site.sensors},
        "missed_weeks": None,
        "corrective_actions": [],
        "closed_at": None,
        "recorded_at": None,
    }


def _step_words(act: ActionState, local: Local) -> str:
    """How far a corrective action got before its verification (``actions.py``)."""
    if act.done_ms is not None:
        return f"; reported done by {act.done_by} {local(act.done_ms)}, to verify"
    if act.sent_ms is not None:
        return f"; sent to the contractor {local(act.sent_ms)}"
    return ""


def _span(seconds: float) -> str:
    """A duration as a person reads it: "12 s", "5 min", "3.5 h", "2.0 days"."""
    seconds = abs(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _ago(age_s: float) -> str:
    if age_s < -CLOCK_AHEAD_TOLERANCE_S:
        return f"{_span(age_s)} ahead of this machine's clock"
    return f"{_span(max(age_s, 0.0))} ago"


def freshness_lines(status: dict[str, Any]) -> list[str]:
    """The header's ages of the newest input and of the recorded state, and a
    ``WARNING:`` line when the recorded state cannot be trusted to be current."""
    journal, daemon = status["journal"], status["daemon"]
    if journal["age_s"] is not None:
        newest = f"newest input {_ago(journal['age_s'])}"
    elif status["ingest"]["accepted"]:
        newest = "newest input: arrival time not recorded"
    else:
        newest = "no input journaled yet"
    age = daemon["age_s"]
    recorded = "state never recorded" if age is None else f"state recorded {_ago(age)}"
    lines = [f"{newest}; {recorded}"]
    if age is None:
        lines.append("WARNING: no site status has been recorded: nothing below is known"
                     " (the daemon records it while `stormwatch run` runs)")
    elif age < -CLOCK_AHEAD_TOLERANCE_S:
        lines.append(f"WARNING: the state was recorded at {daemon['state_written_at']},"
                     f" {_span(age)} ahead of this machine's clock (a demo's simulated time,"
                     " or a clock set wrong): how current it is cannot be judged")
    elif daemon["stale"]:
        lines.append(f"WARNING: the state was last recorded {_span(age)} ago, at"
                     f" {daemon['state_written_at']}; a running daemon records it at least"
                     " once a minute: is `stormwatch run` running? What follows is as of then")
    step = daemon.get("wall_clock_step_s")
    if step:
        lines.append(f"WARNING: the daemon's wall clock stepped {_span(abs(step))}"
                     f" {'forward' if step > 0 else 'back'}; its ticks keep to the monotonic"
                     " clock until readings confirm the new time (check NTP on this machine)")
    return lines


def format_status(config: Config, status: dict[str, Any]) -> str:
    """The human-readable ``status``: the header, each site, the broker and ingest."""
    lines = [f"stormwatch status at {status['generated_at']}", *freshness_lines(status)]
    generated_ms = parse_iso(status["generated_at"])
    for site in config.sites:
        lines += ["", *_site_lines(site, status["sites"][site.id], generated_ms)]
    lines += _ingest_lines(status)
    return "\n".join(lines)


def _site_lines(site: SiteConfig, shown: dict[str, Any], generated_ms: int) -> list[str]:
    """One site's block, from its ``status --json`` object."""
    lines = [f"{site.id} — {site.name or ''} (condition {site.condition})"]
    if storm_duty_unwatched(site):
        lines.append(f"  {NO_GAUGE}: no storm is seen, no 24-hour inspection is asked for")
    lines += [f"  {line}" for line in shown.get("not_monitored", ())]
    if "weather" in shown:
        lines.append("  " + weather_line(shown["weather"], lambda w: local_text(w, site.zone)))
    if shown.get("recorded_at") is None:
        return lines + ["  UNKNOWN: no state recorded for this site yet (the daemon records"
                        " it while it runs)"]
    s = SiteNow.from_json(shown)

    def local(when: int | str | None) -> str:
        return local_text(when, site.zone)

    event_time = shown.get("event_time")
    if event_time and parse_iso(event_time) - generated_ms > CLOCK_AHEAD_TOLERANCE_S * 1000:
        # The clocks were judged at the engine's time, not the wall clock's.
        lines.append(f"  event time {local(event_time)}, ahead of this machine's clock:"
                     " clocks and sensors are judged at it, as the engine judged them")
    if s.closed_ms is not None:
        lines.append(f"  closed (final stabilization) {local(s.closed_ms)}")
    for c in s.open_clocks:
        left = c.hours_left
        when = ("due " + local(c.due_ms) + (f", OVERDUE by {_span(-left * 3600)}" if c.overdue
                                            else f", {left:.1f} h left")
                if left is not None else "due when the storm ends")
        if c.missed_weeks:
            when += f", {c.missed_weeks} week(s) missed"
        rule = f" ({rule_words(c.permit, c.section, '')})" if c.permit is not None else ""
        lines.append(f"  clock {c.clock:<8} {c.clock_id:<36} {when}{rule}")
    if not s.open_clocks:
        lines.append("  no open inspection clocks")
    lines.append(f"  last inspection: {local(s.last_inspection_ms)}")
    lines.append(f"  weeks without a required inspection (§ 134-12D, each a separate"
                 f" violation): {s.missed_weeks}")
    for a in s.corrective_actions:
        act = a.action
        due = f"due {local(act.due_ms)}" if act.due_ms is not None else "no due date"
        lines.append(f"  corrective action {act.id}: {act.text} ({due}"
                     f"{', OVERDUE' if a.overdue else ''}; asked by {act.inspector}"
                     f" {local(act.opened_ms)}{_step_words(act, local)})")
    lines += _rule_lines(s, local, site.fill_levels)
    for sid, h in s.sensors.items():
        health = {"stale": "STALE", "unknown": UNKNOWN_HEALTH}.get(h.health, "ok")
        batt = "" if h.battery_v is None else f", battery {h.battery_v:.2f} V"
        node = "".join(f", {n} {k}" for k, n in (("buffered", h.buffered),
                                                 ("dropped", h.dropped)) if n)
        if shown["sensors"][sid].get("confirm") == "puback":
            node += ", NOT CONFIRMED: its node deletes readings on PUBACK"
        lines.append(f"  sensor {sid}: {health}, last seen {local(h.last_seen_ms)}{batt}{node}")
        clock = shown["sensors"][sid].get("clock")
        if clock:
            lines.append("  " + _clock_line(site, sid, clock, local))
    return lines


def weather_line(weather: dict[str, Any], local: Local) -> str:
    """The weather source's state in words: when it last answered, or why it did not
    (an unreachable source is said, never read as "no storm forecast")."""
    ok, error = weather.get("last_ok"), weather.get("last_error")
    if error is None:
        return f"weather ({weather['source']}): ok, last fetched {local(ok)}"
    since = f" since {local(error['at'])}" if error.get("at") else ""
    return (f"weather ({weather['source']}): UNREACHABLE{since}: {error['reason']}; "
            f"last fetched {local(ok) if ok else 'never'}; storm forecast unknown")


def _rule_lines(s: SiteNow, local: Local, levels: Callable[[str], tuple[float, ...]]
                ) -> list[str]:
    """The traps' fill (never rounded across one of ``levels(trap)``) and the pairs'
    contrast."""
    lines = []
    for tid, t in s.traps.items():
        fill = "-" if t.fill_fraction is None else fill_text(t.fill_fraction, *levels(tid))
        fault = t.sensor_fault
        if fault:
            # Never a plain level while the sensor reads what cannot be true.
            lines.append(f"  trap {tid}: SENSOR FAULT ({fault.reason}) since "
                         f"{local(fault.since_ms)}; last valid fill {fill} of design "
                         f"volume ({t.level}): check the trap by eye")
        else:
            lines.append(f"  trap {tid}: {fill} of design volume ({t.state})")
    for pid, p in s.turbidity.items():
        # A contrast that is unknown now has no current difference to show.
        delta = ("" if p.delta_ntu is None or p.unknown_reason is not None
                 else f", {p.delta_ntu:+g} NTU over background")
        lines.append(f"  turbidity {pid}: {p.state}{delta}" + _unknown_words(p, local))
    return lines


def _unknown_words(p: PairSummary, local: Local) -> str:
    """Why a pair's contrast cannot be checked, since when, and whether the qualified
    professional has been told (``turbidity_unmonitored``); "" while it is known."""
    if p.unknown_reason is None:
        return ""
    why = reason_words(p.unknown_reason)
    told = ("no notice: outside the site's active period" if p.notice_ms is None
            else f"the qualified professional was told at {local(p.notice_ms)}: a person must "
            "look" if p.state == "unmonitored"
            else f"notice to the qualified professional due {local(p.notice_ms)}")
    return (f"; contrast UNKNOWN since {local(p.unknown_since_ms)} ({why}): § 134-8C is not "
            f"checked; {told}")


def _ingest_lines(status: dict[str, Any]) -> list[str]:
    """The broker's connection, what was taken in and refused, and what is not applied."""
    ing = status["ingest"]
    broker = status.get("broker") or {}
    lines = ["", f"broker: {broker.get('state', 'unknown')}"
             + (f" since {broker['since']}" if broker.get("since") else "")]
    if ing.get("disk_full_since"):
        lines.append(f"ERROR: the database has refused writes since {ing['disk_full_since']}"
                     f" ({ing.get('store_error') or 'disk full'}): nothing is acknowledged to"
                     " the broker until there is space again (the broker keeps the readings)")
    rejected = sum(ing["rejected"].values())
    lines += ["", f"ingest: {ing['accepted']} accepted, {rejected} rejected"
              + (" (" + ", ".join(f"{k} {v}" for k, v in sorted(ing["rejected"].items())) + ")"
                 if rejected else "")]
    behind = ing["journal_seq"] - ing["applied_seq"]
    if behind > 0:
        lines.append(f"  {behind} journal row(s) not applied yet: the state above is from before"
                     " them (the daemon applies them when it runs)")
    archive = status["journal"].get("archive") or {}
    if archive.get("files"):
        lines.append(f"  archive: {archive['rows']:,} journal row(s) in {archive['files']}"
                     f" file(s), {archive['bytes'] / 1e6:,.1f} MB; the last on"
                     f" {archive['last_at']} (`stormwatch logbook verify` checks them)")
    return lines


#: How ``status`` says the health of a gauge whose silence says nothing.
UNKNOWN_HEALTH = ("health unknown (reporting: on_tip without heartbeat_minutes: a dry gauge "
                  "and a dead one look alike)")


def _clock_line(site: SiteConfig, sensor_id: str, clock: dict[str, Any], local: Local) -> str:
    """A sensor whose newest word came with a timestamp off: its node's clock, or a
    backlog it is sending."""
    node = next((s.node for s in site.sensors if s.id == sensor_id and s.node), None)
    who = f"sensor {sensor_id}" + (f" (node {node})" if node else "")
    off = _span(abs(clock["offset_s"]))
    if clock["reason"] == "late":
        what = (f"readings arrive {off} after their timestamps: the node's clock is behind,"
                " or it is sending a backlog")
    else:
        what = (f"readings stamped {off} {'ahead of' if clock['ahead'] else 'behind'} this"
                f" daemon's clock are refused ({clock['reason']}, {clock['count']} so far):"
                " check the node's clock (NTP)")
    return f"WARNING: {who}: {what}; newest {local(clock['at'])}"

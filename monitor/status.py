"""``stormwatch status``: the state of every site, as the daemon recorded it.

The daemon records each site's state in the store (``site_status``, kept
current at every tick; ``stormwatch inspect`` does the same when no daemon
runs), so this command reads a few rows and answers at once at any journal
size; it never rebuilds the engine. What depends on the wall clock (hours
left, which sensors are stale) is worked out here, at the command's *now*, by
the engine's own rules (``engine/summary.py``). The ``--json`` shape is the
contract of DESIGN § 6.

Missing data is never good news: without a database the command says so and
fails; a site the daemon has not recorded yet is shown as unknown, not as
"no open clocks"; journal rows the engine has not applied yet are counted.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .config import Config, SiteConfig
from .engine.summary import at_now
from .engine.times import iso
from .export.influx import export_status
from .host import db_path, open_store
from .models import RejectReason

INGEST_REASONS = frozenset(r.value for r in RejectReason)


class StatusError(Exception):
    """Nothing to show: the state directory has no database."""


def build_status(config: Config, now_ms: int) -> dict[str, Any]:
    """The ``status --json`` object at wall-clock ``now_ms``."""
    out: dict[str, Any] = {"generated_at": iso(now_ms // 1000 * 1000), "sites": {}}
    path = db_path(config)
    if not path.exists():
        raise StatusError(f"state_dir: no database at {path} (has `stormwatch run` run with"
                          " this configuration?)")
    with open_store(config, readonly=True) as store:
        recorded = store.state.site_statuses()
        lag = store.state.meta_get("lag_ms")
        # The dead-letter table also keeps points InfluxDB refused; those are
        # the export's (export.dead_letters), not ingest rejects.
        rejected = {reason: n for reason, n in store.journal.reject_counts().items()
                    if reason in INGEST_REASONS}
        applied = max([store.events.applied_seq(), *(r.applied_seq for r in recorded.values())])
        ingest = {"accepted": store.journal.count(), "rejected": rejected,
                  "lag_s": round(int(lag) / 1000, 3) if lag is not None else None,
                  "duplicates": store.journal.counter("duplicates"),
                  "journal_seq": store.journal.max_seq(), "applied_seq": applied}
        summary = store.outbox.summary()
        oldest = summary.oldest_pending_ms
        notify = {"pending": summary.pending, "delivered": summary.delivered,
                  "failed": summary.failed, "withheld": summary.withheld,
                  "oldest_pending_at": iso(oldest) if oldest is not None else None}
        if config.influx is not None:
            export = export_status(store, now_ms)
        else:
            export = {"behind_rows": 0, "enabled": False}
    for site in config.sites:
        found = recorded.get(site.id)
        if found is None:
            out["sites"][site.id] = unknown_site(site)
        else:
            out["sites"][site.id] = {**at_now(found.data, now_ms),
                                     "recorded_at": iso(found.updated_ms)}
    out["ingest"] = ingest
    out["export"] = export
    out["notify"] = notify
    return out


def unknown_site(site: SiteConfig) -> dict[str, Any]:
    """A site the daemon has not recorded: every value unknown, every sensor stale."""
    return {
        "name": site.name,
        "condition": site.condition,
        "open_clocks": [],
        "last_inspection": None,
        "traps": {t.id: {"fill_fraction": None, "depth_in": None, "state": "unknown"}
                  for t in site.traps},
        "turbidity": {p.id: {"state": "unknown", "delta_ntu": None}
                      for p in site.turbidity_pairs},
        "sensors": {s.id: {"last_seen": None, "stale": True, "battery_v": None, "kind": s.kind,
                           "readings": 0} for s in site.sensors},
        "recorded_at": None,
    }


def format_status(config: Config, status: dict[str, Any]) -> str:
    """The human-readable ``status``."""
    lines = [f"stormwatch status at {status['generated_at']}"]
    for site in config.sites:
        s = status["sites"][site.id]
        zone = site.zone

        def local(text: str | None, zone: Any = zone) -> str:
            if not text:
                return "-"
            return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(zone).strftime(
                "%Y-%m-%d %H:%M %Z")

        lines += ["", f"{site.id} — {site.name or ''} (condition {site.condition})"]
        if s.get("recorded_at") is None:
            lines.append("  UNKNOWN: no state recorded for this site yet (the daemon records"
                         " it while it runs)")
            continue
        if s["open_clocks"]:
            for c in s["open_clocks"]:
                left = c["hours_left"]
                when = ("due " + local(c["due"]) + (f", {left:.1f} h left" if left >= 0
                                                    else f", OVERDUE by {-left:.1f} h")
                        if left is not None else "due when the storm ends")
                lines.append(f"  clock {c['clock']:<8} {c['clock_id']:<36} {when}")
        else:
            lines.append("  no open inspection clocks")
        lines.append(f"  last inspection: {local(s['last_inspection'])}")
        for tid, t in s["traps"].items():
            fill = "-" if t["fill_fraction"] is None else f"{t['fill_fraction']:.0%}"
            lines.append(f"  trap {tid}: {fill} of design volume ({t['state']})")
        for pid, t in s["turbidity"].items():
            delta = "" if t["delta_ntu"] is None else f", +{t['delta_ntu']:g} NTU over background"
            lines.append(f"  turbidity {pid}: {t['state']}{delta}")
        for sid, h in s["sensors"].items():
            health = "STALE" if h["stale"] else "ok"
            batt = "" if h["battery_v"] is None else f", battery {h['battery_v']:.2f} V"
            lines.append(f"  sensor {sid}: {health}, last seen {local(h['last_seen'])}{batt}")
    ing = status["ingest"]
    rejected = sum(ing["rejected"].values())
    lines += ["", f"ingest: {ing['accepted']} accepted, {rejected} rejected"
              + (" (" + ", ".join(f"{k} {v}" for k, v in sorted(ing["rejected"].items())) + ")"
                 if rejected else "")]
    behind = ing["journal_seq"] - ing["applied_seq"]
    if behind > 0:
        lines.append(f"  {behind} journal row(s) not applied yet: the state above is from before"
                     " them (the daemon applies them when it runs)")
    return "\n".join(lines)

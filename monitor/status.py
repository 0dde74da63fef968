"""``stormwatch status``: the state of every site, read from the database.

Works whether the daemon runs or not: it restores the engine from the latest
snapshot, replays the journal after it (read-only, nothing is recorded) and
asks the engine. The ``--json`` shape is the contract of DESIGN § 6.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from .config import Config, SiteConfig
from .daemon import EngineHost, db_path, open_store
from .engine import Engine
from .engine.health import HealthFold
from .engine.times import MS_PER_HOUR, iso
from .engine.traps import TrapFold
from .engine.turbidity import PairFold
from .models import RejectReason

INGEST_REASONS = frozenset(r.value for r in RejectReason)


def build_status(config: Config, now_ms: int) -> dict[str, Any]:
    """The ``status --json`` object at wall-clock ``now_ms``."""
    out: dict[str, Any] = {"generated_at": iso(now_ms // 1000 * 1000), "sites": {}}
    if not Path(db_path(config)).exists():
        engine = Engine(config)
        ingest: dict[str, Any] = {"accepted": 0, "rejected": {}, "lag_s": None}
        export: dict[str, Any] = {"behind_rows": 0, "enabled": config.influx is not None}
        notify: dict[str, Any] = {"pending": 0, "delivered": 0, "failed": 0, "withheld": 0,
                                  "oldest_pending_at": None}
    else:
        with open_store(config, readonly=True) as store:
            host = EngineHost.restore(config, store)
            host.catch_up(record=False)
            engine = host.engine
            lag = store.meta_get("lag_ms")
            # The dead-letter table also keeps points InfluxDB refused; those are
            # the export's (export.dead_letters), not ingest rejects.
            rejected = {reason: n for reason, n in store.reject_counts().items()
                        if reason in INGEST_REASONS}
            ingest = {"accepted": store.journal_count(), "rejected": rejected,
                      "lag_s": round(int(lag) / 1000, 3) if lag is not None else None,
                      "duplicates": store.counter("duplicates"),
                      "journal_seq": store.journal_max_seq(), "applied_seq": store.applied_seq()}
            summary = store.outbox_summary()
            oldest = summary.pop("oldest_pending_ms")
            notify = {**summary, "oldest_pending_at": iso(oldest) if oldest is not None else None}
            if config.influx is not None:
                # Imported here: the exporter reads site_status from this module.
                from .export.influx import export_status

                export = export_status(store, now_ms)
            else:
                export = {"behind_rows": 0, "enabled": False}
    for site in config.sites:
        out["sites"][site.id] = site_status(engine, site, now_ms)
    out["ingest"] = ingest
    out["export"] = export
    out["notify"] = notify
    return out


def site_status(engine: Engine, site: SiteConfig, now_ms: int) -> dict[str, Any]:
    se = engine.site_engine(site.id)
    open_clocks = []
    for clock in engine.clocks(site.id):
        if clock.closed_at is not None and clock.closed_at <= now_ms:
            continue
        open_clocks.append({
            "clock_id": clock.clock_id, "clock": clock.clock,
            "started_at": iso(clock.start if clock.start is not None else clock.opened_at),
            "due": iso(clock.due) if clock.due is not None else None,
            "hours_left": (round((clock.due - now_ms) / MS_PER_HOUR, 2)
                           if clock.due is not None else None),
            **({"event_id": clock.storm.event_id} if clock.storm is not None else {}),
        })
    open_clocks.sort(key=lambda c: (c["due"] is None, c["due"] or ""))
    inspections = [i.ts_ms for i in se.inspections]
    traps = {tid: cast(TrapFold, tl.fold).summary(tl.state) for tid, tl in se.traps.items()}
    turbidity = {pid: cast(PairFold, tl.fold).summary(tl.state) for pid, tl in se.pairs.items()}
    sensors = {}
    for sensor in site.sensors:
        tl = se.health[sensor.id]
        state = tl.state
        sensors[sensor.id] = {
            "last_seen": iso(state.last_seen) if state.last_seen is not None else None,
            "stale": cast(HealthFold, tl.fold).is_stale(state, now_ms),
            "battery_v": state.battery_v,
            "kind": sensor.kind,
        }
    return {
        "name": site.name,
        "condition": site.condition,
        "open_clocks": open_clocks,
        "last_inspection": iso(max(inspections)) if inspections else None,
        "traps": traps,
        "turbidity": turbidity,
        "sensors": sensors,
    }


def format_status(config: Config, status: dict[str, Any]) -> str:
    """The human-readable ``status``."""
    from datetime import datetime

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
    return "\n".join(lines)

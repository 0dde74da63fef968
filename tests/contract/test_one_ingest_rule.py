"""One ingest rule in the daemon and in ``replay`` (sensors/README.md, "MQTT contract").

``replay`` counted a repeated ``seq`` with another body as more rain (the
daemon dead-letters it as ``seq_conflict``), and judged ``too_old`` against
the newest row of the whole file, so a CSV grouped by site lost every site
written after a later-dated one. Now ``admission.py`` decides both for both
paths: the replay tests below fail on the old code, and the same readings sent
over MQTT to the real daemon and through ``replay`` give the same events and
the same rejections by reason.
"""

from __future__ import annotations

import csv
import io
import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

from monitor.config import Config
from monitor.config.file import load_config, parse_config
from monitor.contract.inputs import Reading
from monitor.contract.times import MS_PER_MINUTE, iso
from monitor.store import Store
from monitor.views.replay import ReplayResult, replay

from ..conftest import MakeMosquitto
from ..support.daemonkit import PREFIX, DaemonProcess, Publisher, ticked_after_input, wait_until

COLUMNS = ["ts", "site", "sensor", "tips_total", "precip_in", "seq", "ntu"]
#: (site, sensor, payload fields with ``ts`` in ms): one input, for a message or a row.
Input = tuple[str, str, dict[str, Any]]


def config_of(*sites: dict[str, Any]) -> Config:
    return parse_config({"state_dir": "/tmp/stormwatch-test", "sites": list(sites)}, env={})


def gauge_site(site_id: str, **extra: Any) -> dict[str, Any]:
    return {"id": site_id, "timezone": "America/New_York", "condition": "B",
            "sensors": [{"id": "rg1", "kind": "rain", "in_per_tip": 0.01,
                         "stale_after_minutes": 600}], **extra}


def to_csv(inputs: list[Input]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    for site, sensor, fields in inputs:
        writer.writerow({"site": site, "sensor": sensor, **fields,
                         "ts": iso(fields["ts"])})
    return out.getvalue()


def replayed(config: Config, inputs: list[Input], *, arrival_order: bool = False
             ) -> ReplayResult:
    return replay(config, io.StringIO(to_csv(inputs)), arrival_order=arrival_order)


def of_type(result: ReplayResult, kind: str, site: str | None = None) -> list[dict[str, Any]]:
    return [e.to_json() for e in result.events()
            if e.type == kind and (site is None or e.site == site)]


def minutes(site: str, start_ms: int, n: int, tips_from: int, tips: int) -> list[Input]:
    """A counter every minute for ``n`` minutes; one tip a minute for ``tips`` minutes
    from minute ``tips_from``."""
    out, total = [], 0
    for m in range(n):
        total += 1 if tips_from <= m < tips_from + tips else 0
        out.append((site, "rg1", {"ts": start_ms + m * MS_PER_MINUTE, "tips_total": total}))
    return out


# --------------------------------------------------------------------------- replay alone


def test_replay_dead_letters_a_repeated_seq_with_another_body() -> None:
    config = config_of(gauge_site("branch-meadows"))
    start = 1_777_629_600_000  # 2026-05-01T10:00:00Z
    rows: list[Input] = [("branch-meadows", "rg1", {"ts": start + i * MS_PER_MINUTE,
                                                    "precip_in": 0.01, "seq": i + 1})
                         for i in range(60)]
    # seq 7 again with another body (0.30 in at 11:30), and seq 8 again unchanged.
    rows.append(("branch-meadows", "rg1", {"ts": start + 90 * MS_PER_MINUTE,
                                           "precip_in": 0.3, "seq": 7}))
    rows.append(rows[7])
    rows.append(("branch-meadows", "rg1", {"ts": start + 480 * MS_PER_MINUTE,
                                           "precip_in": 0.0, "seq": 61}))
    result = replayed(config, rows)
    assert dict(result.rejected) == {"seq_conflict": 1}
    assert result.first_rejects == [
        "row 62: seq_conflict: seq: 7 of branch-meadows/rg1 already identifies another"
        " reading (at an earlier time in the file)"]
    # In the file's order, as a daemon would meet the rows: the same verdict.
    arrived = replayed(config, rows, arrival_order=True)
    assert arrived.first_rejects == [result.first_rejects[0].replace("at an earlier time",
                                                                     "earlier")]
    assert _without_revision([e.to_json() for e in arrived.events()]) == _without_revision(
        [e.to_json() for e in result.events()])
    (q,) = of_type(result, "storm_qualified")
    assert (q["qualified_at"], q["total_in"]) == ("2026-05-01T10:49:00Z", 0.5)
    (end,) = of_type(result, "storm_ended")
    # The 0.30 in under seq 7 is not rain: 0.60 in, ended at 10:59 (not 0.90 at 11:30).
    assert (end["ended_at"], end["total_in"]) == ("2026-05-01T10:59:00Z", 0.6)
    assert result.engine.stats.duplicates == 1  # seq 8 again: a duplicate, not a conflict


def test_replay_in_arrival_order_judges_too_old_per_site_in_a_file_grouped_by_site() -> None:
    """``--arrival-order``: the daemon's lateness rule, per site (read whole, a file has
    no lateness bound: ``tests/commands/test_file_not_stream.py``)."""
    config = config_of(gauge_site("alpha"), gauge_site("beta"))
    june = 1_781_049_600_000  # 2026-06-10T00:00:00Z
    may = 1_777_593_600_000  # 2026-05-01T00:00:00Z
    alpha = minutes("alpha", june, 600, tips_from=1000, tips=0)
    # Older than alpha's newest by 9 days: too old for alpha.
    alpha.append(("alpha", "rg1", {"ts": june - 9 * 86_400_000, "tips_total": 0}))
    # beta, written after alpha, 40 days older: a 0.60 in storm from 10:00.
    beta = minutes("beta", may, 24 * 60, tips_from=600, tips=60)
    beta.append(("beta", "rg1", {"ts": may - 10 * 86_400_000, "tips_total": 0}))
    result = replayed(config, alpha + beta, arrival_order=True)
    assert dict(result.rejected) == {"too_old": 2}
    assert [line.split(": ")[1] for line in result.first_rejects] == ["too_old", "too_old"]
    assert [r.split(":")[0] for r in result.first_rejects] == ["row 602", "row 2043"]
    (q,) = of_type(result, "storm_qualified")
    assert (q["site"], q["gauge"], q["qualified_at"], q["due"]) == (
        "beta", "rg1", "2026-05-01T10:49:00Z", "2026-05-02T10:49:00Z")
    (end,) = of_type(result, "storm_ended")
    assert (end["site"], end["ended_at"], end["total_in"]) == ("beta", "2026-05-01T10:59:00Z",
                                                                0.6)
    assert result.engine.stats.accepted == 600 + 24 * 60


# --------------------------------------------------------------------------- daemon = replay


DAEMON_CONFIG = """\
broker: {{host: 127.0.0.1, port: {port}, client_id: stormwatch-one-rule}}
state_dir: {state}
sites:
  - id: alpha
    timezone: America/New_York
    condition: B
    sensors:
      - {{id: rg1, kind: rain, in_per_tip: 0.01, stale_after_minutes: 600}}
  - id: beta
    timezone: America/New_York
    condition: B
    sensors:
      - {{id: rg1, kind: rain, in_per_tip: 0.01}}
"""


def daemon_inputs(now_ms: int, rnd: random.Random) -> list[Input]:
    """Alpha (written first) from now - 24 h to now - 10 min: a depth with seq every 10
    minutes, 0.60 in from now - 21 h; then beta, older than alpha's newest: a counter
    every 10 minutes from now - 40 h to now - 30 h, 0.60 in from now - 38 h. Each
    block shuffled, a third of it twice; then what both paths must refuse alike.
    Every clock notice and stale sensor falls an hour or more from both the replay's
    now (the newest row) and the daemon's (the wall clock a few minutes later)."""
    hour = 60 * MS_PER_MINUTE
    alpha: list[Input] = []
    for k in range(144):
        at = now_ms - 24 * hour + k * 10 * MS_PER_MINUTE
        wet = 18 <= k < 24  # now - 21 h .. now - 20 h 10 min: six times 0.10 in
        alpha.append(("alpha", "rg1", {"ts": at, "precip_in": 0.1 if wet else 0.0,
                                       "seq": k + 1}))
    beta: list[Input] = []
    total = 0
    for k in range(61):
        at = now_ms - 40 * hour + k * 10 * MS_PER_MINUTE
        total += 10 if 12 <= k < 18 else 0  # now - 38 h .. now - 37 h 10 min
        beta.append(("beta", "rg1", {"ts": at, "tips_total": total}))
    out: list[Input] = []
    for block in (alpha, beta):
        doubled = block + rnd.sample(block, len(block) // 3)
        rnd.shuffle(doubled)
        out += doubled
        if block is alpha:
            out += [
                ("alpha", "rg1", {"ts": now_ms - 8 * 24 * hour, "precip_in": 0.0,
                                  "seq": 1000}),  # too_old
                ("alpha", "rg1", {"ts": now_ms - 15 * hour, "precip_in": 0.4,
                                  "seq": 20}),  # seq_conflict (seq 20 is 0.10 in)
                ("alpha", "zz", {"ts": now_ms - hour, "precip_in": 0.0,
                                 "seq": 1}),  # unknown_sensor
                ("alpha", "rg1", {"ts": now_ms - hour, "ntu": 5.0}),  # wrong_kind
            ]
        else:
            out.append(("beta", "rg1", {"ts": now_ms - 35 * hour,
                                        "tips_total": -1}))  # negative_value
    return out


def _counters(cfg: Path) -> dict[str, int]:
    db = cfg.parent / "state" / "stormwatch.db"
    if not db.exists():
        return {}
    with Store(db, readonly=True) as store:
        return store.journal.counters()


def _settled(cfg: Path, n: int) -> bool:
    counts = _counters(cfg)
    taken = sum(v for k, v in counts.items()
                if k in ("accepted", "duplicates") or k.startswith("rejected."))
    return taken == n and ticked_after_input(cfg)


def _without_revision(events: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps({k: v for k, v in e.items() if k != "revision"}, sort_keys=True)
                  for e in events)


@pytest.mark.integration
def test_the_daemon_and_replay_give_the_same_events_and_rejections(
        tmp_path: Path, make_mosquitto: MakeMosquitto) -> None:
    broker = make_mosquitto()
    cfg = tmp_path / "stormwatch.yaml"
    cfg.write_text(DAEMON_CONFIG.format(port=broker.port, state=tmp_path / "state"))
    config = load_config(cfg, env={})
    now_ms = int(time.time()) // 60 * 60_000
    inputs = daemon_inputs(now_ms, random.Random(18))

    daemon = DaemonProcess(cfg)
    try:
        daemon.start()
        pub = Publisher(broker.port)
        # One connection: the broker delivers in this order (the repeated seq after
        # the reading it repeats), which is the file's order below.
        pub.send_many([(f"{PREFIX}/{site}/{sensor}/reading",
                        {**fields, "ts": iso(fields["ts"])}) for site, sensor, fields in inputs])
        pub.close()
        wait_until(lambda: _settled(cfg, len(inputs)), 60, "every message taken and ticked")
        counts = _counters(cfg)
        with Store(cfg.parent / "state" / "stormwatch.db", readonly=True) as store:
            daemon_events = [e.to_json() for e in store.events.current()]
        assert daemon.stop() == 0
    finally:
        daemon.close()

    # The daemon met the rows as they came: so does ``replay --arrival-order``.
    result = replayed(config, inputs, arrival_order=True)
    replay_events = [e.to_json() for e in result.events()]

    expected_rejects = {"too_old": 1, "seq_conflict": 1, "unknown_sensor": 1, "wrong_kind": 1,
                        "negative_value": 1}
    assert dict(result.rejected) == expected_rejects
    assert {k[len("rejected."):]: v for k, v in counts.items()
            if k.startswith("rejected.")} == expected_rejects
    assert counts["accepted"] == result.engine.stats.accepted == 144 + 61
    # The events, latest revisions (revision numbers depend on arrival and ticks).
    assert _without_revision(daemon_events) == _without_revision(replay_events)
    # And they are what the inputs mean: one storm per site, the conflict no rain.
    ended = sorted((e["site"], e["total_in"], e["qualified"]) for e in replay_events
                   if e["type"] == "storm_ended")
    assert ended == [("alpha", 0.6, True), ("beta", 0.6, True)]
    qualified = sorted((e["site"], e["qualified_at"]) for e in replay_events
                       if e["type"] == "storm_qualified")
    assert qualified == [("alpha", iso(now_ms - (21 * 60 - 40) * MS_PER_MINUTE)),
                         ("beta", iso(now_ms - (38 * 60 - 40) * MS_PER_MINUTE))]


def test_minus_zero_is_zero_for_both_identities() -> None:
    """A depth of -0.0 is the reading 0.0: the journal's identity (canonical JSON) and
    replay's fingerprint agree that it is the same body, so neither path calls a
    repeated ``seq`` with ``-0.0`` a conflict (or two different readings)."""
    from monitor.contract.admission import fingerprint, identity
    from monitor.sources.parse import parse_message

    config = config_of(gauge_site("alpha"))
    ref = 1_777_629_600_000
    plain, minus = (parse_message(config, f"{PREFIX}/alpha/rg1/reading",
                                  f'{{"ts": {ref // 1000}, "precip_in": {v}, "seq": 3}}'.encode(),
                                  ref_ms=ref) for v in ("0.0", "-0.0"))
    assert plain == minus
    assert isinstance(plain, Reading) and isinstance(minus, Reading)
    assert identity(plain.to_json()) == identity(minus.to_json())
    assert fingerprint(plain) == fingerprint(minus)
    assert json.dumps(minus.to_json()["precip_in"]) == "0.0"

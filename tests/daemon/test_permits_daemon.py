"""A site under two permits through the daemon and a real Mosquitto, and the same rows
through ``replay``: the same clocks, each with its permit and section (config/README.md,
"Permits")."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from monitor.contract.times import iso

from ..conftest import MakeMosquitto
from ..support.daemonkit import (
    SITE,
    DaemonProcess,
    Publisher,
    cli,
    counter_storm,
    events_of,
    wait_until,
    write_config,
)

pytestmark = pytest.mark.integration

PERMITS = """\
    permits:
      - village-branch-134
      - {profile: epa-cgp-2022, frequency: biweekly_storm}
"""


@pytest.fixture
def cfg(tmp_path: Path, make_mosquitto: MakeMosquitto) -> Iterator[tuple[Path, int]]:
    broker = make_mosquitto()
    path = write_config(tmp_path, broker.port)
    text = path.read_text().replace("    condition: B\n", "    condition: B\n" + PERMITS)
    path.write_text(text)
    yield path, broker.port


def storm_clocks(events: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    return {(e["type"], e["permit"], e["section"], e["clock_id"], e["due"], e.get("outcome"))
            for e in events if e["type"] in ("storm_qualified", "clock_closed")
            and e["clock_id"] and "storm-" in e["clock_id"]}


def test_the_daemon_and_replay_give_the_same_duties(cfg: tuple[Path, int],
                                                    tmp_path: Path) -> None:
    path, port = cfg
    daemon = DaemonProcess(path).start()
    try:
        start = int(time.time()) // 60 * 60 - 20 * 3600
        # 60 tips of 0.01 in from minute 30: EPA's 0.25 in at minute 54, the village's
        # 0.50 in at minute 79.
        messages = counter_storm(start, 200, storm_from=30, storm_tips=60)
        pub = Publisher(port)
        pub.send_many(messages)
        pub.close()
        qualified = wait_until(lambda: len(events_of(path, "storm_qualified")) == 2
                               and events_of(path, "storm_qualified"), 30,
                               "a storm_qualified of each permit")
        by_permit = {e["permit"]: e for e in qualified}
        assert by_permit["epa-cgp-2022"]["qualified_at"] == iso((start + 54 * 60) * 1000)
        assert by_permit["village-branch-134"]["qualified_at"] == iso((start + 79 * 60) * 1000)
        out = cli("inspect", "--config", str(path), "--site", SITE, "--inspector", "J. Rivera",
                  "--kind", "storm")
        assert out.returncode == 0, out.stderr
        closed = wait_until(lambda: len([e for e in events_of(path, "clock_closed")
                                         if "storm-" in e["clock_id"]]) == 2
                            and events_of(path, "clock_closed"), 15, "both storm clocks")
        status = cli("status", "--config", str(path), "--json")
        assert status.returncode == 0, status.stderr
        open_clocks = json.loads(status.stdout)["sites"][SITE]["open_clocks"]
        assert {c["permit"] for c in open_clocks} == {"village-branch-134", "epa-cgp-2022"}
        assert {c["section"] for c in open_clocks} == {"§ 134-9A(2)", "CGP 2022 Part 4.2"}
    finally:
        assert daemon.stop() == 0
    (inspected,) = {e["inspected_at"] for e in closed if "storm-" in e["clock_id"]}
    rows = tmp_path / "rows.csv"
    rows.write_text("ts,site,sensor,tips_total,inspector\n" + "".join(
        f"{iso(body['ts'] * 1000)},{SITE},rg1,{body['tips_total']},\n" for _, body in messages)
        + f"{inspected},{SITE},inspection,,J. Rivera\n")
    replay = cli("replay", "--config", str(path), "--input", str(rows), "--format", "jsonl")
    assert replay.returncode == 0, replay.stderr
    replayed = [json.loads(line) for line in replay.stdout.splitlines()]
    daemon_events = events_of(path, "storm_qualified") + events_of(path, "clock_closed")
    assert storm_clocks(replayed) == storm_clocks(daemon_events)
    assert len(storm_clocks(replayed)) == 4

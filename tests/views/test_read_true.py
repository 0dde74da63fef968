"""What a person reads says what is true: a depth or a fill printed
beside its threshold is never rounded across it, and an overdue clock says OVERDUE.

One site (``daemonkit.CONFIG``: the 0.5 in storm threshold; trap-1 a Blue Book trap,
20 x 10 ft, 2:1 sides, 4 ft deep, warning at 40 %, clean-out at 50 %), in UTC:

* May 1, 12:00 to 12:30: four readings of 0.124 in: a storm of 0.496 in that does
  not qualify (below 0.5 in), ended by a dry reading at 20:00;
* May 1, 13:00 to 17:00: five sediment readings of 31.68 in (2.64 ft):
  V(2.64) = 200·2.64 + 60·2.64² + 16/3·2.64³ = 528 + 418.176 + 98.132 = 1044.308 cf
  of V(4) = 800 + 960 + 341.333 = 2101.333 cf: a fill of 0.49698, a warning
  (``trap_fill``) at the fifth reading, below the 50 % clean-out;
* May 2, 12:00 and 12:10: 0.30 in each: 0.60 in, qualified at 12:10, due May 3
  12:10 (08:10 EDT); the last reading, May 3 18:10, finds it 6.0 h overdue.

Through the real paths: ``stormwatch replay --format table``, ``stormwatch status``
and ``stormwatch report`` as processes, and the alert texts of the engine's events.
"""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timedelta
from html import unescape
from pathlib import Path

import pytest

from monitor.config.file import load_config
from monitor.contract.inputs import Inspection, Reading
from monitor.contract.times import MS_PER_HOUR, iso, parse_iso
from monitor.host.engine import EngineHost
from monitor.host.rows import journal_in
from monitor.sinks.notify.messages import Alert, render
from monitor.sources.parse import parse_message
from monitor.store.opening import open_store

from ..support.commandkit import stormwatch
from ..support.daemonkit import SITE, write_config
from ..support.reportkit import table_cells

#: (time, sensor, precip_in, seq, depth_in) as the module docstring lists them.
ROWS = [("2026-05-01T12:00:00Z", "rg1", 0.124, 1, None),
        ("2026-05-01T12:10:00Z", "rg1", 0.124, 2, None),
        ("2026-05-01T12:20:00Z", "rg1", 0.124, 3, None),
        ("2026-05-01T12:30:00Z", "rg1", 0.124, 4, None),
        ("2026-05-01T20:00:00Z", "rg1", 0.0, 5, None),
        ("2026-05-02T12:00:00Z", "rg1", 0.3, 6, None),
        ("2026-05-02T12:10:00Z", "rg1", 0.3, 7, None),
        ("2026-05-03T18:10:00Z", "rg1", 0.0, 8, None)] + [
        (f"2026-05-01T{h}:00:00Z", "trap1-depth", None, None, 31.68) for h in range(13, 18)]
END = parse_iso("2026-05-03T18:10:00Z")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site's configuration file, its readings recorded up to the last one."""
    tmp = tmp_path_factory.mktemp("true")
    path = write_config(tmp, 1)
    config = load_config(path, env={})
    items = sorted((Reading(site=SITE, sensor=s, kind="rain" if s == "rg1" else "sediment",
                            ts_ms=parse_iso(t), precip_in=p, seq=q, depth_in=d)
                    for t, s, p, q, d in ROWS), key=lambda r: r.ts_ms)
    with open_store(config) as store:
        host = EngineHost.restore(config, store, clock=lambda: END / 1000)
        store.journal.commit([journal_in(it, topic=None, received_ms=None) for it in items])
        host.catch_up()
        host.tick()
    csv = tmp / "readings.csv"
    csv.write_text("ts,site,sensor,precip_in,seq,depth_in\n" + "".join(
        f"{t},{SITE},{s},{'' if p is None else p},{'' if q is None else q},"
        f"{'' if d is None else d}\n" for t, s, p, q, d in sorted(ROWS)), encoding="utf-8")
    return path


def test_the_replay_table_never_rounds_across_a_threshold_and_says_overdue(site: Path) -> None:
    proc = stormwatch(site, ("replay", "--input", str(site.parent / "readings.csv"),
                             "--format", "table"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    storms = [ln.split() for ln in lines if ln.startswith("  rg1 ")]
    # The unqualified storm: 0.496 in, total and largest 24 hours, not "0.50 in".
    assert storms[0][7:11] == ["0.496", "in", "0.496", "in"], lines
    assert storms[1][7:11] == ["0.60", "in", "0.60", "in"]
    (trap,) = [ln for ln in lines if "trap_fill" in ln]
    assert trap.endswith("fill 49.7% at 31.7 in")
    (storm_clock,) = [ln for ln in lines if ln.startswith("  storm ")]
    # Due May 3 08:10 EDT; the replay's now is 14:10 EDT, the last reading.
    assert storm_clock.endswith("due 2026-05-03 08:10 EDT  OVERDUE by 6.0 h")


def test_status_says_the_fill_below_the_clean_out_and_the_clock_overdue(site: Path) -> None:
    proc = stormwatch(site, ("status",))
    assert proc.returncode == 0, proc.stderr
    assert "  trap trap-1: 49.7% of design volume" in proc.stdout
    (clock,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("  clock storm ")]
    assert "due 2026-05-03 08:10 EDT, OVERDUE by " in clock


def test_the_report_says_the_storm_and_the_fill_as_they_are(site: Path) -> None:
    out = site.parent / "report.html"
    proc = stormwatch(site, ("report", "--site", SITE, "--from", "2026-05-01",
                             "--to", "2026-05-03"), out=out)
    assert proc.returncode == 0, proc.stderr
    html = out.read_text(encoding="utf-8")
    storms = table_cells(html, "Storms")
    assert [s[2] for s in storms] == ["0.496 in", "0.60 in"]
    # Judged at the end of the period (May 4 00:00 EDT), 15.8 h after the due time.
    assert storms[1][-1] == "overdue"
    (trap,) = table_cells(html, "Sediment traps")
    assert trap[2:] == ["warning level reached", "49.7%"]
    alt = re.search(r'<img alt="(Hourly rain[^"]*)"', html)
    assert alt is not None and "highest storm total: rg1 0.60 in" in unescape(alt.group(1))


def test_the_alerts_say_the_storm_below_the_threshold(site: Path) -> None:
    config = load_config(site, env={})
    with open_store(config, readonly=True) as store:
        events = store.events.current(SITE)
    ended = next(render(Alert(e.id, e, END, config.site(SITE))) for e in events
                 if e.type == "storm_ended" and e.body.to_json().get("qualified") is False)
    assert "0.496 in" in ended.title and "0.50 in" not in ended.text
    fill = next(render(Alert(e.id, e, END, config.site(SITE))) for e in events
                if e.type == "trap_fill")
    assert "49.7% of design capacity" in fill.title
    assert "clean-out is required at 50.0%" in fill.text


def test_an_mqtt_inspection_naming_no_open_action_is_recorded_and_the_report_says_so(
        tmp_path: Path) -> None:
    """An MQTT inspection is the field's record, sent by a device no one can ask to fix a
    typo: refused, the inspection and every clock it closes would be lost (and whether
    an id is open depends on what arrived first, where admission must not). So it is
    recorded as sent, the unknown id resolves nothing (the engine's rule), and the
    report says so beside it; the action meant stays open."""
    path = write_config(tmp_path, 1)
    config = load_config(path, env={})
    now = round(time.time() * 1000)
    topic = f"stormwatch/v1/{SITE}/inspection"
    sent = [{"inspector": "J. Rivera", "ts": iso(now - 2 * MS_PER_HOUR),
             "corrective_actions": [{"text": "re-seed the slope"}]},
            {"inspector": "J. Rivera", "ts": iso(now - MS_PER_HOUR), "resolves": ["ca-bogus"]}]
    items = [parse_message(config, topic, json.dumps(p).encode(), ref_ms=now) for p in sent]
    assert all(isinstance(i, Inspection) and i.via == "mqtt" for i in items), items
    with open_store(config) as store:
        host = EngineHost.restore(config, store)
        store.journal.commit([journal_in(i, topic=topic, received_ms=now) for i in items
                              if isinstance(i, Inspection)])
        host.catch_up()
    today = datetime.now(config.sites[0].zone).date()  # from yesterday: 2 h ago may be it
    out = tmp_path / "r.html"
    proc = stormwatch(path, ("report", "--site", SITE, "--from",
                             (today - timedelta(days=1)).isoformat(), "--to", today.isoformat()),
                      out=out)
    assert proc.returncode == 0, proc.stderr
    html = out.read_text(encoding="utf-8")
    _, resolving = table_cells(html, "Inspections")
    assert resolving[4] == ("resolves ca-bogus (no corrective action was open under this id:"
                            " it resolved nothing)")
    (action,) = table_cells(html, "Corrective actions")
    assert action[5] == "open" and action[1] == "re-seed the slope"

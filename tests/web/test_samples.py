"""Dewatering turbidity samples taken by hand, entered in the field app (EPA CGP 2022 Part
3.3.1): journaled as readings of the discharge point, averaged by the benchmark like a
probe's; refused with the field at fault when a meter cannot have read them.

The app's clock stands at Thu Dec 3 2026 16:30 UTC (11:30 EST). Samples of 60, 62 and
64 NTU on Fri Nov 27 to Sun Nov 29 at 10:00 EST, then one on Tue Dec 1: the week of
Nov 23 is judged, its mean 62.0 NTU over 3 samples above 50.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monitor.contract.events import TurbidityBenchmarkExceeded
from monitor.contract.times import parse_iso
from monitor.store.opening import open_store
from monitor.web.app import create_app

from ..support.webkit import QP, SITE, client_for, recorded_web_site, sign_in

NOW_MS = parse_iso("2026-12-03T16:30:00Z")
DEWATERING = ("    permits:\n      - village-branch-134\n"
              "      - {profile: epa-cgp-2022, dewatering: [tb-dw]}\n")
PROBE = "      - {id: tb-dw, kind: turbidity, stale_after_minutes: 2880}\n"


def site(tmp_path: Path) -> tuple[Any, Any]:
    def edit(text: str) -> str:
        text = text.replace("    condition: B\n", "    condition: B\n" + DEWATERING, 1)
        return text.replace("    sensors:\n", "    sensors:\n" + PROBE, 1)

    _, config = recorded_web_site(tmp_path, edit, [], now_ms=NOW_MS)
    client = client_for(config, create_app(config, clock=lambda: NOW_MS, wait_s=0.5))
    return config, client


def post(client: Any, csrf: str, **form: str) -> Any:
    return client.post(f"/sites/{SITE}/samples", data={"csrf": csrf, "sensor": "tb-dw", **form},
                       follow_redirects=False)


def test_hand_samples_are_averaged_against_the_benchmark(tmp_path: Path) -> None:
    config, client = site(tmp_path)
    csrf = sign_in(client, tmp_path / "state", QP)
    page = client.get(f"/sites/{SITE}").text
    assert "Dewatering turbidity sample" in page and '<option value="tb-dw">' in page
    for day, ntu in (("27", "60"), ("28", "62"), ("29", "64"), ("30", "10")):
        got = post(client, csrf, ntu=ntu, taken_at=f"2026-11-{day}T10:00")
        assert got.status_code == 303, got.text
    assert post(client, csrf, ntu="12", taken_at="2026-12-01T10:00").status_code == 303
    with open_store(config, readonly=True) as store:
        found = [e.body for e in store.events.current(SITE)
                 if isinstance(e.body, TurbidityBenchmarkExceeded)]
    # Nov 30 is a Monday: the next week's, not in the mean of the week of Nov 23.
    assert [(b.week_from, b.week_to, b.mean_ntu, b.samples, b.permit) for b in found] == [
        ("2026-11-23T05:00:00Z", "2026-11-30T05:00:00Z", 62.0, 3, "epa-cgp-2022")]


def test_a_sample_no_meter_can_read_is_refused_with_its_field(tmp_path: Path) -> None:
    _, client = site(tmp_path)
    csrf = sign_in(client, tmp_path / "state", QP)
    ahead = post(client, csrf, ntu="20", taken_at="2026-12-05T10:00")
    assert ahead.status_code == 422 and "ts:" in ahead.text and "after the reference" in ahead.text
    assert post(client, csrf, ntu="lots").status_code == 422
    assert "ntu" in post(client, csrf, ntu="-3").text
    other = client.post(f"/sites/{SITE}/samples",
                        data={"csrf": csrf, "sensor": "tb-up", "ntu": "5"})
    assert other.status_code == 422 and "no dewatering discharge point" in other.text

"""The field app through FastAPI's TestClient: the real app on a real state
directory (no daemon running: an inspection takes the state lock and brings the
recorded state up to date, as ``stormwatch inspect`` does)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from monitor.contract.events import InspectionRecorded
from monitor.host.links import sign_link
from monitor.store.opening import open_store

from ..support.photos import jpeg_with_gps
from ..support.webkit import (
    OFFICER,
    QP,
    SITE,
    client_for,
    sign_in,
    web_env,
)


@pytest.fixture
def app_env(tmp_path: Path) -> dict[str, Any]:
    return web_env(tmp_path)


def inspections(config: Any) -> list[InspectionRecorded]:
    with open_store(config, readonly=True) as store:
        return [e.body for e in store.events.current(SITE)
                if isinstance(e.body, InspectionRecorded)]


def test_the_form_has_the_labels_of_the_contract(app_env: dict[str, Any]) -> None:
    client = app_env["client"]
    sign_in(client, app_env["state"], QP)
    html = client.get(f"/sites/{SITE}/inspect").text
    for label in ("Inspector", "Inspected at", "Kind", "Silt fence", "Inlet protection",
                  "Corrective action", "Photos", "Use my location", "Notes",
                  "Record inspection", "I certify"):
        assert label in html, label
    for condition in ("ok", "needs_repair", "missing", "not_applicable"):
        assert f'value="{condition}"' in html


def test_the_plain_form_records_an_inspection_with_a_photo(app_env: dict[str, Any]) -> None:
    client, config = app_env["client"], app_env["config"]
    csrf = sign_in(client, app_env["state"], QP)
    html = client.get(f"/sites/{SITE}/inspect").text
    key = html.split('name="idempotency_key" value="')[1].split('"')[0]
    form = {"csrf": csrf, "idempotency_key": key, "inspector": QP, "kind": "routine",
            "p.silt-fence.condition": "needs_repair", "p.silt-fence.note": "undermined at 2+40",
            "p.inlet-protection.condition": "ok", "ca_text": "restake silt fence",
            "ca_due": "2026-12-31", "caption_1": "north fence", "notes": "windy",
            "certified": "on", "lat": "40.7", "lon": "-74.0", "accuracy_m": "8"}
    photo = jpeg_with_gps()
    got = client.post(f"/sites/{SITE}/inspect", data=form,
                      files={"photo_1": ("../../etc/passwd", photo, "image/jpeg")})
    assert got.status_code == 201, got.text
    assert "Inspection recorded" in got.text and "ca-" in got.text
    [rec] = inspections(config)
    assert rec.via == "web" and rec.certified is True and rec.inspector == QP
    assert rec.findings == ({"practice": "silt-fence", "condition":
                             "needs_repair: undermined at 2+40"},
                            {"practice": "inlet-protection", "condition": "ok"})
    assert rec.location == {"lat": 40.7, "lon": -74.0, "accuracy_m": 8.0}
    assert rec.photos is not None and rec.photos[0]["caption"] == "north fence"
    assert rec.photos[0]["taken_at"] == "2026-11-30T14:15:00Z"
    assert [a["text"] for a in rec.corrective_actions] == ["restake silt fence"]
    # The same form posted twice (a double tap) is recorded once.
    again = client.post(f"/sites/{SITE}/inspect", data=form,
                        files={"photo_1": ("x.jpg", photo, "image/jpeg")})
    assert again.status_code == 201 and len(inspections(config)) == 1
    site = client.get(f"/sites/{SITE}").text
    assert f"sha256 {rec.photos[0]['sha256']}" in site and "north fence: taken 2026-11-30" in site
    assert "40.71280, -74.00600" in site
    # Nothing of the file name reached the disk.
    names = [p.name for p in (app_env["state"] / "photos").rglob("*") if p.is_file()]
    assert names == [rec.photos[0]["sha256"]]


def test_the_api_records_once_per_idempotency_key(app_env: dict[str, Any]) -> None:
    client, config = app_env["client"], app_env["config"]
    from monitor.store.users import Users
    with Users.open(app_env["state"]) as users:
        token = users.issue_api_token(QP, round(time.time() * 1000))
    auth = {"Authorization": f"Bearer {token}"}
    up = client.post("/api/v1/photos", headers=auth,
                     files={"photo": ("p.jpg", jpeg_with_gps(), "image/jpeg")})
    assert up.status_code == 201, up.text
    sha = up.json()["sha256"]
    body = {"inspectors": [QP], "kind": "routine", "findings": [
        {"practice": "silt-fence", "condition": "ok"}], "photos": [
        {"sha256": sha, "caption": "fence"}], "certified": True,
        "corrective_actions": [{"text": "sweep entrance", "due": "2026-12-31"}]}
    headers = {**auth, "Idempotency-Key": "key-0001-abcdef"}
    first = client.post(f"/api/v1/sites/{SITE}/inspections", headers=headers, json=body)
    assert first.status_code == 201, first.text
    second = client.post(f"/api/v1/sites/{SITE}/inspections", headers=headers, json=body)
    assert second.status_code == 201 and second.json() == first.json()
    assert len(inspections(config)) == 1
    assert first.json()["corrective_actions"][0].startswith("ca-")
    # The key survives a new app (it is in the state directory, not in memory).
    fresh = client_for(config)
    third = fresh.post(f"/api/v1/sites/{SITE}/inspections", headers=headers, json=body)
    assert third.json() == first.json() and len(inspections(config)) == 1
    bad = client.post(f"/api/v1/sites/{SITE}/inspections",
                      headers={**auth, "Idempotency-Key": "key-0002-abcdef"},
                      json={**body, "kind": "sometimes"})
    assert bad.status_code == 422 and bad.json() == {
        "error": "kind: must be one of storm, routine, other"}
    ahead = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86400))
    future = client.post(f"/api/v1/sites/{SITE}/inspections",
                         headers={**auth, "Idempotency-Key": "key-0003-abcdef"},
                         json={**body, "inspected_at": ahead})
    assert future.status_code == 422
    assert future.json()["error"].startswith("inspected_at: ") and "ahead" in future.json()["error"]


def test_an_alert_link_opens_the_form_only_after_sign_in(app_env: dict[str, Any]) -> None:
    client = app_env["client"]
    token = sign_link(b"k" * 32, SITE, "storm-e1", round(time.time() * 1000) + 3_600_000)
    got = client.get(f"/a/{token}", follow_redirects=False)
    assert got.status_code == 401 and "Sign in" in got.text
    sign_in(client, app_env["state"], QP)  # lands on the form it pointed to
    assert client.get(f"/a/{token}", follow_redirects=False).headers["location"] == \
        f"/sites/{SITE}/inspect?clock=storm-e1"
    assert client.get("/a/" + token[:-3] + "AAA").status_code == 400
    expired = sign_link(b"k" * 32, SITE, None, round(time.time() * 1000) - 1)
    assert client.get(f"/a/{expired}").status_code == 410


def test_the_officer_sees_every_site_and_records_nothing(app_env: dict[str, Any]) -> None:
    client = app_env["client"]
    csrf = sign_in(client, app_env["state"], OFFICER)
    page = client.get("/officer")
    assert page.status_code == 200 and "Log book: verifies" in page.text
    assert "mill-road-lot" in page.text and SITE in page.text
    assert client.get(f"/sites/{SITE}").status_code == 200
    assert client.get(f"/sites/{SITE}/inspect").status_code == 403
    assert client.get(f"/sites/{SITE}/logbook.csv").status_code == 200
    got = client.post(f"/api/v1/sites/{SITE}/inspections", json={"inspectors": [OFFICER]},
                      headers={"Idempotency-Key": "officer-key-1", "X-CSRF-Token": csrf})
    assert got.status_code == 403 and json.loads(got.text)["error"].startswith("site: ")
    report = client.get(f"/sites/{SITE}/report?from=2026-11-01&to=2026-11-30")
    assert report.status_code == 200 and "<html" in report.text.lower()
    pdf = client.get(f"/sites/{SITE}/report?from=2026-11-01&to=2026-11-30&format=pdf")
    assert pdf.status_code == 200 and pdf.headers["content-type"] == "application/pdf"
    assert pdf.content.startswith(b"%PDF")


def test_the_site_page_never_shows_an_unchecked_contrast_as_ok(app_env: dict[str, Any]
                                                               ) -> None:
    """The downstream probe stopped at 12:50 UTC May 1 (its stale_after_minutes
    is 600 here: stale from 22:50 UTC, 18:50 EDT); months later the page says the
    contrast is unknown and why, not the last reading's "ok"."""
    from monitor.contract.inputs import Reading
    from monitor.contract.times import MS_PER_MINUTE, parse_iso
    from monitor.host.engine import EngineHost
    from monitor.host.rows import journal_in
    client, config = app_env["client"], app_env["config"]
    start = parse_iso("2026-05-01T12:00:00Z")
    items = []
    for i in range(12):
        t = start + i * 10 * MS_PER_MINUTE
        items += [Reading(SITE, "tb-up", "turbidity", t, ntu=5.0)]
        if i < 6:
            items.append(Reading(SITE, "tb-down", "turbidity", t, ntu=6.0))
    with open_store(config) as store:
        host = EngineHost.restore(config, store)
        store.journal.commit([journal_in(it, topic=None, received_ms=None) for it in items])
        host.catch_up()
        host.record_status()
    sign_in(client, app_env["state"], QP)
    page = client.get(f"/sites/{SITE}").text
    assert ("Turbidity outfall-1: unknown: contrast unknown since Fri May 1 18:50 EDT (no "
            "readings from the downstream probe), § 134-8C not checked</li>") in page

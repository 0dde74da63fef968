"""An inspection cites only photos its recorder uploaded, or photos already cited at
that site: a photo is named by its hash alone, and
before this one site's inspection could cite another site's evidence.

Through the real app and the real journal path (an MQTT inspection citing a
photo is journaled by ``commit_inspection``).
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from monitor.contract.events import InspectionRecorded
from monitor.contract.inputs import Inspection, Photo
from monitor.host.inspections import commit_inspection
from monitor.store.opening import open_store

from ..support.photos import jpeg_with_gps
from ..support.webkit import OTHER, QP, QP2, SITE, client_of, sign_in, web_app

REFUSED = ("photos.0.sha256: no photo you uploaded has this hash (nor one cited at this"
           " site before); send it to /api/v1/photos first")


def _person(app: Any, state: Path, name: str) -> tuple[TestClient, str]:
    client = client_of(app)
    return client, sign_in(client, state, name)


def _upload(person: tuple[TestClient, str], data: bytes) -> str:
    client, csrf = person
    got = client.post("/api/v1/photos", headers={"X-CSRF-Token": csrf},
                      files={"photo": ("p.jpg", data, "image/jpeg")})
    assert got.status_code == 201, got.text
    sha: str = got.json()["sha256"]
    return sha


def _cite(person: tuple[TestClient, str], site: str, name: str, sha: str, key: str) -> Any:
    client, csrf = person
    return client.post(f"/api/v1/sites/{site}/inspections",
                       json={"inspectors": [name], "kind": "other", "certified": True,
                             "photos": [{"sha256": sha, "caption": "evidence"}]},
                       headers={"Idempotency-Key": key, "X-CSRF-Token": csrf})


def _cited(config: Any, site: str) -> list[str]:
    with open_store(config, readonly=True) as store:
        return [p["sha256"] for e in store.events.current(site)
                if isinstance(e.body, InspectionRecorded) for p in e.body.photos or ()]


def test_a_photo_of_another_person_or_site_is_422_unless_cited_at_this_site(
        tmp_path: Path) -> None:
    config, app = web_app(tmp_path)
    state = tmp_path / "state"
    rivera, chen = _person(app, state, QP), _person(app, state, QP2)
    theirs = _upload(chen, jpeg_with_gps(color=(10, 20, 30)))
    mine = _upload(rivera, jpeg_with_gps(color=(200, 20, 30)))
    never = hashlib.sha256(b"never uploaded").hexdigest()

    for sha, key in ((theirs, "cite-theirs-1"), (never, "cite-never-1")):
        got = _cite(rivera, SITE, QP, sha, key)
        assert got.status_code == 422, got.text
        assert got.json() == {"error": REFUSED}
    assert _cited(config, SITE) == []

    assert _cite(rivera, SITE, QP, mine, "cite-mine-1").status_code == 201
    assert _cite(chen, OTHER, QP2, theirs, "cite-own-2").status_code == 201
    # Rivera's photo is evidence at his site, not at Chen's.
    got = _cite(chen, OTHER, QP2, mine, "cite-other-site-1")
    assert got.status_code == 422 and got.json() == {"error": REFUSED}

    # Chen's photo cited at Rivera's site by an MQTT inspection: now evidence there.
    now = round(time.time() * 1000)
    mqtt = Inspection(SITE, QP, now - 60_000, kind="other", entered_ms=now, via="mqtt",
                      photos=(Photo(theirs, caption="from the site's own account"),))
    assert commit_inspection(config, mqtt, 0.5).recorded is not None
    assert _cite(rivera, SITE, QP, theirs, "cite-theirs-2").status_code == 201
    assert sorted(_cited(config, SITE)) == sorted([mine, theirs, theirs])
    assert _cited(config, OTHER) == [theirs]

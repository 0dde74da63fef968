"""A photo's time never breaks a page, a report or the log book.

A camera's EXIF time that is no plausible instant (year 1 at +05:00, year 9999,
before 1990, days ahead of the upload) is stored as unknown: ``taken_at`` null,
the camera's words in ``taken_at_text``. A row already in the log book with
such a time (an MQTT inspection recorded by an older version) is shown as it
was stored: the site page, the report (HTML, PDF, ``stormwatch report``) and
the log book export answer, for that period, for good.

Everything through the real app (TestClient over ``create_app``), the real
``commit_inspection`` journal path and the real command line.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from monitor.contract.inputs import Inspection, Photo
from monitor.host.inspections import commit_inspection

from ..support.daemonkit import cli
from ..support.photos import jpeg_with_gps
from ..support.webkit import (
    OFFICER,
    OTHER,
    QP,
    QP2,
    SITE,
    client_of,
    sign_in,
    web_app,
    write_web_config,
)

#: The second site, moved east of UTC: a time near year 9999 there is past 9999.
EAST = "Asia/Kolkata"
YEAR_ONE = "0001-01-01T00:00:00Z"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, Any]:
    path = write_web_config(tmp_path)
    text = path.read_text()
    head, sep, other = text.rpartition("  - id: mill-road-lot\n")
    path.write_text(head + sep + other.replace("America/New_York", EAST))
    config, app = web_app(tmp_path, path)
    assert config.site(OTHER).timezone == EAST
    return {"app": app, "config": config, "state": tmp_path / "state", "path": path,
            "tmp": tmp_path}


def _client(env: dict[str, Any], name: str) -> tuple[TestClient, str]:
    client = client_of(env["app"])
    return client, sign_in(client, env["state"], name)


def _upload(client: TestClient, csrf: str, data: bytes) -> dict[str, Any]:
    got = client.post("/api/v1/photos", headers={"X-CSRF-Token": csrf},
                      files={"photo": ("p.jpg", data, "image/jpeg")})
    assert got.status_code == 201, got.text
    answer: dict[str, Any] = got.json()
    return answer


def _exif(when: datetime) -> str:
    return when.strftime("%Y:%m:%d %H:%M:%S")


@pytest.mark.parametrize(("taken", "offset", "said"), [
    ("9999:12:31 23:59:59", None, "9999:12:31 23:59:59"),
    ("0001:01:01 00:00:00", "+05:00", "0001:01:01 00:00:00 +05:00"),
    ("1989:12:31 23:59:59", "+00:00", "1989:12:31 23:59:59 +00:00"),
    ("0000:00:00 00:00:00", None, "0000:00:00 00:00:00"),
    ("in the future", None, "FUTURE"),
])
def test_an_implausible_exif_time_is_stored_as_unknown_with_the_cameras_words(
        env: dict[str, Any], taken: str, offset: str | None, said: str) -> None:
    if taken == "in the future":
        taken = said = _exif(datetime.now(timezone.utc) + timedelta(days=3))
        offset = None
    client, csrf = _client(env, QP)
    got = _upload(client, csrf, jpeg_with_gps(taken=taken, offset=offset))
    assert (got["taken_at"], got["taken_at_text"]) == (None, said)


def test_a_plausible_exif_time_is_the_photos_time(env: dict[str, Any]) -> None:
    client, csrf = _client(env, QP)
    hour_ago = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=1)
    got = _upload(client, csrf, jpeg_with_gps(taken=_exif(hour_ago), offset="+00:00"))
    assert got["taken_at"] == hour_ago.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert got["taken_at_text"] is None


def _record(client: TestClient, csrf: str, site: str, name: str, sha: str, key: str) -> None:
    got = client.post(f"/api/v1/sites/{site}/inspections",
                      json={"inspectors": [name], "kind": "other", "certified": True,
                            "photos": [{"sha256": sha, "caption": "inlet"}]},
                      headers={"Idempotency-Key": key, "X-CSRF-Token": csrf})
    assert got.status_code == 201, got.text


def _everything_answers(env: dict[str, Any], client: TestClient, site: str,
                        shown: str) -> None:
    """The site page, the report as HTML and as PDF, the log book export and
    ``stormwatch report`` all answer, and show ``shown`` where the time would be."""
    page = client.get(f"/sites/{site}")
    assert page.status_code == 200, page.text[:300]
    assert shown in page.text
    today = datetime.now(timezone.utc).date()
    period = f"from={today - timedelta(days=2)}&to={today + timedelta(days=1)}"
    html = client.get(f"/sites/{site}/report?{period}")
    assert html.status_code == 200, html.text[:300]
    assert shown in html.text
    pdf = client.get(f"/sites/{site}/report?{period}&format=pdf")
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF-")
    assert client.get(f"/sites/{site}/logbook.csv").status_code == 200
    out = env["tmp"] / f"{site}.html"
    run = cli("report", "--config", str(env["path"]), "--site", site,
              "--from", str(today - timedelta(days=2)), "--to", str(today + timedelta(days=1)),
              "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr and shown in out.read_text(encoding="utf-8")
    for command in (("status",), ("logbook", "--site", site, "--format", "md")):
        run = cli(*command, "--config", str(env["path"]))
        assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    officer = client_of(env["app"])
    sign_in(officer, env["state"], OFFICER)
    assert officer.get("/officer").status_code == 200


def test_exif_year_9999_at_a_site_east_of_utc_breaks_neither_page_nor_report(
        env: dict[str, Any]) -> None:
    client, csrf = _client(env, QP2)
    got = _upload(client, csrf, jpeg_with_gps(taken="9999:12:31 23:59:59", offset=None))
    _record(client, csrf, OTHER, QP2, got["sha256"], "east-9999-1")
    _everything_answers(env, client, OTHER, "9999:12:31 23:59:59")


def test_a_year_one_photo_time_already_in_the_log_book_is_shown_as_stored(
        env: dict[str, Any]) -> None:
    """An MQTT inspection recorded by an older version, its photo's ``taken_at`` from
    the payload: journaled through the one path every inspection takes."""
    client, csrf = _client(env, QP)
    sha = _upload(client, csrf, jpeg_with_gps())["sha256"]
    now = round(time.time() * 1000)
    old = Inspection(SITE, QP, now - 3_600_000, kind="other", entered_ms=now, via="mqtt",
                     photos=(Photo(sha, YEAR_ONE, caption="inlet"),))
    assert commit_inspection(env["config"], old, 0.5).recorded is not None
    _everything_answers(env, client, SITE, YEAR_ONE)

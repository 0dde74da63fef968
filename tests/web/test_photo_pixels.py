"""A decompression bomb is refused at upload and never decoded in a report (items 6 and 13).

A 20 KB PNG can say 13 000 x 13 000 pixels; decoding it takes most of a gigabyte
and seconds of CPU. The upload reads the header only and refuses more than
``web.max_photo_mpx`` (413, ``photo: W×H pixels, at most N megapixels``); past
Pillow's own limit (``DecompressionBombError``) the same refusal, not a 500. A
photo stored before the cap (or since it was lowered) is shown in the report
as too large, not decoded. Through the real app; the memory it saves is
measured in the issue's report (``/usr/bin/time -v``), not here.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from ..support.daemonkit import cli
from ..support.photos import jpeg_with_gps, png_bomb
from ..support.webkit import QP, SITE, client_of, sign_in, web_app, write_web_config


def _stored(state: Path) -> list[Path]:
    photos = state / "photos"
    return [p for p in photos.rglob("*") if p.is_file()] if photos.exists() else []


def _post(client: TestClient, csrf: str, data: bytes, kind: str = "image/png") -> Any:
    return client.post("/api/v1/photos", headers={"X-CSRF-Token": csrf},
                       files={"photo": ("p.png", data, kind)})


@pytest.fixture
def env(tmp_path: Path) -> dict[str, Any]:
    _, app = web_app(tmp_path)
    client = client_of(app)
    return {"client": client, "csrf": sign_in(client, tmp_path / "state", QP),
            "state": tmp_path / "state"}


def test_a_png_of_169_megapixels_in_20_kb_is_413_and_nothing_is_kept(
        env: dict[str, Any]) -> None:
    bomb = png_bomb(13_000, 13_000)
    assert len(bomb) < 25_000
    got = _post(env["client"], env["csrf"], bomb)
    assert got.status_code == 413, got.text
    assert got.json() == {"error": "photo: 13000×13000 pixels, at most 100 megapixels"}
    assert _stored(env["state"]) == []


def test_an_image_past_pillows_own_limit_is_413_not_500(env: dict[str, Any]) -> None:
    got = _post(env["client"], env["csrf"], png_bomb(20_000, 10_000))
    assert got.status_code == 413, got.text
    assert got.json()["error"].startswith("photo: more pixels than Pillow opens safely")
    assert got.json()["error"].endswith("at most 100 megapixels")
    assert _stored(env["state"]) == []


def test_the_cap_is_web_max_photo_mpx_and_a_photo_past_it_is_not_decoded_in_the_report(
        tmp_path: Path) -> None:
    """With ``max_photo_mpx: 170`` the bomb is taken (a phone photo of 48 MP too); the
    same state directory under the default cap shows it as too large in the report
    (HTML, PDF and ``stormwatch report``) and the photo beside it as usual."""
    path = write_web_config(tmp_path)
    path.write_text(path.read_text().replace("max_photo_mb: 1}", "max_photo_mb: 1,"
                                             " max_photo_mpx: 170}"))
    _, app = web_app(tmp_path, path)
    client = client_of(app)
    csrf = sign_in(client, tmp_path / "state", QP)
    bomb = _post(client, csrf, png_bomb(13_000, 13_000))
    assert bomb.status_code == 201, bomb.text
    fine = _post(client, csrf, jpeg_with_gps(size=(640, 480)), "image/jpeg")
    assert fine.status_code == 201
    got = client.post(f"/api/v1/sites/{SITE}/inspections",
                      json={"inspectors": [QP], "kind": "other", "certified": True,
                            "photos": [{"sha256": bomb.json()["sha256"], "caption": "bomb"},
                                       {"sha256": fine.json()["sha256"], "caption": "fence"}]},
                      headers={"Idempotency-Key": "bomb-inspection", "X-CSRF-Token": csrf})
    assert got.status_code == 201, got.text

    path.write_text(path.read_text().replace(", max_photo_mpx: 170}", "}"))
    _, capped = web_app(tmp_path, path, people=False)
    client = client_of(capped)
    sign_in(client, tmp_path / "state", QP)
    day = time.strftime("%Y-%m-%d")
    html = client.get(f"/sites/{SITE}/report?from=2026-01-01&to={day}")
    assert html.status_code == 200
    assert ("PHOTO TOO LARGE TO SHOW: 13000×13000 pixels, at most 100 megapixels"
            in html.text)
    assert html.text.count("data:image/jpeg;base64,") == 1  # the fence's thumbnail
    pdf = client.get(f"/sites/{SITE}/report?from=2026-01-01&to={day}&format=pdf")
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF-")
    out = tmp_path / "r.html"
    run = cli("report", "--config", str(path), "--site", SITE, "--from", "2026-01-01",
              "--to", day, "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert "PHOTO TOO LARGE TO SHOW" in out.read_text(encoding="utf-8")


@pytest.mark.parametrize(("mpx", "message"), [
    (0, "web.max_photo_mpx: must be more than 0"),
    (200, "web.max_photo_mpx: must be at most 178"),
])
def test_check_config_bounds_the_cap(tmp_path: Path, mpx: float, message: str) -> None:
    path = write_web_config(tmp_path)
    path.write_text(path.read_text().replace("max_photo_mb: 1}",
                                             f"max_photo_mb: 1, max_photo_mpx: {mpx}}}"))
    run = cli("check-config", str(path))
    assert run.returncode == 2 and message in run.stderr + run.stdout, run.stderr

"""Hostile input against the real app: each refused with a clear 4xx
and nothing written (no photo file, no journal row, no key)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from monitor.store.opening import open_store

from ..support.photos import jpeg_with_gps
from ..support.webkit import (
    OTHER,
    QP,
    SITE,
    client_for,
    press_sign_in,
    sign_in,
    signin_token,
    web_env,
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, Any]:
    made = web_env(tmp_path)
    made["csrf"] = sign_in(made["client"], made["state"], QP)
    return made


def nothing_written(env: dict[str, Any]) -> None:
    photos = env["state"] / "photos"
    assert [p for p in photos.rglob("*") if p.is_file()] == [] if photos.exists() else True
    with open_store(env["config"], readonly=True) as store:
        assert store.journal.max_seq() == 0


def form(env: dict[str, Any], **more: str) -> dict[str, str]:
    return {"csrf": env["csrf"], "idempotency_key": "form-key-0001", "inspector": QP,
            "kind": "routine", "certified": "on", **more}


def test_an_oversize_upload_is_413(env: dict[str, Any]) -> None:
    big = jpeg_with_gps() + b"\0" * 1_200_000  # max_photo_mb is 1 in the test config
    got = env["client"].post("/api/v1/photos", headers={"X-CSRF-Token": env["csrf"]},
                             files={"photo": ("big.jpg", big, "image/jpeg")})
    assert got.status_code == 413 and got.json()["error"].startswith(("photo: ", "body: "))
    nothing_written(env)


def test_a_non_image_upload_is_415(env: dict[str, Any]) -> None:
    for data, kind in ((b"%PDF-1.4 hello", "application/pdf"),
                       (b"<script>alert(1)</script>", "image/jpeg")):
        got = env["client"].post("/api/v1/photos", headers={"X-CSRF-Token": env["csrf"]},
                                 files={"photo": ("x.jpg", data, kind)})
        assert got.status_code == 415, got.text
        assert got.json()["error"].startswith("photo: not an image")
    nothing_written(env)


def test_a_form_for_a_site_not_yours_is_404_like_an_unknown_site(env: dict[str, Any]) -> None:
    client = env["client"]
    assert client.get(f"/sites/{OTHER}/inspect").status_code == 404
    got = client.post(f"/sites/{OTHER}/inspect", data=form(env),
                      files={"photo_1": ("a.jpg", jpeg_with_gps(), "image/jpeg")})
    assert got.status_code == 404 and "is not configured" in got.text
    api = client.post(f"/api/v1/sites/{OTHER}/inspections", json={"inspectors": [QP]},
                      headers={"Idempotency-Key": "other-site-1", "X-CSRF-Token": env["csrf"]})
    assert api.status_code == 404
    assert api.json() == {"error": f"site: {OTHER!r} is not configured"}
    nothing_written(env)


def test_a_replayed_signin_link_is_400(env: dict[str, Any]) -> None:
    token = signin_token(env["state"], QP)
    fresh = client_for(env["config"], env["client"].app)
    assert press_sign_in(fresh, f"/signin/{token}").status_code == 303
    other = client_for(env["config"], env["client"].app)
    again = press_sign_in(other, f"/signin/{token}")
    assert again.status_code == 400 and "used, expired or unknown" in again.text
    assert "sw_session" not in again.headers.get("set-cookie", "")
    assert other.get(f"/sites/{SITE}/inspect").status_code == 401


def test_a_forged_csrf_token_is_403_before_any_photo_is_stored(env: dict[str, Any]) -> None:
    client = env["client"]
    got = client.post(f"/sites/{SITE}/inspect", data=form(env, csrf="0" * 64),
                      files={"photo_1": ("a.jpg", jpeg_with_gps(), "image/jpeg")})
    assert got.status_code == 403 and "security token" in got.text
    api = client.post(f"/api/v1/sites/{SITE}/inspections", json={"inspectors": [QP]},
                      headers={"Idempotency-Key": "forged-csrf-1", "X-CSRF-Token": "bad"})
    assert api.status_code == 403 and api.json()["error"].startswith("csrf: ")
    up = client.post("/api/v1/photos", files={"photo": ("a.jpg", jpeg_with_gps(), "image/jpeg")})
    assert up.status_code == 403
    nothing_written(env)


def test_a_path_in_a_file_name_or_a_hash_reaches_no_file(env: dict[str, Any]) -> None:
    client = env["client"]
    got = client.post(f"/api/v1/sites/{SITE}/inspections",
                      json={"inspectors": [QP], "photos": [{"sha256": "../../../etc/passwd"}]},
                      headers={"Idempotency-Key": "path-photo-1", "X-CSRF-Token": env["csrf"]})
    assert got.status_code == 422
    assert got.json() == {"error": "photos.0.sha256: must be 64 lowercase hex digits"}
    assert client.get("/static/..%2f..%2fapp.py").status_code == 404
    assert client.get("/static/../app.py").status_code == 404
    up = client.post("/api/v1/photos", headers={"X-CSRF-Token": env["csrf"]},
                     files={"photo": ("../../../../tmp/evil.jpg", jpeg_with_gps(), "image/jpeg")})
    assert up.status_code == 201
    assert not Path("/tmp/evil.jpg").exists()
    kept = [p for p in (env["state"] / "photos").rglob("*") if p.is_file()]
    assert [p.name for p in kept] == [up.json()["sha256"]]


def test_no_session_no_token_is_401_and_sign_in_is_rate_limited(env: dict[str, Any]) -> None:
    anon = client_for(env["config"], env["client"].app)
    got = anon.post(f"/api/v1/sites/{SITE}/inspections", json={},
                    headers={"Idempotency-Key": "anon-key-0001"})
    assert got.status_code == 401 and got.json()["error"].startswith("authorization: ")
    bearer = anon.post("/api/v1/photos", headers={"Authorization": "Bearer nope"},
                       files={"photo": ("a.jpg", jpeg_with_gps(), "image/jpeg")})
    assert bearer.status_code == 401
    # The fixture's own sign-in (its page, its post) was 2 of this address's 10 a minute,
    # the page shown here the third.
    check = anon.get("/signin/guess").text.split('name="signin_check" value="')[1][:43]
    codes = [anon.post(f"/signin/guess-{i}", data={"signin_check": check}).status_code
             for i in range(9)]
    assert codes == [400] * 7 + [429, 429]
    nothing_written(env)

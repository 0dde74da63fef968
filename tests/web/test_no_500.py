"""No traceback for a user's error, and no reset connection for ours.

A report period past year 9999 (or before the epoch) is a 422 naming the bound,
from the page and from ``stormwatch report`` (exit 2, one line). Anything no
route means to raise is a 500 in the field app's error shape, logged with its traceback,
and the keep-alive connection it came on serves the next request: proved with
a real ``stormwatch web`` process and one ``httpx.Client``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from monitor.config.file import load_config
from monitor.store.opening import open_store

from ..support.childproc import free_port
from ..support.daemonkit import cli
from ..support.photos import jpeg_with_gps
from ..support.webkit import (
    QP,
    SITE,
    WebProcess,
    add_people,
    client_of,
    csrf_of,
    press_sign_in,
    sign_in,
    signin_token,
    web_app,
    write_web_config,
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, Any]:
    path = write_web_config(tmp_path)
    _, app = web_app(tmp_path, path)
    client = client_of(app)
    csrf = sign_in(client, tmp_path / "state", QP)
    return {"client": client, "path": path, "tmp": tmp_path, "csrf": csrf}


def test_a_report_period_outside_the_calendar_is_422_naming_the_bound(
        env: dict[str, Any]) -> None:
    client = env["client"]
    for query, field in (("to=9999-12-31", "to"), ("from=0001-01-01", "from"),
                         ("from=2026-01-01&to=9999-12-31", "to")):
        api = client.get(f"/sites/{SITE}/report?{query}",
                         headers={"Accept": "application/json"})
        assert api.status_code == 422, api.text[:300]
        assert api.json()["error"].startswith(f"{field}: ")
        assert "outside the dates a report covers" in api.json()["error"]
        page = client.get(f"/sites/{SITE}/report?{query}")
        assert page.status_code == 422 and "outside the dates a report covers" in page.text
        assert "<html" in page.text.lower()
    # The widest period it takes still makes a report.
    got = client.get(f"/sites/{SITE}/report?from=1970-01-01&to=9998-12-31")
    assert got.status_code == 200, got.text[:300]


@pytest.mark.parametrize("bounds", [("--from", "2026-01-01", "--to", "9999-12-31"),
                                    ("--from", "0001-01-01", "--to", "2026-01-31")])
def test_stormwatch_report_past_the_calendar_is_one_line_and_exit_2(
        env: dict[str, Any], bounds: tuple[str, ...]) -> None:
    out = env["tmp"] / "r.html"
    run = cli("report", "--config", str(env["path"]), "--site", SITE, *bounds,
              "--out", str(out))
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "outside the dates a report covers" in run.stderr
    assert not out.exists()


def test_an_inspection_at_year_one_is_422_and_exit_2(env: dict[str, Any]) -> None:
    """Year 1 at or east of UTC is before year 1 at the site (west of it): no instant
    its corrective-action ids or pages could show."""
    for i, at in enumerate(("0001-01-01T00:00:00Z", "0001-01-01T00:00:00+05:00")):
        got = env["client"].post(
            f"/api/v1/sites/{SITE}/inspections",
            json={"inspectors": [QP], "inspected_at": at, "certified": True},
            headers={"Idempotency-Key": f"year-one-{i}", "Accept": "application/json",
                     "X-CSRF-Token": env["csrf"]})
        assert got.status_code == 422, got.text
        assert got.json()["error"].startswith(f"inspected_at: {at!r} is no time at the site")
    run = cli("inspect", "--config", str(env["path"]), "--site", SITE, "--inspector", QP,
              "--at", "0001-01-01T00:00:00Z")
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.startswith("stormwatch inspect: --at: '0001-01-01T00:00:00Z' is no time")


def test_an_unexpected_error_is_a_500_that_keeps_the_connection(tmp_path: Path) -> None:
    """The photos directory is a file (a mount gone wrong): storing a photo fails in a
    way no route refuses. The answer is the error JSON with 500, the traceback is in
    the log (and no token), and the next request on the same keep-alive connection
    is served."""
    port = free_port()
    path = write_web_config(tmp_path, listen=f"127.0.0.1:{port}",
                            public=f"http://127.0.0.1:{port}")
    with open_store(load_config(path, env={})):
        pass
    add_people(tmp_path / "state")
    (tmp_path / "state" / "photos").write_text("not a directory")
    web = WebProcess(path, port)
    try:
        token = signin_token(tmp_path / "state", QP)
        with httpx.Client(base_url=web.url) as client:
            assert press_sign_in(client, f"/signin/{token}").status_code == 303
            csrf = csrf_of(client.get("/").text)
            failed = client.post("/api/v1/photos", headers={"X-CSRF-Token": csrf},
                                 files={"photo": ("a.jpg", jpeg_with_gps(), "image/jpeg")})
            assert failed.status_code == 500, failed.text
            error = failed.json()["error"]
            assert error.startswith("server: an unexpected error (incident ")
            assert failed.headers.get("connection", "").lower() != "close"
            assert failed.headers["x-content-type-options"] == "nosniff"
            first = failed.extensions["network_stream"].get_extra_info("client_addr")
            after = client.get("/static/app.css")
            assert after.status_code == 200
            # The same client port: the same TCP connection, not a new one.
            assert after.extensions["network_stream"].get_extra_info("client_addr") == first
            page = client.get(f"/sites/{SITE}")
            assert page.status_code == 200
    finally:
        code = web.stop()
    log = web.log()
    assert code == 0, log
    incident = error.split("incident ")[1].split(",")[0]
    assert f"incident {incident}" in log and "Traceback" in log
    assert "POST /api/v1/photos" in log
    assert token not in log

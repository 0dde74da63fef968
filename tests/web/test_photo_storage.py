"""Photo storage is bounded: a per-person rate and daily quota (429),
a free-disk floor (507), and photos no inspection names removed a day after their
last upload, never one an inspection names, archived rows included.

Through the real app (``create_app`` with its clock advanced by hand, as the
days pass), the real journal and ``stormwatch archive``, and ``stormwatch
logbook verify`` at the end: every photo the record names is still there.
"""

from __future__ import annotations

import hashlib
import io
import random
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from PIL import Image

from monitor.contract.inputs import Inspection, Photo, Reading
from monitor.host.engine import EngineHost
from monitor.host.rows import journal_in
from monitor.store.opening import open_store
from monitor.store.photos import photo_path

from ..support.daemonkit import cli, wait_until
from ..support.photos import jpeg_with_gps
from ..support.webkit import QP, QP2, SITE, client_of, sign_in, web_app, write_web_config

DAY_MS = 86_400_000


class Clock:
    """The app's clock, moved by the test."""

    def __init__(self) -> None:
        self.ms = round(time.time() * 1000)

    def __call__(self) -> int:
        return self.ms


def noise_jpeg(seed: int, side: int = 160) -> bytes:
    """A JPEG of some kilobytes that no other seed gives."""
    noise = random.Random(seed).randbytes(side * side)
    img = Image.frombytes("L", (side, side), noise).convert("RGB")
    out = io.BytesIO()
    img.save(out, "JPEG", quality=95)
    return out.getvalue()


def app_with(tmp_path: Path, web_options: str) -> dict[str, Any]:
    path = write_web_config(tmp_path)
    if web_options:
        path.write_text(path.read_text().replace("max_photo_mb: 1}", f"max_photo_mb: 1, "
                                                 f"{web_options}}}"))
    clock = Clock()
    config, app = web_app(tmp_path, path, clock=clock)
    client = client_of(app)
    return {"client": client, "csrf": sign_in(client, tmp_path / "state", QP), "clock": clock,
            "config": config, "app": app, "path": path, "state": tmp_path / "state"}


def upload(env: dict[str, Any], data: bytes, client: TestClient | None = None,
           csrf: str | None = None) -> Any:
    return (client or env["client"]).post(
        "/api/v1/photos", headers={"X-CSRF-Token": csrf or env["csrf"]},
        files={"photo": ("p.jpg", data, "image/jpeg")})


def files(env: dict[str, Any]) -> set[str]:
    photos = env["state"] / "photos"
    return {p.name for p in photos.rglob("*") if p.is_file() and p.parent.name != "tmp"}


def test_photos_a_minute_per_person_past_the_rate_are_429(tmp_path: Path) -> None:
    env = app_with(tmp_path, "photos_per_minute: 10")
    for i in range(10):
        assert upload(env, noise_jpeg(i)).status_code == 201
    got = upload(env, noise_jpeg(10))
    assert got.status_code == 429, got.text
    assert got.json()["error"].startswith(
        "photo: at most 10 photos a minute per person (web.photos_per_minute); wait ")
    assert len(files(env)) == 10
    # Another person is not held back by this one.
    other = client_of(env["app"])
    assert upload(env, noise_jpeg(11), other, sign_in(other, env["state"], QP2)
                  ).status_code == 201
    env["clock"].ms += 61_000
    assert upload(env, noise_jpeg(10)).status_code == 201


def test_bytes_a_day_per_person_past_the_quota_are_429_and_not_kept(tmp_path: Path) -> None:
    first, second = noise_jpeg(1), noise_jpeg(2)
    quota_mb = (len(first) + len(second) // 2) / (1 << 20)
    env = app_with(tmp_path, f"photo_mb_per_day: {quota_mb}")
    assert upload(env, first).status_code == 201
    got = upload(env, second)  # more than what the quota leaves: stopped mid-stream
    assert got.status_code == 429, got.text
    assert got.json()["error"].startswith(f"photo: at most {quota_mb:.3g} MiB of photos a"
                                          " day per person (web.photo_mb_per_day); ")
    assert len(files(env)) == 1
    env["clock"].ms += DAY_MS + 60_000
    assert upload(env, second).status_code == 201


def test_below_the_free_disk_floor_uploads_are_507_and_nothing_is_kept(tmp_path: Path) -> None:
    env = app_with(tmp_path, "min_free_mb: 1000000000")
    got = upload(env, jpeg_with_gps())
    assert got.status_code == 507, got.text
    assert got.json()["error"].startswith("photo: the server's disk is nearly full (")
    assert "web.min_free_mb" in got.json()["error"]
    form = env["client"].post(
        f"/sites/{SITE}/inspect", data={"csrf": env["csrf"], "idempotency_key": "disk-full-1",
                                        "inspector": QP, "certified": "on"},
        files={"photo_1": ("a.jpg", jpeg_with_gps(), "image/jpeg")})
    assert form.status_code == 507 and "disk is nearly full" in form.text
    assert files(env) == set()


def swept(env: dict[str, Any]) -> None:
    """Wait for a sweep the last request started, if any, to end (it runs in a thread
    of the app's own)."""
    sweep = getattr(env["app"].state.web, "sweep", None)
    if sweep is not None:
        sweep.join(30)


def _archive_an_inspection_citing(env: dict[str, Any], sha: str) -> None:
    """An inspection of 40 days ago naming ``sha``, moved into the archive by
    ``stormwatch archive`` (readings around it give the site a horizon)."""
    now = round(time.time() * 1000)
    items: list[Reading | Inspection] = [
        Reading(SITE, "rg1", "rain", now - 41 * DAY_MS, tips_total=0),
        Inspection(SITE, QP, now - 40 * DAY_MS, kind="other", entered_ms=now - 40 * DAY_MS,
                   via="mqtt", photos=(Photo(sha, caption="archived"),)),
        Reading(SITE, "rg1", "rain", now - 3_600_000, tips_total=0)]
    with open_store(env["config"]) as store:
        host = EngineHost.restore(env["config"], store)
        store.journal.commit([journal_in(i, topic=None, received_ms=now) for i in items])
        host.catch_up()
        host.record_status()
        host.snapshot()
    run = cli("archive", "--config", str(env["path"]))
    assert run.returncode == 0 and "archived 2 journal row(s)" in run.stdout, run.stdout
    with open_store(env["config"], readonly=True) as store:
        assert store.journal.archive.files()
        # Still one journal to its readers, but no longer a row of the table.
        assert any(sha in str(r.body) for r in store.journal.after(0))
        assert store.db.conn.execute("SELECT count(*) FROM journal WHERE instr(body, ?)",
                                     (sha,)).fetchone()[0] == 0


def test_photos_no_inspection_names_are_removed_a_day_after_upload(tmp_path: Path) -> None:
    env = app_with(tmp_path, "")
    unused, cited, archived, fresh = (upload(env, noise_jpeg(i)).json()["sha256"]
                                      for i in range(4))
    got = env["client"].post(
        f"/api/v1/sites/{SITE}/inspections",
        json={"inspectors": [QP], "kind": "other", "certified": True,
              "photos": [{"sha256": cited, "caption": "north fence"}]},
        headers={"Idempotency-Key": "sweep-cited-1", "X-CSRF-Token": env["csrf"]})
    assert got.status_code == 201, got.text
    _archive_an_inspection_citing(env, archived)
    # A photo stored by a version that did not count uploads: a file under its hash and
    # nothing else.
    data = noise_jpeg(9)
    orphan = hashlib.sha256(data).hexdigest()
    kept = photo_path(env["state"] / "photos", orphan)
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_bytes(data)
    everything = {unused, cited, archived, orphan}
    assert everything <= files(env)

    env["clock"].ms += 23 * 3_600_000  # not yet a day: nothing goes
    assert upload(env, noise_jpeg(3)).status_code == 201
    swept(env)
    assert everything <= files(env)

    env["clock"].ms += 2 * 3_600_000  # a day and an hour: the sweep may run again
    assert upload(env, noise_jpeg(3)).status_code == 201  # the same bytes: a new upload
    wait_until(lambda: not {unused, orphan} & files(env), 30, "the sweep")
    swept(env)
    assert files(env) == {cited, archived, fresh}

    env["clock"].ms += 2 * 3_600_000  # again: idempotent
    assert upload(env, noise_jpeg(3)).status_code == 201
    swept(env)
    assert files(env) == {cited, archived, fresh}
    assert upload(env, noise_jpeg(0)).json()["sha256"] == unused  # sent again: kept again
    assert photo_path(env["state"] / "photos", unused).is_file()
    verify = cli("logbook", "verify", "--config", str(env["path"]))
    assert verify.returncode == 0, verify.stdout + verify.stderr


@pytest.mark.parametrize(("key", "value", "message"), [
    ("photos_per_minute", 5, "web.photos_per_minute: must be at least 10"),
    ("photo_mb_per_day", 0, "web.photo_mb_per_day: must be more than 0"),
    ("min_free_mb", -1, "web.min_free_mb: must be at least 0"),
])
def test_check_config_bounds_the_limits(tmp_path: Path, key: str, value: float,
                                        message: str) -> None:
    path = write_web_config(tmp_path)
    path.write_text(path.read_text().replace("max_photo_mb: 1}",
                                             f"max_photo_mb: 1, {key}: {value}}}"))
    run = cli("check-config", str(path))
    assert run.returncode == 2 and message in run.stderr + run.stdout, run.stderr

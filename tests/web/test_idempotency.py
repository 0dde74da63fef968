"""Idempotency keys through the real app: each person's own, kept
with a hash of the inspection, so the same key with a different inspection is 422
and never the first answer for a second inspection dropped in silence; and a
``web.sqlite`` of before is migrated in place.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from monitor.contract.events import InspectionRecorded
from monitor.store.opening import open_store

from ..support.webkit import OTHER, QP, QP2, SITE, client_for, sign_in, web_env

BODY: dict[str, Any] = {"inspectors": [QP], "kind": "routine", "certified": True,
                        "notes": "fence fine", "findings": [
                            {"practice": "silt-fence", "condition": "ok"}]}
REFUSED = {"error": "Idempotency-Key: already used with a different inspection"}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, Any]:
    made = web_env(tmp_path)
    made["csrf"] = sign_in(made["client"], made["state"], QP)
    return made


def recorded(config: Any) -> list[InspectionRecorded]:
    with open_store(config, readonly=True) as store:
        return [e.body for site in (SITE, OTHER) for e in store.events.current(site)
                if isinstance(e.body, InspectionRecorded)]


def post(env: dict[str, Any], key: str, body: Any, *, client: Any = None,
         csrf: str | None = None, site: str = SITE) -> Any:
    return (client or env["client"]).post(
        f"/api/v1/sites/{site}/inspections", content=json.dumps(body),
        headers={"Idempotency-Key": key, "X-CSRF-Token": csrf or env["csrf"],
                 "Content-Type": "application/json"})


def test_the_same_key_with_another_inspection_is_422_and_records_nothing(
        env: dict[str, Any]) -> None:
    first = post(env, "key-0001-abcdef", BODY)
    assert first.status_code == 201, first.text
    other = post(env, "key-0001-abcdef", {**BODY, "notes": "fence down at 2+40"})
    assert (other.status_code, other.json()) == (422, REFUSED)
    # The same inspection again, its keys in another order: the first answer.
    again = post(env, "key-0001-abcdef", dict(reversed(list(BODY.items()))))
    assert (again.status_code, again.json()) == (201, first.json())
    assert [r.notes for r in recorded(env["config"])] == ["fence fine"]


def test_the_form_goes_through_the_same_keys(env: dict[str, Any]) -> None:
    client = env["client"]
    form = {"csrf": env["csrf"], "idempotency_key": "form-key-000001", "inspector": QP,
            "kind": "routine", "certified": "on", "notes": "north fence ok"}
    assert client.post(f"/sites/{SITE}/inspect", data=form).status_code == 201
    assert client.post(f"/sites/{SITE}/inspect", data=form).status_code == 201  # a double tap
    changed = client.post(f"/sites/{SITE}/inspect", data={**form, "notes": "south too"})
    assert changed.status_code == 422 and REFUSED["error"] in changed.text
    assert [r.notes for r in recorded(env["config"])] == ["north fence ok"]


def test_a_key_is_each_persons_own(env: dict[str, Any]) -> None:
    mine = post(env, "shared-key-0001", BODY)
    assert mine.status_code == 201, mine.text
    chen = client_for(env["config"], env["client"].app)
    theirs = post(env, "shared-key-0001", {**BODY, "inspectors": [QP2]}, client=chen,
                  csrf=sign_in(chen, env["state"], QP2), site=OTHER)
    assert theirs.status_code == 201, theirs.text  # not blocked by J. Rivera's key
    assert theirs.json()["site"] == OTHER and theirs.json() != mine.json()
    assert post(env, "shared-key-0001", BODY).json() == mine.json()  # nor mixed up with it
    assert sorted(r.inspector for r in recorded(env["config"])) == [QP, QP2]


def test_a_web_sqlite_of_before_is_migrated_in_place(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    old_answer = {"site": SITE, "inspection": {"inspector": QP}, "closed": []}
    with sqlite3.connect(state / "web.sqlite") as conn:  # the schema of c8acdfb
        conn.execute("CREATE TABLE IF NOT EXISTS idempotency (key TEXT PRIMARY KEY, name TEXT"
                     " NOT NULL, site TEXT NOT NULL, created_ms INTEGER NOT NULL, status"
                     " INTEGER, answer TEXT)")
        conn.execute("INSERT INTO idempotency VALUES (?, ?, ?, ?, ?, ?)",
                     ("old-key-000001", QP, SITE, round(time.time() * 1000) - 60_000, 201,
                      json.dumps(old_answer)))
    conn.close()
    env = web_env(tmp_path)
    env["csrf"] = sign_in(env["client"], env["state"], QP)
    # The retry of a key recorded before the upgrade: its answer, nothing recorded again.
    replay = post(env, "old-key-000001", BODY)
    assert (replay.status_code, replay.json()) == (201, old_answer)
    assert recorded(env["config"]) == []
    # New keys work as they should, and a second web app opens the migrated file.
    assert post(env, "new-key-000001", BODY).status_code == 201
    fresh = client_for(env["config"])
    fresh_csrf = sign_in(fresh, env["state"], QP)
    other = post(env, "new-key-000001", {**BODY, "kind": "other"}, client=fresh,
                 csrf=fresh_csrf)
    assert (other.status_code, other.json()) == (422, REFUSED)
    assert len(recorded(env["config"])) == 1
    with sqlite3.connect(state / "web.sqlite") as conn:
        keys = conn.execute("SELECT name, key, body_sha256 IS NULL FROM idempotency"
                            " ORDER BY key").fetchall()
    conn.close()
    assert keys == [(QP, "new-key-000001", 0), (QP, "old-key-000001", 1)]

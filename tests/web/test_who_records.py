"""Who records what through the field app's API (and the
practices): the real app, its real store, bearer tokens of real people.

* Two people recording in the same minute each keep their corrective actions: the
  ids are unique, and an id already in use is refused.
* The signed-in person certifies: one taken off the roster records nothing by
  naming a qualified professional as a companion; a companion carries no credential.
* A finding must name a practice the site has.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from monitor.config import Config
from monitor.config.file import load_config
from monitor.contract.inputs import CorrectiveAction
from monitor.host.inspections import ActionIdInUse, build_inspection, commit_inspection
from monitor.store.opening import open_store
from monitor.store.users import User, Users

from ..support.webkit import QP, QP2, SITE, write_web_config

GONE = "P. Gone"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, Any]:
    from monitor.web.app import create_app
    config = load_config(write_web_config(tmp_path), env={})
    with open_store(config):
        pass
    tokens = {}
    with Users.open(tmp_path / "state") as users:
        # P. Gone was a qualified professional of the site; the roster no longer lists
        # them (qualified_professionals: J. Rivera, M. Chen), their account is still there.
        for name in (QP, QP2, GONE):
            users.add(User(name, "qp", None, (SITE,)))
            tokens[name] = users.issue_api_token(name, round(time.time() * 1000))
    return {"client": TestClient(create_app(config, wait_s=0.5)), "config": config,
            "tokens": tokens}


def post(env: dict[str, Any], who: str, body: dict[str, Any], key: str) -> Any:
    return env["client"].post(
        f"/api/v1/sites/{SITE}/inspections", content=json.dumps(body),
        headers={"Authorization": f"Bearer {env['tokens'][who]}", "Idempotency-Key": key,
                 "Content-Type": "application/json"})


def this_minute(config: Config) -> str:
    """Two minutes ago at the site, as the form's ``datetime-local`` gives it."""
    site = config.site(SITE)
    assert site is not None
    return datetime.fromtimestamp(time.time() - 120, tz=site.zone).strftime("%Y-%m-%dT%H:%M")


def inspections(config: Config) -> list[Any]:
    with open_store(config, readonly=True) as store:
        return [e.body for e in store.events.current(SITE)
                if e.type == "inspection_recorded"]


def open_actions(config: Config) -> dict[str, str]:
    with open_store(config, readonly=True) as store:
        held = store.state.site_statuses().get(SITE)
    actions = held.data.get("corrective_actions", []) if held is not None else []
    return {a["id"]: a["text"] for a in actions}


def test_two_people_in_the_same_minute_keep_both_corrective_actions(
        env: dict[str, Any]) -> None:
    at = this_minute(env["config"])
    first = post(env, QP, {"inspectors": [QP], "inspected_at": at,
                           "corrective_actions": [{"text": "restake the silt fence"}]},
                 "key-rivera-0001")
    second = post(env, QP2, {"inspectors": [QP2], "inspected_at": at,
                             "corrective_actions": [{"text": "clean the inlet"}]},
                  "key-chen-00001")
    assert (first.status_code, second.status_code) == (201, 201), (first.text, second.text)
    (a,), (b,) = first.json()["corrective_actions"], second.json()["corrective_actions"]
    assert a != b
    assert open_actions(env["config"]) == {a: "restake the silt fence", b: "clean the inlet"}


def test_an_action_id_in_use_is_refused(env: dict[str, Any]) -> None:
    config = env["config"]
    got = post(env, QP, {"inspectors": [QP], "inspected_at": this_minute(config),
                         "corrective_actions": [{"text": "restake the silt fence"}]},
               "key-rivera-0002")
    assert got.status_code == 201, got.text
    (taken,) = got.json()["corrective_actions"]
    # Ids hash the whole inspection, so two never meet by chance; one that does, or
    # one given by a caller of the library, is refused rather than replacing the first.
    insp = build_inspection(config, SITE, [QP2], at=None, kind="routine", notes=None,
                            findings=(), actions=(), resolves=(), now_ms=round(time.time() * 1000))
    clash = replace(insp, corrective_actions=(CorrectiveAction(taken, "take it over"),))
    with pytest.raises(ActionIdInUse, match=f"id {taken} is already in use"):
        commit_inspection(config, clash, wait_s=0.5)
    assert open_actions(config) == {taken: "restake the silt fence"}
    assert len(inspections(config)) == 1


def test_someone_off_the_roster_records_nothing_through_a_companion(
        env: dict[str, Any]) -> None:
    got = post(env, GONE, {"inspectors": [GONE, QP], "inspected_at": this_minute(env["config"])},
               "key-gone-00001")
    assert got.status_code == 403, got.text
    assert "not on the qualified_professionals roster" in got.json()["error"]
    assert inspections(env["config"]) == []
    with open_store(env["config"], readonly=True) as store:
        assert store.journal.max_seq() == 0


def test_the_signed_in_person_certifies_and_a_companion_carries_no_credential(
        env: dict[str, Any]) -> None:
    got = post(env, QP, {"inspectors": [QP2, QP], "inspected_at": this_minute(env["config"])},
               "key-rivera-0003")
    assert got.status_code == 201, got.text
    (rec,) = inspections(env["config"])
    assert rec.inspectors == (QP, QP2) and rec.inspector == f"{QP} & {QP2}"
    assert rec.credentials == ("CPESC 12345", "")
    assert rec.kind == "routine"


def test_a_finding_names_a_practice_of_the_site(env: dict[str, Any]) -> None:
    got = post(env, QP, {"inspectors": [QP], "inspected_at": this_minute(env["config"]),
                         "findings": [{"practice": "helipad", "condition": "ok"}]},
               "key-rivera-0004")
    assert got.status_code == 422, got.text
    assert got.json()["error"].startswith("findings.0.practice: 'helipad' is not a practice")
    assert inspections(env["config"]) == []


def test_a_resolves_id_that_names_no_open_action_is_422_at_its_place(
        env: dict[str, Any]) -> None:
    """As `stormwatch inspect --resolved`: an id that names no open
    corrective action is refused, naming its place in the list and the ids that are open;
    nothing is recorded, and the same inspection without it is."""
    asked = post(env, QP, {"inspectors": [QP], "kind": "routine",
                           "corrective_actions": [{"text": "re-seed the slope"}]}, "resolves-ask-1")
    assert asked.status_code == 201, asked.text
    (action_id,) = asked.json()["corrective_actions"]
    body = {"inspectors": [QP], "kind": "routine", "resolves": [action_id, "ca-bogus"]}
    got = post(env, QP, body, "resolves-bogus-1")
    assert got.status_code == 422, got.text
    error = got.json()["error"]
    assert error.startswith(f"resolves.1: ca-bogus names no corrective action open at {SITE}")
    assert error.endswith(f"(open then: {action_id}); nothing was recorded")
    done = post(env, QP, {**body, "resolves": [action_id]}, "resolves-good-1")
    assert done.status_code == 201, done.text
    assert done.json()["resolves"] == [action_id]

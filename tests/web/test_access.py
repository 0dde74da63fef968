"""Who gets in, through the real app (``create_app`` under FastAPI's TestClient) on a
real state directory and the real ``stormwatch user`` commands: the cookies' flags,
sign-in posts from other sites, sites a person may not read, the sign-in limit
that no forged header lifts, and revocation, removal, new sites and token expiry
taking effect on the very next request of the running app.

The 404/403 difference and the X-Forwarded-For header are covered too.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from monitor.host.links import sign_link
from monitor.web.app import create_app

from ..support.childproc import free_port
from ..support.daemonkit import cli
from ..support.webkit import (
    OTHER,
    PUBLIC,
    QP,
    QP2,
    SITE,
    WebProcess,
    client_for,
    csrf_of,
    press_sign_in,
    sign_in,
    signin_token,
    web_env,
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, Any]:
    return web_env(tmp_path)


# --------------------------------------------------------------------------- cookies


def set_cookies(response: Any) -> list[str]:
    return [h.lower() for h in response.headers.get_list("set-cookie")]


def test_every_cookie_is_secure_whenever_public_url_is_https_or_not_on_loopback(
        tmp_path: Path) -> None:
    cases = [("127.0.0.1:8080", "https://sw.example.org", True),  # behind the TLS proxy
             ("0.0.0.0:8080", "http://sw.example.org", True),
             ("[::]:8080", "https://sw.example.org", True),
             ("127.0.0.1:8080", "http://127.0.0.1:8080", False)]  # a test, the demo
    for n, (listen, public, secure) in enumerate(cases):
        home = tmp_path / str(n)
        home.mkdir()
        made = web_env(home, listen=listen, public=public)
        # https here whatever the case: the flags are the app's choice, not the client's.
        client = TestClient(made["client"].app, base_url="https://testserver")
        alert = sign_link(b"k" * 32, SITE, None, round(time.time() * 1000) + 60_000)
        headers = set_cookies(client.get(f"/a/{alert}"))  # sw_next
        link = f"/signin/{signin_token(home / 'state', QP)}"
        headers += set_cookies(client.get(link))  # the pre-sign-in check
        signed = press_sign_in(client, link)
        assert signed.status_code == 303, signed.text
        headers += set_cookies(signed)  # the session; sw_next and the check cleared
        csrf = csrf_of(client.get("/").text)
        headers += set_cookies(client.post("/signout", data={"csrf": csrf},
                                           follow_redirects=False))
        names = sorted({h.split("=")[0] for h in headers})
        assert names == ["sw_next", "sw_session", "sw_signin"], headers
        for header in headers:
            assert "httponly" in header, header
            assert ("; secure" in header) is secure, (listen, public, header)


def test_sign_out_tells_the_browser_to_clear_what_the_phone_kept(env: dict[str, Any]) -> None:
    """The answer to a sign-out clears the worker's cache and the offline queue (the phone
    itself: tests/web/test_browser.py)."""
    client = env["client"]
    csrf = sign_in(client, env["state"], QP)
    out = client.post("/signout", data={"csrf": csrf}, follow_redirects=False)
    assert out.status_code == 303
    assert out.headers["clear-site-data"] == '"cache", "storage"'
    assert client.get(f"/sites/{SITE}").status_code == 401


# --------------------------------------------------------------------------- login CSRF


REFUSED = "sign-in: refused, as it did not come from the sign-in page of this app"


def test_a_cross_site_signin_post_is_refused_and_uses_nothing_up(
        env: dict[str, Any]) -> None:
    app = env["client"].app
    token = signin_token(env["state"], QP2)  # the attacker's own link
    link = f"/signin/{token}"
    attacker = client_for(env["config"], app)
    check = attacker.get(link).text.split('name="signin_check" value="')[1][:43]
    # The attacker's page posts the form to the victim's phone, which never opened the link:
    # with or without the attacker's own check value, with or without the browser's word.
    victim = client_for(env["config"], app)
    for data, headers in (({"remember": "on"}, {}),
                          ({"remember": "on", "signin_check": check},
                           {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}),
                          ({"remember": "on", "signin_check": check}, {})):
        got = victim.post(link, data=data, headers=headers, follow_redirects=False)
        assert got.status_code == 403, got.text
        assert "Sign-in refused" in got.text and REFUSED in got.text
        assert "sw_session" not in got.headers.get("set-cookie", "")
    assert victim.get(f"/sites/{OTHER}").status_code == 401  # not signed in as anybody
    # Even a phone that holds a check of its own: another site's post is refused by the word
    # of the browser, and one that brings someone else's value by the mismatch.
    victim.get(link)
    own = victim.cookies.get("sw_signin")
    assert own and own != check
    for data, headers in (({"signin_check": own}, {"Sec-Fetch-Site": "cross-site"}),
                          ({"signin_check": own}, {"Sec-Fetch-Site": "same-site"}),
                          ({"signin_check": check}, {"Sec-Fetch-Site": "same-origin"})):
        got = victim.post(link, data=data, headers=headers, follow_redirects=False)
        assert got.status_code == 403, (headers, got.text)
    api = victim.post(link, headers={"Accept": "application/json"}, follow_redirects=False)
    assert api.status_code == 403 and api.json()["error"].startswith(REFUSED)
    # Nothing was used up: the link still signs its holder in, from the app's own page
    # (Chromium sends Origin: null for it under Referrer-Policy: no-referrer).
    mine = attacker.post(link, data={"signin_check": check, "remember": "on"},
                         headers={"Sec-Fetch-Site": "same-origin", "Origin": "null"},
                         follow_redirects=False)
    assert mine.status_code == 303, mine.text
    assert attacker.get(f"/sites/{OTHER}").status_code == 200


def test_the_signin_page_is_not_kept_and_its_check_goes_to_sign_in_posts_only(
        env: dict[str, Any]) -> None:
    shown = env["client"].get(f"/signin/{signin_token(env['state'], QP)}")
    assert shown.headers["cache-control"] == "no-store"
    [cookie] = set_cookies(shown)
    # /signin covers the mail post (/signin) and the link posts (/signin/TOKEN)
    assert cookie.startswith("sw_signin=") and "path=/signin;" in cookie
    assert "samesite=strict" in cookie


# --------------------------------------------------------------------------- sites


def test_a_site_you_may_not_read_is_answered_as_one_that_does_not_exist(
        env: dict[str, Any]) -> None:
    client = env["client"]
    csrf = sign_in(client, env["state"], QP)  # records on branch-meadows only
    unknown = "mill-road-lox"  # as long as OTHER: the answers must not differ even in size

    def answers(site: str) -> list[tuple[int, str]]:
        got = [client.get(f"/sites/{site}"), client.get(f"/sites/{site}/inspect"),
               client.get(f"/sites/{site}/report?from=2026-11-01&to=2026-11-30"),
               client.get(f"/sites/{site}/logbook.csv"),
               client.get(f"/sites/{site}", headers={"Accept": "application/json"}),
               client.post(f"/sites/{site}/inspect", data={"csrf": csrf}),
               client.post(f"/api/v1/sites/{site}/inspections", json={"inspectors": [QP]},
                           headers={"Idempotency-Key": "probe-key-0001",
                                    "X-CSRF-Token": csrf})]
        return [(r.status_code, r.text.replace(site, "SITE")) for r in got]

    mine, other, nowhere = answers(SITE), answers(OTHER), answers(unknown)
    assert other == nowhere
    assert {status for status, _ in other} == {404}
    assert other[-1][1] == '{"error":"site: \'SITE\' is not configured"}'
    assert mine[0][0] == 200  # and their own site is theirs


# --------------------------------------------------------------------------- rate limit


def test_a_forged_forwarded_for_does_not_lift_the_signin_limit(tmp_path: Path) -> None:
    """``stormwatch web`` believes X-Forwarded-For from loopback (the TLS proxy); a guesser
    on the machine who gives every post an address of its own still meets a limit."""
    port = free_port()
    made = web_env(tmp_path, listen=f"127.0.0.1:{port}", public=f"http://127.0.0.1:{port}")
    web = WebProcess(made["path"], port)
    try:
        with httpx.Client(base_url=web.url) as guesser:
            shown = guesser.get("/signin/guess", headers={"X-Forwarded-For": "10.9.9.9"})
            check = shown.text.split('name="signin_check" value="')[1][:43]
            codes = [guesser.post(f"/signin/guess-{i}", data={"signin_check": check},
                                  headers={"X-Forwarded-For": f"10.0.{i // 250}.{i % 250}"}
                                  ).status_code for i in range(40)]
            assert codes == [400] * 30 + [429] * 10, codes
            # A good link meanwhile: refused for now, and not used up by the refusal.
            link = f"/signin/{signin_token(made['state'], QP)}"
            with httpx.Client(base_url=web.url) as phone:
                held = press_sign_in(phone, link)
                assert held.status_code == 429 and "the link was not used" in held.text
    finally:
        assert web.stop() == 0
    assert "guess-" not in web.log() and link not in web.log()


# --------------------------------------------------------------------------- revocation


def user(env: dict[str, Any], *args: str) -> str:
    """``stormwatch user ...`` on the environment's configuration: its standard output."""
    out = cli("user", *args, "--config", str(env["path"]))
    assert out.returncode == 0, out.stderr
    return out.stdout


def bearer(env: dict[str, Any], name: str, *more: str) -> dict[str, str]:
    return {"Authorization": "Bearer " + user(env, "token", "--name", name, *more).strip()}


def test_revoke_ends_every_session_token_and_link_at_the_next_request(
        env: dict[str, Any]) -> None:
    app = env["client"].app
    phone, laptop, chen = (client_for(env["config"], app) for _ in range(3))
    for client, name in ((phone, QP), (laptop, QP), (chen, QP2)):
        sign_in(client, env["state"], name)
    api = bearer(env, QP)
    unused = user(env, "link", "--name", QP).strip().removeprefix(PUBLIC)
    assert phone.get(f"/sites/{SITE}").status_code == 200
    assert env["client"].post("/api/v1/photos", headers=api).status_code == 415  # in: no file

    said = user(env, "revoke", "--name", QP)
    assert said == (f"revoked {QP}'s access: ended 2 sessions, an API token until "
                    f"{said.split('until ')[1].split(',')[0]}, 1 unused sign-in link; they stay"
                    f" (qp, records on {SITE}), and `stormwatch user link` signs them in again\n")
    # The very next request of each: the app is the same one, nothing restarted.
    assert phone.get(f"/sites/{SITE}").status_code == 401
    assert laptop.get(f"/sites/{SITE}/inspect").status_code == 401
    assert env["client"].post("/api/v1/photos", headers=api).status_code == 401
    assert press_sign_in(client_for(env["config"], app), unused).status_code == 400
    assert chen.get(f"/sites/{OTHER}").status_code == 200  # nobody else's
    # The person stays: a new link signs them in again.
    fresh = user(env, "link", "--name", QP).strip().removeprefix(PUBLIC)
    assert press_sign_in(phone, fresh).status_code == 303
    assert phone.get(f"/sites/{SITE}").status_code == 200


def test_remove_takes_the_person_and_their_tokens_and_keeps_their_inspections(
        env: dict[str, Any]) -> None:
    client = env["client"]
    sign_in(client, env["state"], QP)
    api = bearer(env, QP)
    body = {"inspectors": [QP], "kind": "routine", "certified": True, "notes": "all fine"}
    got = client.post(f"/api/v1/sites/{SITE}/inspections", json=body,
                      headers={**api, "Idempotency-Key": "before-remove-1"})
    assert got.status_code == 201, got.text

    said = user(env, "remove", "--name", QP)
    assert said.startswith(f"removed {QP} (qp): ended 1 session, an API token until ")
    assert said.endswith("; the inspections they recorded keep their name in the log book\n")
    assert client.get(f"/sites/{SITE}").status_code == 401
    again = client.post(f"/api/v1/sites/{SITE}/inspections", json=body,
                        headers={**api, "Idempotency-Key": "after-remove-1"})
    assert again.status_code == 401
    assert QP not in user(env, "list")
    link = cli("user", "link", "--config", str(env["path"]), "--name", QP)
    assert link.returncode == 2 and link.stderr.startswith(
        f"stormwatch user link: --name: there is no user named {QP!r}")
    book = cli("logbook", "--config", str(env["path"]), "--site", SITE)
    assert book.returncode == 0 and f"inspector={QP};" in book.stdout, book.stdout
    assert cli("logbook", "verify", "--config", str(env["path"])).returncode == 0


def test_new_sites_hold_from_the_next_request(env: dict[str, Any]) -> None:
    client = env["client"]
    sign_in(client, env["state"], QP)
    assert [client.get(f"/sites/{s}").status_code for s in (SITE, OTHER)] == [200, 404]
    said = user(env, "sites", "--name", QP, "--site", OTHER)
    assert said == f"{QP} (qp) records on {OTHER} from their next request (before: records" \
                   f" on {SITE})\n"
    assert [client.get(f"/sites/{s}").status_code for s in (SITE, OTHER)] == [404, 200]
    assert client.get(f"/sites/{OTHER}/inspect").status_code == 200
    user(env, "sites", "--name", QP, "--all-sites")
    assert [client.get(f"/sites/{s}").status_code for s in (SITE, OTHER)] == [200, 200]


def client_at(env: dict[str, Any], now_ms: int) -> TestClient:
    """A client of a new app on ``env`` whose clock says ``now_ms``."""
    return client_for(env["config"], create_app(env["config"], clock=lambda: now_ms))


def test_an_api_token_expires(env: dict[str, Any]) -> None:
    out = cli("user", "token", "--config", str(env["path"]), "--name", QP, "--valid-days", "2")
    assert out.returncode == 0 and out.stderr.startswith("valid 2 days, until "), out.stderr
    api = {"Authorization": "Bearer " + out.stdout.strip()}
    now = round(time.time() * 1000)
    for late_ms, status in ((2 * 86_400_000 - 60_000, 415), (2 * 86_400_000 + 60_000, 401)):
        got = client_at(env, now + late_ms).post("/api/v1/photos", headers=api)
        assert got.status_code == status, got.text


def test_an_api_token_of_before_expiry_existed_gets_one(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    token = "t" * 43
    with sqlite3.connect(state / "users.sqlite") as conn:  # as c8acdfb made it
        conn.execute("CREATE TABLE users (name TEXT PRIMARY KEY, role TEXT NOT NULL,"
                     " email TEXT, sites TEXT NOT NULL)")
        conn.execute("CREATE TABLE tokens (hash TEXT PRIMARY KEY, kind TEXT NOT NULL, name"
                     " TEXT NOT NULL REFERENCES users (name), expires_ms INTEGER, used_ms"
                     " INTEGER)")
        conn.execute("INSERT INTO users VALUES ('A. Lee', 'qp', NULL, '[]')")
        conn.execute("INSERT INTO tokens VALUES (?, 'api', 'A. Lee', NULL, NULL)",
                     (hashlib.sha256(token.encode()).hexdigest(),))
    conn.close()
    env = web_env(tmp_path)
    api = {"Authorization": f"Bearer {token}"}
    assert env["client"].post("/api/v1/photos", headers=api).status_code == 415  # works
    listed = user(env, "list")
    assert "A. Lee (qp, no e-mail): records on every site; 0 sessions, an API token until" \
           in listed
    later = client_at(env, round(time.time() * 1000) + 91 * 86_400_000)
    assert later.post("/api/v1/photos", headers=api).status_code == 401

"""Who gets in, through the real app (``create_app`` under FastAPI's TestClient) on a
real state directory: the cookies' flags, sign-in posts from other sites, sites a
person may not read, and the sign-in limit that no forged header lifts.

Issue 27, items 10 and 11, and the 404/403 difference and the X-Forwarded-For it
noticed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from monitor.sinks.notify.links import sign_link

from ..support.childproc import free_port
from ..support.webkit import (
    OTHER,
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


# --------------------------------------------------------------------------- login CSRF


REFUSED = "sign-in: refused, this did not come from the sign-in page of this app"


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
    assert cookie.startswith("sw_signin=") and "path=/signin/" in cookie
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

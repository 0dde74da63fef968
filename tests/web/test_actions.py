"""Corrective actions to done through the real app (TestClient on a real state
directory, no daemon: each step takes the state lock and is in the log book at once).

The qualified professional sends an action to the contractor (mailed by a real SMTP
server, aiosmtpd) or marks it done; the contractor's link shows that one action and
its inspection's photos and takes "done" with a note and photo; the log book holds
every step and ``logbook verify`` checks the step's photo. The link is refused when
wrong, forged, expired, of another action, without its form token, or once the
action is verified; an officer and a qualified professional of another site may not
take a step.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from monitor.contract.events import CorrectiveActionDone, CorrectiveActionSent
from monitor.store.opening import open_store
from monitor.web.actionlink import form_token, sign_action_link

from ..support.daemonkit import cli
from ..support.photos import jpeg_with_gps
from ..support.receivers import SmtpReceiver
from ..support.webkit import OFFICER, QP, QP2, SITE, client_for, sign_in, web_app

LINK = re.compile(r'id="contractor-link" class="link-copy" value="([^"]+)"')
SECRET = b"k" * 32  # webkit's web.key


@pytest.fixture
def env(tmp_path: Path) -> Any:
    with SmtpReceiver() as smtp:
        notify = ("notify:\n  targets:\n"
                  f"    - url: 'mailto://127.0.0.1:{smtp.port}?mode=insecure&from=sw@example.org"
                  "&to=jr@example.org'\n      tags: [signin]\n")
        from ..support.webkit import write_web_config
        path = write_web_config(tmp_path, more=notify)
        config, app = web_app(tmp_path, path)
        client = client_for(config, app)
        csrf = sign_in(client, tmp_path / "state", QP)
        yield {"client": client, "csrf": csrf, "config": config, "app": app, "smtp": smtp,
               "path": path, "state": tmp_path / "state"}


def ask(env: Any, text: str = "restake the silt fence at 2+40") -> str:
    """An inspection by the qp asking for ``text``, with a photo: the action's id."""
    client = env["client"]
    html = client.get(f"/sites/{SITE}/inspect").text
    key = html.split('name="idempotency_key" value="')[1].split('"')[0]
    got = client.post(f"/sites/{SITE}/inspect", data={
        "csrf": env["csrf"], "idempotency_key": key, "inspector": QP, "kind": "routine",
        "p.silt-fence.condition": "needs_repair", "ca_text": text, "ca_due": "2099-12-31",
        "caption_1": "undermined fence", "certified": "on"},
        files={"photo_1": ("f.jpg", jpeg_with_gps(), "image/jpeg")})
    assert got.status_code == 201, got.text
    found = re.findall(r"ca-[0-9a-z-]+", got.text)
    assert found, got.text
    return str(found[0])


def steps(env: Any) -> list[Any]:
    with open_store(env["config"], readonly=True) as store:
        return [e for e in store.events.current(SITE)
                if isinstance(e.body, CorrectiveActionSent | CorrectiveActionDone)]


def status_action(env: Any, action_id: str) -> dict[str, Any]:
    import json
    out = json.loads(cli("status", "--config", str(env["path"]), "--json").stdout)
    (a,) = [a for a in out["sites"][SITE]["corrective_actions"] if a["id"] == action_id]
    return dict(a)


def send(env: Any, action_id: str, email: str = "") -> str:
    got = env["client"].post(f"/sites/{SITE}/actions/{action_id}/send",
                             data={"csrf": env["csrf"], "email": email})
    assert got.status_code == 200, got.text
    assert got.headers["cache-control"] == "no-store"
    found = LINK.search(got.text)
    assert found, got.text
    return found.group(1)


def test_the_contractor_gets_the_link_by_mail_and_marks_the_action_done(env: Any) -> None:
    action_id = ask(env)
    link = send(env, action_id, "crew@example.org")
    assert env["smtp"].wait_for(lambda ms: len(ms) == 1, 30)
    (mail,) = env["smtp"].mails
    assert mail.rcpt_tos == ["crew@example.org"] and link in mail.text()
    assert "restake the silt fence at 2+40" in mail.text() and "J. Rivera" in mail.text()
    (sent,) = steps(env)
    assert (sent.body.sent_by, sent.body.to) == (QP, "crew@example.org")
    assert link.split("/c/")[1] not in str(sent.to_json())  # the token is never recorded
    assert status_action(env, action_id)["state"] == "sent"

    stranger = client_for(env["config"], env["app"])  # the contractor: no session
    path = "/c/" + link.split("/c/")[1]
    page = stranger.get(path)
    assert page.status_code == 200, page.text
    for words in ("restake the silt fence at 2+40", "Branch Meadows Subdivision",
                  "Due <strong>the end of Thu Dec 31", "Asked for by J. Rivera", "Mark done",
                  "Note", "Photos"):
        assert words in page.text, words
    shas = re.findall(rf'src="{re.escape(path)}/photos/([0-9a-f]{{64}})"', page.text)
    assert len(shas) == 1
    photo = stranger.get(f"{path}/photos/{shas[0]}")
    assert photo.status_code == 200 and photo.headers["content-type"] == "image/jpeg"
    assert stranger.get(f"{path}/photos/{'0' * 64}").status_code == 404
    assert "sw_session" not in stranger.cookies
    token = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text)
    assert token
    fix = jpeg_with_gps(lat=40.71, lon=-74.0)
    done = stranger.post(f"{path}/done", data={"csrf": token.group(1), "note": "new stakes"},
                         files={"photo": ("fix.jpg", fix, "image/jpeg")})
    assert done.status_code == 201, done.text
    assert "Thank you" in done.text and "1 photo" in done.text
    (_, rec) = steps(env)
    assert isinstance(rec.body, CorrectiveActionDone)
    assert (rec.body.done_by, rec.body.note, rec.body.via) == ("contractor", "new stakes", "link")
    (p,) = rec.body.photos
    assert p["lat"] == pytest.approx(40.71)
    a = status_action(env, action_id)
    assert (a["state"], a["done_by"], a["done_note"]) == ("done", "contractor", "new stakes")
    # The next inspection's form offers verification.
    form = env["client"].get(f"/sites/{SITE}/inspect").text
    assert "done by the contractor on " in form and ": verify" in form

    ok = cli("logbook", "verify", "--config", str(env["path"]))
    assert ok.returncode == 0, ok.stderr
    stored = env["state"] / "photos" / p["sha256"][:2] / p["sha256"]
    stored.chmod(0o644)
    stored.write_bytes(stored.read_bytes() + b"\0")
    bad = cli("logbook", "verify", "--config", str(env["path"]))
    assert bad.returncode == 1 and f"photo {p['sha256']} was altered" in bad.stderr
    assert f"corrective action {action_id} done" in bad.stderr


def test_the_link_grants_that_one_action_only_and_only_while_it_is_open(env: Any) -> None:
    first, second = ask(env), ask(env, "sweep the entrance")
    link = send(env, first)
    path = "/c/" + link.split("/c/")[1]
    token = path[3:]
    stranger = client_for(env["config"], env["app"])
    good = form_token(SECRET, token)
    # Wrong, forged and expired links.
    assert stranger.get("/c/nonsense").status_code == 400
    body, mac = token.split(".")
    assert stranger.get(f"/c/{body}.{mac[:-2]}AA").status_code == 400
    past = sign_action_link(SECRET, SITE, first, round(time.time() * 1000) - 1)
    expired = stranger.get(f"/c/{past}")
    assert expired.status_code == 410 and "expired" in expired.text
    # A link of another action shows that one; a form token of one link is no other's.
    other = sign_action_link(SECRET, SITE, second, round(time.time() * 1000) + 3_600_000)
    shown = stranger.get(f"/c/{other}").text
    assert "sweep the entrance" in shown and "restake" not in shown
    refused = stranger.post(f"/c/{other}/done", data={"csrf": good, "note": "x"})
    assert refused.status_code == 403
    assert stranger.post(f"{path}/done", data={"note": "x"}).status_code == 403
    assert steps(env)[-1].body.TYPE == "corrective_action_sent"
    # A link naming an action no inspection asked for, or of another site.
    assert stranger.get("/c/" + sign_action_link(SECRET, SITE, "ca-nothing", 2**60)).status_code \
        == 404
    assert stranger.get("/c/" + sign_action_link(SECRET, "mill-road-lot", first, 2**60)) \
        .status_code == 404
    # The qp marks it done and the next inspection verifies it: the link stops working.
    done = env["client"].post(f"/sites/{SITE}/actions/{first}/done",
                              data={"csrf": env["csrf"], "note": "restaked myself"},
                              follow_redirects=False)
    assert done.status_code == 303, done.text
    assert status_action(env, first)["done_by"] == QP
    client = env["client"]
    html = client.get(f"/sites/{SITE}/inspect").text
    key = html.split('name="idempotency_key" value="')[1].split('"')[0]
    verified = client.post(f"/sites/{SITE}/inspect", data={
        "csrf": env["csrf"], "idempotency_key": key, "inspector": QP, "kind": "routine",
        "resolves": first, "certified": "on"})
    assert verified.status_code == 201, verified.text
    gone = stranger.get(path)
    assert gone.status_code == 410 and "verified" in gone.text
    assert stranger.post(f"{path}/done", data={"csrf": good, "note": "x"}).status_code == 410


def test_only_a_qualified_professional_of_the_site_takes_a_step(env: Any) -> None:
    action_id = ask(env)
    client = env["client"]
    # Without the page's CSRF token.
    assert client.post(f"/sites/{SITE}/actions/{action_id}/send",
                       data={"email": ""}).status_code == 403
    assert client.post(f"/sites/{SITE}/actions/{action_id}/done",
                       data={"note": "x"}).status_code == 403
    # Nothing said, nothing shown: refused.
    assert client.post(f"/sites/{SITE}/actions/{action_id}/done",
                       data={"csrf": env["csrf"]}).status_code == 422
    assert client.post(f"/sites/{SITE}/actions/ca-nothing/done",
                       data={"csrf": env["csrf"], "note": "x"}).status_code == 404
    for name, status in ((OFFICER, 403), (QP2, 404)):
        other = client_for(env["config"], env["app"])
        csrf = sign_in(other, env["state"], name)
        for step in ("send", "done"):
            got = other.post(f"/sites/{SITE}/actions/{action_id}/{step}",
                             data={"csrf": csrf, "note": "x", "email": ""})
            assert got.status_code == status, (name, step, got.text)
    assert steps(env) == []
    page = client.get(f"/sites/{SITE}").text
    assert "Send to contractor" in page and "Mark done" in page
    officer = client_for(env["config"], env["app"])
    sign_in(officer, env["state"], OFFICER)
    seen = officer.get(f"/sites/{SITE}").text
    assert "restake the silt fence" in seen and "Send to contractor" not in seen


def test_a_forwarded_link_cannot_fill_the_log_book(env: Any) -> None:
    """Each "done" is a sealed row of the log book: one link makes at most six an hour
    (DONE_PER_HOUR); the seventh is refused (429) and records nothing."""
    action_id = ask(env)
    link = send(env, action_id)
    stranger = client_for(env["config"], env["app"])
    path = "/c/" + link.split("/c/")[1]
    token = re.search(r'name="csrf" value="([0-9a-f]+)"', stranger.get(path).text)
    assert token
    answers = [stranger.post(f"{path}/done", data={"csrf": token.group(1), "note": f"n{i}"})
               for i in range(7)]
    assert [a.status_code for a in answers] == [201] * 6 + [429], answers[-1].text
    assert "nothing more is needed" in answers[-1].text
    assert len([s for s in steps(env) if isinstance(s.body, CorrectiveActionDone)]) == 6


def test_a_mail_no_server_took_is_not_recorded_as_sent_to_the_address(env: Any) -> None:
    action_id = ask(env)
    env["smtp"].stop()  # the mail server is down
    got = env["client"].post(f"/sites/{SITE}/actions/{action_id}/send",
                             data={"csrf": env["csrf"], "email": "crew@example.org"})
    assert got.status_code == 200 and "Not mailed to crew@example.org" in got.text
    (sent,) = steps(env)
    assert isinstance(sent.body, CorrectiveActionSent) and sent.body.to is None

"""``stormwatch user add|link|token|list|sites|revoke|remove`` as a person runs them:
the real command line, a real ``users.sqlite``, a real mail server for ``--send``.

Every refusal is one line naming the flag, exit 2, no traceback; what is
printed (a sign-in link, a bearer token) is checked by redeeming it in the
store, once.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from monitor.store.users import User, Users

from ..support.receivers import SmtpReceiver

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = "https://sw.example.org"

CONFIG = """\
state_dir: {state}
{web}
notify:
  targets:
    - {{url: "json://127.0.0.1:9/hook", tags: [qp]}}
    - url: "mailto://127.0.0.1:{smtp}/everyone@example.org?mode=insecure&\
from=sw@example.org&to=team@example.org"
      tags: [qp]
      name: team-mail
qualified_professionals:
  - {{name: J. Rivera, credential: CPESC 12345}}
  - {{name: A. Lee}}
sites:
  - id: branch-meadows
  - id: mill-road-lot
    qualified_professionals: [{{name: M. Chen}}]
"""


def write(tmp_path: Path, *, web: bool = True, smtp: int = 9) -> Path:
    section = (f"web: {{public_url: '{PUBLIC}', secret_file: '{tmp_path / 'web.key'}'}}"
               if web else "")
    path = tmp_path / "site.yaml"
    path.write_text(CONFIG.format(state=tmp_path / "state", web=section, smtp=smtp))
    return path


def sw(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "monitor.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})


def refused(out: subprocess.CompletedProcess[str], line: str) -> None:
    assert (out.returncode, out.stderr, out.stdout) == (2, line + "\n", "")


def people(tmp_path: Path) -> list[User]:
    with Users.open(tmp_path / "state") as users:
        return users.all()


def add(cfg: Path, name: str, role: str = "qp", *extra: str) -> subprocess.CompletedProcess[str]:
    return sw("user", "add", "--config", str(cfg), "--name", name, "--role", role,
              "--email", f"{name.split()[-1].lower()}@example.org", *extra)


# --------------------------------------------------------------------------- user add


def test_add_a_qp_on_the_roster_and_an_officer(tmp_path: Path) -> None:
    cfg = write(tmp_path)
    out = add(cfg, "J. Rivera", "qp", "--site", "branch-meadows")
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout == "added J. Rivera (qp, rivera@example.org): records on branch-meadows\n"
    out = add(cfg, "Officer Diaz", "officer")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "added Officer Diaz (officer, diaz@example.org): reads every site\n"
    out = add(cfg, "M. Chen", "qp", "--site", "mill-road-lot")
    assert out.returncode == 0, out.stderr
    assert people(tmp_path) == [
        User("J. Rivera", "qp", "rivera@example.org", ("branch-meadows",)),
        User("M. Chen", "qp", "chen@example.org", ("mill-road-lot",)),
        User("Officer Diaz", "officer", "diaz@example.org", ()),
    ]


def test_a_qp_must_be_on_the_roster_of_each_site_they_record_on(tmp_path: Path) -> None:
    cfg = write(tmp_path)
    refused(add(cfg, "B. Nobody", "qp", "--site", "branch-meadows"),
            "stormwatch user add: --name: 'B. Nobody' is not on the qualified_professionals "
            "roster of site branch-meadows (J. Rivera, A. Lee)")
    # Without --site: every site, and mill-road-lot has its own roster.
    refused(add(cfg, "J. Rivera", "qp"),
            "stormwatch user add: --name: 'J. Rivera' is not on the qualified_professionals "
            "roster of site mill-road-lot (M. Chen); --site limits the sites they record on")
    refused(add(cfg, "J. Rivera", "qp", "--site", "branch-meadows", "--site", "mill-road-lot"),
            "stormwatch user add: --name: 'J. Rivera' is not on the qualified_professionals "
            "roster of site mill-road-lot (M. Chen)")
    assert people(tmp_path) == []


@pytest.mark.parametrize(("extra", "role", "line"), [
    (("--site", "nowhere"), "qp", "--site: unknown site 'nowhere' (configured: "
     "branch-meadows, mill-road-lot)"),
    (("--site", "branch-meadows"), "officer", "--site goes with --role qp (an officer reads "
     "every site and records nothing)"),
])
def test_an_unknown_site_and_a_site_for_an_officer_are_refused(
        tmp_path: Path, extra: tuple[str, ...], role: str, line: str) -> None:
    refused(add(write(tmp_path), "J. Rivera", role, *extra), f"stormwatch user add: {line}")
    assert not (tmp_path / "state" / "users.sqlite").exists()


def test_a_name_taken_twice_and_a_bad_address_are_refused(tmp_path: Path) -> None:
    cfg = write(tmp_path)
    assert add(cfg, "A. Lee", "qp", "--site", "branch-meadows").returncode == 0
    refused(add(cfg, "A. Lee", "officer"),
            "stormwatch user add: --name: there is already a user named 'A. Lee'")
    refused(sw("user", "add", "--config", str(cfg), "--name", "Officer Diaz", "--role",
               "officer", "--email", "diaz at example.org"),
            "stormwatch user add: --email: 'diaz at example.org' is not an e-mail address")
    assert [u.name for u in people(tmp_path)] == ["A. Lee"]
    refused(add(cfg, "Contractor", "officer"),
            "stormwatch user add: --name: 'Contractor' is reserved: the log book says"
            " 'contractor' of a repair reported done through a contractor's link")


def test_a_missing_role_is_argparse_usage(tmp_path: Path) -> None:
    out = sw("user", "add", "--config", str(write(tmp_path)), "--name", "A. Lee",
             "--role", "boss", "--email", "lee@example.org")
    assert out.returncode == 2 and "invalid choice: 'boss'" in out.stderr
    assert "Traceback" not in out.stderr


# --------------------------------------------------------------------------- user link


def test_link_prints_a_signin_link_that_works_once(tmp_path: Path) -> None:
    cfg = write(tmp_path)
    assert add(cfg, "A. Lee", "qp", "--site", "branch-meadows").returncode == 0
    before = round(time.time() * 1000)
    out = sw("user", "link", "--config", str(cfg), "--name", "A. Lee")
    assert (out.returncode, out.stderr) == (0, "")
    match = re.fullmatch(re.escape(PUBLIC) + r"/signin/([A-Za-z0-9_-]{43})\n", out.stdout)
    assert match, out.stdout
    with Users.open(tmp_path / "state") as users:
        assert users.redeem_signin(match[1], before + 15 * 60_000 + 60_000) is None  # expired
        assert users.redeem_signin(match[1], before) == User(
            "A. Lee", "qp", "lee@example.org", ("branch-meadows",))
        assert users.redeem_signin(match[1], before) is None  # used


def test_link_for_nobody_or_without_web_is_refused(tmp_path: Path) -> None:
    cfg = write(tmp_path)
    refused(sw("user", "link", "--config", str(cfg), "--name", "A. Lee"),
            "stormwatch user link: --name: there is no user named 'A. Lee' (users: none yet; "
            "add one with `stormwatch user add`)")
    refused(sw("user", "link", "--config", str(cfg), "--name", "A. Lee", "--valid-minutes",
               "0"), "stormwatch user link: --valid-minutes: must be 1 to 1440 (got 0)")
    bare = write(tmp_path, web=False)  # the same file, without web:
    refused(sw("user", "link", "--config", str(bare), "--name", "A. Lee"),
            "stormwatch user link: web: not configured; a sign-in link needs web.public_url "
            "(config/README.md, `web`)")


def test_link_send_mails_the_person_alone_and_prints_no_token(tmp_path: Path) -> None:
    with SmtpReceiver() as smtp:
        cfg = write(tmp_path, smtp=smtp.port)
        assert add(cfg, "A. Lee", "qp").returncode == 2  # not on mill-road-lot's roster
        assert add(cfg, "A. Lee", "qp", "--site", "branch-meadows").returncode == 0
        before = round(time.time() * 1000)
        out = sw("user", "link", "--config", str(cfg), "--name", "A. Lee", "--send")
        assert (out.returncode, out.stderr) == (0, ""), out.stderr
        assert out.stdout == ("sent a sign-in link to A. Lee <lee@example.org> via team-mail "
                              "(valid 15 minutes, once)\n")
        assert smtp.wait_for(lambda ms: len(ms) == 1, 30)
        (mail,) = smtp.mails
    assert mail.rcpt_tos == ["lee@example.org"]  # not team@, not everyone@
    assert mail.subject == "stormwatch: your sign-in link"
    tokens = re.findall(re.escape(PUBLIC) + r"/signin/([A-Za-z0-9_-]{43})", mail.text())
    assert len(set(tokens)) == 1
    assert tokens[0] not in out.stdout
    with Users.open(tmp_path / "state") as users:
        assert users.redeem_signin(tokens[0], before) is not None
        assert users.redeem_signin(tokens[0], before) is None


def test_link_send_with_the_mail_server_down_is_exit_1(tmp_path: Path) -> None:
    cfg = write(tmp_path, smtp=9)  # nothing listens on port 9
    assert add(cfg, "A. Lee", "qp", "--site", "branch-meadows").returncode == 0
    out = sw("user", "link", "--config", str(cfg), "--name", "A. Lee", "--send")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.startswith("FAILED via team-mail: "), out.stderr
    assert "Traceback" not in out.stderr


# --------------------------------------------------------------------------- user token


def test_token_is_printed_once_and_a_new_one_replaces_it(tmp_path: Path) -> None:
    cfg = write(tmp_path)
    assert add(cfg, "Officer Diaz", "officer").returncode == 0
    first = sw("user", "token", "--config", str(cfg), "--name", "Officer Diaz")
    assert first.returncode == 0 and re.fullmatch(r"[A-Za-z0-9_-]{43}\n", first.stdout)
    second = sw("user", "token", "--config", str(cfg), "--name", "Officer Diaz")
    assert second.returncode == 0 and second.stdout != first.stdout
    now = round(time.time() * 1000)
    with Users.open(tmp_path / "state") as users:
        assert users.api_user(first.stdout.strip(), now) is None
        user = users.api_user(second.stdout.strip(), now)
    assert user is not None and user.role == "officer"
    raw = b"".join(p.read_bytes() for p in (tmp_path / "state").iterdir() if p.is_file())
    assert second.stdout.strip().encode() not in raw
    refused(sw("user", "token", "--config", str(cfg), "--name", "nobody"),
            "stormwatch user token: --name: there is no user named 'nobody' (users: "
            "Officer Diaz; add one with `stormwatch user add`)")


# --------------------------------------------------------------------------- user list


def test_list_shows_each_person_and_what_of_their_access_works(tmp_path: Path) -> None:
    cfg = write(tmp_path)
    empty = sw("user", "list", "--config", str(cfg))
    assert (empty.returncode, empty.stdout) == (0, "no users yet; add one with "
                                                   "`stormwatch user add`\n")
    assert add(cfg, "J. Rivera", "qp", "--site", "branch-meadows").returncode == 0
    assert add(cfg, "Officer Diaz", "officer").returncode == 0
    sw("user", "link", "--config", str(cfg), "--name", "J. Rivera")
    sw("user", "link", "--config", str(cfg), "--name", "J. Rivera")
    token = sw("user", "token", "--config", str(cfg), "--name", "Officer Diaz",
               "--valid-days", "30")
    until = token.stderr.split("until ")[1].split(";")[0]
    with Users.open(tmp_path / "state") as users:
        users.new_session("J. Rivera", round(time.time() * 1000), 30)
    out = sw("user", "list", "--config", str(cfg))
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout == (
        "J. Rivera (qp, rivera@example.org): records on branch-meadows; 1 session, no API"
        " token, 2 unused sign-in links\n"
        "Officer Diaz (officer, diaz@example.org): reads every site; 0 sessions, an API token"
        f" until {until}, 0 unused sign-in links\n")
    assert token.stdout.strip() not in out.stdout


# --------------------------------------------------------------------------- user token


def test_token_says_how_long_it_works(tmp_path: Path) -> None:
    cfg = write(tmp_path)
    assert add(cfg, "A. Lee", "qp", "--site", "branch-meadows").returncode == 0
    before = round(time.time() * 1000)
    out = sw("user", "token", "--config", str(cfg), "--name", "A. Lee")
    assert out.returncode == 0 and re.fullmatch(r"[A-Za-z0-9_-]{43}\n", out.stdout)
    assert re.fullmatch(r"valid 90 days, until \d{4}-\d\d-\d\d \d\d:\d\d UTC; any earlier "
                        r"token of A\. Lee stops working\n", out.stderr), out.stderr
    with Users.open(tmp_path / "state") as users:
        assert users.api_user(out.stdout.strip(), before + 90 * 86_400_000 - 60_000)
        assert users.api_user(out.stdout.strip(), before + 90 * 86_400_000 + 60_000) is None
    for days in ("0", "367"):
        refused(sw("user", "token", "--config", str(cfg), "--name", "A. Lee",
                   "--valid-days", days),
                f"stormwatch user token: --valid-days: must be 1 to 366 (got {days})")


# --------------------------------------------------------------------------- user sites


def test_sites_are_changed_as_user_add_checks_them(tmp_path: Path) -> None:
    cfg = write(tmp_path)
    assert add(cfg, "J. Rivera", "qp", "--site", "branch-meadows").returncode == 0
    assert add(cfg, "Officer Diaz", "officer").returncode == 0

    def sites(*args: str) -> subprocess.CompletedProcess[str]:
        return sw("user", "sites", "--config", str(cfg), *args)

    prefix = "stormwatch user sites: "
    refused(sites("--name", "J. Rivera", "--site", "mill-road-lot"),
            prefix + "--name: 'J. Rivera' is not on the qualified_professionals roster of "
            "site mill-road-lot (M. Chen)")
    refused(sites("--name", "J. Rivera", "--all-sites"),
            prefix + "--name: 'J. Rivera' is not on the qualified_professionals roster of "
            "site mill-road-lot (M. Chen); --site limits the sites they record on")
    refused(sites("--name", "J. Rivera", "--site", "nowhere"),
            prefix + "--site: unknown site 'nowhere' (configured: branch-meadows, "
            "mill-road-lot)")
    refused(sites("--name", "J. Rivera"),
            prefix + "--site: give the sites they record on (repeatable), or --all-sites")
    refused(sites("--name", "J. Rivera", "--site", "branch-meadows", "--all-sites"),
            prefix + "--all-sites: not together with --site")
    refused(sites("--name", "Officer Diaz", "--site", "branch-meadows"),
            prefix + "--name: Officer Diaz is an officer, who reads every site and records "
            "nothing (--site goes with a qp)")
    refused(sites("--name", "nobody", "--site", "branch-meadows"),
            prefix + "--name: there is no user named 'nobody' (users: J. Rivera, Officer "
            "Diaz; add one with `stormwatch user add`)")
    assert people(tmp_path)[0].sites == ("branch-meadows",)  # nothing changed by a refusal

    # A change that passes: tests/web/test_access.py, through the running app.


# --------------------------------------------------------------------------- revoke, remove


def test_revoke_and_remove_end_access_and_refuse_nobody(tmp_path: Path) -> None:
    cfg = write(tmp_path)
    assert add(cfg, "A. Lee", "qp", "--site", "branch-meadows").returncode == 0
    link = sw("user", "link", "--config", str(cfg), "--name", "A. Lee").stdout.strip()
    token = sw("user", "token", "--config", str(cfg), "--name", "A. Lee").stdout.strip()
    now = round(time.time() * 1000)
    out = sw("user", "revoke", "--config", str(cfg), "--name", "A. Lee")
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout.startswith("revoked A. Lee's access: ended 0 sessions, an API token "
                                 "until ")
    with Users.open(tmp_path / "state") as users:
        assert users.api_user(token, now) is None
        assert users.redeem_signin(link.rsplit("/", 1)[1], now) is None
        assert users.get("A. Lee") is not None  # they stay
    again = sw("user", "revoke", "--config", str(cfg), "--name", "A. Lee")
    assert again.stdout == ("revoked A. Lee's access: ended 0 sessions, no API token, 0 unused"
                            " sign-in links; they stay (qp, records on branch-meadows), and "
                            "`stormwatch user link` signs them in again\n")
    out = sw("user", "remove", "--config", str(cfg), "--name", "A. Lee")
    assert out.stdout == ("removed A. Lee (qp): ended 0 sessions, no API token, 0 unused "
                          "sign-in links; the inspections they recorded keep their name in "
                          "the log book\n")
    assert people(tmp_path) == []
    for action in ("revoke", "remove"):
        refused(sw("user", action, "--config", str(cfg), "--name", "A. Lee"),
                f"stormwatch user {action}: --name: there is no user named 'A. Lee' (users: "
                "none yet; add one with `stormwatch user add`)")

"""The field app's people: roles and sites, single-use sign-in, sessions, API tokens.

A real SQLite file in a temporary state directory; times are the caller's
``now_ms``, so every expiry is tested on both sides of its instant. And the
file itself is read back: no token handed out may be in it, only hashes.
"""

from __future__ import annotations

import hashlib
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from monitor.errors import UserError
from monitor.store.users import USERS_NAME, User, Users

T0 = 1_780_000_000_000  # ms
MINUTE, DAY = 60_000, 86_400_000

RIVERA = User(name="J. Rivera", role="qp", email="jrivera@example.org", sites=("branch-meadows",))
LEE = User(name="A. Lee", role="qp", email=None, sites=())
OFFICER = User(name="Officer Diaz", role="officer", email="diaz@example.org", sites=())


@pytest.fixture
def users(tmp_path: Path) -> Users:
    u = Users.open(tmp_path)
    for person in (RIVERA, LEE, OFFICER):
        u.add(person)
    return u


# --------------------------------------------------------------------------- people


def test_people_are_kept_and_read_back_as_added(users: Users, tmp_path: Path) -> None:
    assert users.get("J. Rivera") == RIVERA
    assert users.get("nobody") is None
    assert users.all() == [LEE, RIVERA, OFFICER]  # by name
    users.close()
    again = Users.open(tmp_path)
    assert again.get("Officer Diaz") == OFFICER
    again.close()


def test_the_file_is_in_the_state_dir_readable_by_its_owner_only(users: Users,
                                                                  tmp_path: Path) -> None:
    path = tmp_path / USERS_NAME
    assert path.is_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_name_is_taken_once(users: Users) -> None:
    with pytest.raises(UserError) as info:
        users.add(User(name="J. Rivera", role="officer", email=None, sites=()))
    assert info.value.lines == ["name: there is already a user named 'J. Rivera'"]
    assert users.get("J. Rivera") == RIVERA  # not replaced


def test_roles_and_sites() -> None:
    assert RIVERA.may_read("branch-meadows") and RIVERA.may_record("branch-meadows")
    assert not RIVERA.may_read("mill-road-lot") and not RIVERA.may_record("mill-road-lot")
    assert LEE.may_read("mill-road-lot") and LEE.may_record("mill-road-lot")  # no sites: all
    assert OFFICER.may_read("mill-road-lot") and OFFICER.may_read("branch-meadows")
    assert not OFFICER.may_record("branch-meadows")
    limited = User(name="x", role="officer", email=None, sites=("branch-meadows",))
    assert limited.may_read("mill-road-lot") and not limited.may_record("branch-meadows")


# --------------------------------------------------------------------------- sign-in


def test_a_signin_token_works_once(users: Users) -> None:
    token = users.issue_signin("J. Rivera", T0)
    assert users.redeem_signin(token, T0 + MINUTE) == RIVERA
    assert users.redeem_signin(token, T0 + 2 * MINUTE) is None  # replayed


def test_a_signin_token_expires_after_its_ttl(users: Users) -> None:
    late = users.issue_signin("J. Rivera", T0)
    assert users.redeem_signin(late, T0 + 900_000) is None  # 15 minutes: gone at the instant
    just = users.issue_signin("J. Rivera", T0)
    assert users.redeem_signin(just, T0 + 900_000 - 1) == RIVERA
    short = users.issue_signin("A. Lee", T0, ttl_s=60)
    assert users.redeem_signin(short, T0 + 60_001) is None


def test_an_expired_token_stays_refused(users: Users) -> None:
    token = users.issue_signin("A. Lee", T0, ttl_s=60)
    assert users.redeem_signin(token, T0 + 120_000) is None
    users.issue_signin("J. Rivera", T0 + 130_000)  # prunes what can no longer be used
    assert users.redeem_signin(token, T0 + 140_000) is None


def test_unknown_tokens_and_tokens_of_other_kinds_sign_nobody_in(users: Users) -> None:
    session = users.new_session("J. Rivera", T0, days=30)
    api = users.issue_api_token("J. Rivera", T0)
    for token in ("", "not-a-token", session, api):
        assert users.redeem_signin(token, T0) is None
    signin = users.issue_signin("J. Rivera", T0)
    assert users.session_user(signin, T0) is None and users.api_user(signin, T0) is None
    assert users.session_user(api, T0) is None and users.api_user(session, T0) is None


def test_two_racing_redeems_of_one_link_let_one_in(users: Users, tmp_path: Path) -> None:
    token = users.issue_signin("J. Rivera", T0)
    other = Users.open(tmp_path)  # a second process's connection
    results: list[User | None] = []

    def redeem(u: Users) -> None:
        results.append(u.redeem_signin(token, T0))

    threads = [threading.Thread(target=redeem, args=(u,)) for u in (users, other, users, other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    other.close()
    assert sorted(results, key=lambda r: r is None) == [RIVERA, None, None, None]


def test_tokens_for_nobody_are_refused(users: Users) -> None:
    issues: list[Callable[[], str]] = [lambda: users.issue_signin("nobody", T0),
                                       lambda: users.new_session("nobody", T0, 30),
                                       lambda: users.issue_api_token("nobody", T0)]
    for issue in issues:
        with pytest.raises(UserError) as info:
            issue()
        assert info.value.lines == ["name: there is no user named 'nobody'"]


# --------------------------------------------------------------------------- sessions


def test_a_session_lasts_its_days_and_then_not(users: Users) -> None:
    sid = users.new_session("J. Rivera", T0, days=30)
    assert users.session_user(sid, T0) == RIVERA
    assert users.session_user(sid, T0 + 30 * DAY - 1) == RIVERA
    assert users.session_user(sid, T0 + 30 * DAY) is None
    assert users.session_user("unknown", T0) is None


def test_an_ended_session_is_gone_and_others_stay(users: Users) -> None:
    phone = users.new_session("J. Rivera", T0, days=30)
    laptop = users.new_session("J. Rivera", T0, days=30)
    assert phone != laptop
    users.end_session(phone)
    users.end_session("unknown")  # no error
    assert users.session_user(phone, T0) is None
    assert users.session_user(laptop, T0) == RIVERA


def test_sessions_survive_a_reopen(users: Users, tmp_path: Path) -> None:
    sid = users.new_session("Officer Diaz", T0, days=1)
    users.close()
    again = Users.open(tmp_path)
    assert again.session_user(sid, T0 + DAY - 1) == OFFICER
    again.close()


# --------------------------------------------------------------------------- API tokens


def test_an_api_token_names_its_holder_until_replaced(users: Users) -> None:
    first = users.issue_api_token("A. Lee", T0)
    assert users.api_user(first, T0) == LEE
    second = users.issue_api_token("A. Lee", T0)
    assert second != first
    assert users.api_user(second, T0) == LEE
    assert users.api_user(first, T0) is None  # the new one replaces it
    rivera = users.issue_api_token("J. Rivera", T0)
    assert users.api_user(rivera, T0) == RIVERA and users.api_user(second, T0) == LEE
    assert users.api_user("", T0) is None


# --------------------------------------------------------------------------- only hashes


def test_only_hashes_of_tokens_are_stored(users: Users, tmp_path: Path) -> None:
    tokens = [users.issue_signin("J. Rivera", T0), users.issue_signin("A. Lee", T0),
              users.new_session("J. Rivera", T0, days=30), users.issue_api_token("A. Lee", T0)]
    users.redeem_signin(tokens[1], T0)
    users.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert len({len(t) for t in tokens}) == 1 and len(tokens[0]) >= 43  # 32 random bytes
    for token in tokens:
        assert token.encode() not in raw
        assert token[:16].encode() not in raw
    # ... and what is stored is the hash (so the check above looked at the right file).
    again = Users.open(tmp_path)
    assert again.session_user(tokens[2], T0) == RIVERA
    again.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert hashlib.sha256(tokens[2].encode()).hexdigest().encode() in raw

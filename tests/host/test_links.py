"""Alert links: signed with the web app's key, expiring, refused when touched.

Hand-made tokens stand in for an attacker: a claim for another site with the
old signature, a signature cut short, the right claim signed with another
key, and one past its expiry by a millisecond.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from pathlib import Path

import pytest

from monitor.config import WebConfig
from monitor.errors import UserError
from monitor.host import links
from monitor.host.links import (
    LinkClaim,
    LinkError,
    alert_link,
    read_secret,
    sign_link,
    verify_link,
)

KEY = bytes(range(32))
T0 = 1_780_000_000_000
HOUR = 3_600_000
CLOCK = "branch-meadows:storm:1780000000000"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_a_link_names_its_site_and_clock_until_it_expires() -> None:
    token = sign_link(KEY, "branch-meadows", CLOCK, T0 + 72 * HOUR)
    assert verify_link(KEY, token, T0) == LinkClaim("branch-meadows", CLOCK, T0 + 72 * HOUR)
    assert verify_link(KEY, token, T0 + 72 * HOUR - 1) == LinkClaim(
        "branch-meadows", CLOCK, T0 + 72 * HOUR)
    expired = verify_link(KEY, token, T0 + 72 * HOUR)
    assert isinstance(expired, LinkError) and expired.reason == "expired"


def test_a_link_without_a_clock() -> None:
    token = sign_link(KEY, "mill-road-lot", None, T0 + HOUR)
    assert verify_link(KEY, token, T0) == LinkClaim("mill-road-lot", None, T0 + HOUR)


def test_the_token_is_url_safe_as_it_is() -> None:
    token = sign_link(KEY, "branch-meadows", "site/with?odd#chars é", T0 + HOUR)
    assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
    claim = verify_link(KEY, token, T0)
    assert isinstance(claim, LinkClaim) and claim.clock_id == "site/with?odd#chars é"


def test_a_tampered_claim_is_refused_as_forged() -> None:
    token = sign_link(KEY, "branch-meadows", CLOCK, T0 + HOUR)
    _, mac = token.split(".")
    for claim in ({"s": "mill-road-lot", "c": CLOCK, "e": T0 + HOUR},  # another site
                  {"s": "branch-meadows", "c": CLOCK, "e": T0 + 1000 * HOUR}):  # longer life
        forged = b64(json.dumps(claim, separators=(",", ":")).encode()) + "." + mac
        result = verify_link(KEY, forged, T0)
        assert isinstance(result, LinkError) and result.reason == "forged", claim


def test_a_tampered_signature_is_refused() -> None:
    token = sign_link(KEY, "branch-meadows", CLOCK, T0 + HOUR)
    body, mac = token.split(".")
    flipped = mac[:-2] + ("A" if mac[-2] != "A" else "B") + mac[-1]
    for bad in (f"{body}.{flipped}", f"{body}.{mac[:20]}", f"{body}.", body + "." + mac + "x"):
        result = verify_link(KEY, bad, T0)
        assert isinstance(result, LinkError) and result.reason in ("forged", "malformed"), bad


def test_the_wrong_secret_is_refused() -> None:
    token = sign_link(b"another key of the same length..", "branch-meadows", CLOCK, T0 + HOUR)
    result = verify_link(KEY, token, T0)
    assert result == LinkError("forged", "this link was not made by this stormwatch")


@pytest.mark.parametrize("token", ["", "abc", "a.b.c", "!!!.???", "x" * 5000 + ".y",
                                   b64(b"not json") + "." + b64(b"x" * 32)])
def test_malformed_tokens_are_refused_without_an_exception(token: str) -> None:
    result = verify_link(KEY, token, T0)
    assert isinstance(result, LinkError) and result.reason in ("malformed", "forged")


def test_a_correctly_signed_claim_of_the_wrong_shape_is_malformed() -> None:
    """The MAC is checked first, so only our own key could have made one: still refused."""
    for claim in (b'{"s":1,"c":null,"e":5}', b'{"s":"x","c":null,"e":true}', b"[]",
                  b'{"s":"x","c":3,"e":5}'):
        mac = hmac.new(KEY, links._PURPOSE + claim, hashlib.sha256).digest()
        result = verify_link(KEY, f"{b64(claim)}.{b64(mac)}", 0)
        assert isinstance(result, LinkError) and result.reason == "malformed", claim


def test_alert_link_is_public_url_a_token_expiring_after_link_hours() -> None:
    web = WebConfig(public_url="https://sw.example.org/", secret_file="/unused", link_hours=2)
    link = alert_link(web, KEY, "branch-meadows", CLOCK, T0)
    assert link.startswith("https://sw.example.org/a/")
    token = link.removeprefix("https://sw.example.org/a/")
    assert verify_link(KEY, token, T0) == LinkClaim("branch-meadows", CLOCK, T0 + 2 * HOUR)


def test_read_secret_reads_bytes_or_says_how_to_make_a_key(tmp_path: Path) -> None:
    key = tmp_path / "web.key"
    key.write_bytes(KEY + b"\n")
    assert read_secret(key) == KEY + b"\n"
    with pytest.raises(UserError) as info:
        read_secret(tmp_path / "missing.key")
    assert info.value.lines == [
        f"web.secret_file: there is no file {tmp_path / 'missing.key'}; "
        "make one with: head -c 32 /dev/urandom > FILE; chmod 600 FILE"]

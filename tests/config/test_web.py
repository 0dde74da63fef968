"""The field app's configuration: ``web:`` and ``sites[].practices``.

Defaults as the reference gives them, one line per mistake at the field to
edit, and ``check-config`` refusing a signing key it cannot read with the
recipe for making one.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from monitor.config import Config, photos_dir_of
from monitor.config.file import ConfigError, load_config, parse_config

ROOT = Path(__file__).resolve().parents[2]
RECIPE = "make one with: head -c 32 /dev/urandom > FILE; chmod 600 FILE"


def document(web: dict[str, Any] | None = None, **site: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"state_dir": "/srv/state",
                            "sites": [{"id": "branch-meadows", **site}]}
    if web is not None:
        data["web"] = web
    return data


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(copy.deepcopy(data), env={})
    return info.value.lines


WEB = {"public_url": "https://sw.example.org/", "secret_file": "/etc/stormwatch/web.key"}


def test_without_a_web_section_there_is_no_app_and_no_practices() -> None:
    config = parse_config(document(), env={})
    assert config.web is None
    assert config.sites[0].practices == []
    assert photos_dir_of(config) == Path("/srv/state/photos")


def test_web_defaults_are_those_of_the_reference() -> None:
    config = parse_config(document(WEB), env={})
    web = config.web
    assert web is not None
    assert web.listen == "127.0.0.1:8080" and (web.host, web.port) == ("127.0.0.1", 8080)
    assert web.public_url == "https://sw.example.org"  # links append a path
    assert web.secret_file == "/etc/stormwatch/web.key"
    assert (web.link_hours, web.session_days, web.max_photo_mb) == (72, 30, 15)
    assert web.link_ms == 72 * 3_600_000
    assert web.max_photo_bytes == 15 * 1024 * 1024
    assert web.photos_dir is None
    assert photos_dir_of(config) == Path("/srv/state/photos")


def test_photos_dir_when_given() -> None:
    config = parse_config(document({**WEB, "photos_dir": "/srv/photos"}), env={})
    assert photos_dir_of(config) == Path("/srv/photos")


def test_public_url_and_secret_file_are_required() -> None:
    assert problems(document({})) == ["web.public_url: required field is missing",
                                      "web.secret_file: required field is missing"]


@pytest.mark.parametrize(("field", "value", "line"), [
    ("public_url", "sw.example.org", "web.public_url: 'sw.example.org' is not an http(s) "
     "address (e.g. https://stormwatch.example.org)"),
    ("public_url", "https://sw.example.org/?x=1", "web.public_url: must have no query or "
     "fragment (links are made by appending a path)"),
    ("listen", "8080", "web.listen: '8080' is not host:port (e.g. 127.0.0.1:8080)"),
    ("listen", "0.0.0.0:99999", "web.listen: '0.0.0.0:99999' is not host:port "
     "(e.g. 127.0.0.1:8080)"),
    ("link_hours", 0, "web.link_hours: must be more than 0 hours (got 0 hours)"),
    ("session_days", -2, "web.session_days: must be more than 0 days (got -2 days)"),
    ("max_photo_mb", 0, "web.max_photo_mb: must be more than 0 (got 0)"),
    ("secrt_file", "x", "web.secrt_file: unknown field; did you mean secret_file?"),
])
def test_each_web_mistake_is_one_line(field: str, value: Any, line: str) -> None:
    assert problems(document({**WEB, field: value})) == [line]


def test_practices_in_order_with_ids_and_names() -> None:
    config = parse_config(document(practices=[
        {"id": "silt-fence", "name": "Silt fence"},
        {"id": "inlet-protection", "name": "Inlet protection"}]), env={})
    assert [(p.id, p.name) for p in config.sites[0].practices] == [
        ("silt-fence", "Silt fence"), ("inlet-protection", "Inlet protection")]


def test_practice_mistakes_are_one_line_each() -> None:
    lines = problems(document(practices=[
        {"id": "silt-fence", "name": "Silt fence"},
        {"id": "silt-fence", "name": "Second fence"},
        {"id": "Bad Id", "name": "x"},
        {"id": "entrance"}]))
    assert lines == [
        "sites.branch-meadows.practices.2.id: 'Bad Id' is not a valid id: use 1 to 63 "
        "characters of a-z, 0-9, '-' and '_', starting with a letter or digit",
        "sites.branch-meadows.practices.entrance.name: required field is missing",
        "sites.branch-meadows.practices.1.id: duplicate id 'silt-fence' (also at practices.0)",
    ]


def test_the_example_has_the_usual_practices_and_its_web_section_commented() -> None:
    config = load_config(ROOT / "config" / "example.yaml", env={})
    assert config.web is None
    meadows = config.site("branch-meadows")
    assert meadows is not None
    assert [p.name for p in meadows.practices] == [
        "Silt fence", "Inlet protection", "Stabilized construction entrance",
        "Sediment trap", "Stockpile", "Dewatering"]
    text = (ROOT / "config" / "example.yaml").read_text(encoding="utf-8")
    for field in Config.model_fields["web"].annotation.__args__[0].model_fields:  # type: ignore[union-attr]
        assert f"#   {field}: " in text, field


# --------------------------------------------------------------------------- check-config


def check_config(tmp_path: Path, secret: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "site.yaml"
    path.write_text(f"state_dir: {tmp_path / 'state'}\n"
                    "web: {public_url: 'https://sw.example.org', "
                    f"secret_file: '{secret}'}}\n"
                    "sites: [{id: branch-meadows}]\n")
    return subprocess.run([sys.executable, "-m", "monitor.cli", "check-config", str(path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})


def test_check_config_refuses_a_missing_key_and_says_how_to_make_one(tmp_path: Path) -> None:
    key = tmp_path / "web.key"
    out = check_config(tmp_path, key)
    assert out.returncode == 2
    assert out.stderr == f"web.secret_file: there is no file {key}; {RECIPE}\n"
    assert out.stdout == ""


def test_check_config_refuses_a_key_too_short_or_a_directory(tmp_path: Path) -> None:
    key = tmp_path / "web.key"
    key.write_bytes(b"\n")
    out = check_config(tmp_path, key)
    assert out.returncode == 2
    assert out.stderr == (f"web.secret_file: {key} holds 1 bytes, fewer than 16; {RECIPE}\n")
    out = check_config(tmp_path, tmp_path)
    assert out.returncode == 2
    assert out.stderr == f"web.secret_file: {tmp_path} is a directory; {RECIPE}\n"


def test_check_config_refuses_an_unreadable_key(tmp_path: Path) -> None:
    key = tmp_path / "web.key"
    key.write_bytes(b"k" * 32)
    key.chmod(0)
    try:
        if key.open("rb"):  # root reads anything: nothing to test then
            pytest.skip("running as root: root opens a key of mode 0, so no key here is"
                        " unreadable to refuse")
    except PermissionError:
        pass
    out = check_config(tmp_path, key)
    assert out.returncode == 2
    assert out.stderr == (f"web.secret_file: cannot read {key} (Permission denied); "
                          f"{RECIPE}\n")


def test_check_config_passes_with_a_key(tmp_path: Path) -> None:
    key = tmp_path / "web.key"
    key.write_bytes(b"k" * 32)
    out = check_config(tmp_path, key)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("OK: 1 site(s).")

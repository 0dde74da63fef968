"""Site shards (deploy/README.md, "Several daemons on one broker"): ``shard: {id}`` makes a
daemon subscribe to its own sites only and confines its ACL account to them;
``stormwatch shards`` checks the daemons' configurations side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.cli import main
from monitor.config.file import load_config
from monitor.sources.acl import render_acl

from ..support.nodekit import write_node_config

SHARD = """\
shard: {{id: {shard}}}
broker: {{host: 127.0.0.1, port: 1883, client_id: stormwatch-{shard}, username: sw-{shard}}}
state_dir: {state}
notify: {{targets: [{{url: "console://"}}]}}
sites:
{sites}"""
SITE = """\
  - id: {id}
    timezone: America/New_York
    sensors:
      - {{id: rg1, kind: rain, in_per_tip: 0.01}}
"""


def shard(tmp_path: Path, name: str, *sites: str, **replace: str) -> Path:
    text = SHARD.format(shard=name, state=tmp_path / f"state-{name}",
                        sites="".join(SITE.format(id=s) for s in sites))
    for old, new in replace.items():
        text = text.replace(old, new)
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_disjoint_shards_pass_and_say_who_owns_what(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    east, west = shard(tmp_path, "east", "mill-lot", "quarry"), shard(tmp_path, "west", "farm")
    code, out, err = run(capsys, "shards", "--config", str(east), str(west))
    assert code == 0, err
    assert "shard east" in out and "2 site(s): mill-lot, quarry" in out
    assert "shard west" in out and "1 site(s): farm" in out
    assert "OK: 3 site(s), each owned by exactly one of 2 shard(s)" in out


def test_a_site_owned_twice_or_by_nobody_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    east, west = shard(tmp_path, "east", "mill-lot"), shard(tmp_path, "west", "mill-lot")
    code, out, _ = run(capsys, "shards", "--config", str(east), str(west))
    assert code == 1
    assert "FAILED: site mill-lot: owned by 2 shards (east, west)" in out
    west = shard(tmp_path, "west", "farm")
    node, _ = write_node_config(tmp_path, [{"id": "rg1", "kind": "rain", "driver": "sim",
                                            "start_s": 0, "end_s": 60}],
                                site="quarry")
    code, out, _ = run(capsys, "shards", "--config", str(east), str(west), "--nodes", str(node))
    assert code == 1 and "FAILED: site quarry: owned by nobody" in out


def test_shards_that_would_take_each_others_session_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    east = shard(tmp_path, "east", "mill-lot")
    west = shard(tmp_path, "west", "farm", **{"client_id: stormwatch-west":
                                              "client_id: stormwatch-east"})
    code, _, err = run(capsys, "shards", "--config", str(east), str(west))
    assert code == 2
    assert "broker.client_id: stormwatch-east is shard east's too" in err
    assert "Traceback" not in err


def test_a_shard_subscribes_to_its_sites_and_its_account_reads_only_theirs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = load_config(shard(tmp_path, "east", "mill-lot", "quarry"), env={})
    assert config.broker.subscribe == "sites"
    acl = render_acl(config)
    daemon = acl.split("user sw-east\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert daemon == ["topic read stormwatch/v1/mill-lot/#", "topic read stormwatch/v1/quarry/#",
                      "topic write stormwatch/v1/mill-lot/+/journaled",
                      "topic write stormwatch/v1/mill-lot/inspection",
                      "topic write stormwatch/v1/quarry/+/journaled",
                      "topic write stormwatch/v1/quarry/inspection"]
    everything = shard(tmp_path, "all", "farm", **{"sw-all}": "sw-all, subscribe: all}"})
    code, _, err = run(capsys, "check-config", str(everything))
    assert code == 2 and "broker.subscribe: shard all subscribes to its own sites only" in err

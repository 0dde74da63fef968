"""Grafana provisioning and the compose stack (deploy/).

* The dashboards' JSON: data source references, the ``site`` variable,
  annotations, InfluxQL only.
* Every panel, variable and annotation query, with ``$site``, ``$timeFilter``
  and ``$__interval`` substituted as Grafana does, runs against the real
  InfluxDB 1.6 server holding points the exporter wrote, and returns rows.
* deploy/docker-compose.yml: no Docker engine runs here (nor may the tests
  pull images), so the stack cannot be started; its structure is checked
  instead: services, volumes, secrets, the paths it mounts, and that the
  configuration it gives stormwatch validates and matches InfluxDB's setup.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.config.file import load_config
from monitor.contract.inputs import Forecast, Reading, ReferenceObservation
from monitor.contract.times import MS_PER_HOUR as H
from monitor.host.rows import Input
from monitor.store import Store

from ..support.influxd import WEATHER, Influxd, export_config, fill_store, session, site_readings
from ..support.util import SITE

pytest_plugins = ("tests.support.conftest_influx",)

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
GRAFANA = DEPLOY / "grafana"
DS_UID = "stormwatch-influxdb"
DS = {"type": "influxdb", "uid": DS_UID}
DASHBOARDS = sorted((GRAFANA / "dashboards").glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, query) for every panel target, annotation and query variable."""
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield f"panel {panel['id']} {panel['title']!r} {target['refId']}", target["query"]
    for anno in dashboard["annotations"]["list"]:
        if not anno.get("builtIn"):
            yield f"annotation {anno['name']!r}", anno["query"]
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            yield f"variable {var['name']}", var["query"]


# --------------------------------------------------------------------------- JSON


def test_there_is_a_fleet_overview_and_a_site_dashboard() -> None:
    uids = {load(p)["uid"]: p.name for p in DASHBOARDS}
    assert uids == {"stormwatch-fleet": "fleet-overview.json", "stormwatch-site": "site.json"}


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_every_reference_is_to_the_provisioned_influxql_data_source(path: Path) -> None:
    dash = load(path)
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dash["panels"]:
        assert panel["datasource"] == DS, panel["title"]
        assert panel["targets"], panel["title"]
        assert panel["gridPos"]["x"] >= 0 and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs))
        for target in panel["targets"]:
            assert target["datasource"] == DS
            # Raw InfluxQL, which InfluxDB 1.x, 2.x (DBRP) and 3.x all answer (deploy/README.md,
            # "InfluxDB and Grafana").
            assert target["rawQuery"] is True
            assert re.match(r"(SELECT|SHOW) ", target["query"]), target["query"]
            assert "from(bucket" not in target["query"]  # no Flux
    for anno in dash["annotations"]["list"]:
        if anno.get("builtIn"):
            continue
        assert anno["datasource"] == DS and anno["enable"] is True
        assert {anno["titleColumn"], anno["textColumn"], anno["tagsColumn"]} <= {
            "title", "text", "type"}
        assert anno["target"]["query"] == anno["query"]
    for var in dash["templating"]["list"]:
        assert var["datasource"] == DS


def test_the_site_dashboard_has_a_site_variable_every_query_uses() -> None:
    dash = load(GRAFANA / "dashboards" / "site.json")
    (var,) = dash["templating"]["list"]
    assert (var["name"], var["type"], var["multi"], var["includeAll"]) == (
        "site", "query", False, False)
    assert var["query"] == 'SHOW TAG VALUES WITH KEY = "site"'
    for where, query in queries(dash):
        if not where.startswith("variable"):
            assert '"site" =~ /^$site$/' in query, where
    titles = " | ".join(p["title"] for p in dash["panels"])
    for needed in ("Rainfall", "running total", "last 24 h", "clock", "trap fill",
                   "upstream, downstream", "battery and last seen", "forecast vs observed",
                   "gauge vs reference"):
        assert needed.lower() in titles.lower(), needed
    annotations = [a for a in dash["annotations"]["list"] if not a.get("builtIn")]
    assert annotations and 'FROM "event"' in annotations[0]["query"]


def test_trap_and_threshold_lines_are_drawn() -> None:
    site = {p["title"]: p for p in load(GRAFANA / "dashboards" / "site.json")["panels"]}
    trap = site["Sediment trap fill"]["fieldConfig"]["defaults"]
    steps = [s["value"] for s in trap["thresholds"]["steps"]]
    assert steps == [None, 0.4, 0.5] and trap["custom"]["thresholdsStyle"]["mode"] != "off"
    storm = site["Storm event: running total against the threshold"]
    assert any('"threshold_in"' in t["query"] for t in storm["targets"])
    steps = [s["value"] for s in storm["fieldConfig"]["defaults"]["thresholds"]["steps"]]
    assert steps == [None, 0.5]


def test_provisioning_files_agree_with_the_dashboards_and_the_compose_mounts() -> None:
    ds = yaml.safe_load((GRAFANA / "provisioning/datasources/stormwatch-influxdb.yaml")
                        .read_text())
    (source,) = ds["datasources"]
    assert (source["uid"], source["type"], source["access"]) == (DS_UID, "influxdb", "proxy")
    assert source["jsonData"]["version"] == "InfluxQL"
    assert source["jsonData"]["httpHeaderName1"] == "Authorization"
    assert source["secureJsonData"]["httpHeaderValue1"].startswith("Token $__file{/run/secrets/")
    provider = yaml.safe_load((GRAFANA / "provisioning/dashboards/stormwatch.yaml").read_text())
    (prov,) = provider["providers"]
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    mounts = dict(reversed(v.split(":")[:2]) for v in compose["services"]["grafana"]["volumes"])
    assert (DEPLOY / mounts[prov["options"]["path"]]).resolve() == GRAFANA / "dashboards"
    assert (DEPLOY / mounts["/etc/grafana/provisioning/datasources"]).resolve() == \
        GRAFANA / "provisioning/datasources"
    environment = compose["services"]["grafana"]["environment"]
    home = environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home.startswith(prov["options"]["path"] + "/")
    assert (GRAFANA / "dashboards" / Path(home).name).is_file()


# --------------------------------------------------------------------------- queries


@pytest.fixture(scope="module")
def dashboard_data(influx_server: Influxd, tmp_path_factory: pytest.TempPathFactory
                   ) -> tuple[Influxd, str]:
    """A database holding what the exporter writes for a site's last 20 hours.

    A storm (qualified, then inspected: a routine clock is open), a turbidity
    episode, a trap with one faulty reading, a status message; readings end an hour ago, so every
    sensor is stale now; the wall-clock points are written at the end.
    """
    influx_server.create_database("dash")
    tmp = tmp_path_factory.mktemp("dash")
    config = export_config(tmp, influx_server, "dash", weather=WEATHER)
    now_ms = int(time.time()) * 1000
    items: list[Input] = [*site_readings(now_ms - 20 * 3_600_000, 19 * 60)]
    # The weather inputs (forecast vs observed, gauge vs reference): a forecast
    # issued 18 hours ago for the next day, and KHPN's hours since.
    issued = now_ms - 18 * H
    items.append(Forecast(SITE, "nws", "OKX/33,37", issued,
                          tuple((issued + k * 6 * H, issued + (k + 1) * 6 * H, 3.0 * k)
                                for k in range(4))))
    items += [ReferenceObservation(SITE, "KHPN", issued + h * H, 1.5 if h % 3 else None)
              for h in range(18)]
    items.append(Reading(SITE, "tb-up", "status", now_ms - 3_700_000, battery_v=3.61,
                         buffered=12, dropped=0))
    # One sediment reading past the trap bottom, a sensor_fault for the
    # dashboard's trap table (the next reading, valid, ends it).
    items.append(Reading(SITE, "trap1-depth", "sediment", now_ms - 10 * 3_600_000 + 5_000,
                         depth_in=-2.0))
    fill_store(config, items)
    with Store.in_dir(config.state_dir) as store:
        assert session(config, store).drain(60)
    return influx_server, "dash"


def substitute(query: str, from_ms: int, to_ms: int) -> str:
    """What Grafana's InfluxDB data source sends for a single-valued ``site``."""
    return (query.replace("$timeFilter", f"time >= {from_ms}ms and time <= {to_ms}ms")
            .replace("$__interval", "5m").replace("$site", SITE))


@pytest.mark.integration
@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_every_query_returns_rows_from_exported_data(
        path: Path, dashboard_data: tuple[Influxd, str]) -> None:
    server, db = dashboard_data
    to_ms = int(time.time() * 1000)
    from_ms = to_ms - 2 * 86_400_000
    empty = []
    for where, query in queries(load(path)):
        rows = server.rows(substitute(query, from_ms, to_ms), db)
        if not rows:
            empty.append(f"{where}: {query}")
    assert not empty, "queries without rows:\n" + "\n".join(empty)


@pytest.mark.integration
def test_the_fleet_table_reads_the_site_summary(dashboard_data: tuple[Influxd, str]) -> None:
    server, db = dashboard_data
    fleet = {p["id"]: p for p in load(GRAFANA / "dashboards" / "fleet-overview.json")["panels"]}
    now = int(time.time() * 1000)
    (row,) = server.rows(substitute(fleet[1]["targets"][0]["query"], now - 86_400_000, now), db)
    assert row["site"] == SITE
    assert row["open storm clocks"] == 0  # the storm clock was met by the inspection
    assert 0 < row["hours left"] <= 7 * 24  # the routine clock
    # The probes are stale too, so the contrast is unknown now, never ok (less
    # than the two hours of unknown_notice_hours: not yet unmonitored).
    assert row["stale sensors"] == 4 and row["turbidity"] == "unknown"


# --------------------------------------------------------------------------- compose


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    return data


def test_compose_stack_has_the_four_services_with_volumes_and_secrets() -> None:
    c = compose()
    services = c["services"]
    assert set(services) == {"mosquitto", "influxdb", "grafana", "stormwatch"}
    for name, service in services.items():
        assert "image" in service, name
        assert service.get("restart") == "unless-stopped", name
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                path = (DEPLOY / source).resolve()
                # deploy/secrets/* are made by compose/setup.sh, never committed.
                if path.parent == DEPLOY / "secrets":
                    assert path.name in (DEPLOY / "compose/setup.sh").read_text(), source
                else:
                    assert path.exists(), f"{name}: {source} does not exist"
            else:
                assert source in c["volumes"], f"{name}: undeclared volume {source}"
        for secret in service.get("secrets", []):
            assert secret in c["secrets"], f"{name}: undeclared secret {secret}"
    for secret in c["secrets"].values():
        assert secret["file"].startswith("./secrets/")
        assert Path(secret["file"]).name in (DEPLOY / "compose/setup.sh").read_text()
    build = services["stormwatch"]["build"]
    assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == DEPLOY / "Dockerfile"
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), line
    assert services["influxdb"]["image"].startswith("influxdb:2")
    assert "healthcheck" in services["influxdb"]
    assert services["stormwatch"]["depends_on"]["influxdb"]["condition"] == "service_healthy"


def test_compose_configuration_of_stormwatch_validates_and_matches_influxdb(
        monkeypatch: pytest.MonkeyPatch) -> None:
    c = compose()
    env = c["services"]["influxdb"]["environment"]
    stormwatch = c["services"]["stormwatch"]
    mounts = dict(reversed(v.split(":")[:2]) for v in stormwatch["volumes"])
    config_path = stormwatch["command"][stormwatch["command"].index("--config") + 1]
    config = load_config(DEPLOY / mounts[config_path], env={})
    assert config.influx is not None and config.influx.api == "v2"
    assert config.influx.org == env["DOCKER_INFLUXDB_INIT_ORG"]
    assert config.influx.bucket == env["DOCKER_INFLUXDB_INIT_BUCKET"]
    assert config.influx.url == "http://influxdb:8086"
    assert config.influx.token_file == "/run/secrets/influx_token"
    assert env["DOCKER_INFLUXDB_INIT_ADMIN_TOKEN_FILE"] == "/run/secrets/influx_token"
    assert "influx_token" in stormwatch["secrets"]
    assert config.broker.host == "mosquitto"
    assert config.broker.password_file == "/run/secrets/mqtt_password"
    grafana = c["services"]["grafana"]["environment"]
    # InfluxDB 2.7's virtual DBRP mapping names the InfluxQL database after the bucket.
    assert grafana["INFLUX_DATABASE"] == env["DOCKER_INFLUXDB_INIT_BUCKET"]
    assert grafana["INFLUX_URL"] == config.influx.url


def test_compose_mosquitto_keeps_the_no_loss_limits_of_the_debian_drop_in() -> None:
    def settings(path: Path) -> dict[str, str]:
        out = {}
        for line in path.read_text().splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                key, _, value = line.strip().partition(" ")
                out[key] = value
        return out

    debian = settings(DEPLOY / "mosquitto" / "stormwatch.conf")
    stack = settings(DEPLOY / "compose" / "mosquitto.conf")
    for key in ("max_queued_messages", "max_queued_bytes", "max_inflight_messages",
                "max_packet_size", "allow_anonymous", "persistence", "autosave_interval"):
        assert stack[key] == debian[key], key
    assert stack["persistence_location"] == "/mosquitto/data/"
    mounts = compose()["services"]["mosquitto"]["volumes"]
    assert any(v.endswith(":/mosquitto/data") for v in mounts)
    for key in ("password_file", "acl_file"):
        assert any(v.split(":")[1] == stack[key] for v in mounts), key

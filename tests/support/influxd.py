"""A real InfluxDB 1.x server for the tests (monitor/README.md, "Development"): Debian's
``influxdb`` package.

``Influxd`` runs ``/usr/bin/influxd -config <its own file>`` on free ports of
127.0.0.1 with its meta, data and WAL directories in one working directory,
and talks to it over HTTP (``/ping``, ``/query``, ``/write``).

Things about influxd 1.6 that this module handles:

* It opens two ports: the HTTP API (``[http] bind-address``) and the RPC
  service used by backup/restore (the top-level ``bind-address``, 8088 by
  default). Both are set to free ports, or two servers (or a system one)
  would clash on 8088.
* Usage reporting to InfluxData and the internal ``_internal`` monitor
  database are switched off: no network calls, no extra writes.
* Ready means ``/ping`` answers 204. The free ports are found by binding
  port 0, so another process may take one first; a start that fails with
  "address already in use" is retried on new ports (first start only:
  ``restart()`` keeps the ports, as the exporter's configuration names them).
* ``stop()`` sends SIGTERM (influxd flushes and exits); ``kill()`` is SIGKILL.
  With ``setpriv`` the server also gets SIGKILL when the thread that started
  it dies (PR_SET_PDEATHSIG), so even a killed pytest leaves no influxd.
  Start servers from the main thread, as fixtures do. (The process lifecycle
  is ``tests.support.childproc.ChildService``'s, shared with ``Mosquitto``.)

At the end: helpers the export tests share, and, run as a script, a
measurement of the exporter's write throughput against a fresh server
(``bench``): ``.venv/bin/python -m tests.support.influxd``.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from monitor.config import Config
from monitor.config.file import parse_config
from monitor.contract.inputs import Inspection, Reading
from monitor.contract.times import MS_PER_MINUTE
from monitor.host.engine import EngineHost
from monitor.host.rows import Input, journal_in
from monitor.sinks.influx.influx import ExportSession
from monitor.sinks.influx.writers import V1Writer, Writer
from monitor.store import Store
from tests.support import childproc
from tests.support.childproc import ChildService, ChildServiceError, free_port
from tests.support.util import SITE, site_config

INFLUXD = "/usr/bin/influxd"
MISSING_REASON = ("influxd not installed (Debian package influxdb; `make test` installs it "
                  "as root)")


class InfluxdError(ChildServiceError):
    """The server did not start or stop as asked, or a query failed."""


def influxd_available() -> bool:
    return os.access(INFLUXD, os.X_OK)


class Influxd(ChildService):
    """One influxd in its own directory; see the module docstring."""

    name = "influxd"
    error = InfluxdError
    ready_means = "answer /ping"
    stop_timeout_s = 15.0

    def __init__(self, workdir: str | Path | None = None, *, host: str = "127.0.0.1",
                 start_timeout_s: float = 20.0, executable: str = INFLUXD) -> None:
        super().__init__(workdir, host=host, start_timeout_s=start_timeout_s,
                         executable=executable)
        self.http_port: int | None = None
        self.rpc_port: int | None = None
        self.conf_path = self.workdir / "influxdb.conf"

    # ------------------------------------------------------------------ state

    @property
    def url(self) -> str:
        if self.http_port is None:
            raise InfluxdError("the server has no port until it is started")
        return f"http://{self.host}:{self.http_port}"

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.http_port}"

    def config_text(self) -> str:
        d = self.workdir
        return "\n".join([
            "# written by tests/support/influxd.py",
            "reporting-disabled = true",
            f'bind-address = "{self.host}:{self.rpc_port}"',
            "[meta]",
            f'  dir = "{d / "meta"}"',
            "[data]",
            f'  dir = "{d / "data"}"',
            f'  wal-dir = "{d / "wal"}"',
            "  query-log-enabled = false",
            "[monitor]",
            "  store-enabled = false",
            "[http]",
            f'  bind-address = "{self.host}:{self.http_port}"',
            "  log-enabled = false",
            "[continuous_queries]",
            "  enabled = false",
            "",
        ])

    # ------------------------------------------------------------------ lifecycle (ChildService)

    def _has_ports(self) -> bool:
        return self.http_port is not None

    def _pick_ports(self) -> None:
        self.http_port, self.rpc_port = free_port(self.host), free_port(self.host)

    def _prepare(self) -> list[str]:
        self.conf_path.write_text(self.config_text(), encoding="utf-8")
        return [self.executable, "-config", str(self.conf_path)]

    def _ready(self, log_offset: int) -> bool:
        return self.ping()

    def ping(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/ping", timeout=1.0) as response:
                return int(response.status) == 204
        except (OSError, urllib.error.URLError):
            return False

    # ------------------------------------------------------------------ HTTP API

    def query(self, q: str, db: str | None = None, *, epoch: str = "ms") -> list[dict[str, Any]]:
        """Run InfluxQL; the ``results`` list. A statement error raises ``InfluxdError``."""
        params = {"q": q, "epoch": epoch}
        if db is not None:
            params["db"] = db
        data = urllib.parse.urlencode(params).encode()
        request = urllib.request.Request(f"{self.url}/query", data=data, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                body = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise InfluxdError(f"query {q!r} failed: HTTP {exc.code} "
                               f"{exc.read().decode(errors='replace')}") from None
        results: list[dict[str, Any]] = body.get("results", [])
        for result in results:
            if "error" in result:
                raise InfluxdError(f"query {q!r} failed: {result['error']}")
        return results

    def rows(self, q: str, db: str) -> list[dict[str, Any]]:
        """The rows of a one-statement query as dicts, with the series' tags merged in."""
        out: list[dict[str, Any]] = []
        for result in self.query(q, db):
            for series in result.get("series", []):
                tags = series.get("tags", {})
                for values in series["values"]:
                    row = dict(zip(series["columns"], values, strict=True))
                    row.update(tags)
                    row.setdefault("_measurement", series.get("name"))
                    out.append(row)
        return out

    def count(self, q: str, db: str) -> int:
        """The first numeric column of the first row (``SELECT count(x) ...``), 0 when empty."""
        rows = self.rows(q, db)
        if not rows:
            return 0
        return int(next(v for k, v in rows[0].items() if k.startswith("count")))

    def create_database(self, name: str) -> None:
        self.query(f'CREATE DATABASE "{name}"')

    def write(self, body: bytes, db: str, precision: str = "ms") -> tuple[int, str]:
        """POST line protocol to ``/write``; (status, body text)."""
        params = urllib.parse.urlencode({"db": db, "precision": precision})
        request = urllib.request.Request(f"{self.url}/write?{params}", data=body, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return int(response.status), response.read().decode(errors="replace")
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read().decode(errors="replace")


def stop_all() -> None:
    """Stop every server still running (at session end; a fixture normally did it)."""
    childproc.stop_all(Influxd)


# --------------------------------------------------------------------------- export test helpers
# Shared by tests/test_export_*.py: a configuration with an ``influx`` section,
# hours of site readings, a store filled the way the daemon fills it, and
# counts of what InfluxDB holds.

RAW = ("rain", "turbidity", "sediment", "inspection")
DERIVED = ("storm", "trap", "contrast", "event")


#: A ``weather:`` section for ``export_config(weather=...)`` (the site then gets a location).
WEATHER = {"nws": {"user_agent": "test (ops@example.org)"}, "reference_stations": ["KHPN"]}


def export_config(tmp_path: Path, server: Influxd, db: str, *, batch_size: int = 5000,
                  weather: dict[str, Any] | None = None, **site: Any) -> Config:
    if weather is not None:
        site = {"location": {"lat": 41.05, "lon": -73.54}, **site}
    data = site_config(**site).model_dump(mode="json", exclude_none=True)
    data["state_dir"] = str(tmp_path / "state")
    data["influx"] = {"url": server.url, "api": "v1", "database": db, "batch_size": batch_size}
    if weather is not None:
        data["weather"] = weather
    return parse_config(data, env={})


def site_readings(start_ms: int, minutes: int) -> list[Reading | Inspection]:
    """A storm (0.60 in from minute 60), a turbidity episode, a filling trap, an inspection."""
    items: list[Reading | Inspection] = []
    total = 0
    for m in range(minutes):
        t = start_ms + m * MS_PER_MINUTE
        total += 1 if 60 <= m < 120 else 0
        items.append(Reading(SITE, "rg1", "rain", t, tips_total=total, battery_v=3.9))
        if m % 2 == 0:
            items.append(Reading(SITE, "tb-up", "turbidity", t + 5_000, ntu=10.0))
            items.append(Reading(SITE, "tb-down", "turbidity", t + 35_000,
                                 ntu=40.0 if 100 <= m < 140 else 11.0))
        if m % 10 == 0:
            items.append(Reading(SITE, "trap1-depth", "sediment", t, depth_in=20.0 + m / 100))
    items.append(Inspection(SITE, "J. Rivera", start_ms + 150 * MS_PER_MINUTE, "storm"))
    return items


def fill_store(config: Config, items: Sequence[Input]) -> None:
    """Journal the items and record the engine's events, as the daemon does."""
    with Store.in_dir(config.state_dir) as store:
        for k in range(0, len(items), 1000):
            store.journal.commit([journal_in(i, topic=None, received_ms=i.ts_ms + 200)
                                for i in items[k:k + 1000]])
        EngineHost.restore(config, store).catch_up()


def counts(server: Influxd, db: str) -> dict[str, int]:
    out = {}
    for m in RAW + DERIVED:
        field = {"rain": "tips_total", "turbidity": "ntu", "sediment": "depth_in",
                 "inspection": "recorded", "storm": "total_in", "trap": "depth_in",
                 "contrast": "downstream_ntu", "event": "id"}[m]
        # Events: one distinct id per event (a moved revision leaves a second point).
        fn = f'count(distinct("{field}"))' if m == "event" else f'count("{field}")'
        out[m] = server.count(f'SELECT {fn} FROM "{m}"', db)
    return out


def journal_counts(config: Config) -> dict[str, int]:
    """Journal rows by measurement, and ``event``: the event ids (one series each)."""
    with Store.in_dir(config.state_dir) as store:
        rows = store.journal.after(0, limit=1_000_000)
        ids = {r.event.id for r in store.events.after(0, limit=1_000_000)}
    kinds = {"rain": 0, "turbidity": 0, "sediment": 0, "inspection": 0}
    for r in rows:
        kinds[r.body["kind"] if r.kind == "reading" else r.kind] += 1
    return {**kinds, "event": len(ids)}


def dump(server: Influxd, db: str, measurements: Sequence[str]) -> dict[str, list[Any]]:
    return {m: server.query(f'SELECT * FROM "{m}" GROUP BY *', db)[0].get("series", [])
            for m in measurements}


def session(config: Config, store: Store, writer: Writer | None = None) -> ExportSession:
    assert config.influx is not None
    return ExportSession(config, store, writer or V1Writer(config.influx))


# --------------------------------------------------------------------------- throughput


def bench(rows: int = 60_000) -> None:
    """Export ``rows`` journal rows (rain, turbidity pair, sediment) to a fresh influxd.

    Prints points/s for the whole path (journal read, engine replica, line
    protocol, HTTP) and for the writes alone. A measurement, not a test.
    """
    with Influxd() as server, tempfile.TemporaryDirectory() as tmp:
        server.create_database("bench")
        data = site_config().model_dump(mode="json")
        data["state_dir"] = tmp
        data["influx"] = {"url": server.url, "api": "v1", "database": "bench"}
        config = parse_config(data)
        assert config.influx is not None
        start = (int(time.time()) - 5 * 86400) * 1000
        items: list[Reading] = []
        tips = 0
        for i in range(rows // 4):
            t = start + i * 60_000
            tips += 1 if 600 <= i % 1440 < 700 else 0
            items += [Reading("branch-meadows", "rg1", "rain", t, tips_total=tips),
                      Reading("branch-meadows", "tb-up", "turbidity", t, ntu=10.0),
                      Reading("branch-meadows", "tb-down", "turbidity", t + 20_000,
                              ntu=12.0 + (i % 7)),
                      Reading("branch-meadows", "trap1-depth", "sediment", t,
                              depth_in=10.0 + i * 0.001)]
        with Store.in_dir(tmp) as store:
            for k in range(0, len(items), 5000):
                store.journal.commit([journal_in(r, topic=None, received_ms=r.ts_ms + 100)
                                    for r in items[k:k + 5000]])
            timed = _TimedWriter(V1Writer(config.influx))
            exporter = ExportSession(config, store, timed)
            began = time.perf_counter()
            assert exporter.drain(600)
            took = time.perf_counter() - began
        points = exporter.points_written
        print(f"{len(items)} journal rows -> {points} points in {took:.2f} s: "
              f"{points / took:,.0f} points/s end to end; "
              f"{points / timed.seconds:,.0f} points/s in /write calls "
              f"({timed.calls} requests of <= {config.influx.batch_size} lines)")


class _TimedWriter:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.target = inner.target
        self.seconds = 0.0
        self.calls = 0

    def write(self, lines: Any) -> None:
        began = time.perf_counter()
        try:
            self.inner.write(lines)
        finally:
            self.seconds += time.perf_counter() - began
            self.calls += 1

    def close(self) -> None:
        self.inner.close()


if __name__ == "__main__":
    bench()

"""``api: v2`` (influxdb-client, ``/api/v2/write``) against a recording HTTP server.

Why no InfluxDB 2 server runs here: the tests use Debian's packages only
(monitor/README.md, "Development"), and Debian ships InfluxDB 1.6 (package ``influxdb``) but neither
InfluxDB 2.x nor 3.x; fetching their release binaries from the network is not
something the test suite may do. So the v2 path is checked in two halves:

1. a local ``http.server`` records what the real ``influxdb-client`` sends
   (method, path, org, bucket, precision, the ``Token`` header, gzip) and
   answers as InfluxDB 2 does (204, or its error bodies);
2. the recorded bodies are written into the real InfluxDB 1.6 server
   through ``/write``: it accepts them (204) and then holds exactly the
   journal, which proves the line protocol itself is valid. The line
   protocol is the same in 1.x, 2.x and 3.x.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from monitor.config import Config
from monitor.config.file import parse_config
from monitor.contract.inputs import Inspection, Reading
from monitor.sinks.influx.influx import ExportSession
from monitor.sinks.influx.writers import make_writer
from monitor.store import Store
from monitor.store.exportstate import CURSOR, export_status

from ..support.influxd import Influxd, counts, fill_store, journal_counts, site_readings
from ..support.util import SITE, site_config

pytest_plugins = ("tests.support.conftest_influx",)
pytestmark = pytest.mark.integration


@dataclass
class Request:
    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    raw: bytes

    @property
    def body(self) -> bytes:
        if self.headers.get("content-encoding") == "gzip":
            return gzip.decompress(self.raw)
        return self.raw


Answer = Callable[[Request], tuple[int, dict[str, Any] | None]]


class Recorder:
    """An HTTP server on a free port that records requests and answers with ``answer``."""

    def __init__(self, answer: Answer | None = None) -> None:
        self.requests: list[Request] = []
        self.answer: Answer = answer or (lambda r: (204, None))
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length", 0))
                url = urlsplit(self.path)
                req = Request("POST", url.path,
                              {k: v[0] for k, v in parse_qs(url.query).items()},
                              {k.lower(): v for k, v in self.headers.items()},
                              self.rfile.read(length))
                recorder.requests.append(req)
                status, body = recorder.answer(req)
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                if data:
                    self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    r = Recorder()
    yield r
    r.close()


def v2_config(tmp_path: Path, url: str, *, token: str = "s3cret-token\n", org: str = "village",
              bucket: str = "stormwater", batch_size: int = 5000) -> Config:
    token_file = tmp_path / "influx.token"
    token_file.write_text(token)
    data = site_config().model_dump(mode="json", exclude_none=True)
    data["state_dir"] = str(tmp_path / "state")
    data["influx"] = {"url": url, "api": "v2", "org": org, "bucket": bucket,
                      "token_file": str(token_file), "batch_size": batch_size}
    return parse_config(data, env={})


def export(config: Config, *, timeout_s: float = 30) -> tuple[bool, dict[str, Any]]:
    assert config.influx is not None
    with Store.in_dir(config.state_dir) as store:
        s = ExportSession(config, store, make_writer(config.influx))
        try:
            done = s.drain(timeout_s)
        finally:
            s.writer.close()
        return done, export_status(store, int(time.time() * 1000))


def test_v2_requests_carry_org_bucket_precision_token_and_gzip_and_valid_lines(
        tmp_path: Path, recorder: Recorder, influx_server: Influxd, influx_db: str) -> None:
    config = v2_config(tmp_path, recorder.url, batch_size=600)
    fill_store(config, site_readings(int(time.time()) * 1000 - 20 * 3_600_000, 300))
    done, status = export(config)
    assert done and status["behind_rows"] == 0
    assert len(recorder.requests) >= 2  # several batches
    for req in recorder.requests:
        assert (req.method, req.path) == ("POST", "/api/v2/write")
        assert req.params == {"org": "village", "bucket": "stormwater", "precision": "ms"}
        # The token file's trailing newline is not part of the token.
        assert req.headers["authorization"] == "Token s3cret-token"
        assert req.headers["content-encoding"] == "gzip"
        assert req.headers["content-type"].startswith("text/plain")
        assert len(req.body.splitlines()) <= 600

    # The same bytes, as InfluxDB 1.6 reads them.
    for req in recorder.requests:
        code, text = influx_server.write(req.body, influx_db, precision="ms")
        assert code == 204, text
    expected = journal_counts(config)
    got = counts(influx_server, influx_db)
    for m in ("rain", "turbidity", "sediment", "inspection", "event"):
        assert got[m] == expected[m], m
    assert got["storm"] == expected["rain"] and got["contrast"] == expected["turbidity"] // 2


def test_influxdb_18_compatibility_form(tmp_path: Path, recorder: Recorder) -> None:
    """InfluxDB 1.8's /api/v2/write: token "user:password", org "-", bucket "db/rp"."""
    config = v2_config(tmp_path, recorder.url, token="grafana:pa55", org="-",
                       bucket="stormwater/autogen")
    fill_store(config, [Reading(SITE, "tb-up", "turbidity", int(time.time() * 1000), ntu=3.0)])
    assert export(config)[0]
    req = recorder.requests[0]
    assert req.params == {"org": "-", "bucket": "stormwater/autogen", "precision": "ms"}
    assert req.headers["authorization"] == "Token grafana:pa55"


def test_refused_points_are_found_by_splitting_and_dead_lettered(
        tmp_path: Path, recorder: Recorder) -> None:
    """InfluxDB 2 refuses a whole batch for one bad point (400): the exporter splits it."""
    def answer(req: Request) -> tuple[int, dict[str, Any] | None]:
        if b"temp_c=" in req.body:
            return 400, {"code": "invalid", "message":
                         'partial write: field type conflict: input field "temp_c" on '
                         'measurement "turbidity" is type float, already exists as type string'}
        return 204, None

    recorder.answer = answer
    config = v2_config(tmp_path, recorder.url)
    start = int(time.time()) * 1000 - 3_600_000
    items: list[Reading | Inspection] = [
        Reading(SITE, "tb-up", "turbidity", start + i * 60_000, ntu=5.0,
                temp_c=9.5 if i in (7, 40) else None) for i in range(64)]
    fill_store(config, items)
    done, status = export(config)
    assert done and status["behind_rows"] == 0 and status["dead_letters"] == 2
    stored = [line for req in recorder.requests if b"temp_c=" not in req.body
              for line in req.body.splitlines()]
    assert len([x for x in stored if x.startswith(b"turbidity,")]) == 62
    with Store.in_dir(config.state_dir) as store:
        letters = store.journal.dead_letters()
    assert sorted(d.payload.split(b" ")[-1] for d in letters) == sorted(
        str(start + i * 60_000).encode() for i in (7, 40))


@pytest.mark.parametrize(("status", "body"), [
    (401, {"code": "unauthorized", "message": "unauthorized access"}),
    (404, {"code": "not found", "message": 'bucket "stormwater" not found'}),
    (503, None),
    # A 400 about the request, not the points: nothing may be dead-lettered for it.
    (400, {"code": "invalid", "message": "invalid precision"}),
])
def test_a_refused_request_pauses_the_export_and_discards_nothing(
        tmp_path: Path, recorder: Recorder, status: int, body: dict[str, Any] | None) -> None:
    recorder.answer = lambda r: (status, body)
    config = v2_config(tmp_path, recorder.url)
    fill_store(config, [Reading(SITE, "tb-up", "turbidity", int(time.time() * 1000), ntu=3.0)])
    assert config.influx is not None
    with Store.in_dir(config.state_dir) as store:
        s = ExportSession(config, store, make_writer(config.influx))
        wait = s.step()
        assert 0.5 < wait < 1.5  # backing off
        st = export_status(store, int(time.time() * 1000))
        assert st["behind_rows"] == 1 and st["dead_letters"] == 0
        assert store.state.cursor(CURSOR) == 0
        assert st["error"] and str(status) in st["error"]
        recorder.answer = lambda r: (204, None)
        assert s.drain(10)
        s.writer.close()
        assert export_status(store, int(time.time() * 1000))["error"] is None

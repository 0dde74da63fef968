"""Writing line protocol to InfluxDB: the v1 ``/write`` endpoint and the v2 API.

Both writers take a list of lines and either return (InfluxDB stored them)
or raise one of two errors, which is all the exporter needs to decide:

``Unavailable``  the server could not be reached, timed out, answered 5xx,
                 or refused the request as a whole (authentication, a missing
                 database or bucket). Nothing about the points is wrong:
                 retry the same batch later.
``Rejected``     the server refused (some of) the points themselves: a line
                 it cannot parse, a field type conflict, a time outside the
                 retention period. Splitting the batch finds the culprits.

Telling those apart by status code alone is not safe: a 400 also comes back
for a bad ``precision`` parameter, and treating that as bad points would
dead-letter every point. So a 400/422 counts as ``Rejected`` only when its
message names a point-level problem (``POINT_ERRORS``, as worded by
InfluxDB 1.x, 2.x and 3.x); any other 400 is ``Unavailable`` and logged, so
a misconfiguration pauses the export instead of discarding data.

InfluxDB 1.x writes the valid points of a batch and reports the rest
("partial write"); 2.x rejects the whole batch. Writes are idempotent, so
rewriting the valid half while splitting is harmless on both.

``V1Writer`` speaks HTTP itself (urllib3, which ``influxdb-client`` already
depends on): basic authentication from ``username``/``password_file``,
``db`` and ``rp`` parameters, ``precision=ms``, gzip. On "database not
found" it issues ``CREATE DATABASE`` once (a no-op if it exists), as Telegraf
does, so a fresh Raspberry Pi InfluxDB works without a manual step when the
user may create databases. ``V2Writer`` uses ``influxdb-client``'s
synchronous write API (``/api/v2/write`` with org, bucket, precision and a
``Token`` header, gzip), which InfluxDB 2.x, 3.x and 1.8+ accept.
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
import re
from collections.abc import Sequence
from typing import Any, Protocol
from urllib.parse import urlencode

import urllib3

from ...config import InfluxConfig
from ...config.file import read_secret

log = logging.getLogger("stormwatch.export")

#: Seconds to connect and to wait for an answer. A batch of 5000 points is
#: written in well under a second; a server that takes longer is treated as down.
CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 30.0

#: Messages of a 400/422 that blame the points, not the request.
POINT_ERRORS = re.compile(
    r"partial write|unable to parse|parsing failed|failed to parse|field type conflict"
    r"|type conflict|beyond retention|outside retention|max-values-per-tag|invalid field"
    r"|invalid tag|invalid number|invalid boolean|missing fields|missing tag|bad timestamp"
    r"|unbalanced quotes",
    re.IGNORECASE)


class Unavailable(Exception):
    """InfluxDB did not take the batch for a reason that is not the points'; retry later."""


class Rejected(Exception):
    """InfluxDB refused the points themselves (all of them, or some: which is unknown)."""


class Writer(Protocol):
    #: Where the points go, for log lines (never with a secret).
    target: str

    def write(self, lines: Sequence[str]) -> None: ...

    def close(self) -> None: ...


def classify(status: int, body: str) -> Exception | None:
    """The error for an HTTP answer to a write; None for success (2xx)."""
    if 200 <= status < 300:
        return None
    message = _message(body) or f"HTTP {status}"
    if status in (400, 422) and POINT_ERRORS.search(message):
        return Rejected(message)
    if status == 413:
        # Too large: the batch, not a point, is at fault; splitting helps.
        return Rejected(f"request too large: {message}")
    return Unavailable(f"HTTP {status}: {message}")


def _message(body: str) -> str:
    """The error text of an InfluxDB answer ({"error": ...} in 1.x, {"message": ...} in 2.x)."""
    text = body.strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:500]
    if isinstance(data, dict):
        for key in ("error", "message"):
            if isinstance(data.get(key), str):
                return str(data[key])[:500]
    return text[:500]


def make_writer(config: InfluxConfig) -> Writer:
    """The writer for ``config.api``; reads the secret files (OSError if unreadable)."""
    if config.api == "v1":
        return V1Writer(config)
    return V2Writer(config)


class V1Writer:
    """POST line protocol to InfluxDB 1.x ``/write`` (also served by 2.x and 3.x)."""

    def __init__(self, config: InfluxConfig, *, gzip_body: bool = True) -> None:
        if not config.database:
            raise ValueError("api v1 needs influx.database")
        self.base = config.url.rstrip("/")
        self.database = config.database
        params = {"db": config.database, "precision": "ms"}
        if config.retention_policy:
            params["rp"] = config.retention_policy
        self.write_url = f"{self.base}/write?{urlencode(params)}"
        self.target = f"{self.base} database {config.database}" + (
            f" rp {config.retention_policy}" if config.retention_policy else "")
        self.headers = {"Content-Type": "text/plain; charset=utf-8"}
        password = read_secret(config.password_file)
        if config.username is not None:
            token = base64.b64encode(f"{config.username}:{password or ''}".encode()).decode()
            self.headers["Authorization"] = f"Basic {token}"
        self.gzip = gzip_body
        if gzip_body:
            self.headers["Content-Encoding"] = "gzip"
        self.http = urllib3.PoolManager(
            maxsize=1, retries=False,
            timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S))
        self._created = False

    def write(self, lines: Sequence[str]) -> None:
        body = "\n".join(lines).encode("utf-8")
        if self.gzip:
            # Level 1: most of the size win for a fraction of the CPU (a Pi matters).
            body = gzip.compress(body, compresslevel=1)
        status, text = self._post(self.write_url, body, self.headers)
        error = classify(status, text)
        if error is not None and status == 404 and "database not found" in text \
                and not self._created:
            self._create_database()
            status, text = self._post(self.write_url, body, self.headers)
            error = classify(status, text)
        if error is not None:
            raise error

    def _create_database(self) -> None:
        self._created = True
        query = 'CREATE DATABASE "' + self.database.replace('"', '\\"') + '"'
        headers = {k: v for k, v in self.headers.items() if k == "Authorization"}
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        status, text = self._post(f"{self.base}/query", urlencode({"q": query}).encode(),
                                  headers)
        if 200 <= status < 300 and '"error"' not in text:
            log.warning("InfluxDB database %r did not exist; created it", self.database)
        else:
            log.error("InfluxDB database %r does not exist and could not be created: %s",
                      self.database, _message(text) or f"HTTP {status}")

    def _post(self, url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
        try:
            response = self.http.request("POST", url, body=body, headers=headers,
                                         redirect=False)
        except urllib3.exceptions.HTTPError as exc:
            raise Unavailable(_reason(exc)) from None
        return response.status, response.data.decode("utf-8", errors="replace")

    def close(self) -> None:
        self.http.clear()


class V2Writer:
    """Write through ``influxdb-client`` (``/api/v2/write``): InfluxDB 2.x, 3.x and 1.8+.

    For InfluxDB 1.8 the token file holds ``username:password`` (or is empty
    without authentication), ``org`` is ``-`` and ``bucket`` is
    ``database/retention_policy``.
    """

    def __init__(self, config: InfluxConfig) -> None:
        from influxdb_client.client.influxdb_client import InfluxDBClient
        from influxdb_client.client.write_api import SYNCHRONOUS

        if not config.bucket:
            raise ValueError("api v2 needs influx.bucket")
        token = read_secret(config.token_file) or ""
        self.bucket = config.bucket
        self.org = config.org or "-"
        self.target = f"{config.url.rstrip('/')} org {self.org} bucket {config.bucket}"
        # retries=False is the client's default for synchronous writes; said here
        # because the exporter owns retrying (with its cursor), not the client.
        self.client: Any = InfluxDBClient(url=config.url, token=token, org=self.org,
                                     enable_gzip=True, retries=False,
                                     timeout=(CONNECT_TIMEOUT_S * 1000, READ_TIMEOUT_S * 1000))
        self.api: Any = self.client.write_api(write_options=SYNCHRONOUS)

    def write(self, lines: Sequence[str]) -> None:
        from influxdb_client.domain.write_precision import WritePrecision
        from influxdb_client.rest import ApiException

        body = "\n".join(lines).encode("utf-8")
        try:
            self.api.write(bucket=self.bucket, org=self.org, record=body,
                           write_precision=WritePrecision.MS)
        except ApiException as exc:
            text = exc.body.decode("utf-8", "replace") if isinstance(exc.body, bytes) \
                else str(exc.body or exc.reason or "")
            error = classify(int(exc.status or 0), text)
            raise (error or Unavailable(str(exc.reason))) from None
        except urllib3.exceptions.HTTPError as exc:
            raise Unavailable(_reason(exc)) from None
        except OSError as exc:
            raise Unavailable(str(exc)) from None

    def close(self) -> None:
        self.api.close()
        self.client.close()


def _reason(exc: Any) -> str:
    """A short reason for a transport error (urllib3 nests the useful part)."""
    reason = getattr(exc, "reason", None)
    text = str(reason if reason is not None else exc)
    # "<urllib3.connection.HTTPConnection object at 0x...>: Failed to establish ..." -> the tail
    return re.sub(r"<[^>]*>: ", "", text)[:300]

"""A local HTTP server that answers like api.weather.gov (GeoJSON shapes written from
the API's documentation), for the weather source and ``stormwatch weather``.

``NwsServer.routes`` maps a path to a list of answers, (status, headers, body):
each request takes the next one and the last one repeats, so a 503 with
``Retry-After`` then a 200 is ``[(503, {...}, ...), (200, {}, body)]``. Every
request is recorded with its headers.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

Answer = tuple[int, dict[str, str], Any]


def point(grid_id: str = "OKX", x: int = 33, y: int = 37) -> dict[str, Any]:
    return {"type": "Feature", "geometry": {"type": "Point", "coordinates": [-73.54, 41.05]},
            "properties": {"@id": "https://api.weather.gov/points/41.05,-73.54",
                           "gridId": grid_id, "gridX": x, "gridY": y,
                           "forecastGridData": f"https://api.weather.gov/gridpoints/{grid_id}/"
                                               f"{x},{y}",
                           "timeZone": "America/New_York"}}


def gridpoint(update_time: str, precip: list[tuple[str, float | None]],
              chance: list[tuple[str, float | None]]) -> dict[str, Any]:
    return {"type": "Feature", "properties": {
        "updateTime": update_time, "validTimes": "2026-05-01T00:00:00+00:00/P7D",
        "quantitativePrecipitation": {"uom": "wmoUnit:mm", "values": [
            {"validTime": t, "value": v} for t, v in precip]},
        "probabilityOfPrecipitation": {"uom": "wmoUnit:percent", "values": [
            {"validTime": t, "value": v} for t, v in chance]}}}


def observations(station: str, reports: list[tuple[str, float | None]]) -> dict[str, Any]:
    return {"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {
            "station": f"https://api.weather.gov/stations/{station}", "timestamp": t,
            "precipitationLastHour": {"unitCode": "wmoUnit:mm", "value": v,
                                      "qualityControl": "V" if v is not None else "Z"}}}
        for t, v in reports]}


class NwsServer:
    def __init__(self) -> None:
        self.routes: dict[str, list[Answer]] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
                parts = urlsplit(self.path)
                server.requests.append((self.path, dict(self.headers)))
                answers = server.routes.get(parts.path)
                headers: dict[str, str] = {}
                if not answers:
                    status, body = 404, {"title": "Not Found"}
                else:
                    status, headers, body = answers[0]
                    if len(answers) > 1:
                        answers.pop(0)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/geo+json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> NwsServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def count(self, path: str) -> int:
        return sum(1 for p, _ in self.requests if urlsplit(p).path == path)

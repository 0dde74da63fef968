"""The log book says which rows a later revision withdrew, and lists an inspection's
photos: ``stormwatch logbook --format csv|md`` and the field app's
site page.

The site has a forecast source. The NWS issue of T0 forecasts two storms (the
numbers of ``tests/support/weatherkit.py``: 12.7 mm in T0+6h..T0+30h, and 14 mm at
T0+48h, inside ``forecast_hours: 72``); the issue of T0+1h still forecasts the first
and no longer the second, so the second's ``storm_forecast`` is recorded once more,
retracted: its first row is a fact a later revision withdrew. An inspection from the
field app cites one photo, captioned "silt fence north".
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from monitor.config import Config

from ..support.commandkit import stormwatch
from ..support.photos import jpeg_with_gps
from ..support.weatherkit import CHANCE, STORM, counter, issue, nws_interval
from ..support.webkit import QP, SITE, client_for, recorded_web_site, sign_in

WEATHER = "weather: {nws: {user_agent: 'test (ops@example.org)'}, forecast_hours: 72}\n"


@dataclass(frozen=True)
class Book:
    path: Path
    config: Config
    client: TestClient
    sha256: str


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Book:
    tmp = tmp_path_factory.mktemp("book")
    later = [nws_interval(48, "PT6H", 14.0)]
    # Both sites at one point (a forecast is for a place), neither of condition A-C: no
    # clock, so no months of overdue notices push the forecasts off the page's latest
    # rows when the inspection brings the engine to today.
    path, config = recorded_web_site(tmp, lambda text: text.replace(
        "    condition: B\n", "    condition: none\n    location: {lat: 41.05, lon: -73.54}\n"
    ) + WEATHER, [*counter([], until_h=-1), issue(0, [*STORM, *later], CHANCE),
                  issue(1, [*STORM, nws_interval(48, "PT6H", 1.0)], CHANCE)])
    client = client_for(config)
    csrf = sign_in(client, tmp / "state", QP)
    photo = client.post("/api/v1/photos", headers={"X-CSRF-Token": csrf},
                        files={"photo": ("p.jpg", jpeg_with_gps(), "image/jpeg")})
    assert photo.status_code == 201, photo.text
    sha = photo.json()["sha256"]
    got = client.post(f"/api/v1/sites/{SITE}/inspections", headers={
        "X-CSRF-Token": csrf, "Idempotency-Key": "book-photo-1"}, json={
        "inspectors": [QP], "kind": "routine", "certified": True,
        "photos": [{"sha256": sha, "caption": "silt fence north"}]})
    assert got.status_code == 201, got.text
    return Book(path, config, client, sha)


def _csv(book: Book) -> list[dict[str, str]]:
    proc = stormwatch(book.path, ("logbook", "--site", SITE, "--format", "csv"))
    assert proc.returncode == 0, proc.stderr
    return list(csv.DictReader(io.StringIO(proc.stdout)))


def test_the_csv_marks_the_withdrawn_row_and_the_retraction(book: Book) -> None:
    rows = _csv(book)
    forecasts: dict[str, list[dict[str, str]]] = {}
    for r in rows:
        if r["type"] == "storm_forecast":
            forecasts.setdefault(r["event_id"], []).append(r)
    # The first storm: issued, then revised; both hold. The second: issued, then withdrawn.
    held, dropped = sorted(forecasts.values(), key=lambda rs: rs[-1]["retracted"] != "")
    assert [r["retracted"] for r in held] == ["", ""]
    first, retraction = dropped
    assert first["retracted"] == f"RETRACTED (withdrawn by row {retraction['seq']})"
    assert retraction["retracted"] == f"RETRACTION (withdraws row {first['seq']})"
    # Nothing else is marked.
    assert [r["seq"] for r in rows if r["retracted"]] == [first["seq"], retraction["seq"]]
    (inspection,) = [r for r in rows if r["type"] == "inspection_recorded"]
    assert f"photos=silt fence north (sha256 {book.sha256})" in inspection["details"]
    # For programs: the columns and the fields by name stay as they were.
    assert list(rows[0]) == ["seq", "recorded_at", "recorded_local", "site", "type", "at",
                             "at_local", "event_id", "revision", "details", "prev_hash",
                             "hash", "retracted"]


def test_the_markdown_marks_them_too_in_sentences(book: Book) -> None:
    proc = stormwatch(book.path, ("logbook", "--site", SITE, "--format", "md"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    lines = [ln for ln in out.splitlines() if "Forecast of " in ln]
    marked = [ln for ln in lines if "**RETRACT" in ln]
    assert len(lines) == 4 and len(marked) == 2
    assert "**RETRACTED (withdrawn by row " in marked[0]
    assert "**RETRACTION (withdraws row " in marked[1]
    assert "Withdrawn (no longer holds): Forecast of " in marked[1]
    # Sentences, not fields: no type names, no field=value, no UTC.
    assert "storm_forecast" not in out and "forecast_in=" not in out
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", out)
    (inspection,) = [ln for ln in out.splitlines() if "Routine inspection by " in ln]
    assert f"photo `{book.sha256}`" in inspection and "1 photo(s)" in inspection


def test_the_site_page_log_book_marks_them_and_names_the_photo(book: Book) -> None:
    page = book.client.get(f"/sites/{SITE}")
    assert page.status_code == 200
    log = page.text.split("<h2>Log book (latest first)</h2>", 1)[1]
    assert log.count('<li class="retracted">') == 2
    assert "RETRACTED (withdrawn by row " in log and "RETRACTION (withdraws row " in log
    assert f"photo sha256 {book.sha256}" in log
    assert "Forecast of " in log and "forecast_in=" not in log

"""An inspection with photos, location and certification (the field app's path),
recorded through ``host/inspections.py`` exactly as ``stormwatch inspect`` is, and
``logbook verify`` checking each photo file it names."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from monitor.config import photos_dir_of
from monitor.config.file import load_config
from monitor.contract.events import InspectionRecorded
from monitor.contract.inputs import Inspection, Location, Photo, fix_caption, fixed_action
from monitor.contract.rejects import Rejection
from monitor.host.inspections import InspectError, build_inspection, commit_inspection
from monitor.ingest.evidence import check_evidence
from monitor.store.opening import open_store
from monitor.store.photos import photo_path, store_photo_bytes

from ..support.commandkit import ROSTER, stormwatch
from ..support.daemonkit import SITE, write_config
from ..support.photos import jpeg_with_gps


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    path = write_config(tmp_path, 1, sections=ROSTER)
    with open_store(load_config(path, env={})):
        pass
    return path


def test_a_web_inspection_carries_its_photos_into_the_journal_the_event_and_the_chain(
        cfg: Path) -> None:
    config = load_config(cfg, env={})
    now = round(time.time() * 1000)
    stored = store_photo_bytes(photos_dir_of(config), jpeg_with_gps(), 1_000_000, now_ms=now)
    photo = Photo(stored.sha256, stored.taken_at, stored.lat, stored.lon, "silt fence, north")
    insp = build_inspection(config, SITE, ["J. Rivera"], at=None, kind="routine", notes=None,
                            findings=["silt-fence: ok"], actions=[], resolves=[], now_ms=now,
                            via="web", photos=[photo],
                            location=Location(40.71, -74.0, 12.0), certified=True)
    assert Inspection.from_json(insp.to_json()) == insp
    outcome = commit_inspection(config, insp)
    rec = outcome.recorded
    assert isinstance(rec, InspectionRecorded)
    assert rec.via == "web" and rec.certified is True
    assert rec.location == {"lat": 40.71, "lon": -74.0, "accuracy_m": 12.0}
    assert rec.photos == ({"sha256": stored.sha256, "taken_at": "2026-11-30T14:15:00Z",
                           "lat": stored.lat, "lon": stored.lon,
                           "caption": "silt fence, north"},)
    with open_store(config, readonly=True) as store:
        rows = [r for r in store.events.logbook(SITE) if r.type == "inspection_recorded"]
    assert rows[0].body["photos"][0]["sha256"] == stored.sha256
    ok = stormwatch(cfg, ("logbook", "verify"))
    assert ok.returncode == 0, ok.stderr
    path = photo_path(photos_dir_of(config), stored.sha256)
    path.chmod(0o644)
    path.write_bytes(path.read_bytes()[:-10] + b"0123456789")
    bad = stormwatch(cfg, ("logbook", "verify"))
    assert bad.returncode == 1
    assert f"photo {stored.sha256} was altered" in bad.stderr
    path.unlink()
    gone = stormwatch(cfg, ("logbook", "verify"))
    assert gone.returncode == 1 and f"photo {stored.sha256} is missing" in gone.stderr


def test_the_cli_says_it_came_by_the_cli_and_has_no_photos_field(cfg: Path) -> None:
    config = load_config(cfg, env={})
    insp = build_inspection(config, SITE, ["J. Rivera"], at=None, kind="routine", notes=None,
                            findings=[], actions=[], resolves=[],
                            now_ms=round(time.time() * 1000))
    rec = commit_inspection(config, insp).recorded
    assert rec is not None and rec.via == "cli"
    assert "photos" not in rec.to_json() and "location" not in rec.to_json()


@pytest.mark.parametrize(("fields", "field"), [
    ({"photos": [{"sha256": "../../etc/passwd"}]}, "photos.0.sha256"),
    ({"photos": "x"}, "photos"),
    ({"photos": [{"sha256": "a" * 64, "lat": 91, "lon": 0}]}, "photos.0.lat"),
    ({"location": {"lat": 10, "lon": 200}}, "location.lon"),
    ({"location": {"lat": 10, "lon": 20, "accuracy_m": -1}}, "location.accuracy_m"),
    ({"certified": "yes"}, "certified"),
])
def test_wrong_evidence_is_refused_naming_the_field(fields: dict[str, object],
                                                     field: str) -> None:
    got = check_evidence(fields)
    assert isinstance(got, Rejection)
    assert got.detail.startswith(field + ": ")


def test_a_photo_with_a_path_for_a_hash_is_refused_by_the_inspect_path(cfg: Path) -> None:
    config = load_config(cfg, env={})
    with pytest.raises(InspectError, match="photos.0.sha256"):
        build_inspection(config, SITE, ["J. Rivera"], at=None, kind="routine", notes=None,
                         findings=[], actions=[], resolves=[],
                         now_ms=round(time.time() * 1000), via="web",
                         photos=[Photo("../../x")])


def test_a_fix_caption_names_its_action() -> None:
    assert fix_caption("ca-20261130t0915-1", "new stakes") == \
        "resolves ca-20261130t0915-1: new stakes"
    assert fixed_action("resolves ca-20261130t0915-1: new stakes") == "ca-20261130t0915-1"
    assert fixed_action("north fence") is None and fixed_action(None) is None

"""``stormwatch demo --keep`` as a newcomer meets it: its timeline in event-time order,
each alert under its event, and a kept state whose printed commands work as printed,
the field app (``stormwatch web`` on the kept configuration) and its sign-in links
included. One demo run (a subprocess, as a person runs it) serves every test."""

from __future__ import annotations

import re
import shlex
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import yaml

from monitor.store.users import Users

from ..support.daemonkit import ROOT
from ..support.webkit import WebProcess, press_sign_in

pytestmark = pytest.mark.integration

_LINE = re.compile(r"^  \[(\w{3}) (\d\d):(\d\d)\] (\w+) +(.*)$")
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@dataclass
class Kept:
    text: str
    tmp: Path
    err: str = ""

    def commands(self) -> list[str]:
        return re.findall(r"^  \$ (.+)$", self.text, re.MULTILINE)

    def command(self, word: str) -> str:
        found = [c for c in self.commands() if shlex.split(c)[1:][:1] == [word]
                 or f" monitor.cli {word} " in c]
        assert len(found) == 1, self.text
        return found[0]

    def config_path(self) -> Path:
        argv = shlex.split(self.command("status"))
        return Path(argv[argv.index("--config") + 1])


def _env(tmp: Path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)}


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> Kept:
    tmp = tmp_path_factory.mktemp("demo")
    done = subprocess.run([sys.executable, "-m", "monitor.cli", "demo", "--keep", "--speed",
                           "3600"], cwd=ROOT, env=_env(tmp), capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    return Kept(done.stdout, tmp, done.stderr)


def test_the_timeline_is_in_event_time_order_with_each_alert_under_its_event(
        kept: Kept) -> None:
    lines = kept.text.splitlines()
    timeline = [(i, m) for i, line in enumerate(lines) if (m := _LINE.match(line))]
    kinds = [m[4] for _, m in timeline]
    assert {"storm_started", "storm_qualified", "storm_ended", "turbidity_contrast",
            "trap_cleanout_required", "inspection_recorded", "clock_closed"} <= set(kinds)
    first_day = _DAYS.index(timeline[0][1][1])
    minutes = [((_DAYS.index(m[1]) - first_day) % 7) * 1440 + int(m[2]) * 60 + int(m[3])
               for _, m in timeline]
    assert minutes == sorted(minutes), "\n".join(m[0] for _, m in timeline)
    for kind in set(kinds):  # and so every kind on its own
        of_kind = [t for t, k in zip(minutes, kinds, strict=True) if k == kind]
        assert of_kind == sorted(of_kind), kind
    # The outfall cleared after the storm's end was known, and is printed after it.
    ended = next(i for i, m in timeline if m[4] == "storm_ended")
    cleared = next(i for i, m in timeline if "cleared" in m[5])
    assert ended < cleared
    # Each alert follows the line of its event (or another alert of it), never before.
    alerts = [i for i, line in enumerate(lines) if line.startswith("==== stormwatch alert")]
    assert len(alerts) >= 5 and alerts[0] > timeline[0][0]
    cleared_alert = next(i for i in alerts if "cleared" in lines[i + 1])
    assert cleared_alert > cleared
    for i in alerts:
        before = max(j for j, _ in timeline if j < i)
        between = lines[before + 1:i]
        assert all(not _LINE.match(x) for x in between)


def test_the_kept_configuration_has_the_field_app_and_its_people(kept: Kept) -> None:
    path = kept.config_path()
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    web, state = doc["web"], Path(doc["state_dir"])
    assert state == path.parent
    assert urlsplit(web["public_url"]).hostname == "127.0.0.1"
    assert web["listen"].startswith("127.0.0.1:")
    key = Path(web["secret_file"])
    assert key.parent == state and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert Path(web["photos_dir"]).parent == state
    assert [q["name"] for q in doc["sites"][0]["qualified_professionals"]] == ["J. Rivera"]
    with Users.open(state) as users:
        people = {u.name: u for u in users.all()}
    assert people["J. Rivera"].role == "qp" and people["J. Rivera"].sites == ("demo-meadows",)
    assert people["M. Chen"].role == "officer"
    assert all(str(u.email).endswith("@example.org") for u in people.values())


def test_every_printed_command_works_as_printed(kept: Kept) -> None:
    ran = []
    for command in kept.commands():
        if " web --config " in command:
            continue  # serves until stopped: the next test
        done = subprocess.run(shlex.split(command), cwd=ROOT, env=_env(kept.tmp),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{command}\n{done.stdout}{done.stderr}"
        ran.append(command)
    assert len(ran) == 4, kept.text
    status = next(c for c in ran if " status " in c)
    shown = subprocess.run(shlex.split(status), cwd=ROOT, env=_env(kept.tmp),
                           capture_output=True, text=True, timeout=60).stdout
    assert "ahead of this machine's clock" not in shown  # the demo replayed the past
    assert (kept.config_path().parent / "demo-report.html").stat().st_size > 10_000
    # The demo's own sensors never went silent, and none of its readings came too late.
    assert "sensor_stale" not in kept.text and "too_old" not in kept.err


def test_the_printed_links_sign_in_to_the_kept_field_app(kept: Kept) -> None:
    web_command = kept.command("web")
    qp_link = re.search(r"^    (http://\S+/signin/\S+)$", kept.text, re.MULTILINE)
    assert qp_link, kept.text
    port = urlsplit(qp_link[1]).port
    assert port is not None
    app = WebProcess(kept.config_path(), port, argv=shlex.split(web_command))
    try:
        with httpx.Client(base_url=app.url) as qp:
            assert press_sign_in(qp, qp_link[1]).status_code == 303
            site = qp.get("/sites/demo-meadows")
            assert site.status_code == 200 and "Demo Meadows Subdivision" in site.text
        officer_link = subprocess.run(
            shlex.split(kept.command("user")), cwd=ROOT, env=_env(kept.tmp),
            capture_output=True, text=True, timeout=60).stdout.strip()
        with httpx.Client(base_url=app.url) as officer:
            assert press_sign_in(officer, officer_link).status_code == 303
            assert "Demo Meadows Subdivision" in officer.get("/officer").text
    finally:
        assert app.stop() == 0, app.log()

"""The field app in tests: a configuration with ``web:``, people, and a signed-in client."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from monitor.config import Config
from monitor.host.rows import Input
from monitor.store.users import User, Users

from .daemonkit import CONFIG

SITE, OTHER = "branch-meadows", "mill-road-lot"
PUBLIC = "https://sw.example.org"
QP, QP2, OFFICER = "J. Rivera", "M. Chen", "R. Officer"

WEB = """\
web: {{public_url: '{public}', secret_file: '{secret}', listen: '{listen}', max_photo_mb: 1}}
qualified_professionals:
  - {{name: J. Rivera, credential: CPESC 12345}}
  - {{name: M. Chen}}
{more}"""

PRACTICES = """\
    practices:
      - {id: silt-fence, name: Silt fence}
      - {id: inlet-protection, name: Inlet protection}
"""

OTHER_SITE = """\
  - id: mill-road-lot
    timezone: America/New_York
    condition: B
    sensors:
      - {id: rg9, kind: rain, in_per_tip: 0.01, stale_after_minutes: 600}
"""


def write_web_config(tmp_path: Path, port: int = 1, *, listen: str = "127.0.0.1:8080",
                     public: str = PUBLIC, more: str = "") -> Path:
    """The daemon's test configuration (``daemonkit.CONFIG``) with ``web:``, a roster,
    practices at the site and a second site; a secret file beside it."""
    secret = tmp_path / "web.key"
    secret.write_bytes(b"k" * 32)
    secret.chmod(0o600)
    text = CONFIG.format(port=port, client_id="stormwatch-test", state=tmp_path / "state",
                         sections=WEB.format(public=public, secret=secret, listen=listen,
                                             more=more),
                         name="Branch Meadows Subdivision", address="")
    text = text.replace("    condition: B\n", "    condition: B\n" + PRACTICES, 1) + OTHER_SITE
    path = tmp_path / "stormwatch.yaml"
    path.write_text(text)
    return path


def client_for(config: Config, app: Any = None) -> TestClient:
    """A TestClient of ``app`` (``create_app(config)`` by default) at the scheme of
    ``web.public_url``: the app's cookies are Secure when it is https, and httpx, like a
    browser, sends those back over https only."""
    from monitor.web.app import create_app
    assert config.web is not None
    scheme = "https" if config.web.public_url.startswith("https://") else "http"
    return TestClient(app if app is not None else create_app(config, wait_s=0.5),
                      base_url=f"{scheme}://testserver")


def client_of(app: Any) -> TestClient:
    """``client_for`` the configuration the app was made with."""
    return client_for(app.state.web.config, app)


def web_env(tmp_path: Path, *, listen: str = "127.0.0.1:8080", public: str = PUBLIC
            ) -> dict[str, Any]:
    """A state directory with a database and the people of ``add_people``, and a client of
    the app on it: ``client``, ``config``, ``state`` (the directory), ``path`` (the file)."""
    from monitor.config.file import load_config
    from monitor.store.opening import open_store
    path = write_web_config(tmp_path, listen=listen, public=public)
    loaded = load_config(path, env={})
    with open_store(loaded):
        pass
    add_people(tmp_path / "state")
    return {"client": client_for(loaded), "config": loaded, "state": tmp_path / "state",
            "path": path}


def recorded_web_site(tmp_path: Path, edit: Callable[[str], str], items: Sequence[Input],
                      now_ms: int | None = None) -> tuple[Path, Config]:
    """``write_web_config`` in ``tmp_path`` with its text changed by ``edit``, ``items``
    recorded through the daemon's engine host (its clock at ``now_ms`` when given, ticked
    there), and the people of ``add_people``: (the file, the configuration)."""
    from monitor.config.file import load_config
    from monitor.host.engine import EngineHost
    from monitor.host.rows import journal_in
    from monitor.store.opening import open_store

    path = write_web_config(tmp_path)
    path.write_text(edit(path.read_text()))
    config = load_config(path, env={})
    with open_store(config) as store:
        host = EngineHost.restore(config, store, clock=time.time if now_ms is None
                                  else lambda: now_ms / 1000)
        store.journal.commit([journal_in(it, topic=None, received_ms=None) for it in items])
        host.catch_up()
        if now_ms is not None:
            host.tick()
    add_people(tmp_path / "state")
    return path, config


def web_app(tmp_path: Path, path: Path | None = None, *, people: bool = True,
            **app: Any) -> tuple[Any, Any]:
    """(config, app): the real app (``create_app``, ``wait_s`` 0.5 unless given) over
    the state directory of the configuration at ``path`` (default:
    ``write_web_config``), with the people of ``add_people`` added unless ``people``
    is false (a second app over the same state)."""
    from monitor.config.file import load_config
    from monitor.store.opening import open_store
    from monitor.web.app import create_app

    config = load_config(path or write_web_config(tmp_path), env={})
    with open_store(config):
        pass
    if people:
        add_people(Path(config.state_dir))
    return config, create_app(config, **{"wait_s": 0.5, **app})


def add_people(state_dir: Path) -> None:
    with Users.open(state_dir) as users:
        users.add(User(QP, "qp", "jr@example.org", (SITE,)))
        users.add(User(QP2, "qp", "mc@example.org", (OTHER,)))
        users.add(User(OFFICER, "officer", "officer@example.org", ()))


def signin_token(state_dir: Path, name: str) -> str:
    with Users.open(state_dir) as users:
        return users.issue_signin(name, round(time.time() * 1000))


def press_sign_in(client: Any, link: str, **form: str) -> Any:
    """What a phone does with a sign-in link: open its page, press "Sign in" (with
    "Remember this phone"). ``client``: a TestClient or an ``httpx.Client``; ``link``
    a path or a URL. The answer to the post (not followed)."""
    shown = client.get(link)
    assert shown.status_code == 200, shown.text
    check = re.search(r'name="signin_check" value="([^"]+)"', shown.text)
    assert check, shown.text[:500]
    return client.post(link, data={"remember": "on", "signin_check": check[1], **form},
                       follow_redirects=False)


def sign_in(client: Any, state_dir: Path, name: str) -> str:
    """Sign ``client`` (a TestClient) in as ``name``; the CSRF token of its session."""
    got = press_sign_in(client, f"/signin/{signin_token(state_dir, name)}")
    assert got.status_code == 303, got.text
    return csrf_of(client.get("/").text)


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf-token" content="([0-9a-f]+)"', html)
    assert found, html[:500]
    return found.group(1)


class WebProcess:
    """``stormwatch web --config FILE`` as a child process, its log in a file."""

    def __init__(self, config_path: Path, port: int, argv: list[str] | None = None) -> None:
        """``argv``: the command as a person would type it (default: this interpreter's
        ``-m monitor.cli web --config config_path``)."""
        import subprocess
        import sys

        from .daemonkit import ROOT
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = config_path.parent / "web.log"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            argv or [sys.executable, "-m", "monitor.cli", "web", "--config", str(config_path)],
            cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
        self._wait_up()

    def _wait_up(self) -> None:
        import httpx
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"stormwatch web exited: {self.log()}")
            try:
                httpx.get(self.url + "/static/app.css", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise AssertionError(f"stormwatch web did not answer: {self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, sig: int | None = None) -> int:
        """One stop signal (SIGTERM unless given; a second SIGINT would force the exit)."""
        import signal
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM if sig is None else sig)
        code = self.proc.wait(timeout=30)
        self._log.close()
        return code

"""Fixtures of the field app's tests: ``stack``, the whole stack a browser test drives."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import MakeMosquitto
from ..support.browser import Stack, need_chromium
from ..support.childproc import free_port
from ..support.daemonkit import DaemonProcess
from ..support.receivers import HttpReceiver, SmtpReceiver
from ..support.webkit import WebProcess, add_people, write_web_config


@pytest.fixture
def stack(tmp_path: Path, make_mosquitto: MakeMosquitto) -> Iterator[Stack]:
    """A broker, the daemon, the web app, and the alert and mail receivers, all started;
    the web app's log must hold no traceback when the test ends."""
    need_chromium()
    broker = make_mosquitto()
    port = free_port()
    with HttpReceiver() as http, SmtpReceiver() as smtp:
        notify = (
            "notify:\n  targets:\n"
            f"    - {{url: 'json://{http.base}', tags: [qp, officer]}}\n"
            f"    - url: 'mailto://127.0.0.1:{smtp.port}?mode=insecure&from=sw@example.org"
            "&to=jr@example.org'\n      tags: [signin]\n")
        cfg = write_web_config(tmp_path, broker.port, listen=f"127.0.0.1:{port}",
                               public=f"http://127.0.0.1:{port}", more=notify)
        daemon = DaemonProcess(cfg)
        daemon.start()
        add_people(tmp_path / "state")
        web = WebProcess(cfg, port)
        try:
            shots = tmp_path / "screenshots"
            shots.mkdir()
            yield Stack(cfg, tmp_path / "state", web, http, smtp, shots)
        finally:
            web.stop()
            daemon.close()
    assert "Traceback" not in web.log(), web.log()

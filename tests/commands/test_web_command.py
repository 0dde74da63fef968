"""``stormwatch web`` as a process: it serves, and a stop signal ends it with exit 0."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
import pytest

from monitor.config.file import load_config
from monitor.store.opening import open_store

from ..support.childproc import free_port
from ..support.webkit import (
    QP,
    SITE,
    WebProcess,
    add_people,
    press_sign_in,
    signin_token,
    write_web_config,
)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_web_serves_and_stops_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    port = free_port()
    # Served over plain http on loopback, as a test does: the cookies are not Secure.
    path = write_web_config(tmp_path, listen=f"127.0.0.1:{port}",
                            public=f"http://127.0.0.1:{port}")
    with open_store(load_config(path, env={})):
        pass
    add_people(tmp_path / "state")
    web = WebProcess(path, port)
    try:
        assert httpx.get(web.url + "/").status_code == 401
        token = signin_token(tmp_path / "state", QP)
        with httpx.Client(base_url=web.url) as client:
            assert press_sign_in(client, f"/signin/{token}").status_code == 303
            assert client.get(f"/sites/{SITE}/inspect").status_code == 200
    finally:
        code = web.stop(sig)
    assert code == 0, web.log()
    assert "Traceback" not in web.log()
    assert token not in web.log()  # no token in any log line

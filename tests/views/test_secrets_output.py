"""No command prints a secret: the broker password, the InfluxDB
token and a notification URL's credentials stay out of every output a user or a
log collector sees. The real commands as processes, on a real database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from monitor.config.file import load_config
from monitor.store.opening import open_store

from ..support.daemonkit import SITE, write_config

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "mqtt-pa55-Zq81"
TOKEN = "influx-t0ken-Xk02"
HOOK = "hook-s3cret-Lm37"


def test_check_config_status_logbook_and_report_print_no_secret(tmp_path: Path) -> None:
    (tmp_path / "mqtt.pw").write_text(PASSWORD + "\n")
    (tmp_path / "influx.token").write_text(TOKEN + "\n")
    sections = (f"influx: {{url: 'http://127.0.0.1:9', api: v2, org: o, bucket: b,"
                f" token_file: {tmp_path / 'influx.token'}}}\n"
                "notify:\n  targets:\n"
                "    - {url: 'json://stormwatch:${HOOK_TOKEN}@127.0.0.1:9/officer',"
                " tags: [officer]}\n")
    cfg = write_config(tmp_path, 1, sections=sections)
    text = cfg.read_text().replace(
        "broker: {", f"broker: {{username: stormwatch, password_file: {tmp_path / 'mqtt.pw'}, ")
    cfg.write_text(text)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg",
           "HOOK_TOKEN": HOOK}
    with open_store(load_config(cfg, env=env)):
        pass
    commands = [["check-config", str(cfg)], ["status", "--config", str(cfg)],
                ["status", "--config", str(cfg), "--json"],
                ["logbook", "--config", str(cfg), "--site", SITE],
                ["logbook", "anchor", "--config", str(cfg)],
                ["report", "--config", str(cfg), "--site", SITE, "--from", "2026-05-01",
                 "--to", "2026-05-02", "--out", str(tmp_path / "r.html")],
                # A failing send names the target, masked.
                ["notify-test", "--config", str(cfg)]]
    for args in commands:
        proc = subprocess.run([sys.executable, "-m", "monitor.cli", *args], capture_output=True,
                              text=True, cwd=ROOT, timeout=120, env={**os.environ, **env})
        shown = proc.stdout + proc.stderr
        assert shown, args
        for secret in (PASSWORD, TOKEN, HOOK):
            assert secret not in shown, (args, secret)
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert not any(secret in html for secret in (PASSWORD, TOKEN, HOOK))

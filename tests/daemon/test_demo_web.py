"""``stormwatch demo --inspect-yourself``: the printed links open the form, and the
inspection recorded there closes the demo's storm clock (on time: the clock
stood still while the demo waited)."""

from __future__ import annotations

import re
import subprocess
import sys
import threading

import httpx
import pytest

from ..support.daemonkit import ROOT
from ..support.webkit import csrf_of, press_sign_in

pytestmark = pytest.mark.integration


def test_the_demo_prints_a_link_whose_form_closes_the_storm_clock() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "monitor.cli", "demo", "--speed", "3600",
                             "--inspect-yourself"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    lines: list[str] = []
    waiting = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "the clock stands still" in line:
                waiting.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert waiting.wait(180), "".join(lines)
        text = "".join(lines)
        signin = re.search(r"sign in with (http://\S+/signin/\S+)", text)
        storm_links = re.findall(r"Inspection form: (http://\S+/a/\S+)", text)
        assert signin and storm_links, text
        with httpx.Client() as client:
            assert press_sign_in(client, signin.group(1)).status_code == 303
            forms = [client.get(link, follow_redirects=True) for link in storm_links]
            form = next(f for f in forms if "clock=storm-" in str(f.url))
            key = form.text.split('name="idempotency_key" value="')[1].split('"')[0]
            answer = client.post(str(form.url).split("?")[0], data={
                "csrf": csrf_of(form.text), "idempotency_key": key, "inspector": "J. Rivera",
                "kind": "storm", "certified": "on", "notes": "from the demo's form"})
        assert answer.status_code == 201, answer.text
        assert re.search(r"Storm of [A-Z][a-z]{2} \d+</strong>: storm inspection done on time",
                         answer.text), answer.text
        assert proc.wait(180) == 0, "".join(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    reader.join(10)
    text = "".join(lines)
    assert "storm inspection recorded on time" in text
    assert "by J. Rivera, CPESC" not in text  # the simulated inspector stayed home
    assert "Traceback" not in text

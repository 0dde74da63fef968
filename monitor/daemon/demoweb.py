"""The demo's field app: ``stormwatch web`` in the demo's process, on the demo's clock.

The demo configures ``web:`` (a key in its state directory, loopback only),
has its people (``demokept.py``) and prints a sign-in link, so a newcomer can
open the alert's link to the form in a browser and record the inspection that
closes the storm clock. The app runs under
uvicorn in a thread and takes the demo's clock (``create_app(clock=...)``): the
inspection is dated in simulated time, like everything the demo records.

With ``--inspect-yourself`` the simulated inspector stays home: when the storm
clock would have been inspected the demo's clock stops (nothing goes stale or
overdue while it stands) and the demo waits for the inspection from the form,
up to ``WAIT_FOR_YOU_S``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from ..store.users import Users
from .demokept import QP_NAME

#: Real seconds the demo waits for an inspection from the form (``--inspect-yourself``).
WAIT_FOR_YOU_S: Final = 15 * 60.0
SIGNIN_MINUTES: Final = 60


def web_settings(state_dir: Path, port: int) -> dict[str, Any]:
    """The demo's ``web:`` section, with its key written into the state directory
    (0600) and the photos kept there too."""
    key = state_dir / "web.key"
    if not key.exists():
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # never readable by others
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(32))
    return {"listen": f"127.0.0.1:{port}", "public_url": f"http://127.0.0.1:{port}",
            "secret_file": str(key), "photos_dir": str(state_dir / "photos")}


class DemoWeb:
    """The field app of the demo, in a thread."""

    def __init__(self, config: Any, clock: Callable[[], float]) -> None:
        import uvicorn

        from ..web.app import create_app

        self.config = config
        self._clock = clock
        host, _, port = config.web.listen.rpartition(":")
        self.url = config.web.public_url
        app = create_app(config, clock=lambda: round(clock() * 1000), wait_s=5.0)
        self.server = uvicorn.Server(uvicorn.Config(app, host=host, port=int(port),
                                                    access_log=False, log_level="error",
                                                    log_config=None))
        self.thread = threading.Thread(target=self.server.run, name="demo-web", daemon=True)

    def start(self) -> str:
        """Start serving; the sign-in link of the demo's qualified professional (one of
        the people ``demokept.add_people`` added), valid as the demo's clock runs."""
        with Users.open(Path(self.config.state_dir)) as users:
            token = users.issue_signin(QP_NAME, round(self._clock() * 1000),
                                       ttl_s=SIGNIN_MINUTES * 60 * 3600)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        return f"{self.url}/signin/{token}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def wait_for_you(clock: Any, recorded: Callable[[], bool], say: Callable[[str], None],
                 url: str) -> bool:
    """Stop the demo's clock until an inspection is recorded (from the form), at most
    ``WAIT_FOR_YOU_S``; then let time run on. Whether one was."""
    speed = clock.speed
    clock.freeze()
    say(f"stormwatch demo: the clock stands still until you record the inspection at {url}"
        f" (open the link in the alert above; up to {WAIT_FOR_YOU_S / 60:.0f} minutes)")
    deadline = time.monotonic() + WAIT_FOR_YOU_S
    while time.monotonic() < deadline and not recorded():
        time.sleep(0.5)
    clock.resume(speed)
    return recorded()

"""systemd's notify protocol (``Type=notify``, the watchdog): the daemon's other report
to its service manager, beside its log lines."""

from __future__ import annotations

import logging
import os
import socket
import time


class SdNotify:
    """systemd's notify protocol (``Type=notify``), a datagram to $NOTIFY_SOCKET: the
    daemon's other report to its service manager, beside its log lines."""

    def __init__(self) -> None:
        addr = os.environ.get("NOTIFY_SOCKET")
        self.addr = "\0" + addr[1:] if addr and addr.startswith("@") else addr
        usec = os.environ.get("WATCHDOG_USEC")
        self.watchdog_s = int(usec) / 1e6 / 2 if usec and usec.isdigit() else None
        self._last_watchdog = 0.0

    def send(self, state: str) -> None:
        if not self.addr:
            return
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
                s.connect(self.addr)
                s.sendall(state.encode())
        except OSError as exc:
            logging.getLogger("stormwatch.daemon").debug("sd_notify failed: %s", exc)

    def watchdog(self) -> None:
        if self.watchdog_s is None:
            return
        now = time.monotonic()
        if now - self._last_watchdog >= self.watchdog_s:
            self._last_watchdog = now
            self.send("WATCHDOG=1")

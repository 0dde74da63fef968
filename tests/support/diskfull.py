"""A state directory whose file system fills.

A small tmpfs mounted for the state directory (where the test may mount one), a filler
that takes its last byte, and distinct readings published until the daemon says the disk
is full.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from .daemonkit import Publisher, cli, reading_topic

#: The tmpfs's size: a few minutes of readings fill it.
SIZE = "16m"


@contextmanager
def small_tmpfs(directory: Path, size: str = SIZE) -> Iterator[Path]:
    """``directory`` (created) on a tmpfs of ``size``, unmounted at the end. Skips,
    saying it cannot mount, where mounting is impossible (not root, or a container
    without CAP_SYS_ADMIN)."""
    directory.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("cannot mount a tmpfs for the state directory: mounting needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs",
                           str(directory)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode})")
    try:
        yield directory
    finally:
        if subprocess.run(["umount", str(directory)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(directory)], capture_output=True)


def fill(directory: Path) -> Path:
    """Fill the file system of ``directory`` up to the last byte; the filler file."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for chunk in (1 << 20, 1 << 16, 1 << 12, 1 << 9, 1):
            block = b"\0" * chunk
            while True:
                try:
                    os.write(fd, block)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
    finally:
        os.close(fd)
    return filler


def status(cfg: Path) -> dict[str, Any]:
    """``stormwatch status --json`` of the daemon of ``cfg``."""
    out = cli("status", "--config", str(cfg), "--json")
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout)
    return result


class Readings:
    """Distinct turbidity readings, one a second of event time, for as long as asked."""

    def __init__(self, start_s: int) -> None:
        self.next_s = start_s
        self.sent: list[int] = []

    def send(self, pub: Publisher, n: int) -> None:
        batch = []
        for _ in range(n):
            batch.append((reading_topic("tb-up"), {"ts": self.next_s, "ntu": 4.0}))
            self.sent.append(self.next_s * 1000)
            self.next_s += 1
        pub.send_many(batch)

    def until_full(self, pub: Publisher, cfg: Path, timeout_s: float = 60) -> dict[str, Any]:
        """Publish small batches until ``status`` says the disk is full (the journal's
        write-ahead log may have room for a few commits after the file system is full)."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.send(pub, 20)
            now = status(cfg)
            if now["ingest"]["disk_full_since"] is not None:
                return now
            assert time.monotonic() < deadline, "the daemon never reported the disk full"

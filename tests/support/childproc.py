"""A server the tests run as a child process: what ``Mosquitto`` and ``Influxd`` share.

``ChildService`` owns the lifecycle: a working directory (a temp dir that
``close()`` removes, unless one is given), a log file the child writes to,
``start()`` on free ports (retried on new ports when one was taken meanwhile,
first start only), ``stop()`` with SIGTERM, ``kill()`` with SIGKILL, and the
registry behind ``stop_all()``, which runs at interpreter exit. A subclass
names itself, picks its ports, writes its configuration, and says when the
started child is ready.

With ``setpriv`` the child gets SIGKILL when the thread that started it dies
(PR_SET_PDEATHSIG), so even a SIGKILLed pytest leaves nothing behind. That ties
the child to the starting *thread*: start children from the main thread, as
fixtures do.
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import ClassVar, TypeVar

#: Lines of the log shown when a child fails to start or stop.
LOG_TAIL_LINES = 60

# Every child with a live process, for ``stop_all``.
_RUNNING: set[ChildService] = set()
_RUNNING_LOCK = threading.Lock()

_S = TypeVar("_S", bound="ChildService")


class ChildServiceError(RuntimeError):
    """A child did not start, or did not stop, as asked."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that nothing listens on right now (another process may take it later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class ChildService:
    """One server process in its own working directory; see the module docstring."""

    #: The program's name: the temp dir's prefix, ``<name>.log``, and in messages.
    name: ClassVar[str]
    #: What ``start()``, ``stop()`` and the properties raise.
    error: ClassVar[type[ChildServiceError]] = ChildServiceError
    #: What "ready" means, after "did not" in the message of a start that timed out.
    ready_means: ClassVar[str] = "become ready"
    stop_timeout_s: ClassVar[float] = 10.0
    poll_interval_s: ClassVar[float] = 0.05

    def __init__(self, workdir: str | Path | None, *, host: str, start_timeout_s: float,
                 executable: str) -> None:
        self._owns_workdir = workdir is None
        self.workdir = Path(tempfile.mkdtemp(prefix=f"{self.name}-") if workdir is None
                            else workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.host = host
        self.start_timeout_s = start_timeout_s
        self.executable = executable
        self.log_path = self.workdir / f"{self.name}.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self.returncode: int | None = None

    # ------------------------------------------------------------------ for subclasses

    @property
    def endpoint(self) -> str:
        """Where the child listens (``host:port``), for messages; ports may be None."""
        raise NotImplementedError

    def _has_ports(self) -> bool:
        """Whether the ports are set (given, or kept from an earlier start)."""
        raise NotImplementedError

    def _pick_ports(self) -> None:
        """Set the ports to free ones."""
        raise NotImplementedError

    def _prepare(self) -> list[str]:
        """Write what the child reads at start; its command line."""
        raise NotImplementedError

    def _ready(self, log_offset: int) -> bool:
        """Whether the started child is ready; its log of this start begins at ``log_offset``."""
        raise NotImplementedError

    # ------------------------------------------------------------------ state

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def log_text(self) -> str:
        """The child's whole log (every start of this instance), as text."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def _log_since(self, offset: int) -> str:
        with self.log_path.open("rb") as f:
            f.seek(offset)
            return f.read().decode("utf-8", errors="replace")

    # ------------------------------------------------------------------ lifecycle

    def start(self: _S) -> _S:
        """Start and wait until ready; raise with the log tail if not.

        On the first start without given ports, a port taken meanwhile by
        another process is retried on new ones; later starts keep the ports.
        """
        if self.running:
            raise self.error(f"already running (pid {self.pid}) on {self.endpoint}")
        keep = self._has_ports()
        attempts = 1 if keep else 3
        for attempt in range(attempts):
            if not keep:
                self._pick_ports()
            try:
                self._spawn_and_wait()
                return self
            except ChildServiceError:
                if (attempt + 1 < attempts
                        and "address already in use" in self.log_tail(10).lower()):
                    continue
                raise
        raise AssertionError("unreachable")

    def _spawn_and_wait(self) -> None:
        argv = self._prepare()
        if threading.current_thread() is threading.main_thread():
            setpriv = shutil.which("setpriv")
            if setpriv is not None:
                argv = [setpriv, "--pdeathsig", "KILL", "--", *argv]
        with self.log_path.open("ab") as log:
            log.write(f"---- tests: starting {self.name} on {self.endpoint}\n".encode())
            log.flush()
            offset = log.tell()
            self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                          stderr=subprocess.STDOUT, cwd=self.workdir)
        self.returncode = None
        with _RUNNING_LOCK:
            _RUNNING.add(self)
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self._reap()
                raise self.error(f"{self.name} exited with {self.returncode} on start "
                                 f"({self.endpoint}); log:\n{self.log_tail()}")
            if self._ready(offset):
                return
            time.sleep(self.poll_interval_s)
        self.kill()
        raise self.error(f"{self.name} did not {self.ready_means} on {self.endpoint} within "
                         f"{self.start_timeout_s:g} s; log:\n{self.log_tail()}")

    def stop(self, timeout_s: float | None = None) -> None:
        """SIGTERM and wait (``stop_timeout_s`` by default); a no-op if stopped.

        A child still there at the timeout is killed, and the error raised.
        """
        proc = self._proc
        if proc is None:
            return
        if timeout_s is None:
            timeout_s = self.stop_timeout_s
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                self._reap()
                raise self.error(f"{self.name} did not exit within {timeout_s:g} s of SIGTERM; "
                                 f"killed. Log:\n{self.log_tail()}") from None
        self._reap()

    def kill(self) -> None:
        """SIGKILL, like a power cut."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        self._reap()

    def restart(self: _S, timeout_s: float | None = None) -> _S:
        """Stop cleanly and start again on the same ports with the same data."""
        self.stop(timeout_s)
        return self.start()

    def _reap(self) -> None:
        if self._proc is not None:
            self.returncode = self._proc.wait()
        self._proc = None
        with _RUNNING_LOCK:
            _RUNNING.discard(self)

    def close(self) -> None:
        """Stop, and remove the working directory if this instance made it."""
        try:
            self.stop()
        finally:
            if self._owns_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self: _S) -> _S:
        return self if self.running else self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        state = f"pid {self.pid}" if self.running else "stopped"
        return f"<{type(self).__name__} {self.endpoint} {state} in {self.workdir}>"


def stop_all(kind: type[ChildService] = ChildService) -> None:
    """Stop every child of ``kind`` still running (a fixture normally did it)."""
    with _RUNNING_LOCK:
        children = [c for c in _RUNNING if isinstance(c, kind)]
    for child in children:
        with contextlib.suppress(ChildServiceError):  # then it was killed: nothing is left
            child.stop(timeout_s=5.0)


atexit.register(stop_all)

"""Real alert receivers for the notification tests (monitor/README.md, "Development"): SMTP and
HTTP, on free ports.

``SmtpReceiver`` is an aiosmtpd server on 127.0.0.1 that keeps every message
it accepts. It can require a login (AUTH over plain SMTP, as Apprise's
``mailto://...?mode=insecure`` speaks it) and can be stopped and started again
on the same port, which is how a test takes the mail server down for the
first minutes of a storm.

``HttpReceiver`` is an ``http.server`` on 127.0.0.1 that keeps every POST
(path, headers, JSON body), for Apprise's ``json://``. ``fail_next`` makes it
answer 500 to the next requests; ``stop``/``start`` take it off the port.

Both wait for what a test expects with ``wait_for(predicate, timeout_s)``.
"""

from __future__ import annotations

import base64
import contextlib
import email
import json
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session

T = TypeVar("T")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Inbox:
    """Received items behind a condition, for waiting in tests."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._items: list[Any] = []

    def add(self, item: Any) -> None:
        with self._cond:
            self._items.append(item)
            self._cond.notify_all()

    def items(self) -> list[Any]:
        with self._cond:
            return list(self._items)

    def wait_for(self, predicate: Callable[[list[Any]], bool], timeout_s: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: predicate(list(self._items)), timeout_s)


# --------------------------------------------------------------------------- SMTP


@dataclass(frozen=True)
class Mail:
    """One accepted message: the SMTP envelope and the parsed message."""

    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage
    login: str | None
    received_s: float

    @property
    def subject(self) -> str:
        return str(self.message["Subject"])

    def text(self) -> str:
        """The text/plain part (Apprise derives it from the HTML part of an HTML mail)."""
        part = self.message.get_body(preferencelist=("plain",))
        assert part is not None, "no text/plain part"
        return str(part.get_content())

    def html(self) -> str | None:
        part = self.message.get_body(preferencelist=("html",))
        return None if part is None else str(part.get_content())


class _SmtpHandler:
    def __init__(self, inbox: _Inbox) -> None:
        self.inbox = inbox

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        raw = envelope.content if isinstance(envelope.content, bytes) else \
            str(envelope.content).encode()
        message = email.message_from_bytes(raw, policy=policy.default)
        assert isinstance(message, EmailMessage)
        login = session.auth_data.login.decode() if isinstance(session.auth_data,
                                                               LoginPassword) else None
        self.inbox.add(Mail(str(envelope.mail_from), list(envelope.rcpt_tos), message, login,
                            time.time()))
        return "250 Message accepted for delivery"


class SmtpReceiver:
    """aiosmtpd on a fixed port of 127.0.0.1; ``login``/``password`` make AUTH mandatory."""

    def __init__(self, port: int | None = None, *, login: str | None = None,
                 password: str | None = None) -> None:
        self.port = port if port is not None else free_port()
        self.login, self.password = login, password
        self.inbox = _Inbox()
        self.failed_logins = 0
        self._controller: Controller | None = None

    def _authenticate(self, server: SMTP, session: Session, envelope: Envelope, mechanism: str,
                      auth_data: Any) -> AuthResult:
        ok = (isinstance(auth_data, LoginPassword) and self.login is not None
              and auth_data.login == self.login.encode()
              and auth_data.password == (self.password or "").encode())
        if not ok:
            self.failed_logins += 1
        # handled=False: aiosmtpd answers 535 itself (its default assumes we did).
        return AuthResult(success=ok, handled=False, auth_data=auth_data if ok else None)

    def start(self) -> SmtpReceiver:
        if self._controller is not None:
            return self
        auth = self.login is not None
        controller = Controller(
            _SmtpHandler(self.inbox), hostname="127.0.0.1", port=self.port,
            authenticator=self._authenticate if auth else None,
            auth_required=auth, auth_require_tls=False, ready_timeout=10)
        deadline = time.monotonic() + 10
        while True:
            try:
                controller.start()
                break
            except Exception:  # the port may linger for a moment after a stop
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self._controller = controller
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    @property
    def running(self) -> bool:
        return self._controller is not None

    @property
    def mails(self) -> list[Mail]:
        return self.inbox.items()

    def wait_for(self, predicate: Callable[[list[Mail]], bool], timeout_s: float = 30) -> bool:
        return self.inbox.wait_for(predicate, timeout_s)

    def __enter__(self) -> SmtpReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --------------------------------------------------------------------------- HTTP


@dataclass(frozen=True)
class Post:
    """One POST: the path, its headers, and its body as JSON (None if it is not JSON)."""

    path: str
    headers: dict[str, str]
    body: Any
    received_s: float

    def basic_auth(self) -> tuple[str, str] | None:
        value = self.headers.get("Authorization", "")
        if not value.startswith("Basic "):
            return None
        user, _, password = base64.b64decode(value[6:]).decode().partition(":")
        return user, password


class HttpReceiver:
    """A JSON-accepting HTTP server on 127.0.0.1 (Apprise ``json://`` posts here).

    Only POSTs under a random path of its own (``base`` = ``127.0.0.1:PORT/TOKEN``)
    count: a stray POST from another test that reused the port (seen once) goes to
    ``strays`` with a 404. ``Post.path`` is the path after the token.
    """

    def __init__(self, port: int | None = None) -> None:
        self.port = port if port is not None else free_port()
        self.token = secrets.token_hex(8)
        self.inbox = _Inbox()
        self.strays: list[str] = []
        self.fail_next = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                prefix = f"/{receiver.token}"
                if not (self.path == prefix or self.path.startswith(prefix + "/")
                        or self.path.startswith(prefix + "?")):
                    receiver.strays.append(self.path)
                    self.send_response(404)
                    self.end_headers()
                    return
                with receiver._lock:
                    fail = receiver.fail_next > 0
                    if fail:
                        receiver.fail_next -= 1
                if fail:
                    self.send_response(500)
                    self.end_headers()
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                receiver.inbox.add(Post(self.path[len(prefix):] or "/",
                                        dict(self.headers.items()), body, time.time()))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def start(self) -> HttpReceiver:
        if self._server is not None:
            return self
        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name=f"http-receiver-{self.port}")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    @property
    def base(self) -> str:
        """``127.0.0.1:PORT/TOKEN``: what a ``json://`` URL for this receiver starts with."""
        return f"127.0.0.1:{self.port}/{self.token}"

    @property
    def posts(self) -> list[Post]:
        return self.inbox.items()

    def wait_for(self, predicate: Callable[[list[Post]], bool], timeout_s: float = 30) -> bool:
        return self.inbox.wait_for(predicate, timeout_s)

    def __enter__(self) -> HttpReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.stop()


def closed_port() -> int:
    """A port nothing listens on (for a target that must fail)."""
    return free_port()

"""Real servers on loopback for the web, search and notify tests: an HTTP server with scripted routes and
an SMTP server (aiosmtpd) in plain, STARTTLS and implicit-TLS flavours."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Reply = tuple[int, dict[str, str], bytes]
Route = Callable[[Seen], Reply]


@dataclass
class HttpServer:
    """A threaded HTTP/1.1 server on 127.0.0.1 whose routes tests set; every request is recorded."""

    routes: dict[str, Route] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    host: str = "127.0.0.1"
    port: int = 0
    _server: ThreadingHTTPServer | None = None

    def url(self, path: str = "/", host: str | None = None) -> str:
        return f"http://{host or self.host}:{self.port}{path}"

    def route(self, path: str, status: int = 200, body: bytes | str = b"", **headers: str) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.routes[path] = lambda seen: (status, {k.replace("_", "-"): v for k, v in headers.items()}, data)

    def route_json(self, path: str, payload: Any, status: int = 200) -> None:
        self.route(path, status, json.dumps(payload), content_type="application/json")

    def start(self) -> HttpServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                seen = Seen(self.command, parts.path, parse_qs(parts.query), dict(self.headers.items()), body)
                owner.seen.append(seen)
                route = owner.routes.get(parts.path)
                status, headers, data = route(seen) if route else (404, {}, b"not found")
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if "Content-Length" not in headers and "Transfer-Encoding" not in headers:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = _QuietServer((self.host, 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


class _QuietServer(ThreadingHTTPServer):
    """A client that stops reading (a capped fetch) resets the connection; that is expected, not news."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


# Ports, safe under `pytest -n 2`. Picking a free port and closing it before a server binds it is a race with
# every other process on the machine (the other xdist worker included). So: a server that takes a socket gets one
# bound to port 0 (`bound_socket`); a server that binds only the port it is told (redis-server, BaseX,
# PostgreSQL) is started through `on_a_free_port`, which tries a fresh port when the server's own output says
# the port was taken; a test that needs a port nobody answers on holds one bound and never listening
# (`refusing_port`).


def bound_socket(host: str = "127.0.0.1") -> socket.socket:
    """A TCP socket bound to a port the kernel chose, held: hand it to the server (uvicorn, asyncio)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((host, 0))
    except OSError:
        sock.close()
        raise
    return sock


class PortTaken(Exception):
    """A server reported, in its own words, that its port was already in use when it tried to bind it."""


T = TypeVar("T")


def on_a_free_port(start: Callable[[int], T], *, attempts: int = 10, first: int | None = None) -> T:
    """``start(port)`` on a port free a moment ago; again on another while it raises ``PortTaken``.

    For servers that cannot bind port 0 themselves: another process may take the port between the pick and the
    server's bind, and the server says so and exits (the signal is its message, never a timeout). ``first`` is
    tried before any fresh port (tests of this very path hand it a port they hold).
    """
    taken: list[int] = []
    for attempt in range(attempts):
        if attempt == 0 and first is not None:
            port = first
        else:
            with bound_socket() as probe:
                port = int(probe.getsockname()[1])
        try:
            return start(port)
        except PortTaken:
            taken.append(port)
    raise AssertionError(f"every port tried was taken before the server could bind it: {taken}")


@contextmanager
def refusing_port() -> Iterator[int]:
    """A loopback port that refuses connections for the block: bound here and never listening, so nothing can
    listen on it meanwhile (a port picked and closed could be another worker's server a moment later)."""
    with bound_socket() as sock:
        yield int(sock.getsockname()[1])


@dataclass
class Mailbox:
    """What an aiosmtpd server received: envelopes plus the parsed messages."""

    envelopes: list[Any] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.envelopes.append(envelope)
        return "250 Message accepted for delivery"

    def messages(self) -> list[EmailMessage]:
        return [message_from_bytes(e.content.replace(b"\r\n", b"\n"), policy=policy.default) for e in self.envelopes]  # type: ignore[misc]


@dataclass
class SmtpServer:
    mailbox: Mailbox
    port: int
    controller: Any
    ca_file: str | None = None

    def stop(self) -> None:
        self.controller.stop()


def start_smtp(
    mode: str, *, tls: ssl.SSLContext | None = None, ca_file: str | None = None, users: dict[str, str] | None = None
) -> SmtpServer:
    """An aiosmtpd server on 127.0.0.1: mode 'plain', 'starttls' (required) or 'tls' (implicit)."""
    from aiosmtpd.smtp import AuthResult

    mailbox = Mailbox()
    sock = bound_socket()
    options: dict[str, Any] = {}
    if users is not None:

        def authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
            ok = users.get(data.login.decode()) == data.password.decode()
            return AuthResult(success=ok, handled=False)  # handled=False: aiosmtpd sends the 535 itself

        # Implicit TLS is TLS from the first byte, but aiosmtpd only counts STARTTLS as "TLS" for AUTH.
        options.update(authenticator=authenticate, auth_require_tls=mode == "starttls")
    if mode == "starttls":
        options.update(tls_context=tls, require_starttls=True)
    if mode == "tls":
        options.update(ssl_context=tls, server_hostname="127.0.0.1")
    controller = _controller_on(sock)(mailbox, hostname="127.0.0.1", port=sock.getsockname()[1], **options)
    controller.start()
    return SmtpServer(mailbox, controller.port, controller, ca_file)


def _controller_on(sock: socket.socket) -> Any:
    """aiosmtpd's Controller serving on a socket bound already (it binds host and port itself otherwise)."""
    from aiosmtpd.controller import Controller

    class BoundController(Controller):  # type: ignore[misc]
        def _create_server(self) -> Any:
            return self.loop.create_server(self._factory_invoker, sock=sock, ssl=self.ssl_context)

    return BoundController

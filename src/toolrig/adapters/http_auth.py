"""Who may use toolrig's local HTTP endpoints: a bearer token by default, Host and Origin always.

Trust model: any process of any user on the machine can connect to a loopback port, and a web page the user
visits can send requests to one (a DNS-rebinding name even makes them look same-origin). So every request must
name an allowed Host, an allowed Origin when a browser sends one, and carry the token, which lives 0600 in the
user's toolrig home where only the user (and root) can read it. Shared by every HTTP server toolrig runs.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import os
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from toolrig.sandbox.paths import toolrig_home
from toolrig.sandbox.statedir import StatePath

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

TOKEN_DIR = "tokens"  # noqa: S105 - a directory name
MIN_TOKEN_CHARS = 16
TOKEN_BYTES = 32  # secrets.token_urlsafe: 43 characters, 256 bits
UNAUTHORIZED = -32001  # the JSON-RPC code MCP servers commonly send with a 401
REFUSED = -32600


class TokenError(Exception):
    """A token cannot be used as given (too short, unprintable, a symlink in the way); the message says why."""


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the endpoint on this machine (``localhost`` counts; names otherwise not)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_header(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def allowed_hosts(host: str, port: int, extra: Iterable[str] = ()) -> list[str]:
    """Host header values a request may carry: the loopback names on loopback, else the bound address."""
    names = ["127.0.0.1", "localhost", "::1"] if is_loopback(host) else [host]
    return [*(host_header(name, port) for name in names), *extra]


def allowed_origins(hosts: Iterable[str], extra: Iterable[str] = ()) -> list[str]:
    """The browser origins of pages served from those hosts, plus any the user named."""
    hosts = list(hosts)
    return [*(f"http://{h}" for h in hosts), *(f"https://{h}" for h in hosts), *extra]


def check_token(token: str) -> str:
    """An explicit token, refused when a header cannot carry it or it is short enough to guess."""
    if not token.isascii() or not token.isprintable() or any(c.isspace() for c in token):
        raise TokenError("a bearer token must be printable ASCII without spaces")
    if len(token) < MIN_TOKEN_CHARS:
        raise TokenError(f"a bearer token must have at least {MIN_TOKEN_CHARS} characters (this one has {len(token)})")
    return token


def token_file(name: str) -> Path:
    """Where the token of the server ``name`` is kept: ``<toolrig home>/tokens/<name>.token``."""
    return toolrig_home() / TOKEN_DIR / f"{name}.token"


@dataclass(frozen=True, slots=True)
class StoredToken:
    """The token read from (or just written to) ``path``; ``notice`` says why a new one replaced the old."""

    value: str
    path: Path
    created: bool
    notice: str | None = None


def stored_token(name: str, *, rotate: bool = False) -> StoredToken:
    """The server's token: the one kept from an earlier start, else a new one, kept 0600 for the next.

    A kept token that others could read (wider mode, another owner) or that is not a token is replaced, and
    ``notice`` says so. Two servers starting at once agree: the first to link its file in wins, the other reads it.
    """
    path = token_file(name)
    file = f"{name}.token"
    state = StatePath.of(path.parent.parent)
    with state.directory(TOKEN_DIR) as fd:
        os.fchmod(fd, 0o700)
        notice = None
        if not rotate:
            kept, notice = _read_kept(fd, file, path)
            if kept is not None:
                return StoredToken(kept, path, created=False)
        token = secrets.token_urlsafe(TOKEN_BYTES)
        _write(fd, file, token, replace=rotate or notice is not None)
        if not rotate and notice is None:  # another start may have linked its token first: use that one
            kept, _ = _read_kept(fd, file, path)
            if kept is not None and kept != token:
                return StoredToken(kept, path, created=False)
        return StoredToken(token, path, created=True, notice=notice)


def _read_kept(fd: int, file: str, path: Path) -> tuple[str | None, str | None]:
    try:
        handle = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        raise TokenError(f"the token file {path} cannot be read ({exc.strerror}); remove it") from None
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            raise TokenError(f"the token file {path} is not a regular file; remove it")
        if stat.S_IMODE(info.st_mode) != 0o600 or info.st_uid != os.geteuid():
            return None, f"the token in {path} was readable by others (mode {stat.S_IMODE(info.st_mode):o}): replaced"
        text = os.read(handle, 4096).decode("ascii", "replace").strip()
    finally:
        os.close(handle)
    try:
        return check_token(text), None
    except TokenError:
        return None, f"the token file {path} held no usable token: replaced"


def _write(fd: int, file: str, token: str, *, replace: bool) -> None:
    """A new file made 0600 before the secret goes in, then linked (first wins) or renamed (replaces) into place."""
    staged = f".{file}.{secrets.token_hex(6)}.tmp"
    handle = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd)
    try:
        os.fchmod(handle, 0o600)  # whatever the umask
        os.write(handle, f"{token}\n".encode())
        os.fsync(handle)
    finally:
        os.close(handle)
    try:
        if replace:
            os.replace(staged, file, src_dir_fd=fd, dst_dir_fd=fd)
        else:
            with contextlib.suppress(FileExistsError):
                os.link(staged, file, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staged, dir_fd=fd)


@dataclass(frozen=True, slots=True)
class TokenChoice:
    """The token a server starts with (None: opted out) and where it came from, for the start-up lines."""

    value: str | None
    source: Literal["env", "file", "none"]
    stored: StoredToken | None = None


def choose_token(name: str, *, env_var: str, no_token: bool = False, rotate: bool = False) -> TokenChoice:
    """The environment variable's token when set, else the stored one; ``no_token`` opts out on purpose."""
    given = os.environ.get(env_var) or None
    if given is not None and no_token:
        raise TokenError(f"--no-token was given while {env_var} holds a token: drop one of them")
    if given is not None and rotate:
        raise TokenError(f"the token comes from {env_var}: change it there, not with --rotate-token")
    if no_token:
        return TokenChoice(None, "none")
    if given is not None:
        return TokenChoice(check_token(given), "env")
    stored = stored_token(name, rotate=rotate)
    return TokenChoice(stored.value, "file", stored)


def client_config(url: str, token: str | None, server: str = "toolrig") -> dict[str, Any]:
    """The ``mcpServers`` entry an MCP client (Claude Code's ``.mcp.json``, Cursor's ``mcp.json``) takes."""
    entry: dict[str, Any] = {"type": "http", "url": url}
    if token is not None:
        entry["headers"] = {"Authorization": f"Bearer {token}"}
    return {"mcpServers": {server: entry}}


def refusal_body(code: int, message: str) -> bytes:
    """A JSON-RPC error without an id, the shape the MCP spec allows for a refused HTTP request."""
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()


class HttpGuard:
    """ASGI middleware: Host, then Origin, then the bearer token, for HTTP requests and websocket handshakes."""

    def __init__(self, app: ASGIApp, *, hosts: Iterable[str], origins: Iterable[str], token: str | None) -> None:
        self.app = app
        self.hosts = {h.lower() for h in hosts}
        self.origins = {o.lower() for o in origins}
        self._token = token.encode() if token else None

    def refusal(self, headers: dict[str, bytes]) -> tuple[int, int, str, list[tuple[bytes, bytes]]] | None:
        """Why a request with these (lower-cased) headers is refused: status, JSON-RPC code, message, headers."""
        host = headers.get("host", b"").decode("latin-1").lower()
        origin = headers.get("origin")
        if host not in self.hosts:
            return 421, REFUSED, "The Host header names no address this server answers to.", []
        if origin is not None and origin.decode("latin-1").lower() not in self.origins:
            return 403, REFUSED, "Requests from this Origin are not allowed.", []
        if self._token is None:
            return None
        scheme, _, presented = headers.get("authorization", b"").partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(presented.strip(), self._token):
            return None
        challenge = b'Bearer realm="toolrig"' + (b', error="invalid_token"' if presented else b"")
        message = "A valid bearer token is required (Authorization: Bearer <token>): see the server's start-up lines."
        return 401, UNAUTHORIZED, message, [(b"www-authenticate", challenge)]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers: dict[str, bytes] = {}
        for key, value in scope["headers"]:
            headers.setdefault(key.decode("latin-1").lower(), value)  # the first of a repeated header counts
        refused = self.refusal(headers)
        if refused is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # before accept: the handshake gets a 403
        else:
            status, code, message, extra = refused
            body = refusal_body(code, message)
            start = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra]
            await send({"type": "http.response.start", "status": status, "headers": start})
            await send({"type": "http.response.body", "body": body})


def guard(
    app: ASGIApp,
    *,
    host: str,
    port: int,
    token: str | None,
    extra_hosts: Iterable[str] = (),
    extra_origins: Iterable[str] = (),
) -> HttpGuard:
    """``app`` behind the guard, answering to the bound address (every loopback name on loopback).

    Refuses a server bound beyond loopback without a token: there every machine that can reach it could use it.
    """
    if token is None and not is_loopback(host):
        raise TokenError(f"an HTTP endpoint bound to {host}, beyond loopback, needs a bearer token")
    hosts = allowed_hosts(host, port, extra_hosts)
    return HttpGuard(app, hosts=hosts, origins=allowed_origins(hosts, extra_origins), token=token)

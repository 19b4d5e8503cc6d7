"""The egress proxy: the only way out of a confined command's network, decided by the guard fetch_url uses.

Trust model: the command is hostile, and so are its requests and the DNS answers for them. Each destination
(an HTTP ``CONNECT host:port``, or an absolute ``http://`` URL) passes ``toolrig.sandbox.network`` with the
*caller's* policy, resolved once; the proxy then connects to an address it checked (no rebinding window).
Loopback, private, link-local and metadata addresses and hosts outside ``allowed_domains`` are refused with
a 403 whose body names the rule and the setting that opens it; each refusal is also recorded for the caller.
Every cost a client can cause is capped: connections at once and per second, head size and headers, time to
send a head, time to connect, idle time, name-lookup threads (``EgressLimits``).

SOCKS5 (CONNECT, no authentication) is spoken on the same sockets, told apart by its first byte, for tools
that read ``ALL_PROXY``; a refusal there is the protocol's "not allowed by ruleset", recorded the same way.

Interface (what the sandbox calls; one proxy per command, nothing kept after it)::

    async with open_egress(settings.policy(), resolver=None, settings="tool_config.run_command") as egress:
        egress.directory      # a private 0700 directory: bind-mount it into the command's view
        egress.socket_path    # the unix socket in it, where the bridge (egress_bridge.py) forwards to
        egress.adopt(sock)    # or serve a listening TCP socket made inside the command's namespace
        ... run the command with egress_bridge.proxy_env(port) in its environment ...
    egress.refusals           # what the guard refused, each with .note() for the command's result

A client may also hand listening sockets in through the unix socket (``egress_bridge.hand_off``): the proxy
then accepts the command's TCP connections itself, and no forwarding process stays in the namespace.
``toolrig.sandbox.command_net`` puts it together for a launch (a session's namespace, a private one, none).
"""

from __future__ import annotations

import base64
import contextlib
import hmac
import ipaddress
import os
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.abc

from toolrig.sandbox import egress_socks as socks
from toolrig.sandbox.egress_bridge import HANDOFF
from toolrig.sandbox.egress_http import CONNECTED, BadRequest, ProxyRequest, answer, origin_head, parse_head, read_head
from toolrig.sandbox.http import resolve
from toolrig.sandbox.network import NetworkPolicy, ParsedUrl, Resolver, UrlDecision, check_addresses, check_host
from toolrig.sandbox.network import parse_url as parse_guarded_url
from toolrig.sandbox.unixstream import UnixStream, listen
from toolrig.sandbox.unixstream import accept as accept_unix

SOCKET_NAME = "egress.sock"
_CHUNK = 64 * 1024
_T = TypeVar("_T")
_STREAM_GONE = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


@dataclass(frozen=True, slots=True)
class EgressLimits:
    """What one command may cost the proxy: at most ``max_connections`` x (two 64 KiB chunks + one head).

    CPU follows the rate of new connections (``connections_per_second``, a burst of as many), and name lookups
    run in at most ``max_lookups`` threads of the proxy's own, so a command cannot take the worker threads
    toolrig's other tools share.
    """

    max_connections: int = 32
    connections_per_second: float = 200.0
    max_lookups: int = 4
    max_head_bytes: int = 16 * 1024
    max_headers: int = 100
    head_seconds: float = 10.0
    connect_seconds: float = 10.0
    idle_seconds: float = 300.0
    max_listeners: int = 4
    max_refusals: int = 20


@dataclass(frozen=True, slots=True)
class Refusal:
    """One destination the guard refused: what was asked, the rule that refused it, the setting that opens it."""

    target: str
    reason: str
    hint: str

    def note(self) -> str:
        return f"network to {self.target} refused by the guard: {self.reason}. {self.hint}"


def hint_for(reason: str, settings: str) -> str:
    """Which setting would open a refused destination, in words a model can pass on to the user."""
    if "cannot resolve" in reason or "did not resolve" in reason or "in time" in reason:
        return "The name does not resolve; check its spelling."
    if "allowlist" in reason:
        return f"To reach it, ask the user to add the host to {settings}.allowed_domains."
    if "blocklist" in reason:
        return f"The host is in {settings}.blocked_domains; ask the user."
    if "loopback" in reason:
        return f"To reach loopback, ask the user to set {settings}.allow_loopback: true."
    if "address" in reason:
        return f"To reach it, ask the user to add its network (CIDR) to {settings}.allow_networks."
    return "Use an http(s) host the policy allows."


@dataclass
class Egress:
    """One command's proxy, alive inside ``open_egress``; ``refusals`` is read once the command ended."""

    policy: NetworkPolicy
    resolver: Resolver | None
    limits: EgressLimits
    settings: str
    _slots: anyio.Semaphore = field(repr=False)
    _lookups: anyio.CapacityLimiter = field(repr=False)
    directory: str = ""
    socket_path: str = ""
    refusals: list[Refusal] = field(default_factory=list)
    refused: int = 0  # every refusal, also those past ``limits.max_refusals``
    credential: str | None = None  # required of every client (``Proxy-Authorization``, SOCKS5 user/password)
    _group: anyio.abc.TaskGroup | None = field(default=None, repr=False)
    _listeners: int = 0
    _tokens: float = 0.0
    _filled_at: float = 0.0

    def adopt(self, listener: socket.socket) -> None:
        """Serve a listening TCP socket (made inside the command's namespace): its clients reach the guard."""
        _check_listener(listener)
        if self._listeners >= self.limits.max_listeners:
            raise ValueError(f"this command already has {self.limits.max_listeners} listeners")
        self._listeners += 1
        listener.setblocking(False)
        self._spawn(self._serve_socket, listener)

    def _refuse(self, target: str, decision: UrlDecision) -> Refusal:
        # A malformed target (and the reason quoting it) can be 8 KiB: the note is for a model to read.
        reason = decision.reason if len(decision.reason) <= 300 else decision.reason[:300] + "..."
        target = target if len(target) <= 200 else target[:200] + "..."
        refusal = Refusal(target, reason, hint_for(decision.reason, self.settings))
        self.refused += 1
        if len(self.refusals) < self.limits.max_refusals and refusal not in self.refusals:
            self.refusals.append(refusal)
        return refusal

    async def _serve_socket(self, sock: socket.socket) -> None:
        listener = await anyio.abc.SocketListener.from_socket(sock)
        async with listener:
            await self._serve(listener.accept)

    async def _serve(self, accept: Callable[[], Awaitable[anyio.abc.ByteStream]]) -> None:
        while True:
            await self._slots.acquire()  # past the cap, clients wait in the kernel's backlog, not here
            await self._pace()
            try:
                stream = await accept()
            except (anyio.BrokenResourceError, OSError):
                self._slots.release()
                await anyio.sleep(0.05)  # out of descriptors: let connections end rather than spin
                continue
            self._spawn(self._connection, stream)

    def _spawn(self, func: Callable[[_T], Coroutine[Any, Any, None]], arg: _T) -> None:
        if self._group is None:
            raise RuntimeError("the egress proxy is closed")
        self._group.start_soon(func, arg)

    async def _pace(self) -> None:
        """A token bucket over new connections: a command opening them in a loop waits, toolrig does not spin."""
        rate = self.limits.connections_per_second
        now = anyio.current_time()
        self._tokens = min(max(rate, 1.0), self._tokens + (now - self._filled_at) * rate)
        self._filled_at = now
        if self._tokens < 1:
            await anyio.sleep((1 - self._tokens) / rate)
            self._tokens, self._filled_at = 1.0, anyio.current_time()
        self._tokens -= 1

    async def _connection(self, stream: anyio.abc.ByteStream) -> None:
        try:
            async with stream:
                await self._handle(stream)
        except _STREAM_GONE:
            pass
        finally:
            self._slots.release()

    async def _handle(self, stream: anyio.abc.ByteStream) -> None:
        first = await self._first_bytes(stream)
        if first is None:
            return
        if first[:1] == bytes((socks.VERSION,)):
            await self._socks(stream, first)
            return
        try:
            with anyio.fail_after(self.limits.head_seconds):
                read = await read_head(stream, first, self.limits.max_head_bytes)
            if read is None:
                return
            head, rest = read
            request = parse_head(head, self.limits.max_headers)
        except BadRequest as exc:
            await _answer(stream, answer(exc.status, f"toolrig egress proxy: {exc}"))
            return
        except TimeoutError:
            await _answer(stream, answer(408, "toolrig egress proxy: the request head did not arrive in time"))
            return
        if self.credential is not None and not proxy_authorized(request.header("proxy-authorization"), self.credential):
            # Another command of the session found this port: its own proxy (and policy) is elsewhere. Not a
            # refusal of this command's, so not recorded in its notes.
            await _answer(stream, answer(407, "toolrig egress proxy: this proxy serves another command"))
            return
        await self._forward(stream, request, rest)

    async def _first_bytes(self, stream: anyio.abc.ByteStream) -> bytes | None:
        """The first chunk; on the unix socket it may carry listening sockets (a hand-off), taken here."""
        with anyio.move_on_after(self.limits.head_seconds):
            if not isinstance(stream, UnixStream):
                try:
                    return await stream.receive(self.limits.max_head_bytes)
                except anyio.EndOfStream:
                    return None
            data, fds = await stream.receive_fds(len(HANDOFF) + 64, 4)
            if not fds or not data.startswith(HANDOFF):
                for fd in fds:
                    os.close(fd)
                return data
            await stream.send(b"OK\n" if self._adopt_fds(fds) else b"NO\n")
        return None

    def _adopt_fds(self, fds: list[int]) -> bool:
        adopted = True
        for fd in fds:
            try:
                sock = socket.socket(fileno=fd)
            except OSError:
                os.close(fd)
                adopted = False
                continue
            try:
                self.adopt(sock)
            except (ValueError, OSError):
                sock.close()
                adopted = False
        return adopted

    async def _forward(self, stream: anyio.abc.ByteStream, request: ProxyRequest, rest: bytes) -> None:
        if request.method == "CONNECT":
            target = _connect_url(request.target)
            if target is None:
                await _answer(stream, answer(400, "toolrig egress proxy: CONNECT needs host:port"))
                return
        elif request.target.lower().startswith("http://"):
            target = request.target
        else:
            text = "toolrig egress proxy: send an absolute http:// URL, or CONNECT host:port for https and others"
            await _answer(stream, answer(405 if request.target.startswith("/") else 400, text))
            return
        parsed, decision = await self._decide(target)
        if parsed is None or not decision.allowed:
            shown = request.target if parsed is None else f"{parsed.host}:{parsed.port}"
            refusal = self._refuse(shown, decision)
            await _answer(stream, answer(403, f"toolrig egress guard: {refusal.note()}"))
            return
        upstream, failure = await self._connect(decision.addresses, parsed.port)
        if upstream is None:
            await _answer(stream, answer(502, f"toolrig egress proxy: {failure}"))
            return
        async with upstream:
            if request.method == "CONNECT":
                await stream.send(CONNECTED)
            else:
                await upstream.send(origin_head(request, _authority(parsed), _path_of(target)))
            if rest:
                await upstream.send(rest)
            await relay(stream, upstream, self.limits.idle_seconds)

    async def _decide(self, url: str) -> tuple[ParsedUrl | None, UrlDecision]:
        parsed = parse_guarded_url(url)
        if isinstance(parsed, UrlDecision):
            return None, parsed
        early = check_host(parsed, self.policy)
        if early is not None:
            return parsed, early
        try:
            with anyio.fail_after(self.limits.connect_seconds):
                addresses = await self._lookup(parsed.host)
        except (LookupError, TimeoutError) as exc:
            reason = str(exc) or f"cannot resolve '{parsed.host}' in time"
            return parsed, UrlDecision(False, reason, (), parsed.host)
        return parsed, check_addresses(parsed.host, addresses, self.policy)

    async def _socks(self, stream: anyio.abc.ByteStream, first: bytes) -> None:
        try:
            with anyio.fail_after(self.limits.head_seconds):
                target = await socks.read_request(stream, first, self.credential)
        except socks.SocksError as exc:
            if exc.code is not None:
                await _answer(stream, socks.reply(exc.code))
            return
        except (TimeoutError, ValueError):
            await _answer(stream, socks.reply(socks.GENERAL_FAILURE))
            return
        parsed, decision = await self._decide(target.url())
        if parsed is None or not decision.allowed:
            self._refuse(f"{target.host}:{target.port}", decision)
            await _answer(stream, socks.reply(socks.NOT_ALLOWED))
            return
        upstream, _ = await self._connect(decision.addresses, parsed.port)
        if upstream is None:
            await _answer(stream, socks.reply(socks.HOST_UNREACHABLE))
            return
        async with upstream:
            await stream.send(socks.reply(socks.SUCCEEDED))
            if target.rest:
                await upstream.send(target.rest)
            await relay(stream, upstream, self.limits.idle_seconds)

    async def _lookup(self, host: str) -> list[str]:
        """Every address of ``host``, looked up once, in one of this proxy's own few threads."""
        if self.resolver is not None or _is_address(host):
            return await resolve(host, self.resolver)
        try:
            infos = await anyio.to_thread.run_sync(
                partial(socket.getaddrinfo, host, None, type=socket.SOCK_STREAM),
                limiter=self._lookups,
                abandon_on_cancel=True,
            )
        except (OSError, UnicodeError) as exc:
            raise LookupError(f"cannot resolve '{host}': {exc}") from None
        return list(dict.fromkeys(str(info[4][0]) for info in infos))

    async def _connect(self, addresses: tuple[str, ...], port: int) -> tuple[anyio.abc.SocketStream | None, str]:
        """A connection to one of the checked addresses, never to the name (so DNS cannot answer twice)."""
        failure = "no address"
        for address in addresses:
            try:
                with anyio.fail_after(self.limits.connect_seconds):
                    return await anyio.connect_tcp(address, port), ""
            except TimeoutError:
                failure = f"connecting to {address} port {port} timed out"
            except OSError as exc:
                failure = f"connecting to {address} port {port} failed: {exc.strerror or exc}"
        return None, failure


async def relay(a: anyio.abc.ByteStream, b: anyio.abc.ByteStream, idle_seconds: float) -> None:
    """Copy both ways until both sides are done, or nothing moved either way for ``idle_seconds``."""
    last = [anyio.current_time()]

    async def pump(source: anyio.abc.ByteStream, sink: anyio.abc.ByteStream, group: anyio.abc.TaskGroup) -> None:
        while True:
            with anyio.move_on_after(idle_seconds) as waiting:
                try:
                    data = await source.receive(_CHUNK)
                except _STREAM_GONE:
                    break
            if waiting.cancelled_caught:
                if anyio.current_time() - last[0] >= idle_seconds:
                    group.cancel_scope.cancel()
                    return
                continue
            last[0] = anyio.current_time()
            with anyio.move_on_after(idle_seconds) as sending:
                try:
                    await sink.send(data)
                except _STREAM_GONE:
                    group.cancel_scope.cancel()
                    return
            if sending.cancelled_caught:  # the other side stopped reading: a stalled client holds nothing
                group.cancel_scope.cancel()
                return
        with contextlib.suppress(*_STREAM_GONE):
            await sink.send_eof()

    async with anyio.create_task_group() as group:
        group.start_soon(pump, a, b, group)
        group.start_soon(pump, b, a, group)


async def _answer(stream: anyio.abc.ByteStream, data: bytes) -> None:
    """Send the proxy's own answer, then read (and drop) what the client still sends for a moment.

    Closing a socket with unread input makes the kernel send a reset, which can destroy the answer before the
    client read it; so the proxy half-closes and drains, bounded in bytes and time, before it closes.
    """
    await stream.send(data)
    with contextlib.suppress(*_STREAM_GONE):
        await stream.send_eof()
        with anyio.move_on_after(1.0):
            for _ in range(16):
                await stream.receive(_CHUNK)


PROXY_USER = "toolrig"


def proxy_authorized(header: str | None, credential: str) -> bool:
    """Whether a ``Proxy-Authorization`` value is Basic ``toolrig:<credential>`` (compared in constant time)."""
    expected = "Basic " + base64.b64encode(f"{PROXY_USER}:{credential}".encode()).decode("ascii")
    return header is not None and hmac.compare_digest(header.strip().encode("latin-1"), expected.encode("ascii"))


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _check_listener(sock: socket.socket) -> None:
    if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
        raise ValueError("only a TCP socket can be adopted")
    if not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
        raise ValueError("the socket is not listening")


def _connect_url(authority: str) -> str | None:
    """``host:port`` of a CONNECT as a URL the guard parses; None unless it is exactly that."""
    host, sep, port = authority.rpartition(":")
    if not sep or not host or not port.isdigit() or any(ch in authority for ch in "/?#@"):
        return None
    return f"https://{authority}/"


def _authority(parsed: ParsedUrl) -> str:
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    return host if parsed.port == 80 else f"{host}:{parsed.port}"


def _path_of(url: str) -> str:
    after = url.split("://", 1)[1]
    cut = min((i for i in (after.find("/"), after.find("?")) if i >= 0), default=-1)
    if cut < 0:
        return "/"
    path = after[cut:]
    return path if path.startswith("/") else "/" + path


@contextlib.asynccontextmanager
async def open_egress(
    policy: NetworkPolicy,
    *,
    resolver: Resolver | None = None,
    limits: EgressLimits | None = None,
    settings: str = "tool_config.run_command",
    parent: str | None = None,
    credential: str | None = None,
    unix: bool = True,
) -> AsyncIterator[Egress]:
    """A proxy for one command, deciding with ``policy`` (the caller's view); closed when the block ends.

    ``resolver`` stands in for DNS (tests); ``settings`` is the config prefix refusals name; ``parent`` is where
    the private directory is made (default: the system temp dir; keep the path short, unix sockets cap at 107).
    ``credential``: every client must present it (a namespace shared by a session's commands: one command's
    proxy must not serve another's). ``unix=False``: no unix socket (the listeners come by ``adopt`` only).
    """
    limits = limits or EgressLimits()
    slots, lookups = anyio.Semaphore(limits.max_connections), anyio.CapacityLimiter(limits.max_lookups)
    egress = Egress(policy, resolver, limits, settings, slots, lookups, credential=credential)
    listener = None
    if unix:
        egress.directory = tempfile.mkdtemp(prefix="toolrig-egress-", dir=parent)
        egress.socket_path = os.path.join(egress.directory, SOCKET_NAME)
        listener = listen(egress.socket_path)
    try:
        async with anyio.create_task_group() as group:
            egress._group = group
            if listener is not None:
                group.start_soon(egress._serve, partial(accept_unix, listener))
            try:
                yield egress
            finally:
                group.cancel_scope.cancel()
    finally:
        egress._group = None
        if listener is not None:
            anyio.notify_closing(listener)
            listener.close()
            shutil.rmtree(egress.directory, ignore_errors=True)

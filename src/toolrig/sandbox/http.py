"""HTTP for tools: httpx2 clients whose every connection goes to an address the network guard checked.

Trust model: URLs, redirects and DNS answers are hostile. Each request (every redirect hop included) is
checked by ``toolrig.sandbox.network`` before it is sent; each new connection resolves its host once,
checks every address and connects to a checked address itself, so DNS cannot change its answer between
the check and the connect (no rebinding window). Proxies from the environment are ignored.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import anyio

from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.network import (
    NetworkDenied,
    NetworkPolicy,
    Resolver,
    UrlDecision,
    check_addresses,
    check_host,
    parse_url,
)

if TYPE_CHECKING:
    import ssl

    import httpcore2
    import httpx2

DEFAULT_TIMEOUT_SECONDS = 30.0
MAX_REDIRECTS = 5

_ssl_lock = threading.Lock()
_ssl_context: ssl.SSLContext | None = None


def default_ssl_context() -> ssl.SSLContext:
    """One verifying TLS context per process: building one costs ~60 ms, sharing it is safe."""
    global _ssl_context
    with _ssl_lock:
        if _ssl_context is None:
            import httpx2

            _ssl_context = httpx2.create_ssl_context(trust_env=False)
        return _ssl_context


def check_request_url(url: str, policy: NetworkPolicy) -> UrlDecision | None:
    """The DNS-free part of the guard for one request; a refusal, or None when the connection decides."""
    parsed = parse_url(url)
    if isinstance(parsed, UrlDecision):
        return parsed
    return check_host(parsed, policy)


async def resolve(host: str, resolver: Resolver | None) -> list[str]:
    """Addresses for ``host``: an IP literal is its own answer; otherwise ask the resolver once."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    if resolver is not None:
        return list(resolver(host))
    try:
        infos = await anyio.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise LookupError(f"cannot resolve '{host}': {exc}") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@functools.cache
def _backend_class() -> Callable[[NetworkPolicy, Resolver | None], httpcore2.AsyncNetworkBackend]:
    """Built on first use so that importing this module does not import httpcore2."""
    import httpcore2

    class PinnedBackend(httpcore2.AsyncNetworkBackend):
        """Resolves, checks, then connects to the checked address itself: the pin that defeats rebinding."""

        def __init__(self, policy: NetworkPolicy, resolver: Resolver | None) -> None:
            self.policy = policy
            self.resolver = resolver
            self.inner = httpcore2.AnyIOBackend()

        async def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,  # noqa: ASYNC109 - httpcore2's interface
            local_address: str | None = None,
            socket_options: Iterable[Any] | None = None,
        ) -> httpcore2.AsyncNetworkStream:
            try:
                addresses = await resolve(host, self.resolver)
            except LookupError as exc:
                raise httpcore2.ConnectError(str(exc)) from None
            decision = check_addresses(host, addresses, self.policy)
            if not decision.allowed:
                raise NetworkDenied(decision)
            *others, last = decision.addresses
            for address in others:  # try each checked address; the last one's failure is reported
                try:
                    return await self.inner.connect_tcp(address, port, timeout, local_address, socket_options)
                except (httpcore2.ConnectError, httpcore2.ConnectTimeout):
                    continue
            return await self.inner.connect_tcp(last, port, timeout, local_address, socket_options)

        async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
            raise NetworkDenied(UrlDecision(False, "unix sockets are not reachable through the guard"))

        async def sleep(self, seconds: float) -> None:
            await self.inner.sleep(seconds)

    return PinnedBackend


@functools.cache
def _transport_class() -> Callable[[NetworkPolicy, Resolver | None, ssl.SSLContext], httpx2.AsyncBaseTransport]:
    import httpcore2
    import httpx2

    class GuardedTransport(httpx2.AsyncHTTPTransport):
        """httpx2's own transport over a connection pool whose network backend is the pinned one."""

        def __init__(self, policy: NetworkPolicy, resolver: Resolver | None, context: ssl.SSLContext) -> None:
            super().__init__(verify=context, trust_env=False)
            self.policy = policy
            self._pool = httpcore2.AsyncConnectionPool(
                ssl_context=context, network_backend=_backend_class()(policy, resolver), max_connections=10
            )

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            refusal = check_request_url(str(request.url), self.policy)
            if refusal is not None and not refusal.allowed:
                raise NetworkDenied(refusal)
            return await super().handle_async_request(request)

    return GuardedTransport


class GuardedHttp:
    """The ``HttpAccess`` toolrig gives tools: every client it makes goes through the guard.

    ``resolver`` stands in for DNS (tests); ``ssl_context`` replaces the system trust store (tests with
    their own CA). A client belongs to one call and one event loop: use it in ``async with``.
    """

    def __init__(
        self,
        *,
        resolver: Resolver | None = None,
        policy: NetworkPolicy | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.resolver = resolver
        self.policy = policy or NetworkPolicy()
        self.ssl_context = ssl_context

    def client(
        self,
        policy: NetworkPolicy | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_redirects: int = MAX_REDIRECTS,
    ) -> httpx2.AsyncClient:
        import httpx2

        context = self.ssl_context or default_ssl_context()
        return httpx2.AsyncClient(
            transport=_transport_class()(policy or self.policy, self.resolver, context),
            follow_redirects=max_redirects > 0,
            max_redirects=max(max_redirects, 0),
            timeout=timeout,
            trust_env=False,
        )


@contextlib.contextmanager
def whole_exchange(seconds: float, what: str) -> Iterator[None]:
    """Bound a whole exchange (connect, redirects, every read of the body) by ``seconds``.

    httpx's timeouts apply to each operation, so a server trickling a byte a second holds a call open
    forever; a tool's ``timeout_seconds`` means the call, so it is enforced here once, around everything.
    """
    with anyio.move_on_after(seconds) as scope:
        yield
    if scope.cancelled_caught:
        raise ToolError(
            ErrorType.TIMEOUT,
            f"{what} did not finish within {seconds:g} seconds (connect, redirects and body together) and was stopped.",
            "The server is slow or trickling its answer; retry later, or ask the user to raise timeout_seconds.",
        )

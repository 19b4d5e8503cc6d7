from __future__ import annotations

import anyio
import httpx2
import pytest

from tests.conftest import static_resolver
from tests.support.servers import HttpServer
from toolrig.sandbox.http import GuardedHttp
from toolrig.sandbox.network import NetworkDenied, NetworkPolicy

LOOPBACK = NetworkPolicy(allow_loopback=True)


class CountingResolver:
    """Answers from a script, one answer per lookup, and counts the lookups."""

    def __init__(self, host: str, answers: list[list[str]]) -> None:
        self.host = host
        self.answers = answers
        self.calls = 0

    def __call__(self, host: str) -> list[str]:
        assert host == self.host
        answer = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        return answer


@pytest.mark.anyio
async def test_the_connection_goes_to_the_checked_address_not_a_second_lookup(http_server: HttpServer) -> None:
    # 'pinned.test' exists only in the injected resolver: if the client looked the name up again itself,
    # the request could not connect at all.
    http_server.route("/http/pinned", body="pinned", content_type="text/plain")
    resolver = CountingResolver("pinned.test", [["127.0.0.1"]])
    async with GuardedHttp(resolver=resolver).client(LOOPBACK) as client:
        response = await client.get(http_server.url("/http/pinned", host="pinned.test"))
    assert response.text == "pinned"
    assert http_server.seen[-1].headers["Host"] == f"pinned.test:{http_server.port}"
    assert resolver.calls == 1


@pytest.mark.anyio
async def test_dns_rebinding_to_a_private_address_is_caught_at_the_next_connection(http_server: HttpServer) -> None:
    http_server.route("/http/rebind", body="first", content_type="text/plain")
    resolver = CountingResolver("rebind.test", [["127.0.0.1"], ["10.0.0.9"]])
    url = http_server.url("/http/rebind", host="rebind.test")
    http = GuardedHttp(resolver=resolver)
    async with http.client(LOOPBACK) as client:
        assert (await client.get(url)).text == "first"
        assert (await client.get(url)).text == "first"  # the pooled connection stays on the checked address
    assert resolver.calls == 1
    async with http.client(LOOPBACK) as client:
        with pytest.raises(NetworkDenied, match=r"10\.0\.0\.9"):
            await client.get(url)
    assert resolver.calls == 2


@pytest.mark.anyio
async def test_environment_proxies_are_ignored(http_server: HttpServer, monkeypatch: pytest.MonkeyPatch) -> None:
    http_server.route("/http/direct", body="direct", content_type="text/plain")
    monkeypatch.setenv("HTTP_PROXY", "http://10.9.9.9:3128")
    monkeypatch.setenv("ALL_PROXY", "http://10.9.9.9:3128")
    async with GuardedHttp().client(LOOPBACK) as client:
        assert (await client.get(http_server.url("/http/direct"))).text == "direct"


@pytest.mark.anyio
async def test_every_redirect_hop_passes_the_guard_inside_the_client(http_server: HttpServer) -> None:
    http_server.route("/http/hop", 302, Location="http://[fd00::1]/")
    async with GuardedHttp(resolver=static_resolver({})).client(LOOPBACK) as client:
        with pytest.raises(NetworkDenied, match="unique-local"):
            await client.get(http_server.url("/http/hop"))


@pytest.mark.anyio
async def test_redirects_are_not_followed_when_the_client_is_asked_for_none(http_server: HttpServer) -> None:
    http_server.route("/http/moved", 301, Location="/elsewhere")
    async with GuardedHttp().client(LOOPBACK, max_redirects=0) as client:
        response = await client.get(http_server.url("/http/moved"))
    assert response.status_code == 301


@pytest.mark.anyio
async def test_a_refused_host_never_reaches_the_server(http_server: HttpServer) -> None:
    before = len(http_server.seen)
    async with GuardedHttp().client(NetworkPolicy()) as client:
        with pytest.raises(NetworkDenied, match="loopback"):
            await client.get(http_server.url("/http/never"))
    assert len(http_server.seen) == before


@pytest.mark.anyio
async def test_a_name_that_does_not_resolve_is_a_connect_error() -> None:
    async with GuardedHttp(resolver=static_resolver({})).client(LOOPBACK) as client:
        with pytest.raises(httpx2.ConnectError, match="cannot resolve"):
            await client.get("http://missing.test/")


@pytest.mark.anyio
async def test_clients_work_across_event_loops_because_each_call_makes_its_own(http_server: HttpServer) -> None:
    http_server.route("/http/loops", body="ok", content_type="text/plain")
    http = GuardedHttp()

    async def fetch() -> str:
        async with http.client(LOOPBACK) as client:
            return (await client.get(http_server.url("/http/loops"))).text

    assert await fetch() == "ok"
    assert await anyio.to_thread.run_sync(lambda: anyio.run(fetch)) == "ok"

from __future__ import annotations

import socket
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import static_resolver
from tests.support.servers import HttpServer
from toolrig.sandbox.egress import Egress, EgressLimits, open_egress
from toolrig.sandbox.egress_http import BadRequest, parse_head
from toolrig.sandbox.network import NetworkPolicy

# 'allowed.test' exists only in the injected resolver; the origin behind it listens on 127.0.0.1, which the
# policy opens for this name only through allow_loopback (the allowlist keeps every other name out).
ALLOWED = NetworkPolicy(allowed_domains=("allowed.test",), allow_loopback=True)
RESOLVER = static_resolver({"allowed.test": ["127.0.0.1"], "rebind.test": ["93.184.216.34", "127.0.0.1"]})


class TlsOrigin:
    """An HTTPS server on 127.0.0.1 with a certificate for allowed.test from a throwaway CA."""

    def __init__(self, ca_dir: Path) -> None:
        import trustme

        ca = trustme.CA()
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("allowed.test").configure_cert(context)
        self.ca_file = str(ca_dir / "ca.pem")
        ca.cert_pem.write_to_path(self.ca_file)

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = f"tls {self.path}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def tls_origin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsOrigin]:
    origin = TlsOrigin(tmp_path_factory.mktemp("egress-ca"))
    yield origin
    origin.server.shutdown()
    origin.server.server_close()


@pytest.fixture
async def proxy() -> AsyncIterator[tuple[Egress, int]]:
    """The proxy with the ALLOWED policy, also served on a TCP port (as the namespace's listener would be)."""
    async with open_egress(ALLOWED, resolver=RESOLVER) as egress:
        yield egress, _adopt_tcp(egress)


def _adopt_tcp(egress: Egress) -> int:
    listener = socket.create_server(("127.0.0.1", 0))
    egress.adopt(listener)
    return int(listener.getsockname()[1])


async def _exchange(egress: Egress, data: bytes) -> bytes:
    """Send raw bytes over the unix socket and read the whole answer."""
    async with await anyio.connect_unix(egress.socket_path) as stream:
        await stream.send(data)
        chunks = []
        with anyio.fail_after(10):
            while True:
                try:
                    chunks.append(await stream.receive())
                except anyio.EndOfStream:
                    break
    return b"".join(chunks)


def _urlopen(url: str, proxy_port: int) -> tuple[int, str]:
    proxies = {"http": f"http://127.0.0.1:{proxy_port}", "https": f"http://127.0.0.1:{proxy_port}"}
    opener = urllib.request.build_opener(urllib.request.ProxyHandler(proxies))
    try:
        with opener.open(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.mark.anyio
async def test_plain_http_through_the_proxy_reaches_an_allowed_origin(
    proxy: tuple[Egress, int], http_server: HttpServer
) -> None:
    egress, port = proxy
    http_server.route("/egress/plain", body="plain ok")
    url = http_server.url("/egress/plain?q=1", host="allowed.test")
    status, body = await anyio.to_thread.run_sync(_urlopen, url, port)
    assert (status, body) == (200, "plain ok")
    seen = http_server.seen[-1]
    assert seen.headers["Host"] == f"allowed.test:{http_server.port}"
    assert seen.headers["Connection"] == "close"
    assert egress.refusals == []


@pytest.mark.anyio
async def test_the_host_header_is_the_checked_one_not_the_clients(
    proxy: tuple[Egress, int], http_server: HttpServer
) -> None:
    egress, _ = proxy
    http_server.route("/egress/fronted", body="ok")
    request = f"GET http://allowed.test:{http_server.port}/egress/fronted HTTP/1.1\r\nHost: evil.test\r\n"
    answer = await _exchange(egress, (request + "Proxy-Authorization: x\r\n\r\n").encode())
    assert answer.startswith((b"HTTP/1.0 200", b"HTTP/1.1 200"))
    assert http_server.seen[-1].headers["Host"] == f"allowed.test:{http_server.port}"
    assert "Proxy-Authorization" not in http_server.seen[-1].headers


@pytest.mark.anyio
async def test_https_through_connect_with_curl_and_urllib(proxy: tuple[Egress, int], tls_origin: TlsOrigin) -> None:
    _, port = proxy
    url = f"https://allowed.test:{tls_origin.port}/secure"
    result = await anyio.run_process(
        ["curl", "-sS", "--max-time", "10", "--proxy", f"http://127.0.0.1:{port}", "--cacert", tls_origin.ca_file, url]
    )
    assert result.stdout == b"tls /secure"

    def fetch() -> str:
        context = ssl.create_default_context(cafile=tls_origin.ca_file)
        handler = urllib.request.ProxyHandler({"https": f"http://127.0.0.1:{port}"})
        opener = urllib.request.build_opener(handler, urllib.request.HTTPSHandler(context=context))
        with opener.open(url, timeout=10) as response:
            return str(response.read().decode())

    assert await anyio.to_thread.run_sync(fetch) == "tls /secure"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("request_line", "rule", "setting"),
    [
        ("CONNECT 127.0.0.1:{port} HTTP/1.1", "loopback", "allow_loopback"),
        ("GET http://127.0.0.1:{port}/ HTTP/1.1", "loopback", "allow_loopback"),
        ("CONNECT localhost:{port} HTTP/1.1", "loopback name", "allow_loopback"),
        ("CONNECT [::1]:{port} HTTP/1.1", "loopback", "allow_loopback"),
        ("CONNECT 169.254.169.254:80 HTTP/1.1", "link-local", "allow_networks"),
        ("GET http://169.254.169.254/latest/meta-data/ HTTP/1.1", "link-local", "allow_networks"),
        ("CONNECT [fd00:ec2::254]:80 HTTP/1.1", "unique-local", "allow_networks"),
        ("CONNECT [::ffff:127.0.0.1]:{port} HTTP/1.1", "IPv4-mapped", "allow_networks"),
        ("CONNECT 2130706433:{port} HTTP/1.1", "unusual spelling", ""),
        ("CONNECT rebind.test:443 HTTP/1.1", "loopback", "allow_loopback"),
    ],
)
async def test_loopback_metadata_and_private_destinations_are_refused_with_the_setting_named(
    request_line: str, rule: str, setting: str, http_server: HttpServer
) -> None:
    async with open_egress(NetworkPolicy(), resolver=RESOLVER) as egress:
        answer = await _exchange(egress, (request_line.format(port=http_server.port) + "\r\n\r\n").encode())
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 403 ")
    assert rule in body.decode()
    assert f"tool_config.run_command.{setting}" in body.decode() or not setting
    assert len(egress.refusals) == 1 and egress.refused == 1
    assert rule in egress.refusals[0].note()


@pytest.mark.anyio
async def test_a_domain_outside_allowed_domains_is_refused_through_every_client(proxy: tuple[Egress, int]) -> None:
    egress, port = proxy
    status, body = await anyio.to_thread.run_sync(_urlopen, "http://other.test/x", port)
    assert status == 403
    assert "not in the domain allowlist (allowed.test)" in body and "allowed_domains" in body
    result = await anyio.run_process(
        ["curl", "-sS", "--proxy", f"http://127.0.0.1:{port}", "https://other.test/"], check=False
    )
    assert result.returncode != 0 and b"403" in result.stderr
    assert [r.target for r in egress.refusals] == ["other.test:80", "other.test:443"]
    assert "ask the user to add the host to tool_config.run_command.allowed_domains" in egress.refusals[0].note()


@pytest.mark.anyio
async def test_a_narrower_caller_gets_a_narrower_proxy(http_server: HttpServer) -> None:
    http_server.route("/egress/narrow", body="wide")
    request = f"GET http://allowed.test:{http_server.port}/egress/narrow HTTP/1.1\r\n\r\n".encode()
    narrower = NetworkPolicy(allowed_domains=("docs.test",), allow_loopback=True)
    async with open_egress(narrower, resolver=RESOLVER, settings="agents.child.tool_config.run_command") as egress:
        answer = await _exchange(egress, request)
    assert answer.startswith(b"HTTP/1.1 403")
    assert b"agents.child.tool_config.run_command.allowed_domains" in answer


@pytest.mark.anyio
async def test_connect_to_an_address_that_refuses_is_a_clean_502() -> None:
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    async with open_egress(ALLOWED, resolver=RESOLVER) as egress:
        answer = await _exchange(egress, f"CONNECT allowed.test:{port} HTTP/1.1\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 502") and b"failed" in answer
    assert egress.refusals == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("data", "status"),
    [
        (b"hello\r\n\r\n", b"400"),
        (b"GET / HTTP/1.1\r\n\r\n", b"405"),
        (b"GET ftp://allowed.test/ HTTP/1.1\r\n\r\n", b"400"),
        (b"CONNECT allowed.test HTTP/1.1\r\n\r\n", b"400"),
        (b"CONNECT user@allowed.test:443 HTTP/1.1\r\n\r\n", b"400"),
        (b"GET http://allowed.test/ HTTP/1.1\r\nX: a\rb\r\n\r\n", b"400"),
        (b"GET http://allowed.test/ HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", b"400"),
        (b"GET http://allowed.test/ HTTP/1.1\r\n" + b"X: y\r\n" * 101 + b"\r\n", b"431"),
        (b"GET http://allowed.test/" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n", b"431"),
        (b"GET http://allowed.test/ HTTP/1.1\r\nX: " + b"v" * 17000, b"431"),
        (b"GET http://allowed.test/ HTTP/1.1\r\nX", b"400"),
    ],
)
async def test_malformed_and_oversized_requests_get_a_clean_error(data: bytes, status: bytes) -> None:
    async with (
        open_egress(ALLOWED, resolver=RESOLVER) as egress,
        await anyio.connect_unix(egress.socket_path) as stream,
    ):
        await stream.send(data)
        await stream.send_eof()
        with anyio.fail_after(10):
            answer = await _read_all(stream)
    assert answer.split(b" ")[1] == status, answer[:200]
    assert answer.endswith(b"\n") and b"Connection: close" in answer


@pytest.mark.anyio
async def test_a_head_that_never_ends_is_answered_408_when_its_time_is_up() -> None:
    limits = EgressLimits(head_seconds=0.3)
    async with (
        open_egress(ALLOWED, resolver=RESOLVER, limits=limits) as egress,
        await anyio.connect_unix(egress.socket_path) as stream,
    ):
        await stream.send(b"GET http://allowed.test/ HTTP/1.1\r\nX: trickle")
        with anyio.fail_after(10):
            answer = await stream.receive()
    assert answer.startswith(b"HTTP/1.1 408")


@pytest.mark.anyio
async def test_connections_past_the_cap_wait_until_one_ends(http_server: HttpServer) -> None:
    http_server.route("/egress/capped", body="served")
    limits = EgressLimits(max_connections=2)
    request = f"GET http://allowed.test:{http_server.port}/egress/capped HTTP/1.1\r\n\r\n".encode()
    async with open_egress(ALLOWED, resolver=RESOLVER, limits=limits) as egress:
        holders = [await anyio.connect_unix(egress.socket_path) for _ in range(2)]
        for holder in holders:
            await holder.send(b"GET http://allowed.test/ HTTP/1.1\r\n")  # a head that is never finished
        waiting = await anyio.connect_unix(egress.socket_path)
        await waiting.send(request)
        with anyio.move_on_after(0.3):
            await waiting.receive()
            pytest.fail("a connection past the cap was served while both slots were held")
        await holders[0].aclose()
        with anyio.fail_after(10):
            assert b"served" in await _read_all(waiting)
        await waiting.aclose()
        await holders[1].aclose()


async def _read_all(stream: anyio.abc.ByteReceiveStream) -> bytes:
    data = b""
    while True:
        try:
            data += await stream.receive()
        except anyio.EndOfStream:
            return data


@pytest.mark.anyio
async def test_refusals_are_kept_bounded_and_counted() -> None:
    async with open_egress(NetworkPolicy(), resolver=RESOLVER, limits=EgressLimits(max_refusals=3)) as egress:
        for n in range(8):
            await _exchange(egress, f"CONNECT 10.0.0.{n}:443 HTTP/1.1\r\n\r\n".encode())
    assert len(egress.refusals) == 3 and egress.refused == 8


@pytest.mark.anyio
async def test_the_socket_directory_is_private_and_gone_after_the_command() -> None:
    async with open_egress(ALLOWED) as egress:
        directory = Path(egress.directory)
        assert directory.stat().st_mode & 0o777 == 0o700
        assert Path(egress.socket_path).is_socket()
    assert not directory.exists()


@pytest.mark.anyio
async def test_only_listening_tcp_sockets_are_adopted() -> None:
    async with open_egress(ALLOWED) as egress:
        left, right = socket.socketpair()
        with left, right, pytest.raises(ValueError, match="TCP"):
            egress.adopt(left)
        unbound = socket.socket()
        with unbound, pytest.raises(ValueError, match="not listening"):
            egress.adopt(unbound)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_any_head_parses_or_is_a_bad_request(head: bytes) -> None:
    try:
        request = parse_head(head, 100)
    except BadRequest as exc:
        assert exc.status in (400, 431)
    else:
        assert " " not in request.target and request.method.isupper()


@pytest.mark.anyio
async def test_socks5_on_the_same_port_reaches_allowed_origins_and_is_refused_elsewhere(
    proxy: tuple[Egress, int], http_server: HttpServer, tls_origin: TlsOrigin
) -> None:
    egress, port = proxy
    http_server.route("/egress/socks", body="socks ok")
    socks = ["curl", "-sS", "--max-time", "10", "--proxy", f"socks5h://127.0.0.1:{port}"]
    plain = await anyio.run_process([*socks, http_server.url("/egress/socks", host="allowed.test")])
    assert plain.stdout == b"socks ok"
    tls = await anyio.run_process([*socks, "--cacert", tls_origin.ca_file, f"https://allowed.test:{tls_origin.port}/s"])
    assert tls.stdout == b"tls /s"
    refused = await anyio.run_process([*socks, http_server.url("/", host="127.0.0.1")], check=False)
    assert refused.returncode != 0 and b"(2)" in refused.stderr  # reply 2: not allowed by ruleset
    assert [r.target for r in egress.refusals] == [f"127.0.0.1:{http_server.port}"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"\x05\x01\x02", b"\x05\xff"),  # only username/password offered
        (b"\x05\x01\x00\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x50", b"\x05\x00\x05\x07"),  # BIND
        (b"\x05\x01\x00\x05\x01\x00\x09", b"\x05\x00\x05\x08"),  # an unknown address type
        (b"\x05\x01\x00\x05\x01\x00\x03\x03a\x00b\x00\x50", b"\x05\x00\x05\x01"),  # a NUL in the name
        (b"\x05\x01\x00\x05\x01\x00\x01\xa9\xfe\xa9\xfe\x00\x50", b"\x05\x00\x05\x02"),  # metadata: refused
    ],
)
async def test_socks5_requests_outside_connect_without_authentication_get_the_protocols_refusal(
    data: bytes, expected: bytes
) -> None:
    async with (
        open_egress(ALLOWED, resolver=RESOLVER) as egress,
        await anyio.connect_unix(egress.socket_path) as stream,
    ):
        await stream.send(data)
        with anyio.fail_after(10):
            answer = await _read_all(stream)
    assert answer.startswith(expected)


@pytest.mark.anyio
async def test_new_connections_past_the_rate_wait_for_the_bucket_to_refill() -> None:
    passed = 0
    async with open_egress(ALLOWED, limits=EgressLimits(connections_per_second=1.0)) as egress:
        with anyio.move_on_after(0.3):
            for _ in range(3):
                await egress._pace()
                passed += 1
    assert passed == 1  # a burst of one, then one a second: the second waits about a second


@pytest.mark.anyio
async def test_name_lookups_run_in_the_proxys_own_few_threads(http_server: HttpServer) -> None:
    # No injected resolver: 'localhost' goes to the system's resolver (/etc/hosts), in this proxy's limiter.
    policy = NetworkPolicy(allow_loopback=True)
    request = f"CONNECT localhost:{http_server.port} HTTP/1.1\r\n\r\n".encode()
    async with open_egress(policy, limits=EgressLimits(max_lookups=1)) as egress:
        async with await anyio.connect_unix(egress.socket_path) as stream:
            await stream.send(request)
            with anyio.fail_after(10):
                assert (await stream.receive()).startswith(b"HTTP/1.1 200 Connection established")
        assert egress._lookups.total_tokens == 1 and egress._lookups.borrowed_tokens == 0


@pytest.mark.anyio
async def test_a_refused_target_is_recorded_shortened() -> None:
    async with open_egress(ALLOWED, resolver=RESOLVER) as egress:
        await _exchange(egress, b"GET http://a@" + b"b" * 5000 + b"/ HTTP/1.1\r\n\r\n")
        answer = await _exchange(egress, b"CONNECT " + b"b" * 300 + b".test:443 HTTP/1.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 403")
    assert "credentials" in egress.refusals[0].reason
    assert all(len(refusal.note()) < 800 for refusal in egress.refusals)


@pytest.mark.anyio
async def test_a_tunnel_where_nothing_moves_is_closed_after_the_idle_time() -> None:
    silent = socket.create_server(("127.0.0.1", 0))  # the kernel completes connections nobody accepts
    port = silent.getsockname()[1]
    limits = EgressLimits(idle_seconds=0.3)
    with silent:
        async with (
            open_egress(ALLOWED, resolver=RESOLVER, limits=limits) as egress,
            await anyio.connect_unix(egress.socket_path) as stream,
        ):
            await stream.send(f"CONNECT allowed.test:{port} HTTP/1.1\r\n\r\n".encode())
            with anyio.fail_after(10):
                assert await _read_all(stream) == b"HTTP/1.1 200 Connection established\r\n\r\n"


async def _fuzz_once(data: bytes) -> None:
    limits = EgressLimits(head_seconds=0.5, connect_seconds=0.5)
    async with open_egress(NetworkPolicy(), resolver=RESOLVER, limits=limits) as egress:
        async with await anyio.connect_unix(egress.socket_path) as stream:
            await stream.send(data)
            await stream.send_eof()
            with anyio.fail_after(10):
                await _read_all(stream)
        assert await _exchange(egress, b"CONNECT 10.0.0.1:80 HTTP/1.1\r\n\r\n") != b""  # still serving


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=200).map(lambda b: b"\x05" + b),
        st.binary(max_size=200).map(lambda b: b"CONNECT " + b),
        st.binary(max_size=200).map(lambda b: b"GET http://" + b),
        st.binary(max_size=200),
    )
)
def test_any_bytes_a_client_sends_leave_the_proxy_answering(data: bytes) -> None:
    # open_egress raises if any connection's task raised: nothing a client sends may escape as an exception.
    anyio.run(_fuzz_once, data)

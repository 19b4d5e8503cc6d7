"""SSRF: every address class and spelling is refused by the guard, decided with an injected resolver.

No test here opens a connection to an address it checks; the only traffic goes to the local server on
127.0.0.1, which the config names explicitly.
"""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import static_resolver
from tests.support.servers import HttpServer
from toolrig import Rig
from toolrig.sandbox.http import GuardedHttp
from toolrig.sandbox.network import NetworkPolicy, check_url

PUBLIC_V4 = "93.184.216.34"
PUBLIC_V6 = "2606:2800:220:1:248:1893:25c8:1946"


def never_resolve(host: str) -> list[str]:
    raise AssertionError(f"the guard asked DNS about {host!r} although the URL alone decides")


@pytest.mark.parametrize(
    ("address", "fragment"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),
        ("169.254.0.1", "link-local"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("100.127.255.255", "carrier-grade NAT"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("0.0.0.0", "unspecified"),  # noqa: S104 - an address the guard must refuse, not a bind
        ("0.1.2.3", "unspecified"),
        ("192.0.2.10", "documentation"),
        ("198.18.0.1", "benchmarking"),
        ("192.0.0.8", "IETF"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fe80::1", "link-local"),
        ("fc00::1", "unique-local"),
        ("fd12:3456::1", "unique-local"),
        ("fec0::1", "site-local"),
        ("ff02::1", "multicast"),
        ("::ffff:127.0.0.1", "IPv4-mapped"),
        ("::ffff:8.8.8.8", "IPv4-mapped"),
        ("::127.0.0.1", "IPv4-compatible"),
        ("::ffff:0:10.0.0.1", "IPv4-translated"),
        ("64:ff9b::a00:1", "wraps 10.0.0.1"),
        ("64:ff9b::a9fe:a9fe", "wraps 169.254.169.254"),
        ("64:ff9b:1::1", "local-use NAT64"),
        ("2002:a00:1::1", "wraps 10.0.0.1"),
        ("2002:7f00:1::", "wraps 127.0.0.1"),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "IETF"),
        ("2001:db8::1", "documentation"),
        ("100::1", "discard"),
        ("4000::1", "outside the global unicast range"),
    ],
)
def test_resolved_addresses_of_every_non_public_class_are_refused(address: str, fragment: str) -> None:
    decision = check_url("http://service.test/", resolver=static_resolver({"service.test": [address]}))
    assert not decision.allowed
    assert fragment in decision.reason, decision.reason


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://10.0.0.1:8080/admin",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://[::ffff:169.254.169.254]/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://[64:ff9b::7f00:1]/",
        "http://[2002:c0a8:101::]/",
        "http://[fe80::1%25eth0]/",
        "http://0.0.0.0/",
        "http://localhost/",
        "http://app.localhost/",
    ],
)
def test_literal_private_addresses_are_refused_without_asking_dns(url: str) -> None:
    decision = check_url(url, resolver=never_resolve)
    assert not decision.allowed, url


@pytest.mark.parametrize(
    "host",
    [
        "2130706433",  # decimal 127.0.0.1
        "0x7f000001",  # hex
        "0177.0.0.1",  # octal
        "0x7f.0.0.1",
        "127.1",  # short form
        "127.0.1",
        "0x7f.1",
        "017700000001",
        "3232235777",  # 192.168.1.1
        "0xa9.0xfe.0xa9.0xfe",
        "1.2.3.4.5",
        "127.0.0.1.",  # trailing dot is still an odd spelling of a number
        "example.0x10",
        "1.2.3",
    ],
)
def test_odd_spellings_of_ip_addresses_are_refused(host: str) -> None:
    decision = check_url(f"http://{host}/", resolver=never_resolve)
    assert not decision.allowed
    assert "spelling" in decision.reason or "loopback" in decision.reason


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("http://example.com\\@127.0.0.1/", "backslash"),
        ("http://example.com@127.0.0.1/", "credentials"),
        ("http://user:pass@example.com/", "credentials"),
        ("http://127.0.0.1#@example.com/", "refused address"),
        ("http://exa mple.com/", "whitespace"),
        ("http://example.com/\r\nX-Injected: 1", "control"),
        ("http://example.com\t/", "whitespace"),
        ("http://%31%32%37.0.0.1/", "percent"),
        ("file:///etc/passwd", "scheme 'file'"),
        ("gopher://example.com/", "scheme 'gopher'"),
        ("ftp://example.com/", "scheme 'ftp'"),
        ("//example.com/", "not of the form"),
        ("http:example.com", "not of the form"),
        ("http://example.com:0/", "port"),
        ("http://example.com:99999/", "port"),
        ("http://[::1/", "malformed"),
        ("http://a:b:c/", "malformed"),
        ("http://exa\u2028mple.com/", "not a valid"),
        ("", "empty"),
    ],
)
def test_urls_parsers_could_read_differently_are_refused_before_dns(url: str, fragment: str) -> None:
    decision = check_url(url, resolver=never_resolve)
    assert not decision.allowed
    assert fragment in decision.reason, decision.reason


def test_a_host_resolving_to_public_and_private_addresses_is_refused() -> None:
    decision = check_url("https://mixed.test/", resolver=static_resolver({"mixed.test": [PUBLIC_V4, "10.0.0.7"]}))
    assert not decision.allowed
    assert "10.0.0.7" in decision.reason
    assert decision.addresses == (PUBLIC_V4, "10.0.0.7")


def test_public_addresses_are_allowed_and_reported() -> None:
    decision = check_url(
        "https://www.example.com/page?q=1", resolver=static_resolver({"www.example.com": [PUBLIC_V4, PUBLIC_V6]})
    )
    assert decision.allowed, decision.reason
    assert decision.addresses == (PUBLIC_V4, PUBLIC_V6)


def test_nat64_and_6to4_wrapping_a_public_address_are_allowed() -> None:
    resolver = static_resolver({"v6.test": ["64:ff9b::5db8:d822", "2002:5db8:d822::1"]})
    assert check_url("http://v6.test/", resolver=resolver).allowed


def test_loopback_is_reachable_only_when_the_policy_names_it() -> None:
    resolver = static_resolver({"localhost": ["127.0.0.1", "::1"]})
    assert not check_url("http://localhost:8080/", resolver=resolver).allowed
    opened = NetworkPolicy(allow_loopback=True)
    assert check_url("http://localhost:8080/", resolver=resolver, policy=opened).allowed
    assert check_url("http://[::1]:8080/", resolver=never_resolve, policy=opened).allowed
    # Opening loopback opens neither private ranges nor loopback wrapped in IPv6.
    assert not check_url("http://10.0.0.1/", resolver=never_resolve, policy=opened).allowed
    assert not check_url("http://[::ffff:127.0.0.1]/", resolver=never_resolve, policy=opened).allowed


def test_a_named_private_network_opens_only_that_network() -> None:
    policy = NetworkPolicy(allow_networks=("10.20.0.0/16",))
    assert check_url("http://10.20.3.4/", resolver=never_resolve, policy=policy).allowed
    assert not check_url("http://10.21.3.4/", resolver=never_resolve, policy=policy).allowed


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("api.github.com", True),
        ("a.b.github.com", True),
        ("github.com", False),
        ("evilgithub.com", False),
        ("github.com.evil.test", False),
        ("docs.python.org", True),
        ("python.org", False),
        ("gist.github.com", False),  # blocked wins over allowed
    ],
)
def test_domain_allowlist_and_blocklist_use_wildcards(host: str, allowed: bool) -> None:
    policy = NetworkPolicy(allowed_domains=("*.github.com", "docs.python.org"), blocked_domains=("gist.github.com",))
    decision = check_url(f"https://{host}/", resolver=static_resolver({host: [PUBLIC_V4]}), policy=policy)
    assert decision.allowed is allowed, decision.reason


def test_hostnames_are_compared_case_and_trailing_dot_insensitively() -> None:
    policy = NetworkPolicy(blocked_domains=("evil.test",))
    for host in ("EVIL.test", "evil.test.", "Evil.Test."):
        assert not check_url(f"http://{host}/", resolver=static_resolver({}), policy=policy).allowed


def test_internationalised_hosts_are_checked_in_their_ascii_form() -> None:
    policy = NetworkPolicy(blocked_domains=("xn--bcher-kva.example",))
    assert not check_url("http://bücher.example/", resolver=static_resolver({}), policy=policy).allowed


def test_a_host_that_does_not_resolve_is_refused_with_the_reason() -> None:
    decision = check_url("http://nowhere.test/", resolver=static_resolver({}))
    assert not decision.allowed
    assert "cannot resolve" in decision.reason


@given(st.ip_addresses(v=4))
def test_every_ipv4_address_wrapped_as_mapped_ipv6_is_refused(address: ipaddress.IPv4Address) -> None:
    decision = check_url(f"http://[::ffff:{address}]/", resolver=never_resolve)
    assert not decision.allowed


@given(st.ip_addresses(v=4))
def test_an_ipv4_address_in_6to4_is_judged_like_the_address_itself(address: ipaddress.IPv4Address) -> None:
    wrapped = ipaddress.IPv6Address((0x2002 << 112) | (int(address) << 80) | 1)
    plain = check_url(f"http://{address}/", resolver=never_resolve)
    six = check_url(f"http://[{wrapped}]/", resolver=never_resolve)
    assert six.allowed is plain.allowed


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_no_decimal_spelling_of_an_ipv4_address_is_accepted(number: int) -> None:
    assert not check_url(f"http://{number}/", resolver=never_resolve).allowed


# ------------------------------------------------------------------------------------------ through fetch_url


def rig_for(workspace, resolver, **settings) -> Rig:  # type: ignore[no-untyped-def]
    return Rig(workspace, config={"tool_config": {"fetch_url": settings}}, http=GuardedHttp(resolver=resolver))


def test_a_redirect_from_an_allowed_host_to_a_private_address_is_refused(workspace, http_server: HttpServer) -> None:
    http_server.route("/ssrf/to-metadata", 302, Location="http://169.254.169.254/latest/meta-data/")
    http_server.route("/ssrf/to-private-name", 301, Location="http://intranet.test/")
    rig = rig_for(workspace, static_resolver({"intranet.test": ["10.0.0.5"]}), allow_loopback=True)
    for path, fragment in [("/ssrf/to-metadata", "169.254.169.254"), ("/ssrf/to-private-name", "10.0.0.5")]:
        result = rig.call_sync("fetch_url", {"url": http_server.url(path)})
        assert result.is_error and result.error_type == "denied", result
        assert "redirected to" in result.message and fragment in result.message


def test_a_redirect_to_an_odd_ip_spelling_is_refused(workspace, http_server: HttpServer) -> None:
    http_server.route("/ssrf/to-decimal", 307, Location="http://2130706433:80/")
    result = rig_for(workspace, never_resolve, allow_loopback=True).call_sync(
        "fetch_url", {"url": http_server.url("/ssrf/to-decimal")}
    )
    assert result.error_type == "denied" and "spelling" in result.message


def test_a_redirect_loop_stops_after_five_hops(workspace, http_server: HttpServer) -> None:
    http_server.route("/ssrf/loop", 302, Location="/ssrf/loop")
    before = len(http_server.seen)
    result = rig_for(workspace, never_resolve, allow_loopback=True).call_sync(
        "fetch_url", {"url": http_server.url("/ssrf/loop")}
    )
    assert result.is_error and "redirected too many times" in result.message
    assert len(http_server.seen) - before == 6  # the first request and five redirects


def test_fetch_url_refuses_a_name_resolving_to_public_and_private_without_connecting(workspace) -> None:
    rig = rig_for(workspace, static_resolver({"mixed.test": [PUBLIC_V4, "192.168.0.10"]}))
    result = rig.call_sync("fetch_url", {"url": "http://mixed.test/"})
    assert result.error_type == "denied" and "192.168.0.10" in result.message


def test_fetch_url_refuses_loopback_unless_config_names_it(workspace, http_server: HttpServer) -> None:
    http_server.route("/ssrf/plain", body="hello", content_type="text/plain")
    closed = Rig(workspace, config={}).call_sync("fetch_url", {"url": http_server.url("/ssrf/plain")})
    assert closed.error_type == "denied" and "loopback" in closed.message
    opened = rig_for(workspace, never_resolve, allow_loopback=True).call_sync(
        "fetch_url", {"url": http_server.url("/ssrf/plain")}
    )
    assert opened.output["body"] == "hello"

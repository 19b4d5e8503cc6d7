"""The network guard: which URLs a tool may reach, decided before any connection is opened.

Trust model: the URL comes from a model and is hostile, and so are DNS answers. A URL is refused unless it
is plain http(s) that every parser reads the same way, its host passes the configured domain lists, and
every address the host resolves to is public (or in a network the config names). ``check_url`` is the
public, connection-free form; ``toolrig.sandbox.http`` pins real connections to the addresses checked here.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolrig.narrowing import Narrow

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str], list[str]]

ALLOWED_SCHEMES = ("http", "https")

_V4_BLOCKED: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "an unspecified ('this network') address"),
    ("10.0.0.0/8", "a private address"),
    ("100.64.0.0/10", "a carrier-grade NAT (shared) address"),
    ("127.0.0.0/8", "a loopback address"),
    ("169.254.0.0/16", "a link-local address (cloud metadata lives here)"),
    ("172.16.0.0/12", "a private address"),
    ("192.0.0.0/24", "an IETF protocol-assignment address"),
    ("192.0.2.0/24", "a documentation address"),
    ("192.88.99.0/24", "a 6to4 relay anycast address"),
    ("192.168.0.0/16", "a private address"),
    ("198.18.0.0/15", "a benchmarking address"),
    ("198.51.100.0/24", "a documentation address"),
    ("203.0.113.0/24", "a documentation address"),
    ("224.0.0.0/4", "a multicast address"),
    ("240.0.0.0/4", "a reserved address"),
)
_V6_BLOCKED: tuple[tuple[str, str], ...] = (
    ("::/128", "the unspecified address"),
    ("::1/128", "a loopback address"),
    ("::ffff:0:0/96", "an IPv4-mapped IPv6 address"),
    ("::/96", "an IPv4-compatible IPv6 address"),
    ("::ffff:0:0:0/96", "an IPv4-translated IPv6 address"),
    ("64:ff9b:1::/48", "a local-use NAT64 address"),
    ("100::/64", "a discard-only address"),
    ("2001::/23", "an IETF protocol-assignment address (Teredo, ORCHID, ...)"),
    ("2001:db8::/32", "a documentation address"),
    ("3fff::/20", "a documentation address"),
    ("5f00::/16", "a segment-routing address"),
    ("fc00::/7", "a unique-local (private) address"),
    ("fe80::/10", "a link-local address"),
    ("fec0::/10", "a site-local address"),
    ("ff00::/8", "a multicast address"),
)
_V4_NETS = tuple((ipaddress.IPv4Network(net), why) for net, why in _V4_BLOCKED)
_V6_NETS = tuple((ipaddress.IPv6Network(net), why) for net, why in _V6_BLOCKED)
_V6_GLOBAL = ipaddress.IPv6Network("2000::/3")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_SIXTOFOUR = ipaddress.IPv6Network("2002::/16")
LOOPBACK_NETWORKS: tuple[Network, ...] = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))

# What may appear in a host once lowercased and IDNA-encoded: letters, digits, '-', '_' and dots.
_HOSTNAME = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))*$")
_NUMERIC_LABEL = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)$")
_URL_SHAPE = re.compile(r"^(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*)://(?P<authority>[^/?#]*)(?P<rest>[/?#].*)?$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class NetworkPolicy:
    """What one tool may reach: domain globs, plus the only ways to open non-public addresses.

    ``allowed_domains`` empty means every public host; ``*.example.com`` matches subdomains of
    example.com (not example.com itself). ``blocked_domains`` always wins. Loopback is reachable only
    with ``allow_loopback``; other non-public ranges only when ``allow_networks`` names them.
    """

    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()
    allow_loopback: bool = False
    allow_networks: tuple[str, ...] = ()
    _networks: tuple[Network, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        networks = [ipaddress.ip_network(net, strict=False) for net in self.allow_networks]
        if self.allow_loopback:
            networks.extend(LOOPBACK_NETWORKS)
        object.__setattr__(self, "_networks", tuple(networks))

    def opens(self, address: Address) -> bool:
        """Whether the config explicitly opens this (otherwise refused) address."""
        return any(address.version == net.version and address in net for net in self._networks)


@dataclass(frozen=True, slots=True)
class UrlDecision:
    allowed: bool
    reason: str
    addresses: tuple[str, ...] = ()
    host: str = ""

    def __bool__(self) -> bool:
        return self.allowed


class NetworkDenied(Exception):
    """A URL or an address was refused by the guard; carries the decision for the error message."""

    def __init__(self, decision: UrlDecision) -> None:
        self.decision = decision
        super().__init__(decision.reason)


# ------------------------------------------------------------------------------------------ addresses


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address wraps (mapped, compatible, translated, NAT64, 6to4, Teredo)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    packed = address.packed
    if packed[:12] == bytes(12) and int(address) > 1:  # ::a.b.c.d (IPv4-compatible)
        return ipaddress.IPv4Address(packed[12:])
    if packed[:8] == bytes(8) and packed[8:12] == b"\xff\xff\x00\x00":  # ::ffff:0:a.b.c.d (translated)
        return ipaddress.IPv4Address(packed[12:])
    if address in _NAT64:
        return ipaddress.IPv4Address(packed[12:])
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def address_refusal(address: Address, policy: NetworkPolicy | None = None) -> str | None:
    """Why an address may not be reached, or None when it may."""
    if policy is not None and policy.opens(address):
        return None
    if isinstance(address, ipaddress.IPv4Address):
        for v4net, why in _V4_NETS:
            if address in v4net:
                return f"{address} is {why}"
        return None
    if address.scope_id:
        return f"{address} carries a zone index"
    inner = embedded_ipv4(address)
    for v6net, why in _V6_NETS:
        if address in v6net:
            return f"{address} is {why}" + (f" wrapping {inner}" if inner is not None else "")
    if inner is not None:  # NAT64 and 6to4 reach the IPv4 address they wrap: judge that one
        inner_refusal = address_refusal(inner, policy)
        return None if inner_refusal is None else f"{address} wraps {inner}, and {inner_refusal}"
    if address not in _V6_GLOBAL:
        return f"{address} is outside the global unicast range (reserved)"
    return None


def check_addresses(host: str, addresses: Iterable[str], policy: NetworkPolicy | None = None) -> UrlDecision:
    """Every address must pass: one private answer among public ones refuses the host."""
    found = tuple(dict.fromkeys(addresses))
    if not found:
        return UrlDecision(False, f"'{host}' did not resolve to any address", (), host)
    for text in found:
        try:
            address = ipaddress.ip_address(text.split("%", 1)[0])
        except ValueError:
            return UrlDecision(False, f"'{host}' resolved to a non-address: {text!r}", found, host)
        if "%" in text:
            return UrlDecision(False, f"'{host}' resolved to a link-scoped address {text}", found, host)
        refusal = address_refusal(address, policy)
        if refusal is not None:
            return UrlDecision(False, f"'{host}' resolves to {refusal}", found, host)
    return UrlDecision(True, "allowed", found, host)


# ------------------------------------------------------------------------------------------ URLs


@dataclass(frozen=True, slots=True)
class ParsedUrl:
    scheme: str
    host: str  # lowercased, IDNA-encoded, no brackets, no trailing dot
    port: int
    literal: Address | None  # set when the host is an IP address


def _refuse(reason: str, host: str = "") -> UrlDecision:
    return UrlDecision(False, reason, (), host)


def parse_url(url: str) -> ParsedUrl | UrlDecision:
    """Read a URL the strict way, refusing anything two parsers could read differently."""
    if not isinstance(url, str) or not url:
        return _refuse("the URL is empty")
    if len(url) > 8192:
        return _refuse("the URL is longer than 8192 characters")
    if any(ord(ch) < 0x21 or ord(ch) == 0x7F for ch in url):
        return _refuse("the URL contains whitespace or control characters")
    if "\\" in url:
        return _refuse("the URL contains a backslash (parsers disagree on what it means)")
    match = _URL_SHAPE.match(url)
    if match is None:
        return _refuse("the URL is not of the form scheme://host/path")
    scheme = match["scheme"].lower()
    if scheme not in ALLOWED_SCHEMES:
        return _refuse(f"the scheme '{scheme}' is not allowed; only http and https are")
    authority = match["authority"]
    if "@" in authority:
        return _refuse("the URL carries credentials (user@host), which parsers disagree on; send them in a header")
    if "%" in authority:
        return _refuse("the host contains percent-encoding")
    host, port_text = _split_host_port(authority)
    if host is None:
        return _refuse(f"the host part {authority!r} is malformed")
    port = 443 if scheme == "https" else 80
    if port_text is not None:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            return _refuse(f"the port {port_text!r} is not a number from 1 to 65535")
        port = int(port_text)
    if host.startswith("["):
        try:
            literal: Address = ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return _refuse(f"{host} is not a valid IPv6 address")
        return ParsedUrl(scheme, str(literal), port, literal)
    return _parse_name(scheme, host, port)


def _split_host_port(authority: str) -> tuple[str | None, str | None]:
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            return None, None
        host, rest = authority[: end + 1], authority[end + 1 :]
        if rest and not rest.startswith(":"):
            return None, None
        return host, (rest[1:] if rest else None)
    if authority.count(":") > 1:
        return None, None
    host, _, port = authority.partition(":")
    return (host or None), (port if ":" in authority else None)


def _parse_name(scheme: str, host: str, port: int) -> ParsedUrl | UrlDecision:
    try:
        name = host.encode("idna").decode("ascii").lower() if not host.isascii() else host.lower()
    except UnicodeError:
        return _refuse(f"the host {host!r} is not a valid internationalised domain name")
    name = name[:-1] if name.endswith(".") else name
    if not name or len(name) > 253 or not _HOSTNAME.match(name):
        return _refuse(f"the host {host!r} is not a valid host name")
    labels = name.split(".")
    if _NUMERIC_LABEL.match(labels[-1]):
        # A host ending in a number is an IPv4 address to browsers and to getaddrinfo; only the plain
        # dotted-quad spelling is accepted, never decimal, octal, hex or short forms.
        try:
            literal = ipaddress.IPv4Address(name)
        except ValueError:
            return _refuse(f"'{host}' is an unusual spelling of an IP address (decimal, octal, hex or short form)")
        return ParsedUrl(scheme, str(literal), port, literal)
    return ParsedUrl(scheme, name, port, None)


def domain_matches(pattern: str, host: str) -> bool:
    """``example.com`` matches itself; ``*.example.com`` matches its subdomains; ``*`` matches any host."""
    pattern = pattern.strip().lower().rstrip(".")
    if pattern == "*":
        return True
    if pattern.startswith("*."):
        return host.endswith(pattern[1:]) and len(host) > len(pattern) - 1
    return fnmatch.fnmatchcase(host, pattern)


def check_host(parsed: ParsedUrl, policy: NetworkPolicy) -> UrlDecision | None:
    """The checks that need no DNS: domain lists and literal addresses. None when DNS must decide."""
    host = parsed.host
    for pattern in policy.blocked_domains:
        if domain_matches(pattern, host):
            return _refuse(f"'{host}' is blocked by the domain blocklist ({pattern})", host)
    if policy.allowed_domains and not any(domain_matches(p, host) for p in policy.allowed_domains):
        shown = ", ".join(policy.allowed_domains[:10])
        return _refuse(f"'{host}' is not in the domain allowlist ({shown})", host)
    if parsed.literal is not None:
        refusal = address_refusal(parsed.literal, policy)
        if refusal is not None:
            return _refuse(f"the URL names a refused address: {refusal}", host)
        return UrlDecision(True, "allowed", (str(parsed.literal),), host)
    if (host == "localhost" or host.endswith(".localhost")) and not policy.allow_loopback:
        return _refuse(f"'{host}' is a loopback name", host)
    return None


def system_resolver(host: str) -> list[str]:
    """Every address the system resolver gives for ``host`` (blocking; call it from a worker thread)."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise LookupError(f"cannot resolve '{host}': {exc}") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def check_url(url: str, *, resolver: Resolver | None = None, policy: NetworkPolicy | None = None) -> UrlDecision:
    """Decide whether ``url`` may be fetched, resolving its host once; never opens a connection.

    ``resolver(host) -> list[str]`` stands in for DNS (tests inject one); the default is the system's.
    """
    policy = policy or NetworkPolicy()
    parsed = parse_url(url)
    if isinstance(parsed, UrlDecision):
        return parsed
    early = check_host(parsed, policy)
    if early is not None:
        return early
    try:
        addresses = (resolver or system_resolver)(parsed.host)
    except LookupError as exc:
        return _refuse(str(exc), parsed.host)
    return check_addresses(parsed.host, addresses, policy)


def policy_from(
    allowed_domains: Sequence[str] = (),
    blocked_domains: Sequence[str] = (),
    allow_loopback: bool = False,
    allow_networks: Sequence[str] = (),
) -> NetworkPolicy:
    return NetworkPolicy(tuple(allowed_domains), tuple(blocked_domains), allow_loopback, tuple(allow_networks))


class NetworkSettings(BaseModel):
    """The reach settings every networked tool's config shares (fetch_url, web_search, webhook)."""

    model_config = ConfigDict(extra="forbid")

    allowed_domains: Annotated[list[str], Narrow.INTERSECT] = Field(
        default_factory=list, description="Hosts the tool may reach ('example.com', '*.github.com'); empty: any."
    )
    blocked_domains: Annotated[list[str], Narrow.UNION] = Field(
        default_factory=list, description="Hosts refused even when allowed."
    )
    allow_loopback: bool = Field(default=False, description="Let the tool reach 127.0.0.0/8 and ::1.")
    allow_networks: list[str] = Field(
        default_factory=list, description="Non-public networks the tool may reach, as CIDRs ('10.1.0.0/16')."
    )

    @field_validator("allow_networks")
    @classmethod
    def _cidrs(cls, value: list[str]) -> list[str]:
        for net in value:
            try:
                ipaddress.ip_network(net, strict=False)
            except ValueError:
                raise ValueError(f"{net!r} is not a network in CIDR notation (like 10.0.0.0/8)") from None
        return value

    def policy(self) -> NetworkPolicy:
        return policy_from(self.allowed_domains, self.blocked_domains, self.allow_loopback, self.allow_networks)

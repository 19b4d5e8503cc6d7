"""SOCKS5 for the egress proxy (RFC 1928, CONNECT; RFC 1929 user/password when the proxy has a credential).

Trust model: the client is a confined command. The exchange is read within a byte cap (a greeting and a
request are under 300 bytes) and the caller's deadline; anything but CONNECT with the one method the proxy
takes ("no authentication", or user/password with the command's own credential) is answered with the
protocol's refusal code and the connection closed. The destination becomes a URL the
network guard decides exactly as it decides an HTTP CONNECT.
"""

from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass

import anyio
import anyio.abc

VERSION = 0x05
SUCCEEDED = 0x00
GENERAL_FAILURE = 0x01
NOT_ALLOWED = 0x02  # "connection not allowed by ruleset": the guard refused
HOST_UNREACHABLE = 0x04
COMMAND_NOT_SUPPORTED = 0x07
ADDRESS_NOT_SUPPORTED = 0x08
_NO_AUTH = 0x00
_USER_PASSWORD = 0x02
_NO_METHOD = 0xFF
_CONNECT = 0x01


class SocksError(Exception):
    """The exchange cannot go on; ``code`` is the reply owed, or None when the client gets no reply."""

    def __init__(self, code: int | None, message: str) -> None:
        self.code = code
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class SocksTarget:
    host: str  # a name, or an address as the guard spells it
    port: int
    rest: bytes  # bytes the client sent after its request (its first payload)

    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{host}:{self.port}/"


class _Reader:
    """Exactly ``n`` bytes at a time from a stream, with what was read ahead kept."""

    def __init__(self, stream: anyio.abc.ByteReceiveStream, first: bytes) -> None:
        self.stream = stream
        self.buffer = bytearray(first)

    async def take(self, n: int) -> bytes:
        while len(self.buffer) < n:
            try:
                self.buffer += await self.stream.receive(512)
            except anyio.EndOfStream:
                raise SocksError(None, "the client left during the SOCKS exchange") from None
            if len(self.buffer) > 1024:
                raise SocksError(GENERAL_FAILURE, "the SOCKS exchange is too long")
        taken = bytes(self.buffer[:n])
        del self.buffer[:n]
        return taken


async def read_request(stream: anyio.abc.ByteStream, first: bytes, credential: str | None = None) -> SocksTarget:
    """Greet and read one CONNECT request; raises ``SocksError`` otherwise.

    With ``credential`` the client must log in as ``toolrig`` with it (RFC 1929), else no authentication.
    """
    reader = _Reader(stream, first)
    version, count = await reader.take(2)
    methods = await reader.take(count)
    method = _NO_AUTH if credential is None else _USER_PASSWORD
    if version != VERSION or method not in methods:
        await stream.send(bytes((VERSION, _NO_METHOD)))
        raise SocksError(None, "the client offers no SOCKS5 method this proxy takes")
    await stream.send(bytes((VERSION, method)))
    if credential is not None:
        await _log_in(stream, reader, credential)
    version, command, _reserved, kind = await reader.take(4)
    if version != VERSION:
        raise SocksError(GENERAL_FAILURE, "the request is not SOCKS5")
    if kind == 0x01:
        host = str(ipaddress.IPv4Address(await reader.take(4)))
    elif kind == 0x04:
        host = str(ipaddress.IPv6Address(await reader.take(16)))
    elif kind == 0x03:
        (length,) = await reader.take(1)
        raw = await reader.take(length)
        if not raw or not all(0x21 <= byte < 0x7F for byte in raw):
            raise SocksError(GENERAL_FAILURE, "the host name is empty or not printable ASCII")
        host = raw.decode("ascii")
    else:
        raise SocksError(ADDRESS_NOT_SUPPORTED, f"address type {kind} is not supported")
    port = int.from_bytes(await reader.take(2), "big")
    if command != _CONNECT:
        raise SocksError(COMMAND_NOT_SUPPORTED, "only CONNECT is supported (no BIND, no UDP)")
    return SocksTarget(host, port, bytes(reader.buffer))


async def _log_in(stream: anyio.abc.ByteStream, reader: _Reader, credential: str) -> None:
    """RFC 1929: version 1, user, password; anything but ``toolrig`` and the credential ends the exchange."""
    version, length = await reader.take(2)
    user = await reader.take(length)
    (length,) = await reader.take(1)
    password = await reader.take(length)
    good = version == 1 and user == b"toolrig" and hmac.compare_digest(password, credential.encode())
    await stream.send(bytes((1, 0 if good else 1)))
    if not good:
        raise SocksError(None, "the SOCKS5 login is not this command's")


def reply(code: int) -> bytes:
    """A reply with an unspecified bound address: clients do not need it for CONNECT."""
    return bytes((VERSION, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0))

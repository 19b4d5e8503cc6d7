"""The wire of the egress proxy: one HTTP proxy request head read within bounds, and the proxy's own answers.

Trust model: every byte comes from a command toolrig confines, so it is hostile. A head is read only up to a
size cap and parsed strictly (one request line, ``name: value`` headers, CRLF only, no folding, no NUL or bare
CR); anything else is a ``BadRequest`` the proxy answers with a 4xx and a closed connection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import anyio
import anyio.abc

_REQUEST_LINE = re.compile(rb"^([A-Z]{1,20}) ([\x21-\x7e]{1,8192}) HTTP/1\.([01])$")
_HEADER = re.compile(rb"^([!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}):[ \t]*(.*?)[ \t]*$")
# Headers that describe one hop (RFC 9110 7.6.1), plus the proxy's own: never forwarded to the origin.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "proxy-connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "upgrade",
        "host",
    }
)
_REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    407: "Proxy Authentication Required",
    405: "Method Not Allowed",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


class BadRequest(Exception):
    """A request the proxy will not read further; ``status`` is the answer it gets."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class ProxyRequest:
    """One parsed request head: ``target`` is ``host:port`` for CONNECT, an absolute URL otherwise."""

    method: str
    target: str
    minor_version: int
    headers: tuple[tuple[str, str], ...]

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)


async def read_head(stream: anyio.abc.ByteReceiveStream, first: bytes, max_bytes: int) -> tuple[bytes, bytes] | None:
    """The bytes up to the blank line, and whatever came after it; None when the client left without a word.

    Reads at most ``max_bytes`` (plus one chunk's slack) whatever the client sends, and searches only the new
    bytes for the end of the head, so a client trickling one byte at a time costs linear work, not quadratic.
    """
    buffer = bytearray(first)
    searched = 0
    while True:
        end = buffer.find(b"\r\n\r\n", max(0, searched - 3))
        if end >= 0:
            return bytes(buffer[:end]), bytes(buffer[end + 4 :])
        if len(buffer) > max_bytes:
            raise BadRequest(431, f"the request head is longer than {max_bytes} bytes")
        searched = len(buffer)
        try:
            chunk = await stream.receive(max_bytes + 4 - len(buffer) if len(buffer) < max_bytes else 4)
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            if not buffer:
                return None
            raise BadRequest(400, "the connection ended inside the request head") from None
        buffer += chunk


def parse_head(head: bytes, max_headers: int) -> ProxyRequest:
    """Read a request head the strict way: anything two HTTP parsers could read differently is refused."""
    if b"\x00" in head or b"\r" in head.replace(b"\r\n", b""):
        raise BadRequest(400, "the request head contains a NUL or a bare CR")
    lines = head.split(b"\r\n")
    match = _REQUEST_LINE.match(lines[0])
    if match is None:
        raise BadRequest(400, "the request line is not 'METHOD TARGET HTTP/1.x'")
    if len(lines) - 1 > max_headers:
        raise BadRequest(431, f"the request has more than {max_headers} headers")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        field = _HEADER.match(line)
        if field is None:
            raise BadRequest(400, "a header line is malformed (folded, no colon, or a bad name)")
        headers.append((field[1].decode("ascii"), field[2].decode("latin-1")))
    return ProxyRequest(match[1].decode("ascii"), match[2].decode("ascii"), int(match[3]), tuple(headers))


def origin_head(request: ProxyRequest, authority: str, path: str) -> bytes:
    """The head sent to the origin for an absolute-form request: origin-form target, its own Host, one request.

    ``Host`` is rewritten to the URL's authority so a plain-HTTP request cannot name one (checked) host in the
    URL and another in the header (domain fronting); hop-by-hop headers stay with the proxy; ``Connection:
    close`` makes the origin end the exchange, so the relay that follows carries one response.
    """
    named = {token.strip().lower() for value in _values(request, "connection") for token in value.split(",")}
    kept = [
        f"{name}: {value}"
        for name, value in request.headers
        if name.lower() not in _HOP_BY_HOP and name.lower() not in named
    ]
    lines = [f"{request.method} {path} HTTP/1.{request.minor_version}", f"Host: {authority}", *kept]
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _values(request: ProxyRequest, name: str) -> list[str]:
    return [value for key, value in request.headers if key.lower() == name]


def answer(status: int, message: str) -> bytes:
    """The proxy's own response: plain text the command (and the model reading its output) can act on."""
    body = (message.rstrip("\n") + "\n").encode("utf-8", "replace")
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n"
        + ('Proxy-Authenticate: Basic realm="toolrig"\r\n' if status == 407 else "")
        + "X-Toolrig-Egress: guard\r\n\r\n"
    )
    return head.encode("ascii") + body


CONNECTED = b"HTTP/1.1 200 Connection established\r\n\r\n"

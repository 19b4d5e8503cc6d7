"""Replies from a remote MCP server, each read only up to the size one MCP message may be.

The SDK's streamable HTTP client bounds each SSE event, but reads a plain JSON reply whole, however long,
before it looks at it: one reply from a hostile or broken server could make toolrig hold any amount of
memory. This transport counts a reply's bytes as they arrive and stops it past the limit; the SDK turns the
error into a JSON-RPC error for that request, so the call fails with a message and the session goes on.

A compressed reply is counted as it decodes (a few kilobytes of gzip can decode to gigabytes), so it is
decoded here, in bounded steps, rather than by httpx; requests ask for none, and a reply in an encoding that
cannot be decoded in bounded steps here (brotli, zstd: nobody asked for them) is refused.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator

import httpx2

TOO_LARGE = "the server's reply is over"  # how the refusal begins: the client tells it from other failures


class MessageTooLarge(httpx2.StreamError):
    """A reply longer than the limit, or in an encoding nobody asked for."""


class BoundedReplies(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.headers["accept-encoding"] = "identity"
        response = await self._inner.handle_async_request(request)
        stream = response.stream
        if not isinstance(stream, httpx2.AsyncByteStream):  # an async transport's never is: nothing to bound here
            return response
        if response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            return response  # a stream of messages, each bounded (decoded) by the SDK's event limit
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding != "identity":
            del response.headers["content-encoding"]  # decoded below, and counted as it decodes
        response.stream = _Capped(stream, self._limit, encoding)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Capped(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, limit: int, encoding: str) -> None:
        self._inner = inner
        self._limit = limit
        self._encoding = encoding

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._encoding in ("gzip", "x-gzip", "deflate"):
            decoder = zlib.decompressobj(wbits=47)  # gzip or zlib, told apart by their header
        elif self._encoding != "identity":
            raise MessageTooLarge(f"the server sent its reply in {self._encoding!r}, which was not asked for")
        else:
            decoder = None
        seen = 0
        async for raw in self._inner:
            while raw:
                if decoder is None:
                    chunk, raw = raw, b""
                else:  # never more than the limit allows, however much the input would make
                    chunk = decoder.decompress(raw, self._limit - seen + 1)
                    raw = decoder.unconsumed_tail
                seen += len(chunk)
                if seen > self._limit:
                    raise MessageTooLarge(f"{TOO_LARGE} {self._limit:,} bytes, the most one MCP message may be")
                yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()

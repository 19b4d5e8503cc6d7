"""A remote MCP server's replies are read only up to the size one MCP message may be (4 MiB), as JSON or as SSE."""

from __future__ import annotations

import gzip
import itertools
import os
import sys
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.mcp_peers import ROOT, running
from toolrig.rig import Rig
from toolrig.sources import MAX_MESSAGE_BYTES
from toolrig.sources.mcp_bounded import TOO_LARGE, MessageTooLarge, _Capped

pytestmark = pytest.mark.anyio


@contextmanager
def big_server(mode: str, *extra: str) -> Iterator[str]:
    args = [sys.executable, str(ROOT / "tests" / "support" / "mcp_big_reply_server.py"), mode, *extra]
    with running(args, env={**os.environ, "PYTHONPATH": str(ROOT)}) as process:
        assert process.stderr is not None
        line = process.stderr.readline()
        if "listening on" not in line:
            pytest.fail(f"the server did not start: {line}{process.stderr.read()}")
        yield line.rsplit(" ", 1)[1].strip()


@pytest.mark.parametrize("mode", ["json", "sse"])
async def test_a_reply_over_the_limit_fails_its_call_and_the_server_stays_usable(mode: str, workspace: Path) -> None:
    with big_server(mode) as url:
        async with Rig(workspace, config={"mcp_servers": {"far": {"url": url}}}) as rig:
            refused = await rig.call("far__big", {"size": MAX_MESSAGE_BYTES + 1000})
            assert refused.is_error, refused
            # Within the limit, and past the SDK's own 1 MiB for an SSE event: one limit, either way.
            within = await rig.call("far__big", {"size": 1536 * 1024})  # twice in the reply: text and structured
            assert not within.is_error, within
            assert within.meta.output_bytes > 1536 * 1024  # all of it arrived (the result shows the first part)


async def test_a_json_reply_over_the_limit_is_refused_as_too_large_with_a_message_that_says_so(workspace: Path) -> None:
    with big_server("json") as url:
        async with Rig(workspace, config={"mcp_servers": {"far": {"url": url}}}) as rig:
            refused = await rig.call("far__big", {"size": MAX_MESSAGE_BYTES + 1000})
    assert refused.error_type == "too_large", refused
    assert f"over {MAX_MESSAGE_BYTES:,} bytes" in str(refused.message) and refused.next_action_hint


async def test_a_compressed_reply_is_counted_as_it_decodes_so_a_small_bomb_is_refused(workspace: Path) -> None:
    # The server gzips whatever is over 100 kB, though the request asked for no compression.
    with big_server("json", "--gzip-over", "100000") as url:
        async with Rig(workspace, config={"mcp_servers": {"far": {"url": url}}}) as rig:
            # ~40 MB of reply is ~40 kB gzipped: counting the bytes as sent would let it through.
            refused = await rig.call("far__big", {"size": 20_000_000})
            assert refused.error_type == "too_large", refused
            within = await rig.call("far__big", {"size": 1_000_000})  # compressed, within the limit: decoded
            assert not within.is_error, within
            assert within.meta.output_bytes > 1_000_000  # all of it arrived (the result shows the first part)


class _Chunks(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


def _encode(data: bytes, encoding: str) -> bytes:
    if encoding == "identity":
        return data
    if encoding == "gzip":
        return gzip.compress(data)
    return zlib.compress(data)  # HTTP's "deflate" is zlib's format


@given(
    data=st.binary(max_size=3000) | st.integers(min_value=0, max_value=300_000).map(lambda n: b"x" * n),
    encoding=st.sampled_from(["identity", "gzip", "deflate"]),
    limit=st.integers(min_value=1, max_value=4000),
    cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=8),
)
def test_a_reply_comes_through_whole_within_the_limit_and_never_past_it_however_it_is_encoded_or_cut(
    data: bytes, encoding: str, limit: int, cuts: list[int]
) -> None:
    sent = _encode(data, encoding)
    bounds = sorted({0, len(sent), *(c for c in cuts if c <= len(sent))})
    stream = _Capped(_Chunks([sent[a:b] for a, b in itertools.pairwise(bounds)]), limit, encoding)
    got = bytearray()

    async def read() -> None:
        async for chunk in stream:
            got.extend(chunk)
            assert len(got) <= limit  # nothing past the limit is ever handed on

    if len(data) <= limit:
        anyio.run(read)
        assert bytes(got) == data
    else:
        with pytest.raises(MessageTooLarge, match=TOO_LARGE):
            anyio.run(read)


def test_a_reply_in_an_encoding_nobody_asked_for_and_none_can_bound_is_refused() -> None:
    stream = _Capped(_Chunks([b"\x00" * 10]), 1000, "br")

    async def read() -> None:
        async for _ in stream:
            pass

    with pytest.raises(MessageTooLarge, match="'br', which was not asked for"):
        anyio.run(read)

"""MCP's stdio framing (``sources/mcp_lines``), shared by our stdio server and our stdio client: whole lines out of
any split of the pipe, in linear work, and a line over the limit never held, only its length and its ends."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st


@given(
    messages=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=12),
    ends_open=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=600), max_size=20),
)
def test_the_reader_cuts_lines_the_same_for_any_way_the_pipe_splits_them(
    messages: list[bytes], ends_open: bool, cuts: list[int]
) -> None:
    from toolrig.sources.mcp_lines import Lines

    stream = b"\n".join(messages) + (b"" if ends_open or not messages else b"\n")
    bounds = sorted({0, len(stream), *(c for c in cuts if c <= len(stream))})
    split, lines = Lines(), []
    for start, end in itertools.pairwise(bounds):
        lines.extend(split.feed(stream[start:end]))
    expected = stream.split(b"\n")[:-1]  # the last piece has no newline yet
    assert lines == expected


def test_a_long_line_is_kept_as_the_pieces_it_came_in_until_its_newline_joins_it_once() -> None:
    """A line longer than a read is never copied per read (that cost the square of its length: 64 MB took 61 s)."""
    from toolrig.sources.mcp_lines import Lines

    split = Lines(limit=1 << 30)  # within the limit: a line this long is a message, not a refusal
    chunks = [bytes([65 + i % 26]) * 65536 for i in range(64)]
    for chunk in chunks:
        assert split.feed(chunk) == []
    assert all(kept is fed for kept, fed in zip(split._pieces, chunks, strict=True))  # as read, not re-copied
    assert split.feed(b'"}\n{"id": 2}\n{"id') == [b"".join(chunks) + b'"}', b'{"id": 2}']
    assert split._pieces == [b'{"id']


@given(
    messages=st.lists(st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")), max_size=12),
    ends_open=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=800), max_size=20),
    limit=st.integers(min_value=1, max_value=50),
)
def test_a_line_over_the_limit_comes_out_as_its_head_and_length_and_is_never_held_whole(
    messages: list[bytes], ends_open: bool, cuts: list[int], limit: int
) -> None:
    from toolrig.sources import mcp_lines
    from toolrig.sources.mcp_lines import Lines, Oversized

    stream = b"\n".join(messages) + (b"" if ends_open or not messages else b"\n")
    bounds = sorted({0, len(stream), *(c for c in cuts if c <= len(stream))})
    split, lines = Lines(limit), []
    for start, end in itertools.pairwise(bounds):
        lines.extend(split.feed(stream[start:end]))
        assert sum(map(len, split._pieces)) <= limit  # the open line is kept only while it is within the limit
    seen = [(line.head, line.size) if isinstance(line, Oversized) else line for line in lines]
    expected = [
        (line[: mcp_lines._HEAD], len(line)) if len(line) > limit else line for line in stream.split(b"\n")[:-1]
    ]
    assert seen == expected


def test_an_oversized_line_keeps_only_its_head_however_long_it_grows() -> None:
    from toolrig.sources import mcp_lines
    from toolrig.sources.mcp_lines import Lines, Oversized

    split = Lines(100_000)
    head = b'{"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"arguments": {"text": "'
    assert split.feed(head) == []
    for _ in range(200):  # 13 MB, in pipe-sized reads
        assert split.feed(b"x" * 65536) == []
        assert split._pieces == [] or sum(map(len, split._pieces)) <= 100_000
    [cut, after] = split.feed(b'"}}}\n{"id": 2}\n')
    assert isinstance(cut, Oversized) and cut.size == len(head) + 200 * 65536 + 4
    assert cut.head == (head + b"x" * mcp_lines._HEAD)[: mcp_lines._HEAD]
    assert after == b'{"id": 2}'


ids = st.one_of(st.integers(min_value=-(10**17), max_value=10**17), st.text(max_size=30))


@given(request_id=ids, python_order=st.booleans(), spaced=st.booleans())
def test_the_id_of_an_oversized_answer_is_read_at_either_end(
    request_id: int | str, python_order: bool, spaced: bool
) -> None:
    """The Python SDK writes the id first, the TypeScript SDK last: either way the refusal reaches the request."""
    from toolrig.sources.mcp_lines import Lines, Oversized

    result = {"content": [{"type": "text", "text": "x" * 40_000, "id": 7}], "id": 8}  # ids inside are not its id
    message = {"jsonrpc": "2.0", "id": request_id, "result": result}
    if not python_order:
        message = {"result": result, "jsonrpc": "2.0", "id": request_id}
    line = json.dumps(message, separators=None if spaced else (",", ":")).encode()
    split = Lines(10_000)
    cut = [*split.feed(line[:5000]), *split.feed(line[5000:] + b"\n")]
    assert len(cut) == 1 and isinstance(cut[0], Oversized)
    assert cut[0].request_id() == request_id and cut[0].kind() == "answer"


@pytest.mark.parametrize(
    "tail",
    [
        b'"x", "more": {"id": 5}}',  # the last member's value is an object whose id is not the message's
        b'"x", "text": "\\"id\\": 5}"}',  # a string that ends like an id
        b'"x", "id": 5}}',  # one brace too many: the id of something nested
        b'"x", "id": true}',  # not a JSON-RPC id
        b'"x", "id": 5',  # no end
        b"",
    ],
)
def test_an_id_that_is_not_the_messages_own_is_not_read_from_the_tail(tail: bytes) -> None:
    from toolrig.sources.mcp_lines import Oversized

    assert Oversized(b'{"result": {"text": "xxxx', 10_000_000, tail).request_id() is None


def test_an_oversized_request_or_notification_is_told_from_an_answer_and_from_what_is_neither() -> None:
    from toolrig.sources.mcp_lines import Oversized

    notice = b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "xx'
    assert Oversized(notice, 9).kind() == "message"
    assert Oversized(b'{"result": {"content": [{"text": "xx', 9).kind() == "answer"
    assert Oversized(b'{"jsonrpc": "2.0", "id": 3, "error": {"message": "xx', 9).kind() == "answer"
    assert Oversized(b"xxxxxxxxxx", 9).kind() is None  # a line a server printed for nobody
    assert Oversized(b"\xff not json", 9).kind() is None
    assert Oversized(b'{"jsonrpc": "2.0", "params": {"x": "xx', 9).kind() is None
    deep = b'{"jsonrpc": "2.0", "method": "notifications/message", "params": ' + b"[" * 16_000
    assert Oversized(deep, 9).kind() is None  # too deep to read: not taken for anything


@pytest.mark.parametrize(("cut", "whole"), [(b'"id": 12', 12), (b'"id":1', 1), (b'"id": -4', -4), (b'"id": 1e1', None)])
def test_an_id_cut_short_by_the_head_is_not_read_as_a_shorter_one(cut: bytes, whole: int | None) -> None:
    from toolrig.sources.mcp_lines import Oversized

    head = b'{"jsonrpc": "2.0", "_pad": "' + b"x" * 100 + b'", ' + cut  # the id went on past the head's end
    assert Oversized(head, 9_000_000).request_id() is None
    assert Oversized(head + b', "result": {"t": "xx', 9_000_000).request_id() == whole  # a whole one is read


@given(pieces=st.lists(st.integers(min_value=1, max_value=3000), min_size=1, max_size=30))
def test_the_tail_kept_is_the_lines_last_bytes_however_it_arrived(pieces: list[int]) -> None:
    from toolrig.sources import mcp_lines
    from toolrig.sources.mcp_lines import Lines, Oversized

    line = bytes(65 + i % 26 for i in range(sum(pieces)))
    split, out, at = Lines(limit=1000), [], 0
    for size in pieces:
        out.extend(split.feed(line[at : at + size]))
        at += size
    out.extend(split.feed(b"\n"))
    [cut] = out
    if len(line) <= 1000:
        assert cut == line
    else:
        assert isinstance(cut, Oversized) and cut.size == len(line)
        assert cut.tail == line[-mcp_lines._TAIL :] and cut.head == line[: mcp_lines._HEAD]

"""MCP's stdio framing, one JSON-RPC message per line, read in bounded memory: our server's and our client's.

Either end of a stdio connection may be hostile or broken: a client that sends one endless line to our server,
a server (a package from a registry, started from trusted config) that answers our client with one. Both ends
cut lines here, so one message bounds what the peer can make toolrig hold, as the TypeScript SDK's transports
bound theirs (the Python SDK's read stdio lines whole, joining each chunk to the line so far).
"""

from __future__ import annotations

import re

from pydantic_core import from_json  # already loaded by toolrig's core: the stdio server starts without the SDK

from toolrig.sources import MAX_MESSAGE_BYTES

_HEAD = 16_384  # what is kept of an oversized line's start: enough for its id, which most peers send first
_TAIL = 256  # and of its end: the TypeScript SDK writes an answer as {result, jsonrpc, id}, the id last

# The id as the last member of the top-level object: exactly one closing brace after it, and a comma or the
# opening brace before it (inside a string the quotes are escaped, so a quoted '"id":' never matches).
_LAST_ID = re.compile(rb'[,{]\s*"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")\s*\}\s*\Z')


class Oversized:
    """A line longer than a message may be: its length and a little of each end (to find its id), never the rest."""

    __slots__ = ("head", "size", "tail")

    def __init__(self, head: bytes, size: int, tail: bytes = b"") -> None:
        self.head = head
        self.size = size
        self.tail = tail

    def request_id(self) -> int | str | None:
        """The message's id when its top level names one near either end (JSON-RPC's null when not)."""
        start = self._start()
        found = start.get("id") if start is not None else None
        if type(found) is int or type(found) is str:
            return found
        last = _LAST_ID.search(self.tail)
        if last is None:
            return None
        try:
            value = from_json(last.group(1))
        except ValueError:
            return None
        return value if type(value) is int or type(value) is str else None

    def kind(self) -> str | None:
        """What its head shows it is: a ``"message"``, an ``"answer"``, or None (no JSON-RPC object, it seems).

        A message has a ``method`` (a request or a notification); an answer a ``result`` or an ``error`` and no
        method. Only an answer may be charged to a request waiting for one: a debug line a server printed, or a head too
        deeply nested to read, is not.
        """
        start = self._start()
        if start is None:
            return None
        if "method" in start:
            return "message"
        return "answer" if "result" in start or "error" in start else None

    def _start(self) -> dict[str, object] | None:
        # An unfinished string at the cut is dropped by the parser, not guessed; an unfinished number is not, so
        # trailing digits go first: '"id": 12' cut from '"id": 123' must not read as 12.
        try:
            start = from_json(self.head.rstrip(b"0123456789"), allow_partial=True)
        except ValueError:
            return None
        return start if isinstance(start, dict) else None


class Lines:
    """Whole lines out of the chunks a pipe delivers, in work linear in their length however long a line is.

    A line still open is kept as the pieces it came in, joined once when its newline arrives: joining it to each
    new chunk instead copied and searched the whole pending line on every 64 KiB read, so a peer sending one
    long line (64 MB: 61 s of CPU on the loop, measured) cost the square of its length. A line longer than
    ``limit`` is not kept past its ends: it comes out as ``Oversized``.
    """

    __slots__ = ("_cut", "_pieces", "_size", "_tail", "limit")

    def __init__(self, limit: int = MAX_MESSAGE_BYTES) -> None:
        self.limit = limit
        self._pieces: list[bytes] = []  # the open line so far, while it is within the limit
        self._size = 0  # the open line's length so far
        self._cut: bytes | None = None  # the open line's head, once it is over the limit
        self._tail = b""  # the open line's last bytes, once it is over the limit

    def feed(self, chunk: bytes) -> list[bytes | Oversized]:
        *done, rest = chunk.split(b"\n")
        lines: list[bytes | Oversized] = []
        if done:
            if self._size:
                self._add(done[0])
                lines.append(self._close())
                del done[0]
            limit = self.limit
            lines.extend(
                line if len(line) <= limit else Oversized(line[:_HEAD], len(line), line[-_TAIL:]) for line in done
            )
        if rest:
            self._add(rest)
        return lines

    def _add(self, piece: bytes) -> None:
        self._size += len(piece)
        if self._cut is not None:
            if len(self._cut) < _HEAD:  # a limit under the head's length: the head still fills up
                self._cut += piece[: _HEAD - len(self._cut)]
            self._tail = (self._tail + piece[-_TAIL:])[-_TAIL:]
            return
        self._pieces.append(piece)
        if self._size > self.limit:
            head, kept = [], 0
            for kept_piece in self._pieces:  # only as much as the head needs is joined
                head.append(kept_piece)
                kept += len(kept_piece)
                if kept >= _HEAD:
                    break
            tail, kept = [], 0
            for kept_piece in reversed(self._pieces):  # and as much as the tail needs
                tail.append(kept_piece)
                kept += len(kept_piece)
                if kept >= _TAIL:
                    break
            self._cut, self._tail, self._pieces = b"".join(head)[:_HEAD], b"".join(reversed(tail))[-_TAIL:], []

    def _close(self) -> bytes | Oversized:
        if self._cut is None:
            line: bytes | Oversized = b"".join(self._pieces)
        else:
            line = Oversized(self._cut, self._size, self._tail)
        self._pieces, self._size, self._cut, self._tail = [], 0, None, b""
        return line

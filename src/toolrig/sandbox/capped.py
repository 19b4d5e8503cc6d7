"""Bounded, decoded, escape-free text of a command's output stream (part of ``process``; its trust model)."""

from __future__ import annotations

import codecs
import re
from collections import deque

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|[@-OQ-WYZ\\])")
_CARRY_LIMIT = 256


class CappedText:
    """Decoded, ANSI-free text of a stream, keeping only its head and tail: memory stays bounded.

    What falls between is counted, and ``text()`` puts a marker saying how much was dropped in its place.
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._head_cap = cap // 2
        self._tail_cap = cap - self._head_cap
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self.dropped = 0
        self.bytes_seen = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._carry = ""

    def feed(self, data: bytes) -> None:
        self.bytes_seen += len(data)
        self._add(self._clean(self._decoder.decode(data)))

    def close(self) -> None:
        rest = self._carry + self._decoder.decode(b"", final=True)
        self._carry = ""
        self._add(_ANSI.sub("", rest).replace("\x1b", ""))

    def _clean(self, text: str) -> str:
        text = self._carry + text
        self._carry = ""
        cut = text.rfind("\x1b")
        if cut >= 0 and len(text) - cut < _CARRY_LIMIT and _ANSI.match(text, cut) is None:
            text, self._carry = text[:cut], text[cut:]  # an escape sequence split across reads
        return _ANSI.sub("", text).replace("\x1b", "") if "\x1b" in text else text

    def _add(self, text: str) -> None:
        if not text:
            return
        room = self._head_cap - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += min(room, len(text))
            text = text[room:]
            if not text:
                return
        if len(text) >= self._tail_cap:
            self.dropped += self._tail_len + len(text) - self._tail_cap
            self._tail = deque([text[-self._tail_cap :]])
            self._tail_len = self._tail_cap
            return
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail_len > self._tail_cap:
            first = self._tail[0]
            excess = self._tail_len - self._tail_cap
            if len(first) <= excess:
                self._tail.popleft()
                self._tail_len -= len(first)
                self.dropped += len(first)
            else:
                self._tail[0] = first[excess:]
                self._tail_len -= excess
                self.dropped += excess

    def text(self) -> str:
        head = "".join(self._head)
        tail = "".join(self._tail)
        if not self.dropped:
            return head + tail
        return f"{head}\n[... {self.dropped:,} characters dropped from the middle ...]\n{tail}"

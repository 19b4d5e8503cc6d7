r"""Text files as the file tools see them: encoding, line endings, hashes, numbered views and diffs.

Edits work on text with ``\\n`` line endings and are written back in the file's own encoding and line
ending, so a CRLF file stays CRLF and a UTF-16 file stays UTF-16 whatever the model typed.
"""

from __future__ import annotations

import codecs
import difflib
import hashlib
import operator
import threading
from dataclasses import dataclass

SNIFF_BYTES = 8192
MAX_LINE_CHARS = 2000
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_CONTROLS = bytes(byte for byte in range(32) if byte not in b"\t\n\r\f\v\x1b")  # control bytes text rarely has


@dataclass(frozen=True, slots=True)
class TextFile:
    r"""A decoded file: ``text`` uses ``\\n`` line endings when ``newline`` is ``\\r\\n``."""

    text: str
    encoding: str
    newline: str

    def encode(self, text: str) -> bytes:
        r"""``text`` (with ``\\n`` endings) in this file's encoding and line ending."""
        if self.newline == "\r\n":
            text = text.replace("\r\n", "\n").replace("\n", "\r\n")
        return text.encode(self.encoding)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hash_matches(expected: str, data: bytes) -> bool:
    """Accept the full sha256 or a prefix of at least 8 hex digits, as a model may shorten it."""
    expected = expected.strip().lower().removeprefix("sha256:")
    return len(expected) >= 8 and sha256(data).startswith(expected)


def looks_binary(data: bytes) -> bool:
    head = data[:SNIFF_BYTES]
    if any(head.startswith(bom) for bom, _ in _BOMS):
        return False
    if b"\x00" in head:
        return True
    controls = len(head) - len(head.translate(None, _CONTROLS))
    return bool(head) and controls * 10 > len(head)


def decode(data: bytes) -> TextFile | None:
    """Decode a file's bytes, or None when it is binary. CRLF is folded only when every line uses it."""
    encoding = "utf-8"
    for bom, name in _BOMS:
        if data.startswith(bom):
            encoding = name
            break
    else:
        if looks_binary(data):
            return None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        if encoding != "utf-8":
            return None
        encoding = "latin-1"  # not UTF-8 but not binary either: keep every byte as it is
        text = data.decode(encoding)
    newline = "\n"
    crlf = text.count("\r\n")
    if crlf and crlf == text.count("\n"):
        newline = "\r\n"
        text = text.replace("\r\n", "\n")
    return TextFile(text, encoding, newline)


def text_encoding(name: str) -> str:
    """A codec name that decodes bytes to text ('rot13' and 'zlib' are codecs too, but not text encodings)."""
    try:
        info = codecs.lookup(name)
    except (LookupError, ValueError, TypeError):
        raise ValueError(f"{name[:40]!r} is not a known text encoding (e.g. 'utf-8', 'latin-1', 'utf-16')") from None
    if not getattr(info, "_is_text_encoding", True) or info.name in _NOT_FILE_ENCODINGS:
        raise ValueError(f"{name[:40]!r} is a codec, not a text encoding")
    return info.name


# Text codecs that encode something other than a file's text (domain names, Python literals) or nothing.
_NOT_FILE_ENCODINGS = frozenset({"idna", "punycode", "unicode-escape", "raw-unicode-escape", "undefined", "mbcs"})


def new_file(text: str) -> TextFile:
    """How a file that does not exist yet is written: UTF-8, and CRLF only if the model wrote CRLF throughout."""
    crlf = text.count("\r\n")
    newline = "\r\n" if crlf and crlf == text.count("\n") else "\n"
    return TextFile(text.replace("\r\n", "\n") if newline == "\r\n" else text, "utf-8", newline)


def split_lines(text: str) -> list[str]:
    r"""Lines split on ``\\n`` only (``str.splitlines`` also splits on U+2028, form feed and more)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def numbered(text: str, offset: int = 1, limit: int | None = None) -> tuple[str, int, int]:
    r"""``text`` as ``     N\tline`` rows from line ``offset``; returns the view, total lines and last line shown."""
    lines = split_lines(text)
    start = max(offset, 1) - 1
    end = len(lines) if limit is None else min(len(lines), start + limit)
    shown = lines[start:end]
    if "\r" in text:
        shown = [line.rstrip("\r") for line in shown]
    if shown and max(map(len, shown)) > MAX_LINE_CHARS:
        shown = [
            line if len(line) <= MAX_LINE_CHARS else f"{line[:MAX_LINE_CHARS]}… [line cut: {len(line):,} characters]"
            for line in shown
        ]
    return "\n".join(map(operator.add, _prefixes(start, end), shown)), len(lines), end


_PREFIXES: list[str] = []
_PREFIXES_LOCK = threading.Lock()
_PREFIXES_KEPT = 100_000


def _prefixes(start: int, end: int) -> list[str]:
    r"""The ``     N\t`` line-number prefixes, made once and reused: 4x faster than formatting every line."""
    if end > _PREFIXES_KEPT:
        return [f"{number:>6}\t" for number in range(start + 1, end + 1)]
    if len(_PREFIXES) < end:
        with _PREFIXES_LOCK:  # sync tools run in worker threads
            _PREFIXES.extend(f"{number:>6}\t" for number in range(len(_PREFIXES) + 1, end + 1))
    return _PREFIXES[start:end]


def unified_diff(old: str, new: str, path: str) -> str:
    old_label = f"a/{path}" if old else "/dev/null"
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), old_label, f"b/{path}", n=3
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def divergence(text: str, expected: str) -> str:
    """Where ``expected`` stops matching ``text``: the best partial match and its first differing line.

    A model that gets this back can fix its ``old`` text in one retry instead of re-reading the file.
    """
    file_lines = text.split("\n")
    want = expected.split("\n")
    best_start, best_len = -1, 0
    first = want[0]
    for index, line in enumerate(file_lines):
        if first and first not in line and first.strip() != line.strip():
            continue
        length = 0
        while (
            length < len(want)
            and index + length < len(file_lines)
            and _same(file_lines[index + length], want[length], whole=length not in (0, len(want) - 1))
        ):
            length += 1
        if length > best_len:
            best_start, best_len = index, length
            if length == len(want):
                break
    if best_len:
        if best_len >= len(want):
            return (
                f"Every line nearly matches from line {best_start + 1}; check the whitespace, and where the "
                "first and last lines start and end."
            )
        diverge_at = best_start + best_len
        got = file_lines[diverge_at] if diverge_at < len(file_lines) else "<end of file>"
        return (
            f"The first {best_len} line(s) of it match the file from line {best_start + 1}; then line "
            f"{diverge_at + 1} differs.\n  expected: {want[best_len]!r}\n  file has: {got!r}"
        )
    probe = next((w for w in want if w.strip()), "")
    close = difflib.get_close_matches(probe.strip(), [line.strip() for line in file_lines], n=3, cutoff=0.6)
    if not close:
        return f"No line of the file resembles its first line {probe.strip()[:120]!r}."
    hints = []
    for candidate in close:
        number = next(i for i, line in enumerate(file_lines) if line.strip() == candidate)
        hints.append(f"  line {number + 1}: {file_lines[number][:200]!r}")
    return f"Its first line {probe.strip()[:120]!r} does not occur; the closest lines are:\n" + "\n".join(hints)


def _same(file_line: str, wanted: str, *, whole: bool) -> bool:
    if whole:
        return file_line == wanted
    return file_line == wanted or wanted in file_line or file_line.strip() == wanted.strip()

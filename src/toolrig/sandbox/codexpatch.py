"""The Codex patch format (``*** Begin Patch`` ... ``*** End Patch``): parsing and computing new file text.

Pure functions on strings, no file access: ``tools/patch.py`` reads the files, calls these and writes the
results. The grammar, the lenient parts and the four matching passes follow the reference implementation
(openai/codex ``codex-rs/apply-patch``) so the conformance corpus in ``shared/conformance/apply_patch`` passes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD, DELETE, UPDATE, MOVE = "*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: "
EOF_MARK = "*** End of File"
_HEREDOC_OPENERS = ("<<EOF", "<<'EOF'", '<<"EOF"')
_FENCE = re.compile(r"^\s*```[\w+-]*\s*\n(.*?)\n\s*```\s*$", re.DOTALL)
_COMMAND = re.compile(r"^\s*(?:apply_patch|applypatch)\s+(?=<<)")


class PatchError(ValueError):
    """A patch that cannot be parsed or applied; ``line`` is the 1-based patch line when known."""

    def __init__(self, message: str, line: int | None = None, kind: str = "parse") -> None:
        self.message = message
        self.line = line
        self.kind = kind
        super().__init__(f"Invalid patch hunk on line {line}: {message}" if line else message)


@dataclass
class Chunk:
    context: str | None
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    end_of_file: bool = False


@dataclass
class Hunk:
    kind: str  # "add", "delete", "update"
    path: str
    line: int
    content: str = ""  # add
    move_to: str | None = None  # update
    chunks: list[Chunk] = field(default_factory=list)  # update


def unwrap(text: str) -> str:
    """Strip a Markdown fence or an ``apply_patch <<'EOF'`` shell wrapper around a patch, if present."""
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    return _COMMAND.sub("", text, count=1)


def parse(text: str) -> list[Hunk]:
    lines = unwrap(text).strip().split("\n")
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    try:
        _check_boundaries(lines)
    except PatchError:
        if len(lines) >= 4 and lines[0] in _HEREDOC_OPENERS and lines[-1].endswith("EOF"):
            lines = lines[1:-1]
            _check_boundaries(lines)
        else:
            raise
    hunks: list[Hunk] = []
    index, last = 1, len(lines) - 1
    while index < last:
        hunk, index = _parse_hunk(lines, index, last)
        hunks.append(hunk)
    return hunks


def _check_boundaries(lines: list[str]) -> None:
    if lines[0].strip() != BEGIN:
        raise PatchError(f"The first line of the patch must be '{BEGIN}'")
    if lines[-1].strip() != END:
        raise PatchError(f"The last line of the patch must be '{END}'")


def _parse_hunk(lines: list[str], index: int, last: int) -> tuple[Hunk, int]:
    header = lines[index].strip()
    number = index + 1
    if header.startswith(ADD):
        hunk = Hunk("add", header[len(ADD) :], number)
        index += 1
        added: list[str] = []
        while index < last and lines[index].startswith("+"):
            added.append(lines[index][1:] + "\n")
            index += 1
        hunk.content = "".join(added)
        return hunk, index
    if header.startswith(DELETE):
        return Hunk("delete", header[len(DELETE) :], number), index + 1
    if header.startswith(UPDATE):
        hunk = Hunk("update", header[len(UPDATE) :], number)
        index += 1
        if index < last and lines[index].startswith(MOVE):
            hunk.move_to = lines[index][len(MOVE) :]
            index += 1
        while index < last:
            if not lines[index].strip():
                index += 1
                continue
            if lines[index].startswith("*"):
                break
            chunk, index = _parse_chunk(lines, index, last, first=not hunk.chunks)
            hunk.chunks.append(chunk)
        if not hunk.chunks:
            raise PatchError(f"Update file hunk for path '{hunk.path}' is empty", number)
        return hunk, index
    raise PatchError(
        f"'{header}' is not a valid hunk header. Valid hunk headers: '*** Add File: {{path}}', "
        "'*** Delete File: {path}', '*** Update File: {path}'",
        number,
    )


def _parse_chunk(lines: list[str], index: int, last: int, *, first: bool) -> tuple[Chunk, int]:
    line = lines[index]
    if line == "@@" or line.startswith("@@ "):
        chunk = Chunk(line[3:] if line.startswith("@@ ") else None)
        index += 1
    elif first:
        chunk = Chunk(None)
    else:
        raise PatchError(f"Expected update hunk to start with a @@ context marker, got: '{line}'", index + 1)
    start = index
    while index < last:
        line = lines[index]
        if line == EOF_MARK:
            if index == start:
                raise PatchError("Update hunk does not contain any lines", index + 1)
            chunk.end_of_file = True
            index += 1
            break
        if line == "":
            chunk.old.append("")
            chunk.new.append("")
        elif line[0] == " ":
            chunk.old.append(line[1:])
            chunk.new.append(line[1:])
        elif line[0] == "+":
            chunk.new.append(line[1:])
        elif line[0] == "-":
            chunk.old.append(line[1:])
        else:
            if index == start:
                raise PatchError(
                    f"Unexpected line found in update hunk: '{line}'. Every line should start with ' ' "
                    "(context line), '+' (added line), or '-' (removed line)",
                    index + 1,
                )
            break
        index += 1
    if index == start:
        raise PatchError("Update hunk does not contain any lines", index + 1)
    return chunk, index


# ------------------------------------------------------------------------------------------ applying

_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys(map(chr, [*range(0x2010, 0x2016), 0x2212]), "-"),
        **dict.fromkeys(map(chr, range(0x2018, 0x201C)), "'"),
        **dict.fromkeys(map(chr, range(0x201C, 0x2020)), '"'),
        **dict.fromkeys(map(chr, [0x00A0, *range(0x2002, 0x200B), 0x202F, 0x205F, 0x3000]), " "),
    }
)
_PASSES = (
    str,
    str.rstrip,
    str.strip,
    lambda s: s.strip().translate(_PUNCTUATION),
)


def seek(lines: list[str], pattern: list[str], start: int, end_of_file: bool) -> int | None:
    """Where ``pattern`` occurs from ``start``, or None.

    Each pass (exact, then ever more lenient) tries every position before the next begins, so a lenient
    hit never wins over an exact one further down.
    """
    if not pattern:
        return start
    size = len(pattern)
    if size > len(lines):
        return None
    first, last = (len(lines) - size, len(lines) - size) if end_of_file else (start, len(lines) - size)
    if first < 0 or first > last:
        return None
    position = first
    while position <= last:  # exact: jump between candidates with list.index, which runs in C
        try:
            position = lines.index(pattern[0], position, last + 1)
        except ValueError:
            break
        if lines[position : position + size] == pattern:
            return position
        position += 1
    for normal in _PASSES[1:]:
        want = [normal(p) for p in pattern]
        window = [normal(line) for line in lines[first : last + size]]
        position = 0
        while position <= last - first:
            try:
                position = window.index(want[0], position, last - first + 1)
            except ValueError:
                break
            if window[position : position + size] == want:
                return first + position
            position += 1
    return None


def apply_chunks(text: str, chunks: list[Chunk], path: str) -> str:
    """The new text of a file after its update chunks (always ending with exactly one newline)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    replacements: list[tuple[int, int, list[str]]] = []
    cursor = 0
    for chunk in chunks:
        if chunk.context is not None:
            found = seek(lines, [chunk.context], cursor, False)
            if found is None:
                raise PatchError(f"Failed to find context '{chunk.context}' in {path}", kind="apply")
            cursor = found + 1
        if not chunk.old:
            replacements.append((len(lines), 0, chunk.new))
            continue
        old, new = chunk.old, chunk.new
        found = seek(lines, old, cursor, chunk.end_of_file)
        if found is None and old[-1] == "":
            old = old[:-1]
            new = new[:-1] if new and new[-1] == "" else new
            found = seek(lines, old, cursor, chunk.end_of_file)
        if found is None:
            raise PatchError(f"Failed to find expected lines in {path}:\n" + "\n".join(chunk.old), kind="apply")
        replacements.append((found, len(old), new))
        cursor = found + len(old)
    replacements.sort(key=lambda r: r[0])
    out: list[str] = []
    position = 0
    for start, length, new in replacements:
        out.extend(lines[position:start])
        out.extend(new)
        position = max(position, start + length)
    out.extend(lines[position:])
    return "\n".join(out) + "\n"

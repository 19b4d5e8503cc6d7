"""The Codex patch format (``*** Begin Patch`` ... ``*** End Patch``): parsing and computing new file text.

Pure functions on strings, no file access: ``tools/patch.py`` reads the files, calls these and writes the
results. The grammar, the lenient parts and the matching passes follow the reference implementation
(openai/codex ``codex-rs/apply-patch``) so the conformance corpus in ``shared/conformance/apply_patch`` passes,
with the safer readings of toolrig issue 21 where the reference would edit the wrong place:

- a chunk whose lines fit in two places (at the pass that first finds them) is refused, naming both lines;
- a tolerant (whitespace-blind) match keeps the file's own context lines and shifts the added lines by the
  one indentation offset the matched lines show (or converts tabs against spaces at one tab width:
  ``sandbox.indentation``); an inconsistent offset would change the file's block structure, so it is refused.
  When the offset is not zero, the added lines as written are a second reading (``Readings``): the caller keeps
  the one that leaves the file parsing (``tools/patch.py``);
- header lines are trimmed; unified-diff hunk headers (``@@ -12,7 +12,8 @@ heading``) read as ``@@ heading``;
- a fifth pass compares NFC forms (never compatibility forms: zero-width, bidi and look-alike characters
  still differ);
- the ``*** Begin Patch`` / ``*** End Patch`` envelope and a Markdown fence are optional.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field

from toolrig.sandbox.indentation import Reindent, indent, infer

BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD, DELETE, UPDATE, MOVE = "*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: "
EOF_MARK = "*** End of File"
_HEADERS = (ADD, DELETE, UPDATE)
_HEREDOC_OPENERS = ("<<EOF", "<<'EOF'", '<<"EOF"')
_FENCE_OPEN = re.compile(r"^\s*```[\w+-]*\s*$")
_FENCE_CLOSE = re.compile(r"^\s*```\s*$")
_COMMAND = re.compile(r"^\s*(?:apply_patch|applypatch)\s+(?=<<)")
_UNIFIED = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@(?:\s(.*))?$")
# Characters a path component must not start or end with: whitespace, and invisible format characters
# (zero-width, bidi controls, BOM) that make two names look the same.
_INVISIBLE = frozenset(
    "\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2066\u2067\u2068\u2069\ufeff"
)


class PatchError(ValueError):
    """A patch that cannot be parsed or applied; ``line`` is the 1-based patch line when known."""

    def __init__(self, message: str, line: int | None = None, kind: str = "parse", hint: str | None = None) -> None:
        self.message = message
        self.line = line
        self.kind = kind
        self.hint = hint
        super().__init__(f"Invalid patch hunk on line {line}: {message}" if line else message)


@dataclass
class Chunk:
    context: str | None
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    end_of_file: bool = False
    # The chunk's lines in order as (" " | "-" | "+", text); empty when the chunk was built from old/new only.
    ops: list[tuple[str, str]] = field(default_factory=list)
    # The anchor came from a unified-diff header's heading: when the file lacks it, it is ignored.
    soft_context: bool = False


@dataclass
class Hunk:
    kind: str  # "add", "delete", "update"
    path: str
    line: int
    content: str = ""  # add
    move_to: str | None = None  # update
    chunks: list[Chunk] = field(default_factory=list)  # update


@dataclass
class ParsedPatch:
    hunks: list[Hunk]
    notes: list[str] = field(default_factory=list)  # slips that were forgiven, for the model to see


def _trimmed(lines: list[str]) -> list[str]:
    """Blank lines around the patch go, but not the trailing spaces of its last line.

    Without '*** End Patch' the last line is content, and a whole-text ``strip()`` would change what it adds.
    """
    first, last = 0, len(lines)
    while last > 1 and not lines[last - 1].strip():
        last -= 1
    while first < last - 1 and not lines[first].strip():
        first += 1
    kept = lines[first:last]
    return [kept[0].lstrip(), *kept[1:]] if kept else [""]


def unwrap(text: str) -> str:
    """Strip a Markdown fence or an ``apply_patch <<'EOF'`` shell wrapper around a patch, if present."""
    lines = _trimmed(text.split("\n"))
    if len(lines) >= 2 and _FENCE_OPEN.match(lines[0]):
        lines = lines[1:-1] if _FENCE_CLOSE.match(lines[-1]) else lines[1:]
        text = "\n".join(lines)
    elif len(lines) >= 2 and _FENCE_CLOSE.match(lines[-1]) and lines[0].strip().startswith(BEGIN):
        text = "\n".join(lines[:-1])
    return _COMMAND.sub("", text, count=1)


def parse(text: str) -> list[Hunk]:
    return parse_patch(text).hunks


def parse_patch(text: str) -> ParsedPatch:
    """Parse a patch; the envelope lines and a fence are optional, as the seed strips both (issue 18)."""
    lines = _trimmed([line[:-1] if line.endswith("\r") else line for line in unwrap(text).split("\n")])
    try:
        first, last = _boundaries(lines)
    except PatchError:
        if len(lines) >= 3 and lines[0] in _HEREDOC_OPENERS and lines[-1].endswith("EOF"):
            lines = lines[1:-1]
            first, last = _boundaries(lines)
        else:
            raise
    patch = ParsedPatch([])
    index = first
    while index < last:
        if not lines[index].strip():  # blank lines between sections
            index += 1
            continue
        hunk, index = _parse_hunk(lines, index, last, patch.notes)
        patch.hunks.append(hunk)
    return patch


def _boundaries(lines: list[str]) -> tuple[int, int]:
    """The index of the first hunk line and one past the last; the markers may be missing."""
    head = lines[0].strip()
    if head == BEGIN:
        first = 1
    elif head.startswith(_HEADERS):
        first = 0
    else:
        raise PatchError(f"The first line of the patch must be '{BEGIN}'")
    last = len(lines) - 1 if len(lines) > first and lines[-1].strip() == END else len(lines)
    return first, max(first, last)


def _header_path(header: str, prefix: str, number: int) -> str:
    path = header[len(prefix) :].strip()
    if not path:
        raise PatchError(f"'{header}' names no path", number)
    for part in path.split("/"):
        if part and (part[0].isspace() or part[-1].isspace() or part[0] in _INVISIBLE or part[-1] in _INVISIBLE):
            raise PatchError(
                f"The path {path!r} has a name that starts or ends with whitespace or an invisible character; "
                "write the path without it",
                number,
            )
    return path


def _parse_hunk(lines: list[str], index: int, last: int, notes: list[str]) -> tuple[Hunk, int]:
    header = lines[index].strip()
    number = index + 1
    if header.startswith(ADD):
        hunk = Hunk("add", _header_path(header, ADD, number), number)
        index += 1
        added: list[str] = []
        while index < last and lines[index].startswith("+"):
            added.append(lines[index][1:] + "\n")
            index += 1
        hunk.content = "".join(added)
        return hunk, index
    if header.startswith(DELETE):
        return Hunk("delete", _header_path(header, DELETE, number), number), index + 1
    if header.startswith(UPDATE):
        hunk = Hunk("update", _header_path(header, UPDATE, number), number)
        index += 1
        if index < last and lines[index].strip().startswith(MOVE):
            hunk.move_to = _header_path(lines[index].strip(), MOVE, index + 1)
            index += 1
        while index < last:
            if not lines[index].strip():
                index += 1
                continue
            if lines[index].rstrip() != EOF_MARK and (
                lines[index].startswith("*") or lines[index].strip().startswith((*_HEADERS, END))
            ):
                break  # the next section (its header may be indented: header lines are trimmed)
            chunk, index = _parse_chunk(lines, index, last, first=not hunk.chunks, notes=notes)
            hunk.chunks.append(chunk)
        if not hunk.chunks:
            raise PatchError(f"Update file hunk for path '{hunk.path}' is empty", number)
        return hunk, index
    raise PatchError(
        f"'{header}' is not a valid hunk header. Valid hunk headers: '*** Add File: {{path}}', "
        "'*** Delete File: {path}', '*** Update File: {path}'",
        number,
    )


def _chunk_header(line: str, number: int, notes: list[str]) -> Chunk | None:
    """The chunk an ``@@`` line opens, or None when the line is not one."""
    trimmed = line.rstrip()
    if trimmed == "@@":
        return Chunk(None)
    unified = _UNIFIED.match(trimmed)
    if unified:
        heading = (unified.group(1) or "").strip()
        notes.append(f"Line {number}: the unified-diff header was read as '@@{' ' + heading if heading else ''}'.")
        return Chunk(heading or None, soft_context=bool(heading))
    if line.startswith("@@ "):
        return Chunk(line[3:])
    return None


def _parse_chunk(lines: list[str], index: int, last: int, *, first: bool, notes: list[str]) -> tuple[Chunk, int]:
    line = lines[index]
    opened = _chunk_header(line, index + 1, notes)
    if opened is not None:
        chunk = opened
        index += 1
    elif first:
        chunk = Chunk(None)
    else:
        raise PatchError(f"Expected update hunk to start with a @@ context marker, got: '{line}'", index + 1)
    start = index
    while index < last:
        line = lines[index]
        if line.rstrip() == EOF_MARK:
            if index == start:
                raise PatchError("Update hunk does not contain any lines", index + 1)
            chunk.end_of_file = True
            index += 1
            break
        if line == "":
            chunk.ops.append((" ", ""))
        elif line[0] in " +-":
            chunk.ops.append((line[0], line[1:]))
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
    chunk.old = [text for op, text in chunk.ops if op != "+"]
    chunk.new = [text for op, text in chunk.ops if op != "-"]
    return chunk, index


# ------------------------------------------------------------------------------------------ matching

_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys(map(chr, [*range(0x2010, 0x2016), 0x2212]), "-"),
        **dict.fromkeys(map(chr, range(0x2018, 0x201C)), "'"),
        **dict.fromkeys(map(chr, range(0x201C, 0x2020)), '"'),
        **dict.fromkeys(map(chr, [0x00A0, *range(0x2002, 0x200B), 0x202F, 0x205F, 0x3000]), " "),
    }
)


def _punctuation(line: str) -> str:
    return line.strip().translate(_PUNCTUATION)


def _nfc(line: str) -> str:
    # Canonical composition only: NFKC would also fold compatibility forms (ligatures, full-width letters).
    return unicodedata.normalize("NFC", _punctuation(line))


_PASSES: tuple[Callable[[str], str], ...] = (str, str.rstrip, str.strip, _punctuation, _nfc)
_PASS_NAMES = ("exactly", "ignoring trailing whitespace", "ignoring surrounding whitespace",
               "ignoring whitespace and typographic punctuation", "comparing Unicode NFC forms")  # fmt: skip


class FileIndex:
    """A file's lines with, per matching pass, the normalised lines and where each line occurs last.

    Built once per file and per pass (and only for the passes a patch needs) with one C-speed ``dict``.
    A chunk's candidates are the occurrences of the line of it that occurs last the soonest, scanned with
    ``list.index`` up to that occurrence: no candidate can lie beyond it, so proving that a chunk fits in
    one place only costs what finding it costs, and a patch stays linear in the file's size.
    """

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self._views: dict[int, tuple[list[str], dict[str, int]]] = {}

    def view(self, number: int) -> tuple[list[str], dict[str, int]]:
        if number not in self._views:
            normal = self.lines if number == 0 else list(map(_PASSES[number], self.lines))
            self._views[number] = (normal, dict(zip(normal, range(len(normal)), strict=True)))
        return self._views[number]


def find(index: FileIndex, pattern: list[str], start: int, end_of_file: bool, limit: int = 2) -> tuple[int, list[int]]:
    """The first pass that finds ``pattern`` from ``start`` and up to ``limit`` positions it found there.

    Each pass (exact, then ever more lenient) tries every position before the next begins, so a lenient
    hit never wins over an exact one further down. ``(-1, [])`` when no pass finds it.
    """
    size, total = len(pattern), len(index.lines)
    if not pattern:
        return 0, [start]
    if size > total:
        return -1, []
    for number, normal in enumerate(_PASSES):
        lines, last = index.view(number)
        want = pattern if number == 0 else [normal(p) for p in pattern]
        if end_of_file:
            at = total - size
            if at >= 0 and lines[at : at + size] == want:
                return number, [at]
            continue
        ends = [last.get(line, -1) - offset for offset, line in enumerate(want)]
        offset = min(range(size), key=ends.__getitem__)
        if ends[offset] < start:
            continue  # some line of the chunk does not occur late enough
        rarest = want[offset]
        stop = min(last[rarest], total - size + offset)
        hits: list[int] = []
        position = start + offset
        while position <= stop:
            try:
                position = lines.index(rarest, position, stop + 1)
            except ValueError:
                break
            at = position - offset
            if lines[at : at + size] == want:
                hits.append(at)
                if len(hits) >= limit:
                    break
            position += 1
        if hits:
            return number, hits
    return -1, []


def seek(lines: list[str], pattern: list[str], start: int, end_of_file: bool) -> int | None:
    """Where ``pattern`` first occurs from ``start`` (the reference's ``seek_sequence``), or None."""
    _, hits = find(FileIndex(lines), pattern, start, end_of_file, limit=1)
    return hits[0] if hits else None


# ------------------------------------------------------------------------------------------ applying

_AMBIGUOUS_HINT = (
    "Nothing was changed. Add an '@@ line' anchor naming the enclosing def/class/heading just above the "
    "change, or more context lines, so the lines fit in one place only."
)
_INDENT_HINT = (
    "Nothing was changed. Copy the context and removed lines with the file's exact indentation "
    "(read the file again), then send the patch again."
)


Option = list[str] | PatchError  # a chunk's new lines under one reading, or why that reading cannot be written
_MAX_READINGS = 8


@dataclass
class Readings:
    """A file's new text under each reading of a patch's indentation; the default reading comes first.

    A chunk matched ignoring whitespace has two readings when its context lines are indented differently from
    the file's: added lines shifted by that offset (the default), or as the patch wrote them (only the context
    drifted). Which one the model meant shows when only one of them leaves the file parsing.
    """

    lines: list[str]
    parts: list[tuple[int, int, tuple[Option, ...]]]  # (start, length, options), in file order

    def text(self, flipped: frozenset[int] = frozenset()) -> str:
        """The new text with the chunks at ``flipped`` (indexes into ``parts``) read the other way."""
        out: list[str] = []
        position = 0
        for number, (start, length, options) in enumerate(self.parts):
            chosen = options[1] if number in flipped else options[0]
            if isinstance(chosen, PatchError):
                raise chosen
            out.extend(self.lines[position:start])
            out.extend(chosen)
            position = max(position, start + length)
        out.extend(self.lines[position:])
        return "\n".join(out) + "\n"

    def alternatives(self) -> list[frozenset[int]]:
        """The other readings to try, fewest chunks read the other way first (at most a handful)."""
        drifted = [number for number, (_, _, options) in enumerate(self.parts) if len(options) > 1]
        if len(drifted) > 3:
            return [frozenset(drifted)]
        sets = [frozenset(c) for size in range(1, len(drifted) + 1) for c in itertools.combinations(drifted, size)]
        return sets[: _MAX_READINGS - 1]


def apply_chunks(text: str, chunks: list[Chunk], path: str, notes: list[str] | None = None) -> str:
    """The new text of a file after its update chunks (always ending with exactly one newline)."""
    return readings(text, chunks, path, notes).text()


def readings(text: str, chunks: list[Chunk], path: str, notes: list[str] | None = None) -> Readings:
    """Where each chunk goes and its new lines under each reading; a chunk that cannot be placed raises."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    index = FileIndex(lines)
    parts: list[tuple[int, int, tuple[Option, ...]]] = []
    cursor = 0
    for number, chunk in enumerate(chunks, 1):
        if chunk.context is not None:
            _, found = find(index, [chunk.context], cursor, False, limit=1)
            if found:
                cursor = found[0] + 1
            elif not chunk.soft_context:
                raise PatchError(f"Failed to find context '{chunk.context}' in {path}", kind="apply")
            elif notes is not None:
                notes.append(f"{path}: the unified-diff heading '{chunk.context}' is not in the file; it was ignored.")
        if not chunk.old:
            parts.append((len(lines), 0, (chunk.new,)))
            continue
        old, ops = chunk.old, chunk.ops
        passed, found = find(index, old, cursor, chunk.end_of_file)
        if not found and old[-1] == "":
            old = old[:-1]
            ops = ops[:-1] if ops and ops[-1] == (" ", "") else []
            new = chunk.new[:-1] if chunk.new and chunk.new[-1] == "" else chunk.new
            passed, found = find(index, old, cursor, chunk.end_of_file)
        else:
            new = chunk.new
        if not found:
            raise PatchError(f"Failed to find expected lines in {path}:\n" + "\n".join(chunk.old), kind="apply")
        if len(found) > 1:
            raise PatchError(
                f"The lines of chunk {number} in {path} fit in more than one place ({_PASS_NAMES[passed]}): "
                f"at line {found[0] + 1} and at line {found[1] + 1}. Refusing to guess which one is meant:\n"
                + "\n".join(old),
                kind="apply",
                hint=_AMBIGUOUS_HINT,
            )
        at = found[0]
        options: tuple[Option, ...] = (new,)
        if passed > 0 and ops:
            options = _tolerant_replacement(ops, lines[at : at + len(old)], passed, path, at, notes)
        parts.append((at, len(old), options))
        cursor = at + len(old)
    parts.sort(key=lambda r: r[0])
    return Readings(lines, parts)


def _tolerant_replacement(
    ops: list[tuple[str, str]], matched: list[str], passed: int, path: str, at: int, notes: list[str] | None
) -> tuple[Option, ...]:
    """The new lines for a match that needed a tolerant pass: the default reading, then the other one if any.

    Context lines keep the file's own text (the model did not ask to change them). Added lines are shifted
    by the one indentation offset between the patch's and the file's matched lines (``sandbox.indentation``);
    when the matched lines show no single offset, writing the patch would move code into or out of a block,
    so it is refused.
    """
    old_texts = [text for op, text in ops if op != "+"]
    pairs = [
        (offset, indent(wanted), indent(have))
        for offset, (wanted, have) in enumerate(zip(old_texts, matched, strict=True))
        if wanted.strip() and have.strip()
    ]
    mapping = infer(pairs)
    if not isinstance(mapping, Reindent):
        offset, ours, theirs = mapping
        raise PatchError(
            f"The lines match {path} at line {at + offset + 1} only {_PASS_NAMES[passed]}, and their "
            "indentation differs from the file's in a way that would change its block structure "
            f"(the patch has {ours!r} where the file has {theirs!r}, unlike the lines before it); "
            "refusing to re-indent the file",
            kind="apply",
            hint=_INDENT_HINT,
        )
    described = mapping.describe()
    if described and notes is not None and f"{path}: {described}." not in notes:
        notes.append(f"{path}: {described}.")
    nfd = passed == len(_PASSES) - 1 and _is_nfd(matched)
    readings_of = (True, False) if mapping.drifts else (True,)
    return tuple(_reindented(ops, matched, mapping, shifted, nfd, path, at) for shifted in readings_of)


def _reindented(
    ops: list[tuple[str, str]], matched: list[str], mapping: Reindent, shifted: bool, nfd: bool, path: str, at: int
) -> Option:
    out: list[str] = []
    position = 0
    for op, text in ops:
        if op == " ":
            out.append(matched[position])
            position += 1
        elif op == "-":
            position += 1
        else:
            line = mapping.line(text, shifted)
            if line is None:
                return PatchError(
                    f"An added line in {path} near line {at + 1} is indented less than the offset the patch's "
                    f"context has against the file: {text!r}",
                    kind="apply",
                    hint=_INDENT_HINT,
                )
            out.append(unicodedata.normalize("NFD", line) if nfd else line)
    return out


def _is_nfd(lines: list[str]) -> bool:
    """The matched lines are written in decomposed form (so added lines should be too)."""
    joined = "\n".join(lines)
    return not unicodedata.is_normalized("NFC", joined) and unicodedata.is_normalized("NFD", joined)

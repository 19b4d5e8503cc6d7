"""Small conversions several profiles share: numbered lines, unified diffs as hunks, search output lines."""

from __future__ import annotations

import re
from typing import Any

from toolrig.errors import ErrorType, ToolError

_NUMBERED = re.compile(r"^\s*(\d+)\t(.*)$", re.DOTALL)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
MARKER = re.compile(r"^\[(FILE DOES NOT EXIST|FILE IGNORED|FILE TOO LARGE|OUTSIDE PROJECT|BINARY FILE|NOT A FILE)\]")


# memory_search's hit header: "1. MEMORY.md line 3 (score 0.5)" or "... lines 3-5 (score ...)".
MEMORY_HIT = re.compile(r"^(\d+)\. (.+?) lines? \S+ \(score ([^)]*)\)$")

# What a read_files marker means to a caller that asked for one file (ignored, outside: denied).
_MARKER_ERRORS = {
    "FILE DOES NOT EXIST": ErrorType.NOT_FOUND,
    "FILE TOO LARGE": ErrorType.TOO_LARGE,
    "BINARY FILE": ErrorType.INVALID_INPUT,
    "NOT A FILE": ErrorType.INVALID_INPUT,
}


def lines_of(text: str) -> list[str]:
    """Split on newlines only (``str.splitlines`` also splits on U+2028 and friends inside a line)."""
    if not text:
        return []
    parts = text.split("\n")
    return parts[:-1] if parts[-1] == "" else parts


def unnumbered(text: str) -> tuple[str, int, int]:
    """read_files' numbered text as (plain content, first line number, number of lines).

    Text that has no numbered line at all is what read_files made of a file that is not lines (a PDF's pages,
    an image's note beside the attached image): it is the content as it stands, or a face would answer "".
    """
    out: list[str] = []
    first = 0
    for line in lines_of(text):
        match = _NUMBERED.match(line)
        if match is None:
            continue  # a notice toolrig added (a cut, the template marker): not part of the file
        if not first:
            first = int(match.group(1))
        out.append(match.group(2))
    if not out and text:
        return text, 1, len(lines_of(text))
    return "\n".join(out) + ("\n" if out else ""), first or 1, len(out)


def single_file(files: dict[str, str], path: str) -> tuple[str, str]:
    """The one file of a read_files output as (shown path, text); a marker becomes the error it stands for."""
    if not files:
        raise ToolError(ErrorType.NOT_FOUND, f"'{path}' could not be read.")
    shown, text = next(iter(files.items()))
    marker = MARKER.match(text)
    if marker is not None:
        raise ToolError(_MARKER_ERRORS.get(marker.group(1), ErrorType.DENIED), text)
    return shown, text


def hunks(diff: str) -> list[dict[str, Any]]:
    """A unified diff as the ``structuredPatch`` hunks Claude Code reports."""
    out: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in lines_of(diff):
        match = _HUNK.match(line)
        if match is not None:
            old_start, old_lines, new_start, new_lines = match.groups()
            current = {
                "oldStart": int(old_start),
                "oldLines": int(old_lines) if old_lines is not None else 1,
                "newStart": int(new_start),
                "newLines": int(new_lines) if new_lines is not None else 1,
                "lines": [],
            }
            out.append(current)
        elif current is not None and line[:1] in (" ", "+", "-", "\\"):
            current["lines"].append(line)
    return out


def search_files(output: str) -> list[str]:
    """The distinct files named by code_search's 'path:line: text' (or bare path) lines, in order."""
    files: dict[str, None] = {}
    for line in lines_of(output):
        if line == "--":
            continue  # the separator between context groups
        match = re.match(r"^(.*?)(?::\d+[:-]|-\d+-|: \d+$)", line)
        name = match.group(1) if match else line.strip()
        if name and not name.startswith("["):
            files.setdefault(name, None)
    return list(files)

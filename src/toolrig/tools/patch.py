"""apply_patch: the Codex patch format, all or nothing.

Trust model: every path in every header (``Add``, ``Delete``, ``Update``, ``Move to``) is hostile and is
resolved for writing by ``ctx.workspace`` before anything is read. All operations are computed in memory
first; the files are then written through the workspace's change journal (``sandbox.journal``), so a failed
write changes nothing and a killed process leaves a change that the next patch finishes or undoes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from toolrig.context import ToolContext
from toolrig.definition import Tool, ToolInput, ToolOutput
from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.codexpatch import Hunk, PatchError, Readings, parse, parse_patch, readings
from toolrig.sandbox.journal import Change, Journal, PartialCommit
from toolrig.sandbox.syntax import Broken, Unchecked, language_of, problem, window
from toolrig.sandbox.text import TextFile, decode, new_file

SUCCESS = "Success. Updated the following files:"
_DIRECTORY = object()  # what a path holds when it is a directory


class ApplyPatchInput(ToolInput):
    patch: str = Field(
        description=(
            "The whole patch, from '*** Begin Patch' to '*** End Patch' (both optional). Sections: "
            "'*** Add File: path' then '+' lines; '*** Delete File: path'; '*** Update File: path', optionally "
            "'*** Move to: new/path', then chunks that start with '@@' (or '@@ a line to find first, like a def "
            "or class') followed by ' ' context, '-' removed and '+' added lines; '*** End of File' anchors a "
            "chunk at the end of the file."
        )
    )


class FileChange(BaseModel):
    op: Literal["A", "M", "D"] = Field(description="A added, M modified (or moved), D deleted.")
    path: str = Field(description="The path as the patch spells it (the destination for a move).")


class ApplyPatchOutput(ToolOutput):
    summary: str = Field(description="'Success. Updated the following files:' then 'A|M|D path' lines.")
    changes: list[FileChange]
    notes: list[str] = Field(default_factory=list, description="Slips in the patch that were forgiven, and how.")


class ApplyPatch(Tool[ApplyPatchInput, ApplyPatchOutput]):
    name = "apply_patch"
    group = "patch"
    destructive = True
    sequential = True  # a patch must not interleave with other edits of the same files
    description = (
        "Add, delete, update and move files with one patch in the Codex format:\n"
        "*** Begin Patch\n*** Update File: src/app.py\n@@ def main():\n-    print('hi')\n+    print('hello')\n"
        "*** Add File: notes.txt\n+first line\n*** Delete File: old.txt\n*** End Patch\n"
        "Give 3 lines of context around each change; paths are relative to the workspace. Hunks are matched "
        "exactly first, then ignoring whitespace and typographic punctuation, then comparing Unicode NFC forms. "
        "Every change is checked before anything is written and all files change or none do.\n"
        "Rules: lines that fit in two places are refused with both line numbers (add an '@@ def/class' anchor "
        "or more context). A whitespace-tolerant match keeps the file's context lines and re-indents your added "
        "lines by the same offset (or keeps them as written if only that parses); if the offset is not the same for "
        "every line it is refused. Spaces for the file's tabs (or the reverse) at one tab width are written in the "
        "file's style. A change that would leave a file that parsed unable to parse (Python, JSON, TOML, YAML and "
        "more) is refused, naming the line. "
        "'@@ -12,7 +12,8 @@ heading' reads as '@@ heading'. Header lines are trimmed. 'Move to' onto an existing "
        "file is refused unless the patch deletes that file first. 'a/../b' paths are read (and reported) as 'b'. "
        "Characters the file's encoding (e.g. Latin-1) cannot hold are refused. The Begin/End Patch lines and a "
        "Markdown code fence are optional; deleting a file that is already gone succeeds with a note."
    )

    subject_kind = "path"  # computed from the patch text, destinations of moves included

    def subjects(self, input: ApplyPatchInput) -> list[str]:
        try:
            hunks = parse(input.patch)
        except PatchError:
            return []
        paths: list[str] = []
        for hunk in hunks:
            paths.append(hunk.path)
            if hunk.move_to is not None:
                paths.append(hunk.move_to)
        return list(dict.fromkeys(paths))

    def execute(self, input: ApplyPatchInput, ctx: ToolContext) -> ApplyPatchOutput:
        try:
            parsed = parse_patch(input.patch)
        except PatchError as err:
            prefix = f"Invalid patch hunk on line {err.line}: " if err.line else "Invalid patch: "
            raise ToolError(ErrorType.INVALID_INPUT, prefix + err.message, _FORMAT_HINT) from None
        if not parsed.hunks:
            raise ToolError(ErrorType.INVALID_INPUT, "No files were modified.", "The patch holds no file sections.")
        journal = Journal(ctx.workspace.state_dir, ctx.workspace.roots)
        notes = [f"Before this patch, toolrig {line}." for line in journal.recover()]
        plan = Plan(ctx, notes)
        changes = [change for hunk in parsed.hunks for change in plan.apply(hunk)]
        plan.commit(journal)
        summary = "\n".join([SUCCESS, *(f"{c.op} {c.path}" for c in _grouped(changes))]) + "\n"
        return ApplyPatchOutput(summary=summary, changes=_grouped(changes), notes=[*parsed.notes, *notes])


_FORMAT_HINT = "Fix the patch text (see the tool description for the format) and send it again; nothing was changed."


def _grouped(changes: list[FileChange]) -> list[FileChange]:
    return [c for op in "AMD" for c in changes if c.op == op]


def _failed(kind: ErrorType, message: str, hint: str | None = None) -> ToolError:
    return ToolError(
        kind, message, hint or "Nothing was changed. Fix the patch against the files as they are, then retry."
    )


_ENCODING_NAMES = {"latin-1": "Latin-1 (ISO-8859-1)", "utf-8": "UTF-8", "utf-8-sig": "UTF-8 with a BOM"}


def _encoding_error(shown: str, encoding: str, err: UnicodeEncodeError) -> ToolError:
    bad = err.object[err.start : err.end]
    names = ", ".join(f"{c!r} (U+{ord(c):04X})" for c in dict.fromkeys(bad))
    line = err.object.count("\n", 0, err.start) + 1
    label = _ENCODING_NAMES.get(encoding, encoding)
    return _failed(
        ErrorType.INVALID_INPUT,
        f"Failed to update {shown}: the file is encoded as {label}, which cannot hold {names} "
        f"(line {line} of the new text).",
        f"Nothing was changed. Write those characters in a form {label} can hold (or an escape the file's "
        "language understands), or ask the user to convert the file to UTF-8.",
    )


def _breakage(language: str, text: str) -> Broken | None:
    """Why ``text`` does not parse; None when it does or when it cannot be checked (too large, too deep)."""
    try:
        return problem(language, text)
    except Unchecked:
        return None


def _parses(language: str, text: str) -> bool:
    """``text`` was checked and parses (a text that could not be checked does not count as parsing)."""
    try:
        return problem(language, text) is None
    except Unchecked:
        return False


_PYTHON_HINT = " (indent added lines as the lines around them are indented in the file; read it again if unsure)"


def _broken_error(shown: str, text: str, broken: Broken, *, tried_both: bool) -> ToolError:
    """The refusal a model can act on: the file, the line and the parser's words, and the lines around it."""
    both = (
        " (with the added lines shifted by the context lines' indentation offset and without it)" if tried_both else ""
    )
    return _failed(
        ErrorType.INVALID_INPUT,
        f"Failed to update {shown}: the patch would leave it unable to parse as {broken.language}{both}, and it "
        f"parsed before. {broken.language} error at {broken.describe()}\n"
        f"The file as the patch would leave it:\n{window(text, broken.line)}",
        f"Nothing was changed (no file of the patch was written). Fix the patch near line {broken.line} of "
        f"{shown} so that the file stays valid {broken.language}{_PYTHON_HINT if broken.language == 'Python' else ''}"
        ", then send the corrected patch; the same patch would fail the same way.",
    )


class Plan:
    """The patch applied to an in-memory view of the files; nothing touches the disk until ``commit``."""

    def __init__(self, ctx: ToolContext, notes: list[str]) -> None:
        self.ctx = ctx
        self.notes = notes
        self.state: dict[Path, bytes | None] = {}  # the new content; None = deleted
        self.original: dict[Path, object] = {}  # bytes, None (absent) or _DIRECTORY

    def _current(self, path: Path) -> object:
        if path in self.state:
            return self.state[path]
        if path not in self.original:
            if path.is_dir():
                self.original[path] = _DIRECTORY
            else:
                try:
                    self.original[path] = self.ctx.workspace.read_bytes(path)
                except FileNotFoundError:
                    self.original[path] = None
        return self.original[path]

    def _shown(self, path: Path) -> str:
        return self.ctx.workspace.display(path)

    def _resolve(self, spelled: str) -> tuple[Path, str]:
        """The real path and the path to report: ``src/../src/x.py`` is ``src/x.py``, said once in a note.

        A ``..`` that follows a symlink means something else to the kernel than to the eye, so it is refused.
        """
        path = self.ctx.workspace.resolve(spelled, write=True)
        normal = posixpath.normpath(spelled)
        if normal == spelled:
            return path, spelled
        if ".." in spelled.split("/") and self.ctx.workspace.resolve(normal, write=True) != path:
            raise _failed(
                ErrorType.INVALID_INPUT,
                f"'{spelled}' uses '..' after a symlink, so it does not mean '{normal}'.",
                "Nothing was changed. Write the path without '..' or '.' segments.",
            )
        self.notes.append(f"'{spelled}' was read as '{normal}'.")
        return path, normal

    def _encode(self, file: TextFile, text: str, shown: str) -> bytes:
        try:
            return file.encode(text)
        except UnicodeEncodeError as err:
            raise _encoding_error(shown, file.encoding, err) from None

    def apply(self, hunk: Hunk) -> list[FileChange]:
        path, spelled = self._resolve(hunk.path)
        current = self._current(path)
        if hunk.kind == "add":
            if current is _DIRECTORY:
                raise _failed(ErrorType.CONFLICT, f"Failed to write file {self._shown(path)}: it is a directory")
            created = new_file(hunk.content)
            if isinstance(current, bytes) and (before := decode(current)) is not None:
                self._refuse_breaking(before.text, created.text, spelled, self._shown(path))
            self.state[path] = self._encode(created, created.text, self._shown(path))
            return [FileChange(op="A", path=spelled)]
        if hunk.kind == "delete":
            if current is _DIRECTORY:
                raise _failed(ErrorType.NOT_FOUND, f"Failed to delete file {self._shown(path)}: path is a directory")
            if current is None:
                self.notes.append(f"{spelled} was already gone; there was nothing to delete.")
                return []
            self.state[path] = None
            return [FileChange(op="D", path=spelled)]
        if not isinstance(current, bytes):
            reason = "Is a directory" if current is _DIRECTORY else "No such file or directory"
            raise _failed(ErrorType.NOT_FOUND, f"Failed to read file to update {self._shown(path)}: {reason}")
        text = decode(current)
        if text is None:
            raise _failed(ErrorType.INVALID_INPUT, f"Failed to update {self._shown(path)}: it is a binary file")
        try:
            planned = readings(text.text, hunk.chunks, self._shown(path), self.notes)
        except PatchError as err:
            raise _failed(ErrorType.CONFLICT, err.message, err.hint) from None
        new_text = self._guarded(planned, text.text, hunk.move_to or spelled, self._shown(path))
        updated = self._encode(text, new_text, self._shown(path))
        if hunk.move_to is None:
            self.state[path] = updated
            return [FileChange(op="M", path=spelled)]
        destination, moved = self._resolve(hunk.move_to)
        if destination == path:
            self.state[path] = updated
            return [FileChange(op="M", path=moved)]
        there = self._current(destination)
        if there is _DIRECTORY:
            raise _failed(ErrorType.CONFLICT, f"Failed to write file {self._shown(destination)}: it is a directory")
        if there is not None:
            raise _failed(
                ErrorType.CONFLICT,
                f"Failed to move {self._shown(path)} to {self._shown(destination)}: the destination already exists.",
                f"Nothing was changed. To replace it, put '*** Delete File: {moved}' before this section in the "
                "same patch; otherwise choose a name that is free.",
            )
        self.state[path] = None
        self.state[destination] = updated
        return [FileChange(op="M", path=moved)]

    def _guarded(self, planned: Readings, before: str, name: str, shown: str) -> str:
        """The default reading of the patch, or the other one when only that leaves a file that parsed parsing.

        A file whose syntax toolrig cannot check, or that did not parse before the patch, is written as the
        default reading has it: the guard refuses only a break the patch itself makes.
        """
        language = language_of(name) or ""
        try:
            first = planned.text()
        except PatchError as err:
            guarded = bool(language) and _parses(language, before)
            other = self._other_reading(planned, language, shown, None) if guarded else None
            if other is None:
                raise _failed(ErrorType.CONFLICT, err.message, err.hint) from None
            return other
        # The result first: the file as it was is parsed only when the result does not parse (one parse per file).
        broken = _breakage(language, first) if language else None
        if broken is None or not _parses(language, before):
            return first
        other = self._other_reading(planned, language, shown, broken)
        if other is None:
            raise _broken_error(shown, first, broken, tried_both=bool(planned.alternatives()))
        return other

    def _other_reading(self, planned: Readings, language: str, shown: str, broken: Broken | None) -> str | None:
        for flipped in planned.alternatives():
            try:
                other = planned.text(flipped)
            except PatchError:
                continue
            if _parses(language, other):
                why = (
                    f"the file would not parse as {language} (line {broken.line}: {broken.message})"
                    if broken
                    else "some would have lost more indentation than they have"
                )
                self.notes.append(
                    f"{shown}: the added lines were kept at the indentation the patch wrote them with; shifted by "
                    f"the offset between the patch's context lines and the file's, {why}."
                )
                return other
        return None

    def _refuse_breaking(self, before: str, after: str, name: str, shown: str) -> None:
        """An Add File over an existing file that parsed must not leave it broken (there is no other reading)."""
        language = language_of(name)
        broken = _breakage(language, after) if language else None
        if language and broken is not None and _parses(language, before):
            raise _broken_error(shown, after, broken, tried_both=False)

    def commit(self, journal: Journal) -> None:
        """Write every file through the journal; if a write fails, every file is left (or put back) as it was."""
        changes = [
            Change(path, data)
            for path, data in self.state.items()
            if data is not None or isinstance(self.original.get(path, b""), bytes)
        ]
        if not changes:
            return
        modes = {p: _mode(p) for p, data in self.state.items() if data is None}
        try:
            journal.commit(changes, record=self.ctx.checkpoint)
        except PartialCommit as exc:
            self._rollback(exc.done, modes)
            for directory in reversed(exc.created):
                with contextlib.suppress(OSError, ToolError):
                    self.ctx.workspace.rmdir(directory)
            raise self._write_failed(exc) from None
        except OSError as exc:
            raise self._write_failed(exc) from None

    def _write_failed(self, exc: OSError) -> ToolError:
        where = Path(exc.filename) if isinstance(exc.filename, str) else None
        shown = self._shown(where) if where and where.is_absolute() else "a file"
        return _failed(
            ErrorType.CONFLICT if exc.errno != errno.EACCES else ErrorType.DENIED,
            f"Failed to write {shown}: {exc.strerror}. Every file was restored as it was.",
        )

    def _rollback(self, done: list[Path], modes: dict[Path, int | None]) -> None:
        for path in reversed(done):
            before = self.original.get(path)
            try:
                if isinstance(before, bytes):
                    self.ctx.workspace.write_bytes(path, before, cancellable=False)
                    if (mode := modes.get(path)) is not None:
                        os.chmod(path, mode)
                elif os.path.lexists(path):
                    self.ctx.workspace.unlink(path)
            except (OSError, ToolError):
                continue  # keep restoring the others


def _mode(path: Path) -> int | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None


TOOLS = [ApplyPatch()]

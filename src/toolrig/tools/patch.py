"""apply_patch: the Codex patch format, all or nothing.

Trust model: every path in every header (``Add``, ``Delete``, ``Update``, ``Move to``) is hostile and is
resolved for writing by ``ctx.workspace`` before anything is read. All operations are computed in memory
first; files are then written atomically, and if any write fails every file is restored as it was.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from toolrig.context import ToolContext
from toolrig.definition import Tool, ToolInput, ToolOutput
from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.codexpatch import Hunk, PatchError, apply_chunks, parse
from toolrig.sandbox.text import decode, new_file

SUCCESS = "Success. Updated the following files:"
_DIRECTORY = object()  # what a path holds when it is a directory


class ApplyPatchInput(ToolInput):
    patch: str = Field(
        description=(
            "The whole patch, from '*** Begin Patch' to '*** End Patch'. Sections: '*** Add File: path' then "
            "'+' lines; '*** Delete File: path'; '*** Update File: path', optionally '*** Move to: new/path', then "
            "chunks that start with '@@' (or '@@ a line to find first, like a def or class') followed by ' ' "
            "context, '-' removed and '+' added lines; '*** End of File' anchors a chunk at the end of the file."
        )
    )


class FileChange(BaseModel):
    op: Literal["A", "M", "D"] = Field(description="A added, M modified (or moved), D deleted.")
    path: str = Field(description="The path as the patch spells it (the destination for a move).")


class ApplyPatchOutput(ToolOutput):
    summary: str = Field(description="'Success. Updated the following files:' then 'A|M|D path' lines.")
    changes: list[FileChange]


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
        "exactly first, then ignoring whitespace and typographic punctuation. Every change is checked before "
        "anything is written and all files change or none do."
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
            hunks = parse(input.patch)
        except PatchError as err:
            prefix = f"Invalid patch hunk on line {err.line}: " if err.line else "Invalid patch: "
            raise ToolError(ErrorType.INVALID_INPUT, prefix + err.message, _FORMAT_HINT) from None
        if not hunks:
            raise ToolError(ErrorType.INVALID_INPUT, "No files were modified.", "The patch holds no file sections.")
        plan = Plan(ctx)
        changes = [change for hunk in hunks for change in plan.apply(hunk)]
        plan.commit()
        summary = "\n".join([SUCCESS, *(f"{c.op} {c.path}" for c in _grouped(changes))]) + "\n"
        return ApplyPatchOutput(summary=summary, changes=_grouped(changes))


_FORMAT_HINT = "Fix the patch text (see the tool description for the format) and send it again; nothing was changed."


def _grouped(changes: list[FileChange]) -> list[FileChange]:
    return [c for op in "AMD" for c in changes if c.op == op]


def _failed(kind: ErrorType, message: str) -> ToolError:
    return ToolError(kind, message, "Nothing was changed. Fix the patch against the files as they are, then retry.")


class Plan:
    """The patch applied to an in-memory view of the files; nothing touches the disk until ``commit``."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx
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

    def apply(self, hunk: Hunk) -> list[FileChange]:
        path = self.ctx.workspace.resolve(hunk.path, write=True)
        current = self._current(path)
        if hunk.kind == "add":
            if current is _DIRECTORY:
                raise _failed(ErrorType.CONFLICT, f"Failed to write file {self._shown(path)}: it is a directory")
            self.state[path] = new_file(hunk.content).encode(hunk.content)
            return [FileChange(op="A", path=hunk.path)]
        if hunk.kind == "delete":
            if not isinstance(current, bytes):
                reason = "path is a directory" if current is _DIRECTORY else "No such file or directory"
                raise _failed(ErrorType.NOT_FOUND, f"Failed to delete file {self._shown(path)}: {reason}")
            self.state[path] = None
            return [FileChange(op="D", path=hunk.path)]
        if not isinstance(current, bytes):
            reason = "Is a directory" if current is _DIRECTORY else "No such file or directory"
            raise _failed(ErrorType.NOT_FOUND, f"Failed to read file to update {self._shown(path)}: {reason}")
        text = decode(current)
        if text is None:
            raise _failed(ErrorType.INVALID_INPUT, f"Failed to update {self._shown(path)}: it is a binary file")
        try:
            updated = text.encode(apply_chunks(text.text, hunk.chunks, self._shown(path)))
        except PatchError as err:
            raise _failed(ErrorType.CONFLICT, err.message) from None
        if hunk.move_to is None:
            self.state[path] = updated
            return [FileChange(op="M", path=hunk.path)]
        destination = self.ctx.workspace.resolve(hunk.move_to, write=True)
        if self._current(destination) is _DIRECTORY:
            raise _failed(ErrorType.CONFLICT, f"Failed to write file {self._shown(destination)}: it is a directory")
        self.state[path] = None
        self.state[destination] = updated
        return [FileChange(op="M", path=hunk.move_to)]

    def commit(self) -> None:
        """Write every file; if one write fails, put back every file already changed and every new directory."""
        done: list[Path] = []
        created: list[Path] = []
        modes = {p: _mode(p) for p, data in self.state.items() if data is None}
        try:
            for path, data in self.state.items():
                if data is None:
                    if self.original.get(path) is not None:
                        self.ctx.workspace.unlink(path)
                        done.append(path)
                else:
                    self.ctx.workspace.write_bytes(path, data, created_dirs=created)
                    done.append(path)
        except (OSError, ToolError) as exc:
            self._rollback(done, created, modes)
            if isinstance(exc, ToolError):
                raise
            where = Path(exc.filename) if isinstance(exc.filename, str) else None
            raise _failed(
                ErrorType.CONFLICT if exc.errno != errno.EACCES else ErrorType.DENIED,
                f"Failed to write {self._shown(where) if where else 'a file'}: {exc.strerror}. "
                "Every file was restored as it was.",
            ) from None

    def _rollback(self, done: list[Path], created: list[Path], modes: dict[Path, int | None]) -> None:
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
        for directory in reversed(created):
            try:
                self.ctx.workspace.rmdir(directory)
            except (OSError, ToolError):
                continue


def _mode(path: Path) -> int | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None


TOOLS = [ApplyPatch()]

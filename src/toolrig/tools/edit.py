"""Changing files: whole-file writes and exact text replacements, with a diff, and dry-run twins.

Trust model: paths are hostile and resolved for writing by ``ctx.workspace`` (read-only mode, deny and
read-only globs, ``.git``); old/new texts are plain text, never patterns. Every write is atomic and keeps
the file's encoding, line endings and mode; ``expected_hash`` refuses to overwrite changes made meanwhile.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolrig.context import ToolContext
from toolrig.definition import Subject, Tool, ToolInput, ToolOutput
from toolrig.errors import ErrorType, ToolError
from toolrig.narrowing import Narrow
from toolrig.sandbox.allowed import AllowedPathsSettings
from toolrig.sandbox.text import (
    TextFile,
    decode,
    divergence,
    hash_matches,
    new_file,
    sha256,
    text_encoding,
    unified_diff,
)

HASH_FIELD = Field(
    default=None, description="sha256 of the file as you last read it (from read_files); refused if it changed since."
)


class EditOutput(ToolOutput):
    file: str = Field(description="The file, relative to the workspace.")
    message: str
    unified_diff: str
    hash: str = Field(description="sha256 of the file's new content, for a following edit's expected_hash.")
    bytes_written: int = Field(description="Bytes written to the file (its whole new size); 0 for a dry run.")


@dataclass
class Current:
    """A file about to change: where it is, what it holds now (None when it does not exist yet)."""

    path: Path
    shown: str
    data: bytes | None
    text: TextFile | None


def load(ctx: ToolContext, spelled: str, expected_hash: str | None, *, must_exist: bool) -> Current:
    path = ctx.workspace.resolve(spelled, write=True)
    shown = ctx.workspace.display(path)
    if path.is_dir():
        raise ToolError(ErrorType.INVALID_INPUT, f"'{shown}' is a directory, not a file.")
    try:
        data: bytes | None = ctx.workspace.read_bytes(path)
    except FileNotFoundError:
        data = None
    if data is None:
        if must_exist:
            raise ToolError(ErrorType.NOT_FOUND, f"'{shown}' does not exist.", "Create it with write_file.")
        if expected_hash:
            raise ToolError(ErrorType.CONFLICT, f"'{shown}' no longer exists, but expected_hash says you read it.")
        return Current(path, shown, None, None)
    if expected_hash and not hash_matches(expected_hash, data):
        raise ToolError(
            ErrorType.CONFLICT,
            f"'{shown}' changed since you read it (its sha256 is now {sha256(data)[:16]}…).",
            "Read it again and redo the edit against its current content.",
        )
    text = decode(data)
    if text is None and must_exist:
        raise ToolError(ErrorType.INVALID_INPUT, f"'{shown}' is a binary file; it cannot be edited as text.")
    return Current(path, shown, data, text)


def commit(
    ctx: ToolContext,
    current: Current,
    new_text: str,
    *,
    write: bool,
    created: bool,
    encoding: str | None = None,
    max_bytes: int | None = None,
) -> EditOutput:
    encoder = current.text or new_file(new_text)
    if encoding is not None:
        encoder = dataclasses.replace(encoder, encoding=encoding)
    try:
        data = encoder.encode(new_text)
    except UnicodeEncodeError as exc:  # a lone surrogate (valid JSON, not text), or a char the encoding lacks
        bad = exc.object[exc.start : exc.end]
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"The new text of '{current.shown}' cannot be written as {encoder.encoding}: {exc.reason} ({bad!r}).",
            "Send well-formed text the file's encoding can hold.",
        ) from None
    except UnicodeError as exc:  # a codec's own complaint
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"The new text of '{current.shown}' cannot be written as {encoder.encoding}: {str(exc)[:200]}.",
        ) from None
    old_text = current.text.text if current.text is not None else ""
    diff = unified_diff(old_text, encoder.text if created else new_text, current.shown)
    if max_bytes is not None and len(data) > max_bytes:
        raise ToolError(
            ErrorType.TOO_LARGE,
            f"The new content of '{current.shown}' is {len(data):,} bytes, over the {max_bytes:,}-byte limit for "
            "a write (tool_config.write_file.max_bytes).",
            "Write a smaller file, or split the content across several files.",
            retryable=False,
        )
    if write:
        ctx.workspace.write_bytes(current.path, data, record=ctx.checkpoint)
    if created:
        message = "Created new file" if write else "Would create new file"
    elif data == current.data:
        message = "No change: the content is identical" if write else "Would not change the file"
    else:
        message = "Updated file" if write else "Would update file"
    return EditOutput(
        file=current.shown,
        message=message,
        unified_diff=diff,
        hash=sha256(data),
        bytes_written=len(data) if write else 0,
    )


def _plain(text: str, file: TextFile) -> str:
    r"""A model's text in the file's ``\\n`` convention (CRLF files are edited as LF and written back as CRLF)."""
    return text if "\r\n" in file.text else text.replace("\r\n", "\n")


class Replacement(BaseModel):
    model_config = ConfigDict(extra="forbid")
    old: str = Field(description="Exact text to find (plain text, whitespace included); unique unless replace_all.")
    new: str = Field(description="Text to put in its place (plain text; '$1' and '\\n' are not special).")
    replace_all: bool = Field(default=False, description="Replace every occurrence instead of exactly one.")


def replace(current: Current, replacements: list[Replacement]) -> str:
    """Apply replacements in order to the file's text; any miss fails them all with a precise hint."""
    if current.text is None:
        raise ToolError(ErrorType.INVALID_INPUT, f"'{current.shown}' is not a text file.")
    text = current.text.text
    many = len(replacements) > 1
    for number, item in enumerate(replacements, 1):
        which = f"Replacement {number} of {len(replacements)}" if many else "The replacement"
        old, new = _plain(item.old, current.text), _plain(item.new, current.text)
        if not old:
            raise ToolError(ErrorType.INVALID_INPUT, f"{which} has an empty 'old' text.", "Quote the text to replace.")
        if old == new:
            raise ToolError(ErrorType.INVALID_INPUT, f"{which} has identical 'old' and 'new' texts; nothing to do.")
        count = text.count(old)
        if count == 0:
            raise ToolError(
                ErrorType.CONFLICT,
                f"{which} failed: its 'old' text was found 0 times in '{current.shown}'. {divergence(text, old)}",
                "Copy the exact text from the file (read it again if unsure); nothing was changed.",
            )
        if count > 1 and not item.replace_all:
            lines = _match_lines(text, old)
            raise ToolError(
                ErrorType.CONFLICT,
                f"{which} failed: its 'old' text was found {count} times in '{current.shown}' (lines "
                f"{', '.join(map(str, lines[:10]))}{'…' if len(lines) > 10 else ''}); it must be unique.",
                "Include more surrounding lines to pick one, or set replace_all; nothing was changed.",
            )
        text = text.replace(old, new) if item.replace_all else text.replace(old, new, 1)
    return text


def _match_lines(text: str, needle: str) -> list[int]:
    lines, start = [], 0
    while (found := text.find(needle, start)) != -1:
        lines.append(text.count("\n", 0, found) + 1)
        start = found + 1
    return lines


# ------------------------------------------------------------------------------------------ tools


class WriteFileConfig(AllowedPathsSettings):
    """Settings under ``tool_config.write_file`` (the dry run, propose_write_file, checks the same ones)."""

    model_config = ConfigDict(extra="forbid")
    max_bytes: Annotated[int, Narrow.MIN] = Field(
        default=10_000_000, ge=1, description="Largest file write_file may leave (the whole file after an append)."
    )


class WriteFileInput(ToolInput):
    path: Annotated[str, Subject("path")] = Field(
        description="File to write, relative to the workspace; missing parent directories are made."
    )
    content: str = Field(description="The complete new content (or the text to append).")
    mode: Literal["overwrite", "append"] = "overwrite"
    expected_hash: str | None = HASH_FIELD
    on_conflict: Literal["error", "overwrite"] = Field(
        default="overwrite",
        description=(
            "What to do when the file already exists (mode 'overwrite'): 'overwrite' replaces it (the default); "
            "'error' refuses with error_type 'path_conflict' and writes nothing."
        ),
    )
    encoding: str | None = Field(
        default=None,
        max_length=40,
        description="Write in this encoding ('latin-1', 'utf-16', ...); default: the file's own, UTF-8 for a new file.",
    )

    @field_validator("encoding")
    @classmethod
    def _text_encoding(cls, value: str | None) -> str | None:
        return None if value is None else text_encoding(value)


class WriteFile(Tool[WriteFileInput, EditOutput]):
    name = "write_file"
    group = "edit"
    destructive = True
    sequential = True  # two edits of one file side by side would lose one of them
    config_model = WriteFileConfig
    description = (
        "Create a file or replace its whole content (mode 'append' adds to its end). Prefer str_replace for "
        "changing part of an existing file. Keeps the file's line endings (CRLF stays CRLF), encoding and mode; "
        "writes atomically. Returns a unified diff of the change."
    )

    def execute(self, input: WriteFileInput, ctx: ToolContext) -> EditOutput:
        return write_file(ctx, input, write=True)


def write_file(ctx: ToolContext, input: WriteFileInput, *, write: bool) -> EditOutput:
    config = ctx.settings(WriteFileConfig)
    current = load(ctx, input.path, input.expected_hash, must_exist=False)
    if (allowed := config.allowed()) is not None:
        allowed.check(ctx.workspace, input.path, current.path, "write_file")
    if current.data is None:
        return commit(
            ctx, current, input.content, write=write, created=True, encoding=input.encoding, max_bytes=config.max_bytes
        )
    if input.on_conflict == "error" and input.mode == "overwrite":
        raise ToolError(
            ErrorType.PATH_CONFLICT,
            f"'{current.shown}' already exists ({len(current.data):,} bytes, sha256 {sha256(current.data)[:16]}…); "
            "on_conflict='error' keeps it.",
            f"Read it with read_files(paths=['{current.shown}']) and change it with str_replace, or write again "
            "with on_conflict='overwrite' to replace it.",
        )
    if current.text is None:
        current.text = new_file("")  # overwriting a binary file with text: write the text as given
    content = _plain(input.content, current.text)
    new_text = current.text.text + content if input.mode == "append" else content
    return commit(
        ctx, current, new_text, write=write, created=False, encoding=input.encoding, max_bytes=config.max_bytes
    )


class ProposeWriteFile(Tool[WriteFileInput, EditOutput]):
    name = "propose_write_file"
    group = "edit"
    read_only = True
    config_model = WriteFileConfig
    description = (
        "Dry run of write_file: checks the same things and returns the unified diff it would make, "
        "writing nothing. Use it to show a change for review before making it."
    )

    def execute(self, input: WriteFileInput, ctx: ToolContext) -> EditOutput:
        return write_file(ctx, input, write=False)


class StrReplaceInput(ToolInput):
    path: Annotated[str, Subject("path")] = Field(description="File to edit, relative to the workspace.")
    replacements: list[Replacement] = Field(
        min_length=1, max_length=100, description="Applied in order; all succeed or nothing is written."
    )
    expected_hash: str | None = HASH_FIELD


class StrReplace(Tool[StrReplaceInput, EditOutput]):
    name = "str_replace"
    group = "edit"
    destructive = True
    sequential = True  # two edits of one file side by side would lose one of them
    description = (
        "Edit a file by exact text replacement: each 'old' must occur exactly once (or set replace_all) and "
        "is replaced by 'new'. Several replacements apply in order, all or none. Plain text, not regex. On a "
        "miss you get the number of matches and the first line where your text and the file differ. "
        "Keeps line endings and encoding; returns a unified diff."
    )

    def execute(self, input: StrReplaceInput, ctx: ToolContext) -> EditOutput:
        return str_replace(ctx, input.path, input.replacements, input.expected_hash, write=True)


def str_replace(
    ctx: ToolContext, path: str, replacements: list[Replacement], expected_hash: str | None, *, write: bool
) -> EditOutput:
    current = load(ctx, path, expected_hash, must_exist=True)
    return commit(ctx, current, replace(current, replacements), write=write, created=False)


class ProposeStrReplace(Tool[StrReplaceInput, EditOutput]):
    name = "propose_str_replace"
    group = "edit"
    read_only = True
    description = (
        "Dry run of str_replace: checks every replacement the same way and returns the unified diff it "
        "would make, writing nothing."
    )

    def execute(self, input: StrReplaceInput, ctx: ToolContext) -> EditOutput:
        return str_replace(ctx, input.path, input.replacements, input.expected_hash, write=False)


class EditInput(ToolInput):
    file_path: Annotated[str, Subject("path")] = Field(description="The file to modify.")
    old_string: str = Field(description="The text to replace (exact, unique unless replace_all).")
    new_string: str = Field(description="The text to replace it with (must be different from old_string).")
    replace_all: bool = Field(default=False, description="Replace all occurrences of old_string.")
    expected_hash: str | None = HASH_FIELD


class Edit(Tool[EditInput, EditOutput]):
    name = "edit"
    group = "edit"
    destructive = True
    sequential = True  # two edits of one file side by side would lose one of them
    description = (
        "Performs exact string replacements in files. old_string must match the file exactly (indentation "
        "included) and be unique unless replace_all is set. Plain text, not regex. Keeps line endings and "
        "encoding; returns a unified diff."
    )

    def execute(self, input: EditInput, ctx: ToolContext) -> EditOutput:
        item = Replacement(old=input.old_string, new=input.new_string, replace_all=input.replace_all)
        return str_replace(ctx, input.file_path, [item], input.expected_hash, write=True)


TOOLS = [WriteFile(), StrReplace(), Edit(), ProposeWriteFile(), ProposeStrReplace()]

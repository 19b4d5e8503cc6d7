"""Memory tools: an agent's notes in ``MEMORY.md`` and ``memory/**/*.md``, searched with BM25, read and written.

Trust model: paths are the model's: only memory files under the agent's own memory root are reachable
(``agents/<id>/`` for an agent with an id), '..' is refused, and every path goes through the workspace.
"""

from __future__ import annotations

import re
from contextlib import suppress
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from toolrig.context import ToolContext
from toolrig.definition import Subject, Tool, ToolInput, ToolOutput
from toolrig.errors import ErrorType, ToolError

MAX_WRITE_CHARS = 1_000_000
MAX_FILE_BYTES = 5_000_000
LARGE_BUILD_FILES = 1_000  # a first build this big draws a progress bar on a terminal
_AGENT_ID = re.compile(r"^[A-Za-z0-9_@-][A-Za-z0-9_.@-]{0,127}$")
_NOT_MEMORY_HINT = "Memory tools only touch MEMORY.md, memory.md and memory/...; use read_files for other files."


def _memory_scope(ctx: ToolContext) -> tuple[str, str]:
    """The memory root as a workspace-relative prefix, and the name of its index."""
    owner = ctx.memory_owner()  # the agent's own, or its parent's for a subagent with shared_memory
    if owner is None:
        return "", "workspace"
    if not _AGENT_ID.match(owner):
        raise ToolError(ErrorType.INVALID_INPUT, f"The agent id {owner[:80]!r} cannot name a memory folder.")
    return f"agents/{owner}/", f"agent-{owner}"


def _memory_root(ctx: ToolContext) -> Path:
    prefix, _ = _memory_scope(ctx)
    return ctx.workspace.resolve(prefix.rstrip("/") or ".")


def memory_relative(file_path: str) -> str:
    """The memory file a model's spelling names, relative to the memory root ('memory/./x', 'memory//x' -> 'memory/x').

    It is both what the tool opens and the tools' policy subject: a rule on 'memory/private/*' must see the
    path the tool will touch, not the spelling the model chose.
    """
    raw = file_path.strip().replace("\\", "/")
    if not raw:
        raise ToolError(ErrorType.INVALID_INPUT, "file_path is empty.", "Give a path such as 'memory/notes.md'.")
    if raw.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", raw):
        raise ToolError(ErrorType.DENIED, f"'{file_path}' is absolute; memory paths are relative.", _NOT_MEMORY_HINT)
    parts = [part for part in raw.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ToolError(ErrorType.DENIED, f"'{file_path}' climbs out with '..'.", _NOT_MEMORY_HINT)
    relative = "/".join(parts)
    if not (relative in ("MEMORY.md", "memory.md") or (len(parts) >= 2 and parts[0] == "memory")):
        raise ToolError(ErrorType.DENIED, f"'{file_path}' is not a memory file.", _NOT_MEMORY_HINT)
    return relative


def _memory_subjects(file_path: str) -> list[str]:
    """The canonical memory path; a spelling the tool refuses is kept as sent (the call fails in the tool)."""
    try:
        return [memory_relative(file_path)]
    except ToolError:
        return [file_path]


def _memory_path(ctx: ToolContext, file_path: str, *, write: bool) -> tuple[Path, str]:
    """Resolve a model's memory path; returns the real path and the path as the model should see it."""
    relative = memory_relative(file_path)
    prefix, _ = _memory_scope(ctx)
    try:
        path = ctx.workspace.resolve(prefix + relative, write=write)
        root = _memory_root(ctx)
    except OSError:  # a directory swapped for a symlink while realpath walked it (EINVAL from readlink)
        raise ToolError(
            ErrorType.DENIED,
            f"'{file_path}' changed while it was being resolved; nothing was done.",
            "Something else is changing the workspace. Retry once it is stable.",
        ) from None
    # A symlink inside memory/ may still land elsewhere in the workspace: the real path must be the same file.
    if PurePosixPath(path.relative_to(root).as_posix() if path.is_relative_to(root) else "") != PurePosixPath(relative):
        raise ToolError(ErrorType.DENIED, f"'{file_path}' leads through a symlink out of memory.", _NOT_MEMORY_HINT)
    return path, relative


class MemorySearchInput(ToolInput):
    query: Annotated[str, Subject("text")] = Field(
        description='Words to look for; put exact phrases in double quotes, e.g. "release plan".'
    )
    max_results: int = Field(default=6, ge=1, le=50, description="How many hits to return.")


class MemorySearchOutput(ToolOutput):
    results: str = Field(description="Numbered hits, best first, separated by '---'; each names file and lines.")
    count: int


class MemorySearch(Tool[MemorySearchInput, MemorySearchOutput]):
    name = "memory_search"
    group = "memory"
    read_only = True
    description = (
        "Search your memory (MEMORY.md and memory/**/*.md) for paragraphs about a topic, best matches first "
        "(BM25 ranking). Each hit gives the file, the line range and a snippet of at most 500 characters; "
        "read more with memory_get. Use double quotes for exact phrases."
    )

    def execute(self, input: MemorySearchInput, ctx: ToolContext) -> MemorySearchOutput:
        from toolrig.stores.memory import TerminalProgress

        _, scope = _memory_scope(ctx)
        root = _memory_root(ctx)
        index = ctx.stores.memory.index(root, scope)
        bar = TerminalProgress("indexing memory")

        def progress(done: int, total: int) -> None:
            ctx.progress(done, total, "indexing memory files")
            if total >= LARGE_BUILD_FILES:
                bar(done, total)

        # Deny-globbed files are neither walked nor indexed, and leave an index built before the glob.
        index.refresh(progress, hidden=ctx.workspace.hidden)
        hits = [
            hit for hit in index.search(input.query, input.max_results) if not ctx.workspace.hidden(root / hit.file)
        ]
        entries = [
            f"{n}. {hit.file} {'lines' if '-' in hit.lines else 'line'} {hit.lines} (score {hit.score:.3g})\n"
            + hit.snippet
            for n, hit in enumerate(hits, start=1)
        ]
        text = "\n---\n".join(entries) if entries else "No memory matches the query."
        return MemorySearchOutput(results=text, count=len(hits))


class MemoryGetInput(ToolInput):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    file_path: Annotated[str, Subject("text")] = Field(
        description="MEMORY.md, memory.md, or a file under memory/ (e.g. 'memory/people.md')."
    )
    from_: int = Field(default=1, ge=1, alias="from", description="First line to return (1-based).")
    lines: int | None = Field(default=None, ge=1, description="How many lines; omit for the rest of the file.")


class MemoryGetOutput(ToolOutput):
    file: str
    content: str = Field(description="The lines, each as 'N: text'.")
    total_lines: int
    next_from: int | None = Field(description="The line to continue from, or null at the end of the file.")


class MemoryGet(Tool[MemoryGetInput, MemoryGetOutput]):
    name = "memory_get"
    group = "memory"
    read_only = True
    description = (
        "Read lines of a memory file (MEMORY.md, memory.md or memory/...), numbered 'N: text'. Use it after "
        "memory_search to read around a hit. Other files are refused: use read_files for them."
    )

    def subjects(self, input: MemoryGetInput) -> list[str]:
        return _memory_subjects(input.file_path)

    def execute(self, input: MemoryGetInput, ctx: ToolContext) -> MemoryGetOutput:
        path, relative = _memory_path(ctx, input.file_path, write=False)
        # By descriptor, component by component: a directory swapped for a symlink since the check is refused.
        try:
            data = ctx.workspace.read_bytes(path, limit=MAX_FILE_BYTES)
        except FileNotFoundError:
            raise ToolError(
                ErrorType.NOT_FOUND, f"'{relative}' does not exist.", "memory_search finds what exists."
            ) from None
        if len(data) > MAX_FILE_BYTES:
            raise ToolError(
                ErrorType.TOO_LARGE,
                f"'{relative}' is over {MAX_FILE_BYTES:,} bytes.",
                "Use memory_search to find the part you need, or read_files with a line range.",
            )
        text = data.decode("utf-8", errors="replace")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        total = len(lines)
        if input.from_ > max(total, 1):
            raise ToolError(
                ErrorType.INVALID_INPUT, f"'{relative}' has {total} lines; from={input.from_} is past the end."
            )
        stop = total if input.lines is None else min(total, input.from_ - 1 + input.lines)
        shown = [f"{n}: {lines[n - 1].rstrip(chr(13))}" for n in range(input.from_, stop + 1)]
        return MemoryGetOutput(
            file=relative, content="\n".join(shown), total_lines=total, next_from=stop + 1 if stop < total else None
        )


class MemoryWriteInput(ToolInput):
    file_path: Annotated[str, Subject("text")] = Field(
        description="MEMORY.md, memory.md, or a file under memory/ (e.g. 'memory/decisions.md')."
    )
    content: str = Field(description="Markdown text to write.")
    mode: Literal["append", "overwrite"] = Field(
        default="append", description="append adds to the end (a newline is added between); overwrite replaces."
    )


class MemoryWriteOutput(ToolOutput):
    file: str
    mode: str
    bytes: int = Field(description="Size of the file after the write.")


class MemoryWrite(Tool[MemoryWriteInput, MemoryWriteOutput]):
    name = "memory_write"
    group = "memory"
    sequential = True
    description = (
        "Save notes to memory so you can find them later with memory_search: append to (default) or overwrite "
        "MEMORY.md, memory.md or a markdown file under memory/. Keep one topic per paragraph and start sections "
        "with '#' headings; that is what search returns. The write is atomic."
    )

    def subjects(self, input: MemoryWriteInput) -> list[str]:
        return _memory_subjects(input.file_path)

    def execute(self, input: MemoryWriteInput, ctx: ToolContext) -> MemoryWriteOutput:
        if len(input.content) > MAX_WRITE_CHARS:
            raise ToolError(
                ErrorType.TOO_LARGE, f"content is over {MAX_WRITE_CHARS:,} characters.", "Write less at a time."
            )
        path, relative = _memory_path(ctx, input.file_path, write=True)
        with ctx.stores.memory.write_lock:  # append is read-modify-write: one writer at a time, across processes
            existing = ""
            if input.mode == "append":
                with suppress(FileNotFoundError):
                    existing = ctx.workspace.read_bytes(path, limit=MAX_FILE_BYTES).decode("utf-8", errors="replace")
            separator = "\n" if existing and not existing.endswith("\n") else ""
            text = existing + separator + input.content
            data = text.encode("utf-8")
            if len(data) > MAX_FILE_BYTES:
                raise ToolError(
                    ErrorType.TOO_LARGE,
                    f"'{relative}' would grow to {len(data):,} bytes; the limit is {MAX_FILE_BYTES:,}.",
                    "Start another file under memory/, or overwrite this one with a summary.",
                )
            # Parents are made and the file replaced through descriptors opened without following symlinks.
            ctx.workspace.write_bytes(path, data, record=ctx.checkpoint)
        return MemoryWriteOutput(file=relative, mode=input.mode, bytes=len(data))


TOOLS = [MemorySearch(), MemoryGet(), MemoryWrite()]

"""Finding things in the workspace: ``code_search`` (ripgrep) and ``glob`` (file names, newest first).

Trust model: pattern, globs and flags are hostile; ripgrep's argv is built here from an allowlist
(``sandbox.rgflags``) with ``--`` before the pattern and paths, and every reported path is re-checked
against the workspace before it is shown.
"""

from __future__ import annotations

import base64
import json
import math
import os
import time
from collections.abc import Sequence
from itertools import compress
from operator import neg
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolrig.context import ToolContext
from toolrig.definition import Subject, Tool, ToolInput, ToolOutput
from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.confine.view import hidden_below
from toolrig.sandbox.mtimes import cache_for, lstat_mtimes
from toolrig.sandbox.paths import Workspace, is_within
from toolrig.sandbox.rgflags import parse_flags, rebase_glob
from toolrig.sandbox.ripgrep import (
    HIDDEN_DIRS_SEARCHED,
    GlobFilter,
    RgRun,
    base_argv,
    confine_to,
    exclusions,
    glob_filter,
    list_files,
)

MAX_LINE_CHARS = 300
PROGRESS_INTERVAL = 0.5  # seconds between progress reports of a long search (MCP clients show them)


def _start(ctx: ToolContext, cwd: str | None) -> tuple[Path, Path, str]:
    """The resolved search directory, the root it lies in and its path relative to that root."""
    start = ctx.workspace.resolve(cwd or ".")
    if not start.exists():
        raise ToolError(ErrorType.NOT_FOUND, f"'{cwd}' does not exist.", "Search from the workspace root instead.")
    root = ctx.workspace.root_of(start)
    rel = start.relative_to(root).as_posix() or "."
    return start, root, rel


def _check_arguments(what: str, values: list[str]) -> None:
    """These reach ripgrep as argv: a NUL cannot be passed and a lone surrogate cannot be encoded."""
    for value in values:
        if "\x00" in value:
            raise ToolError(
                ErrorType.INVALID_INPUT, f"The {what} contains a NUL byte.", "Remove the NUL; search for text."
            )
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ToolError(
                ErrorType.INVALID_INPUT,
                f"The {what} is not valid Unicode (it holds a lone surrogate).",
                "Send well-formed text.",
            ) from None


def _search_paths(workspace: Workspace, start: Path, rel: str, hidden: bool) -> list[str]:
    """``rel`` plus the hidden directories searched on purpose, unless the workspace hides them.

    ripgrep applies no ``--glob`` to a path it is given, so a deny glob naming one of these directories
    (``.github``) would not keep its files out: such a directory is not given at all.
    """
    paths = [rel]
    if start.is_dir() and not hidden:
        for name in HIDDEN_DIRS_SEARCHED:
            candidate = start / name
            if candidate.is_dir() and not candidate.is_symlink() and not workspace.hidden(candidate, is_dir=True):
                paths.append(name if rel == "." else f"{rel}/{name}")
    return paths


def _shown(ctx: ToolContext, root: Path, printed: str) -> str | None:
    """A path ripgrep printed (relative to ``root``), as the model sees it; None if it must stay hidden."""
    path = root / printed.removeprefix("./")
    if ctx.workspace.hidden(path):
        return None
    return ctx.workspace.display(path)


def _links_escape(workspace: Workspace, start: Path, limit: int = 200_000) -> str | None:
    """The first symlink under ``start`` whose target leaves the workspace (checked before ``--follow``)."""
    seen = 0
    for directory, dirs, files in os.walk(start, followlinks=False):
        for name in (*dirs, *files):
            seen += 1
            path = Path(directory, name)
            if path.is_symlink():
                target = Path(os.path.realpath(path))
                if not any(is_within(target, root) for root in workspace.roots) or workspace.hidden(target):
                    return workspace.display(path)
        if seen > limit:
            return f"{workspace.display(Path(directory))} (too many entries to check)"
    return None


# ------------------------------------------------------------------------------------------ code_search


class CodeSearchInput(ToolInput):
    pattern: str = Field(min_length=1, description="A regular expression (Rust regex syntax), or literal text with -F.")
    flags: str | list[str] = Field(
        default_factory=list,
        description=(
            "ripgrep flags as one string split like a shell ('-i -w', '-t ts', \"-g '*.test.ts'\") or a list "
            "(['-F'], ['--type', 'py'], ['-g', '!tests/**']). -n, --no-heading, --color=never and similar "
            "display flags are ignored."
        ),
    )
    cwd: Annotated[str | None, Subject("path", missing=".")] = Field(
        default=None, description="Directory (or file) to search; default the workspace root."
    )
    max_results_per_file: int = Field(default=15, ge=1, le=1000)
    global_max_results: int = Field(default=250, ge=1, le=5000)
    timeout_seconds: float = Field(default=10, gt=0, le=120)
    output_mode: Literal["content", "files_with_matches", "count"] = "content"
    context: int | None = Field(default=None, ge=0, le=20, description="Lines of context around each match.")
    glob: list[str] | None = Field(default=None, description="Only files matching these globs ('!' excludes).")
    multiline: bool = Field(default=False, description="Let the pattern span lines ('.' then matches newlines).")


class CodeSearchOutput(ToolOutput):
    output: str = Field(description="'path:line: text' per match (context lines as 'path-line- text').")
    match_count: int
    file_count: int
    truncated: bool = Field(description="True when a limit or the timeout stopped the search early.")
    message: str


class CodeSearch(Tool[CodeSearchInput, CodeSearchOutput]):
    name = "code_search"
    group = "search"
    read_only = True
    description = (
        "Search file contents with ripgrep (regex by default; pass flags ['-F'] for literal text, ['-i'] to "
        "ignore case). Returns 'path:line: text' lines, or with output_mode 'files_with_matches' just the paths, "
        "or 'count' the matching lines per file. Searches files git does not ignore, plus .github/.gitlab/"
        ".circleci/.husky/.agents. Stops at max_results_per_file per file and global_max_results in total "
        "(truncated=true then: narrow the pattern, cwd or glob). Programs and paths outside the workspace are refused."
    )

    def execute(self, input: CodeSearchInput, ctx: ToolContext) -> CodeSearchOutput:
        _check_arguments("pattern", [input.pattern])
        _check_arguments("flags", [input.flags] if isinstance(input.flags, str) else input.flags)
        _check_arguments("glob", input.glob or [])
        start, root, rel = _start(ctx, input.cwd)
        flags = parse_flags(input.flags, lambda glob: rebase_glob(glob, rel))
        argv = base_argv(hidden=flags.hidden)
        ignore_files = [ctx.workspace.resolve(ignore_file) for ignore_file in flags.ignore_files]
        for ignore_file in ignore_files:
            argv.append(f"--ignore-file={ignore_file}")
        if flags.follow:
            if escape := _links_escape(ctx.workspace, start):
                raise ToolError(
                    ErrorType.DENIED,
                    f"--follow is refused: the symlink '{escape}' leads outside the workspace.",
                    "Search without --follow.",
                )
            argv.append("--follow")
        argv += flags.argv
        selection = glob_filter(input.glob or (), rel, hidden=flags.hidden)
        argv += selection.argv
        argv += flags.globs
        argv += exclusions(ctx.workspace.exclusion_globs(root))
        if input.multiline:
            argv += ["--multiline", "--multiline-dotall"]
        if input.context:
            argv.append(f"--context={input.context}")
        if input.output_mode == "content":
            argv.append(f"--max-count={input.max_results_per_file}")
        paths = _search_paths(ctx.workspace, start, rel, flags.hidden)
        if input.output_mode == "content":
            argv += ["--json", "--", input.pattern, *paths]
        else:
            mode = "--files-with-matches" if input.output_mode == "files_with_matches" else "--count"
            argv += [mode, "--null", "--", input.pattern, *paths]
        # Opened last, right before ripgrep starts (which closes them): nothing in between can raise.
        hidden = hidden_below(ctx.workspace, root)  # carved out of ripgrep's Landlock grant, as from a command's view
        run = RgRun(argv, root, input.timeout_seconds, confine_to(root, start, ignore_files, hidden))
        if input.output_mode == "content":
            out = self._content(ctx, root, run, input, selection)
        else:
            out = self._listing(ctx, root, run, input, selection)
        if note := flags.note():
            out.message = f"{out.message} {note}"
        return out

    def _content(
        self, ctx: ToolContext, root: Path, run: RgRun, input: CodeSearchInput, selection: GlobFilter
    ) -> CodeSearchOutput:
        lines: list[str] = []
        matches = 0
        files: set[str] = set()
        truncated = False
        seen: dict[str, str | None] = {}  # path as ripgrep printed it -> as shown, None = hidden
        last: tuple[str, int] = ("", 0)
        next_report = 0.0
        with run:
            for raw in run.lines():
                kind = raw[9:14]  # b'{"type":"match"...': the record type without parsing begin/end records
                if kind not in (b"match", b"conte"):
                    continue
                data = json.loads(raw)["data"]
                printed = _text(data["path"])
                if printed not in seen:
                    seen[printed] = _shown(ctx, root, printed) if selection.accepts(printed) else None
                shown = seen[printed]
                if shown is None:
                    continue
                number = data["line_number"]
                if input.context and lines and (printed, number - 1) != last:
                    lines.append("--")  # a gap: another file, or a distant part of this one
                separator = ":" if kind == b"match" else "-"
                for offset, text in enumerate(_text(data["lines"]).split("\n")):
                    if offset and not text:
                        continue
                    if len(text) > MAX_LINE_CHARS:
                        text = text[:MAX_LINE_CHARS] + f"… [{len(text):,} chars]"
                    lines.append(f"{shown}{separator}{number + offset}{separator} {text.rstrip(chr(13))}")
                    last = (printed, number + offset)
                if kind == b"match":
                    matches += 1
                    files.add(shown)
                    if (now := time.monotonic()) >= next_report:  # the first match, then twice a second
                        ctx.progress(matches, input.global_max_results, f"{matches} matches in {len(files)} files")
                        next_report = now + PROGRESS_INTERVAL
                    if matches >= input.global_max_results:
                        truncated = True
                        run.stop()
                        break
        _raise_for_errors(run, matches, input.timeout_seconds)
        truncated = truncated or run.timed_out
        return CodeSearchOutput(
            output="\n".join(lines),
            match_count=matches,
            file_count=len(files),
            truncated=truncated,
            message=_message(matches, len(files), truncated, run.timed_out, input),
        )

    def _listing(
        self, ctx: ToolContext, root: Path, run: RgRun, input: CodeSearchInput, selection: GlobFilter
    ) -> CodeSearchOutput:
        rows: list[str] = []
        total = 0
        truncated = False
        with run:
            records = run.lines() if input.output_mode == "count" else run.records(b"\0")
            for raw in records:
                name, _, count = raw.rstrip(b"\n").partition(b"\0")
                printed = os.fsdecode(name)
                shown = _shown(ctx, root, printed) if selection.accepts(printed) else None
                if shown is None:
                    continue
                if input.output_mode == "count":
                    rows.append(f"{shown}: {int(count or 0)}")
                    total += int(count or 0)
                else:
                    rows.append(shown)
                    total += 1
                if len(rows) >= input.global_max_results:
                    truncated = True
                    run.stop()
                    break
        _raise_for_errors(run, len(rows), input.timeout_seconds)
        truncated = truncated or run.timed_out
        return CodeSearchOutput(
            output="\n".join(rows),
            match_count=total,
            file_count=len(rows),
            truncated=truncated,
            message=_message(total, len(rows), truncated, run.timed_out, input),
        )


def _text(value: dict[str, Any]) -> str:
    """A ripgrep JSON string: ``text``, or ``bytes`` (base64) when it is not valid UTF-8."""
    if "text" in value:
        return str(value["text"])
    return base64.b64decode(value.get("bytes", "")).decode("utf-8", errors="replace")


def _raise_for_errors(run: RgRun, found: int, timeout: float) -> None:
    errors = run.errors()
    if run.returncode == 2 and not found and not run.stopped:
        first = errors.split("\n\n")[0] if errors else "ripgrep failed"
        raise ToolError(ErrorType.INVALID_INPUT, f"The search failed: {first}", "Fix the pattern or flags and retry.")


def _message(matches: int, files: int, truncated: bool, timed_out: bool, input: CodeSearchInput) -> str:
    if timed_out:
        return f"Stopped after {input.timeout_seconds:g}s with {matches} results so far; narrow the search."
    if truncated:
        return (
            f"Stopped at {input.global_max_results} results (limit); there are more. Narrow the pattern, "
            "cwd or glob, or raise global_max_results."
        )
    if not matches:
        return "No matches."
    return f"{matches} results in {files} files."


# ------------------------------------------------------------------------------------------ glob


class GlobConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_files: int = Field(default=1000, ge=1, description="At most this many (newest) files are returned.")
    mtime_cache: bool = Field(
        default=True,
        description=(
            "From a workspace's second glob on, keep the files' mtimes, kept exact by inotify (saves an lstat per "
            "match). Off: every glob lstats every match (e.g. for files written through shared mmap)."
        ),
    )


class GlobInput(ToolInput):
    pattern: str | list[str] = Field(
        description=(
            "A glob like '**/*.py', 'src/**/*.{ts,tsx}' or 'docs/*.md', or a list of them; one starting with '!' "
            "removes matches (e.g. ['**/*.py', '!tests/**']). A glob without '/' matches at any depth."
        )
    )
    cwd: Annotated[str | None, Subject("path", missing=".")] = Field(
        default=None, description="Directory the globs are relative to; default the root."
    )


class GlobOutput(ToolOutput):
    files: list[str] = Field(description="Matching files relative to the workspace root, newest first.")
    count: int = Field(description="How many files matched in total (files may hold fewer).")
    message: str


class Glob(Tool[GlobInput, GlobOutput]):
    name = "glob"
    group = "search"
    read_only = True
    config_model = GlobConfig
    description = (
        "Find files by name with glob patterns ('**/*.py', 'src/**/*.{ts,tsx}', '!' to exclude), newest first. "
        "Skips files git ignores and hidden files (unless the pattern names a hidden directory). "
        "Use it to find files; use code_search to find text inside them."
    )

    def execute(self, input: GlobInput, ctx: ToolContext) -> GlobOutput:
        config = ctx.settings(GlobConfig)
        patterns = [input.pattern] if isinstance(input.pattern, str) else list(input.pattern)
        _check_arguments("pattern", patterns)
        patterns = [p.strip() for p in patterns if p.strip()]
        if not patterns:
            raise ToolError(ErrorType.INVALID_INPUT, "The pattern is empty.", "Give a glob such as '**/*.py'.")
        start, root, rel = _start(ctx, input.cwd)
        if not start.is_dir():
            raise ToolError(ErrorType.INVALID_INPUT, f"'{input.cwd}' is not a directory.")
        hidden = any(part.startswith(".") and part not in (".", "..")
                     for p in patterns if not p.startswith("!") for part in p.split("/"))  # fmt: skip
        selection = glob_filter(patterns, rel, hidden=hidden)
        paths = _search_paths(ctx.workspace, start, rel, hidden)
        deny = ctx.workspace.exclusion_globs(root)
        cache = cache_for(ctx.workspace, root) if config.mtime_cache else None
        stamp = lstat_mtimes if cache is None else cache.stamp
        dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        newest = Newest(config.max_files)
        seen: set[str] | None = set() if len(paths) > 1 else None  # one search path never repeats a name
        try:
            # Stamp each batch while ripgrep walks on: without the cache the mtimes cost as much as the walk.
            found = list_files(
                root,
                paths,
                extra=selection.argv,
                deny=deny,
                hidden=hidden,
                confinement=confine_to(root, start, hidden=hidden_below(ctx.workspace, root)),
            )
            for batch, plain in found:
                names = selection.keep(batch, plain)
                if seen is not None:
                    names = [name for name in names if name not in seen]
                    seen.update(names)
                newest.add(*stamp(names, dir_fd))
        finally:
            os.close(dir_fd)
        prefix = "" if root == ctx.workspace.root else f"{root}/"  # ripgrep printed paths relative to root
        files = [prefix + name for _, name in newest.result()]
        count = newest.count
        if not count:
            message = "No files match."
        elif count > len(files):
            message = f"Showing the {len(files)} newest of {count} matching files; narrow the pattern to see the rest."
        else:
            message = f"{count} matching files, newest first."
        return GlobOutput(files=files, count=count, message=message)


class Newest:
    """The ``limit`` newest of the names met batch by batch (newest first, ties by name), and how many there were.

    Most of the work happens in ``add``, while ripgrep still walks; what is left for ``result`` (after ripgrep
    has finished, on the call's critical path) is a sort of about ``2 * limit`` values. The floor is the
    ``limit``-th newest mtime of the candidates kept so far: the ``limit``-th newest of part of the files is
    never newer than the ``limit``-th newest of all of them, so a file older than the floor can never be among
    the newest, and one that ties with it is kept.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0
        self._floor = -math.inf
        self._names: list[str] = []  # candidates, parallel lists: no tuple per file until the final sort
        self._mtimes: list[float] = []

    def add(self, names: list[str], mtimes: Sequence[float]) -> None:
        self.count += len(names)
        floor = self._floor
        if floor == -math.inf:
            self._names += names
            self._mtimes += mtimes
        else:
            chosen = [mtime >= floor for mtime in mtimes]
            self._names += compress(names, chosen)
            self._mtimes += compress(mtimes, chosen)
        if len(self._mtimes) >= 2 * self.limit:
            self._prune()

    def _prune(self) -> None:
        """Keep the candidates at or above the new floor, newest first: the final sort then finds them as one run."""
        mtimes, names = self._mtimes, self._names
        order = sorted(range(len(mtimes)), key=mtimes.__getitem__, reverse=True)
        floor = self._floor = mtimes[order[self.limit - 1]]
        end = self.limit
        while end < len(order) and mtimes[order[end]] == floor:
            end += 1  # ties with the floor stay: one of them may still be among the newest by name
        kept = order[:end]
        self._names = [names[index] for index in kept]
        self._mtimes = [mtimes[index] for index in kept]

    def result(self) -> list[tuple[float, str]]:
        """The newest (negated mtime, name) pairs in order, at most ``limit``."""
        mtimes, names, limit = self._mtimes, self._names, self.limit
        # Sorted by mtime alone (float keys take the sort's fast path, no tuple compared); if two of the
        # newest share an mtime, or one ties with the first left out, the pairs are sorted to order ties by name.
        order = sorted(range(len(mtimes)), key=mtimes.__getitem__, reverse=True)
        top = order[:limit]
        newest = [mtimes[index] for index in top]
        cut = len(order) > limit and mtimes[order[limit]] == newest[-1]
        if not cut and len(set(newest)) == len(newest):
            return [(-mtimes[index], names[index]) for index in top]
        return sorted(zip(map(neg, mtimes), names, strict=True))[:limit]


def _newest(mtimes: list[float], names: list[str], limit: int) -> list[tuple[float, str]]:
    """The ``limit`` newest (negated mtime, name) pairs of one batch (tests compare it with a plain sort)."""
    newest = Newest(limit)
    newest.add(names, mtimes)
    return newest.result()


TOOLS = [CodeSearch(), Glob()]

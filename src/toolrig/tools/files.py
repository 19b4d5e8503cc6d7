"""Reading the workspace: files with line numbers, a subtree with contents, directory listings.

Trust model: paths are hostile and go through ``ctx.workspace`` (resolution, deny globs, no-follow opens);
ignored, binary, oversized and out-of-bounds files come back as markers, so one bad path never fails the rest.
"""

from __future__ import annotations

import base64
import difflib
import itertools
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolrig.content import DEFAULT_MAX_IMAGE_BYTES, ImagePart
from toolrig.context import ToolContext
from toolrig.definition import Subject, Tool, ToolInput, ToolOutput
from toolrig.documents import MAX_IMAGE_SIDE, image_size, image_type, is_pdf, notebook, pdf_text, render_pdf
from toolrig.errors import ErrorType, ToolError
from toolrig.narrowing import Narrow
from toolrig.sandbox.allowed import AllowedPathsSettings
from toolrig.sandbox.gitignore import IgnoreRules
from toolrig.sandbox.listing import Entry, visible_names, walk
from toolrig.sandbox.patterns import PatternSet
from toolrig.sandbox.text import TextFile, decode, numbered, sha256, text_encoding

DOES_NOT_EXIST = "[FILE DOES NOT EXIST]"
IGNORED = "[FILE IGNORED]"
TOO_LARGE = "[FILE TOO LARGE]"
OUTSIDE = "[OUTSIDE PROJECT]"
TEMPLATE = "[TEMPLATE FILE]"
BINARY = "[BINARY FILE]"
NOT_A_FILE = "[NOT A FILE]"
IMAGE = "[IMAGE]"
NOTEBOOK = "[NOTEBOOK]"
UNREADABLE = "[CANNOT READ]"
TEMPLATE_SUFFIXES = (".example", ".sample", ".template", ".tmpl", ".dist")
MAX_TREE_ENTRIES = 2000
MAX_LISTED = 1000  # list_directory entries per call: about 90 characters each, within the default output cap


class FilesConfig(AllowedPathsSettings):
    model_config = ConfigDict(extra="forbid")
    max_file_bytes: Annotated[int, Narrow.MIN] = Field(
        default=1_000_000, ge=1, description="Larger files are reported as too large."
    )
    max_image_bytes: Annotated[int, Narrow.MIN] = Field(
        default=DEFAULT_MAX_IMAGE_BYTES, ge=1, description="Larger images are refused (providers cap them too)."
    )
    max_images: Annotated[int, Narrow.MIN] = Field(
        default=20, ge=0, le=100, description="Images attached per call, at most."
    )
    max_document_bytes: Annotated[int, Narrow.MIN] = Field(
        default=20_000_000, ge=1, description="Larger PDFs are reported as too large."
    )
    max_pdf_pages: Annotated[int, Narrow.MIN] = Field(
        default=20, ge=1, le=500, description="PDF pages read per call, at most."
    )


def _attach_image(data: bytes, media_type: str, shown: str, config: FilesConfig, images: list[ImagePart]) -> str:
    """Attach an image within the limits (bytes, pixels a side, images per call), or say why it was not."""
    size = image_size(data, media_type)
    if size is None:
        return f"{BINARY} '{shown}' starts like a {media_type} image but its header is damaged ({_size(len(data))})."
    if max(size) > MAX_IMAGE_SIDE:
        return (
            f"{TOO_LARGE} '{shown}' is a {size[0]}x{size[1]} image; models take at most {MAX_IMAGE_SIDE} pixels a side."
        )
    if len(data) > config.max_image_bytes:
        return (
            f"{TOO_LARGE} '{shown}' is a {_size(len(data))} image, over the {_size(config.max_image_bytes)} "
            "limit for images (tool_config.read_files.max_image_bytes)."
        )
    if len(images) >= config.max_images:
        return f"{IMAGE} '{shown}' was not attached: {config.max_images} images per call at most."
    images.append(ImagePart.of(data, media_type))
    return (
        f"{IMAGE} '{shown}' ({media_type}, {size[0]}x{size[1]}, {_size(len(data))}) is attached as image {len(images)}."
    )


def _larger_limit(data: bytes, config: FilesConfig) -> int:
    """The size limit for a file whose first bytes say it is an image or a PDF (0 for anything else)."""
    if image_type(data) is not None:
        return config.max_image_bytes
    if is_pdf(data):
        return config.max_document_bytes
    return 0


def is_template(name: str) -> bool:
    """``.env.example``-style files: their values are placeholders, not the project's real settings."""
    return name.lower().endswith(TEMPLATE_SUFFIXES)


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MB"


def _missing(ctx: ToolContext, path: Path) -> str:
    parent = path.parent
    try:
        names = [] if ctx.workspace.hidden(parent, is_dir=True) else visible_names(ctx.workspace, parent)
    except (OSError, ToolError):
        names = []
    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
    hint = f" Similar names there: {', '.join(close)}." if close else ""
    return f"{DOES_NOT_EXIST} '{ctx.workspace.display(path)}' does not exist.{hint}"


def _matcher(pattern: str) -> PatternSet:
    try:
        return PatternSet([pattern], braces=True)
    except ValueError as exc:  # too many brace expansions, or a pattern pathspec cannot compile
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"The pattern cannot be used: {str(exc)[:200]}.",
            "Use a simpler glob such as '*.py' or 'src/**/test_*' (at most 256 brace alternatives).",
        ) from None


# ------------------------------------------------------------------------------------------ read_files


class ReadFilesInput(ToolInput):
    paths: Annotated[list[str], Subject("path")] = Field(
        min_length=1, max_length=200, description="Files to read, relative to the workspace."
    )
    offset: int | None = Field(default=None, ge=1, description="First line to show (1-based); default 1.")
    limit: int | None = Field(default=None, ge=1, le=20_000, description="How many lines per file; default 2000.")
    pages: str | None = Field(
        default=None, max_length=200, description="PDF pages to read: '3', '1-5', '10-' or '1-3,7'; default first 20."
    )
    encoding: str | None = Field(
        default=None,
        max_length=40,
        description="Decode text with this encoding ('latin-1', 'cp1252', 'utf-16') instead of detecting it.",
    )
    binary: bool = Field(
        default=False, description="Return each file's raw bytes as base64 instead of text (to pass a file on)."
    )

    @field_validator("encoding")
    @classmethod
    def _text_encoding(cls, value: str | None) -> str | None:
        return None if value is None else text_encoding(value)


class ReadFilesOutput(ToolOutput):
    files: dict[str, str] = Field(description="Path -> numbered content ('     N<TAB>line'), or a [MARKER] + reason.")
    hashes: dict[str, str] = Field(description="Path -> sha256 of the file read; pass it as expected_hash to edits.")


class ReadFiles(Tool[ReadFilesInput, ReadFilesOutput]):
    name = "read_files"
    group = "files"
    read_only = True
    config_model = FilesConfig
    description = (
        "Read one or more text files, with line numbers ('     N<TAB>text'). Read every file you need in one "
        "call. Use offset/limit (lines) to page through long files; the default shows 2000 lines. Images (PNG, "
        "JPEG, GIF, WebP) come back as image content you can see; PDFs as text per page (pages='1-5'); Jupyter "
        "notebooks as their cells with outputs (image outputs attached). encoding decodes text in a given "
        "encoding; binary=true returns raw bytes as base64. A file that cannot be shown comes back as a marker "
        "instead: [FILE DOES NOT EXIST], [FILE IGNORED] (gitignored), [FILE TOO LARGE], [OUTSIDE PROJECT], "
        "[BINARY FILE], [CANNOT READ] or [NOT A FILE]; [TEMPLATE FILE] heads files like .env.example whose "
        "values are placeholders. Also returns each file's sha256 for expected_hash."
    )

    def execute(self, input: ReadFilesInput, ctx: ToolContext) -> ReadFilesOutput:
        config = ctx.settings(FilesConfig)
        allowed = config.allowed()
        rules = ctx.workspace.ignore_rules()
        files: dict[str, str] = {}
        hashes: dict[str, str] = {}
        denied: list[str] = []
        images: list[ImagePart] = []
        for spelled in input.paths:
            if spelled in files:
                continue
            try:
                path = ctx.workspace.resolve(spelled)
                if allowed is not None:
                    allowed.check(ctx.workspace, spelled, path, self.name)
            except ToolError as err:
                files[spelled] = f"{OUTSIDE} {err.message}"
                denied.append(err.message)
                continue
            files[spelled] = self._read_one(ctx, path, input, config, rules, hashes, spelled, images)
        if len(denied) == len(files):
            raise ToolError(ErrorType.DENIED, " ".join(denied))
        return ReadFilesOutput(files=files, hashes=hashes).attach_content(*images)

    def _read_one(
        self,
        ctx: ToolContext,
        path: Path,
        input: ReadFilesInput,
        config: FilesConfig,
        rules: IgnoreRules,
        hashes: dict[str, str],
        spelled: str,
        images: list[ImagePart],
    ) -> str:
        shown = ctx.workspace.display(path)
        if not os.path.lexists(path):
            return _missing(ctx, path)
        if os.path.isdir(path):
            return f"{NOT_A_FILE} '{shown}' is a directory; use list_directory or read_subtree."
        if rules.ignored(path, is_dir=False):
            return f"{IGNORED} '{shown}' is ignored by .gitignore; it is not part of the project's sources."
        try:
            data = ctx.workspace.read_bytes(path, limit=config.max_file_bytes)
        except ToolError as err:
            return f"{NOT_A_FILE} {err.message}"
        except FileNotFoundError:
            return _missing(ctx, path)
        except OSError as exc:
            return f"{NOT_A_FILE} '{shown}' cannot be read: {exc.strerror}."
        if len(data) > config.max_file_bytes and not input.binary:
            larger = _larger_limit(data, config)
            if larger > config.max_file_bytes:
                try:
                    data = ctx.workspace.read_bytes(path, limit=larger)
                except (OSError, ToolError):
                    return f"{NOT_A_FILE} '{shown}' cannot be read."
        if len(data) > max(config.max_file_bytes, _larger_limit(data, config)):
            size = os.stat(path).st_size
            limit = max(config.max_file_bytes, _larger_limit(data, config))
            return (
                f"{TOO_LARGE} '{shown}' is {_size(size)}, over the {_size(limit)} limit. "
                "Use code_search to find the part you need."
            )
        hashes[spelled] = sha256(data)
        if input.binary:
            return base64.b64encode(data).decode("ascii")
        if input.encoding is None:
            special = self._special(path, data, shown, input, config, images)
            if special is not None:
                return special
            text = decode(data)
        else:
            try:
                text = TextFile(data.decode(input.encoding), input.encoding, "\n")
            except UnicodeError as exc:  # UnicodeDecodeError, or a codec's own complaint
                where = f" at byte {exc.start}" if isinstance(exc, UnicodeDecodeError) else ""
                reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)[:200]
                return f"{UNREADABLE} '{shown}' is not valid {input.encoding}: {reason}{where}."
        if text is None:
            return f"{BINARY} '{shown}' is a binary file ({_size(len(data))}); binary=true returns it as base64."
        return self._numbered(text.text, path, input, shown)

    def _numbered(self, text: str, path: Path, input: ReadFilesInput, shown: str, head: str = "") -> str:
        view, total, last = numbered(text, input.offset or 1, input.limit or 2000)
        if not view and total:
            view = f"[The file has {total} lines; offset {input.offset} is past its end.]"
        elif last < total:
            view += f"\n[{total - last} more lines; read on with offset={last + 1}.]"
        elif not total:
            view = "[The file is empty.]"
        if is_template(path.name):
            view = f"{TEMPLATE} '{shown}' is a template: its values are placeholders, not real settings.\n{view}"
        return f"{head}\n{view}" if head else view

    def _special(
        self, path: Path, data: bytes, shown: str, input: ReadFilesInput, config: FilesConfig, images: list[ImagePart]
    ) -> str | None:
        """An image, a PDF or a notebook, read as such; None for any other file."""
        media_type = image_type(data)
        if media_type is not None:
            return _attach_image(data, media_type, shown, config, images)
        try:
            if is_pdf(data):
                return render_pdf(pdf_text(data, input.pages, config.max_pdf_pages, shown), shown)
            if path.suffix.lower() == ".ipynb":
                book = notebook(data, shown)
                attached = [_attach_image(image, kind, shown, config, images) for kind, image in book.images]
                left_out = [line for line in attached if not line.startswith(IMAGE) or "not attached" in line]
                head = (
                    f"{NOTEBOOK} '{shown}': cells with their outputs; {len(attached) - len(left_out)} images attached"
                )
                head += f" ({len(left_out)} left out: {left_out[0]})." if left_out else "."
                return self._numbered(book.text, path, input, shown, head)
        except ToolError as err:
            hint = f" {err.next_action_hint}" if err.next_action_hint else ""
            return f"{UNREADABLE} {err.message}{hint}"
        return None


# ------------------------------------------------------------------------------------------ read_subtree


class ReadSubtreeInput(ToolInput):
    paths: Annotated[list[str], Subject("path")] = Field(
        min_length=1, max_length=20, description="Directories (or files) to show."
    )
    max_depth: int = Field(default=3, ge=1, le=20, description="How deep to descend below each directory.")
    max_bytes: int = Field(default=50_000, ge=1_000, le=500_000, description="Budget for file contents in total.")


class ReadSubtreeOutput(ToolOutput):
    tree: str = Field(description="An indented tree of the directories (ignored files left out).")
    files: dict[str, str] = Field(description="Path -> numbered content, shallowest files first, within the budget.")
    message: str = Field(description="What was left out and why.")


class ReadSubtree(Tool[ReadSubtreeInput, ReadSubtreeOutput]):
    name = "read_subtree"
    group = "files"
    read_only = True
    description = (
        "Get to know a part of the project in one call: an indented tree of the given directories plus the "
        "contents of their text files, shallowest first, until max_bytes is spent. Gitignored, binary and "
        "oversized files are left out; the message says what was cut so you can read it with read_files."
    )

    def execute(self, input: ReadSubtreeInput, ctx: ToolContext) -> ReadSubtreeOutput:
        rules = ctx.workspace.ignore_rules()
        counts: dict[str, int] = {}
        tree: list[str] = []
        candidates: list[Entry] = []
        for spelled in input.paths:
            start = ctx.workspace.resolve(spelled)
            shown = ctx.workspace.display(start)
            if not start.exists():
                raise ToolError(ErrorType.NOT_FOUND, f"'{spelled}' does not exist.")
            if start.is_file():
                tree.append(shown)
                info = start.stat()
                candidates.append(Entry(start, start.name, "file", info.st_size, info.st_mtime, 0))
                continue
            tree.append(f"{shown}/")
            walked = walk(ctx.workspace, start, max_depth=input.max_depth, rules=rules, counts=counts)
            entries = sorted(itertools.islice(walked, MAX_TREE_ENTRIES + 1), key=lambda e: e.rel)
            for entry in entries[:MAX_TREE_ENTRIES]:
                name = entry.rel.rsplit("/", 1)[-1]
                suffix = "/" if entry.kind == "dir" else f" -> {entry.target}" if entry.kind == "symlink" else ""
                tree.append(f"{'  ' * entry.depth}{name}{suffix}")
                if entry.kind == "file":
                    candidates.append(entry)
            if len(entries) > MAX_TREE_ENTRIES:
                counts["entries"] = counts.get("entries", 0) + 1
        files, cut = self._contents(ctx, candidates, input.max_bytes)
        return ReadSubtreeOutput(tree="\n".join(tree), files=files, message=self._message(counts, cut))

    def _contents(self, ctx: ToolContext, entries: list[Entry], budget: int) -> tuple[dict[str, str], list[str]]:
        files: dict[str, str] = {}
        cut: list[str] = []
        for entry in sorted(entries, key=lambda e: (e.depth, e.rel)):
            shown = ctx.workspace.display(entry.path)
            if entry.size > budget:
                cut.append(shown)
                continue
            try:
                data = ctx.workspace.read_bytes(entry.path, limit=budget)
            except (ToolError, OSError):
                continue
            text = decode(data)
            if text is None:
                continue
            view, _, _ = numbered(text.text)
            if len(view.encode()) > budget:
                cut.append(shown)
                continue
            budget -= len(view.encode())
            files[shown] = view
        return files, cut

    def _message(self, counts: dict[str, int], cut: list[str]) -> str:
        notes = []
        if cut:
            listed = ", ".join(cut[:20]) + (f" and {len(cut) - 20} more" if len(cut) > 20 else "")
            notes.append(f"Not shown for lack of budget (read them with read_files): {listed}.")
        if counts.get("ignored"):
            notes.append(f"{counts['ignored']} gitignored entries left out.")
        if counts.get("deeper"):
            notes.append(f"{counts['deeper']} directories below max_depth not expanded.")
        if counts.get("entries"):
            notes.append(f"The tree was cut at {MAX_TREE_ENTRIES:,} entries; read a smaller directory for the rest.")
        return " ".join(notes) or "Everything was shown."


# ------------------------------------------------------------------------------------------ list_directory


class DirectoryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: Annotated[str, Subject("path")] = Field(description="Directory relative to the workspace ('.' for the root).")
    recursive: bool = Field(default=False, description="Also list everything below it.")


class DirectoryEntry(BaseModel):
    name: str = Field(description="Path relative to the listed directory; directories end with '/'.")
    type: Literal["file", "dir", "symlink", "other"]
    size: int
    modified: str = Field(description="Last modification, ISO 8601 UTC.")


class ListDirectoryInput(ToolInput):
    directories: list[DirectoryRequest] = Field(min_length=1, max_length=20)
    pattern: str | None = Field(default=None, description="Only entries matching this glob (e.g. '*.py').")


class ListDirectoryOutput(ToolOutput):
    listings: dict[str, list[DirectoryEntry]] = Field(description="Directory -> its entries.")
    message: str


class ListDirectory(Tool[ListDirectoryInput, ListDirectoryOutput]):
    name = "list_directory"
    group = "files"
    read_only = True
    description = (
        "List directories: each entry's name, type (file/dir/symlink), size in bytes and modification time. "
        "Set recursive to include everything below (gitignored entries are left out; at most 1000 entries per "
        "call). pattern filters names with a glob such as '*.py' or 'src/**/test_*'."
    )

    def execute(self, input: ListDirectoryInput, ctx: ToolContext) -> ListDirectoryOutput:
        matcher = _matcher(input.pattern) if input.pattern else None
        rules = ctx.workspace.ignore_rules()
        budget = MAX_LISTED
        listings: dict[str, list[DirectoryEntry]] = {}
        counts: dict[str, int] = {}
        for request in input.directories:
            directory = ctx.workspace.resolve(request.path)
            if not directory.is_dir():
                kind = "does not exist" if not directory.exists() else "is not a directory"
                raise ToolError(ErrorType.NOT_FOUND, f"'{request.path}' {kind}.", "List its parent directory instead.")
            found: list[DirectoryEntry] = []
            for entry in walk(ctx.workspace, directory, max_depth=None if request.recursive else 1,
                              rules=rules, counts=counts):  # fmt: skip
                if matcher is not None and not matcher.matches(entry.rel, is_dir=entry.kind == "dir"):
                    continue
                if len(found) >= budget:
                    counts["over"] = 1  # stop walking: a huge tree must not cost the whole walk
                    break
                found.append(_entry(entry))
            budget -= len(found)
            listings[ctx.workspace.display(directory)] = found
        notes = []
        if counts.get("ignored"):
            notes.append(f"{counts['ignored']} gitignored entries left out.")
        if counts.get("over"):
            notes.append(
                f"More entries were not shown ({MAX_LISTED:,} per call); list a narrower directory or use a pattern."
            )
        return ListDirectoryOutput(listings=listings, message=" ".join(notes) or "Complete.")


def _entry(entry: Entry) -> DirectoryEntry:
    modified = datetime.fromtimestamp(entry.mtime, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    name = entry.rel + ("/" if entry.kind == "dir" else "")
    return DirectoryEntry(name=name, type=entry.kind, size=entry.size, modified=modified)  # type: ignore[arg-type]


TOOLS = [ReadFiles(), ReadSubtree(), ListDirectory()]

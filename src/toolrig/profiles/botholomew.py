"""Botholomew's tools (seed 001): ``context_read``, ``context_tree``, ``search_semantic`` in its shapes.

Botholomew keeps an agent's knowledge under a context root and names paths from it (``/notes/meeting.md``,
or bare, ``notes/meeting.md``); here that root is the workspace, so a leading ``/`` is the workspace's root
and never the machine's. Its results carry ``is_error: false``; its errors are toolrig's contract already
(``error_type``, ``message``, ``next_action_hint``), as Botholomew's structured ``not_found`` is. Its CLI
(``botholomew context read PATH --offset 10 --limit 20``, ``context tree PATH --max-depth 3``, ``search
semantic QUERY``) is ``toolrig context read ...``: see ``toolrig.cli``.
"""

from __future__ import annotations

import posixpath
from typing import Any

from toolrig.errors import ErrorType, ToolError
from toolrig.profiles.profile import Args, Face, Profile, Shaped, as_number, number, obj, string
from toolrig.profiles.shapes import MEMORY_HIT, single_file, unnumbered

DEFAULT_MAX_DEPTH = 10  # Botholomew's own default for context_tree


def context_path(value: Any) -> Any:
    """``/notes/x.md`` and ``notes/x.md`` are the same file: the context root is the workspace."""
    if not isinstance(value, str):
        return value
    stripped = value.strip().lstrip("/")
    return stripped or "."


def _integer(value: Any) -> Any:
    number_value = as_number(value)
    return int(number_value) if number_value is not None and number_value.is_integer() else value


def read_in(args: Args, notes: list[str]) -> Args:
    out: Args = {"paths": [context_path(args.get("path"))]}
    for key in ("offset", "limit"):
        if args.get(key) is not None:
            out[key] = _integer(args[key])
    return {**{k: v for k, v in args.items() if k not in ("path", "offset", "limit")}, **out}


def read_out(shaped: Shaped) -> dict[str, Any]:
    path = str(context_path(shaped.args.get("path", "")))
    try:
        _, text = single_file(shaped.output.get("files", {}), path)
    except ToolError as err:
        if err.error_type != ErrorType.NOT_FOUND:
            raise
        parent = posixpath.dirname(path) or "."
        raise ToolError(
            ErrorType.NOT_FOUND,
            f"No file at {path}",
            f'Call context_tree({{"path": "{parent}"}}) to see what is there.',
        ) from None
    return {"content": unnumbered(text)[0], "is_error": False}


def tree_in(args: Args, notes: list[str]) -> Args:
    depth = _integer(args.get("max_depth", DEFAULT_MAX_DEPTH))
    if isinstance(depth, int) and depth > 20:
        notes.append(f"max_depth {depth} was read as 20, the deepest toolrig's tree goes")
        depth = 20
    rest = {k: v for k, v in args.items() if k not in ("path", "max_depth")}
    # Only the tree is answered: the smallest budget for the file contents read_subtree also gathers.
    return {**rest, "paths": [context_path(args.get("path", ""))], "max_depth": depth, "max_bytes": 1000}


def boxed(tree: str) -> tuple[str, int]:
    """read_subtree's two-space indented tree drawn as Botholomew's (``├──``, ``└──``), with its file count."""
    rows = [(len(line) - len(line.lstrip(" ")), line.strip()) for line in tree.split("\n") if line.strip()]
    drawn: list[str] = []
    open_levels: list[bool] = []  # per depth below the root: does that ancestor have siblings still to come?
    for index, (indent, label) in enumerate(rows):
        depth = indent // 2
        later = [d // 2 for d, _ in rows[index + 1 :]]
        last = next((d < depth for d in later if d <= depth), True)
        if depth == 0:
            drawn.append(label)
            continue
        del open_levels[depth - 1 :]
        prefix = "".join("│   " if more else "    " for more in open_levels)
        drawn.append(prefix + ("└── " if last else "├── ") + label)
        open_levels.append(not last)
    files = sum(1 for _, label in rows[1:] if not label.endswith("/"))
    return "\n".join(drawn), files


def tree_out(shaped: Shaped) -> dict[str, Any]:
    tree, total = boxed(str(shaped.output.get("tree", "")))
    return {"tree": tree, "total_items": total, "is_error": False}


def semantic_in(args: Args, notes: list[str]) -> Args:
    top_k = _integer(args.get("top_k", 10))
    if isinstance(top_k, int) and not 1 <= top_k <= 50:
        notes.append(f"top_k {top_k} was read as {min(max(top_k, 1), 50)}")
        top_k = min(max(top_k, 1), 50)
    return {**{k: v for k, v in args.items() if k not in ("top_k", "threshold")}, "max_results": top_k}


def semantic_out(shaped: Shaped) -> dict[str, Any]:
    threshold = as_number(shaped.args.get("threshold"))
    results: list[dict[str, Any]] = []
    text = str(shaped.output.get("results", "")) if shaped.output.get("count") else ""
    for hit in text.strip().split("\n---\n") if text.strip() else []:
        header, _, body = hit.partition("\n")
        match = MEMORY_HIT.match(header.strip())
        if match is None:
            continue
        try:
            score = float(f"{float(match.group(3)):.4g}")  # toolrig's scale (BM25 or hybrid), to 4 digits
        except ValueError:
            score = 0.0
        if threshold is not None and score < threshold:
            continue
        snippet = body.strip()
        title = next((ln.lstrip("#").strip() for ln in snippet.split("\n") if ln.startswith("#")), "")
        path = match.group(2)
        title = title or posixpath.basename(path)
        results.append({"path": path, "title": title, "score": score, "snippet": snippet[:300]})
    results.sort(key=lambda r: -float(r["score"]))
    return {"results": results, "is_error": False}


FACES: tuple[Face, ...] = (
    Face(
        "context_read",
        "read_files",
        "Read a file's contents, or some of its lines (offset, limit).",
        obj(
            {
                "path": string("File path to read, from the context root ('notes/meeting.md').", minLength=1),
                "offset": number("Line number to start reading from (1-based)", minimum=1),
                "limit": number("Maximum number of lines to return", minimum=1),
            },
            ("path",),
        ),
        read_in,
        read_out,
        subject="path",
        subject_style="path",
    ),
    Face(
        "context_tree",
        "read_subtree",
        "[[ bash equivalent command: tree ]] Render the file tree under the context root (or a sub-directory).",
        obj(
            {
                "path": string("Directory path to render (defaults to the context root).", default=""),
                "max_depth": number(
                    f"Maximum depth of directories to render (defaults to {DEFAULT_MAX_DEPTH}).",
                    "integer",
                    minimum=1,
                    default=DEFAULT_MAX_DEPTH,
                ),
            }
        ),
        tree_in,
        tree_out,
    ),
    Face(
        "search_semantic",
        "memory_search",
        "Search the agent's memory notes for conceptually related passages, best first (embeddings when "
        "stores.memory.semantic is on, else keyword ranking).",
        obj(
            {
                "query": string("Natural language search query", minLength=1),
                "top_k": number("Maximum number of results to return (defaults to 10)", default=10),
                "threshold": number("Minimum similarity score to include in results"),
            },
            ("query",),
        ),
        semantic_in,
        semantic_out,
    ),
)

PROFILE = Profile("botholomew", "Botholomew's tools: context_read, context_tree, search_semantic.", FACES)

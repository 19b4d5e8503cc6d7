"""CamelAGI's tools: the Claude Agent SDK's built-ins plus its own apply_patch, memory_search, memory_get, cron.

CamelAGI's own tools answer in text, and so do these faces (``{"result": text}``): ``apply_patch`` lists
``A|M|D path`` lines, ``memory_search`` numbers its hits as ``[1] file (score: N)`` separated by ``---``,
``memory_get`` prefixes lines with ``N: ``. Its ``memory_*`` take camelCase ``maxResults`` and ``filePath``.
"""

from __future__ import annotations

from typing import Any

from toolrig.profiles import claude
from toolrig.profiles.profile import Args, Face, Profile, Shaped, obj, rename, string
from toolrig.profiles.shapes import MEMORY_HIT

_SDK = ("Read", "Write", "Edit", "Bash", "Glob", "Grep", "WebSearch", "WebFetch")


def text(value: str) -> dict[str, Any]:
    return {"result": value}


def patch_out(shaped: Shaped) -> dict[str, Any]:
    changes = shaped.output.get("changes", [])
    return text("\n".join(f"{c.get('op', 'M')} {c.get('path', '')}" for c in changes))


def memory_search_in(args: Args, notes: list[str]) -> Args:
    out = rename(args, {"maxResults": "max_results"})
    if out.get("max_results") is None:
        out.pop("max_results", None)
    return out


def memory_search_out(shaped: Shaped) -> dict[str, Any]:
    """CamelAGI's text: ``[N] file (score: S)`` then the snippet, hits separated by a blank-lined ``---``."""
    results = str(shaped.output.get("results", "")).strip()
    if not results or not shaped.output.get("count"):
        return text("No memory matches found. Try different keywords.")
    hits = []
    for hit in results.split("\n---\n"):
        header, _, body = hit.partition("\n")
        match = MEMORY_HIT.match(header)
        if match is not None:
            header = f"[{match.group(1)}] {match.group(2)} (score: {match.group(3)})"
        hits.append(f"{header}\n{body}" if body else header)
    return text("\n\n---\n\n".join(hits))


def memory_get_in(args: Args, notes: list[str]) -> Args:
    out = rename(args, {"filePath": "file_path"})
    for key in ("from", "lines"):
        if key in out and out[key] is None:
            out.pop(key)
    return out


def memory_get_out(shaped: Shaped) -> dict[str, Any]:
    return text(str(shaped.output.get("content", "")))


def cron_in(args: Args, notes: list[str]) -> Args:
    return {k: v for k, v in args.items() if v is not None}


_NULLABLE_NUMBER = {"type": ["number", "null"]}

FACES = (
    *(face for face in claude.FACES if face.name in _SDK),
    Face(
        "apply_patch",
        "apply_patch",
        "Apply a patch in the Codex format ('*** Begin Patch' ... '*** End Patch'): add, delete, update files.",
        obj({"patch": string("The patch content.")}, ("patch",)),
        result_out=patch_out,
        subject="patch",
        subject_style="blanket",
    ),
    Face(
        "memory_search",
        "memory_search",
        "Search MEMORY.md and memory/*.md for past decisions, facts, preferences and notes.",
        obj(
            {
                "query": string("Search query (keywords or phrase)."),
                "maxResults": {**_NULLABLE_NUMBER, "description": "Maximum results to return (default: 6)."},
            },
            ("query",),
        ),
        memory_search_in,
        memory_search_out,
    ),
    Face(
        "memory_get",
        "memory_get",
        "Read a memory file (MEMORY.md or memory/*.md), optionally a range of lines.",
        obj(
            {
                "filePath": string("Relative path within the workspace (e.g. 'MEMORY.md', 'memory/2026-03-09.md')."),
                "from": {**_NULLABLE_NUMBER, "description": "Starting line number (1-indexed, default: 1)."},
                "lines": {**_NULLABLE_NUMBER, "description": "Number of lines to read (default: all)."},
            },
            ("filePath",),
        ),
        memory_get_in,
        memory_get_out,
    ),
    Face(
        "cron",
        "cron",
        "Manage scheduled jobs: list, add (name, schedule, prompt), remove (id), run (id).",
        obj(
            {
                "action": string("Action to perform.", enum=["list", "add", "remove", "run"]),
                "id": {"type": ["string", "null"], "description": "Job ID (required for remove/run)."},
                "name": {"type": ["string", "null"], "description": "Display name (for add)."},
                "schedule": {"type": ["string", "null"], "description": "Schedule expression (for add)."},
                "prompt": {"type": ["string", "null"], "description": "What the agent is asked when the job fires."},
            },
            ("action",),
        ),
        cron_in,
    ),
)

PROFILE = Profile(
    "camelagi",
    "CamelAGI: the Claude SDK tools plus apply_patch, memory_search, memory_get and cron.",
    FACES,
)

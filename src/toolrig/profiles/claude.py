"""Claude Code's built-in tools (the Claude Agent SDK's ``sdk-tools.d.ts``): names, parameters, result shapes.

Parameters are Claude Code's, spelled as it spells them (``file_path``, ``old_string``, ``-i``, ``head_limit``);
``Bash.timeout`` is in milliseconds. Results are the SDK's structured outputs (``FileReadOutput``,
``BashOutput``, ``GrepOutput``...). What toolrig cannot honour is accepted and named in a note.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

from toolrig.profiles.claude_shells import BACKGROUND_FACES
from toolrig.profiles.profile import (
    Args,
    Face,
    Profile,
    Shaped,
    array,
    as_number,
    boolean,
    drop,
    number,
    obj,
    string,
)
from toolrig.profiles.shapes import hunks, lines_of, search_files, single_file, unnumbered

BASH_MAX_MS = 600_000
# Claude Code's Write replaces an existing file; toolrig's write_file may be told to refuse (on_conflict).
OVERWRITE = {"on_conflict": "overwrite"}

# ------------------------------------------------------------------------------------------ files


def read_in(args: Args, notes: list[str]) -> Args:
    out = drop(args, notes, {})
    path = out.pop("file_path", None)
    out["paths"] = [path] if isinstance(path, str) else path
    if out.get("offset") == 0:
        out["offset"] = 1  # Claude Code reads offset 0 as the first line too
    return out


def read_out(shaped: Shaped) -> dict[str, Any]:
    path = str(shaped.args.get("file_path", ""))
    _, text = single_file(shaped.output.get("files", {}), path)
    content, start, count = unnumbered(text)
    return {
        "type": "text",
        "file": {
            "filePath": path,
            "content": content,
            "numLines": count,
            "startLine": start,
            "totalLines": start + count - 1,
        },
    }


def write_in(args: Args, notes: list[str]) -> Args:
    out = dict(args)
    if "file_path" in out:
        out["path"] = out.pop("file_path")
    return out


def _change(shaped: Shaped) -> tuple[str, list[dict[str, Any]]]:
    diff = str(shaped.output.get("unified_diff", ""))
    kind = "create" if diff.startswith("--- /dev/null") else "update"
    return kind, hunks(diff)


def write_out(shaped: Shaped) -> dict[str, Any]:
    kind, patch = _change(shaped)
    return {
        "type": kind,
        "filePath": shaped.args.get("file_path", ""),
        "content": shaped.args.get("content", ""),
        "structuredPatch": patch,
        "originalFile": None,
    }


def edit_out(shaped: Shaped) -> dict[str, Any]:
    _, patch = _change(shaped)
    return {
        "filePath": shaped.args.get("file_path", ""),
        "oldString": shaped.args.get("old_string", ""),
        "newString": shaped.args.get("new_string", ""),
        "originalFile": None,
        "structuredPatch": patch,
        "userModified": False,
        "replaceAll": bool(shaped.args.get("replace_all", False)),
    }


def multi_edit_in(args: Args, notes: list[str]) -> Args:
    out = write_in(args, notes)
    edits = out.pop("edits", None)
    if isinstance(edits, list):
        out["replacements"] = [
            {
                "old": e.get("old_string"),
                "new": e.get("new_string"),
                **({"replace_all": e["replace_all"]} if "replace_all" in e else {}),
            }
            if isinstance(e, dict)
            else e
            for e in edits
        ]
    else:
        out["replacements"] = edits
    return out


def multi_edit_out(shaped: Shaped) -> dict[str, Any]:
    _, patch = _change(shaped)
    return {
        "filePath": shaped.args.get("file_path", ""),
        "edits": shaped.args.get("edits", []),
        "originalFileContents": None,
        "structuredPatch": patch,
    }


# ------------------------------------------------------------------------------------------ shell


def bash_in(args: Args, notes: list[str]) -> Args:
    out = drop(
        args,
        notes,
        {
            "description": "",
            "dangerouslyDisableSandbox": "toolrig's sandbox cannot be turned off from a call",
        },
    )
    if "run_in_background" in out:
        out["background"] = out.pop("run_in_background")
    if "timeout" in out:
        value = out.pop("timeout")
        ms = as_number(value)
        out["timeout_seconds"] = min(ms, BASH_MAX_MS) / 1000 if ms is not None else value
    else:
        out["timeout_seconds"] = 120.0  # Claude Code's default: two minutes
    return out


def bash_out(shaped: Shaped) -> dict[str, Any]:
    output = shaped.output
    result: dict[str, Any] = {
        "stdout": output.get("stdout", ""),
        "stderr": output.get("stderr", ""),
        "interrupted": bool(output.get("timed_out") or output.get("stopped")),
        "isImage": False,
    }
    code = output.get("exit_code")
    if code not in (0, None):
        result["returnCodeInterpretation"] = f"exit code {code}"
    if output.get("background_id"):
        result["backgroundTaskId"] = output["background_id"]
    return result


# ------------------------------------------------------------------------------------------ search


def glob_in(args: Args, notes: list[str]) -> Args:
    out = dict(args)
    if "path" in out:
        out["cwd"] = out.pop("path")
    return out


def glob_out(shaped: Shaped) -> dict[str, Any]:
    files = list(shaped.output.get("files", []))
    return {
        "durationMs": round(shaped.duration_ms),
        "numFiles": len(files),
        "filenames": files,
        "truncated": int(shaped.output.get("count", len(files))) > len(files),
    }


def grep_in(args: Args, notes: list[str]) -> Args:
    out = drop(args, notes, {"head_limit": "", "offset": "", "-n": ""})
    flags: list[str] = []
    if out.pop("-i", False) is True:
        flags.append("-i")
    if out.pop("-o", False) is True:
        flags.append("-o")
    for key in ("-A", "-B"):
        if key in out:
            flags += [key, str(out.pop(key))]
    if "-C" in out:
        out["context"] = out.pop("-C")
    if "type" in out:
        flags += ["--type", str(out.pop("type"))]
    if "glob" in out:
        value = out.pop("glob")
        out["glob"] = [value] if isinstance(value, str) else value
    if "path" in out:
        out["cwd"] = out.pop("path")
    out.setdefault("output_mode", "files_with_matches")
    if flags:
        out["flags"] = flags
    return out


def grep_out(shaped: Shaped) -> dict[str, Any]:
    mode = str(shaped.args.get("output_mode", "files_with_matches"))
    text = str(shaped.output.get("output", ""))
    lines = [line for line in lines_of(text) if not line.startswith("[")]
    skip = shaped.args.get("offset")
    skip = int(skip) if isinstance(skip, int) and not isinstance(skip, bool) and skip > 0 else 0
    limit = shaped.args.get("head_limit", 250)
    limit = int(limit) if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0 else 250
    window = lines[skip : skip + limit] if limit else lines[skip:]
    applied = limit if limit and len(lines) - skip > limit else None
    result: dict[str, Any] = {"mode": mode}
    if mode == "files_with_matches":
        result.update(numFiles=len(window), filenames=window)
    elif mode == "count":
        result.update(
            numFiles=len(window),
            filenames=[],
            content="\n".join(window),
            numMatches=int(shaped.output.get("match_count", 0)),
        )
    else:
        result.update(
            numFiles=len(search_files("\n".join(window))),
            filenames=[],
            content="\n".join(window),
            numLines=len(window),
        )
    if applied is not None:
        result["appliedLimit"] = applied
    if skip:
        result["appliedOffset"] = skip
    return result


# ------------------------------------------------------------------------------------------ web


def fetch_in(args: Args, notes: list[str]) -> Args:
    return drop(args, notes, {"prompt": "toolrig returns the page itself (as Markdown); read it for the answer"})


def fetch_out(shaped: Shaped) -> dict[str, Any]:
    output = shaped.output
    body = str(output.get("body", ""))
    code = int(output.get("status_code", 0))
    from http import HTTPStatus

    try:
        phrase = HTTPStatus(code).phrase
    except ValueError:
        phrase = ""
    return {
        "bytes": len(body.encode("utf-8")),
        "code": code,
        "codeText": phrase,
        "result": body,
        "durationMs": round(shaped.duration_ms),
        "url": output.get("final_url", shaped.args.get("url", "")),
    }


def search_in(args: Args, notes: list[str]) -> Args:
    out = {k: v for k, v in args.items() if k not in ("allowed_domains", "blocked_domains")}
    if args.get("allowed_domains") or args.get("blocked_domains"):
        out["num_results"] = 20  # filtered afterwards: ask for enough to keep a few
    return out


def _host_in(url: str, domains: Any) -> bool:
    if not isinstance(domains, list):
        return False
    host = (urlsplit(url).hostname or "").lower()
    return any(isinstance(d, str) and (host == d.lower() or host.endswith("." + d.lower())) for d in domains)


def search_out(shaped: Shaped) -> dict[str, Any]:
    started = time.perf_counter()
    allowed, blocked = shaped.args.get("allowed_domains"), shaped.args.get("blocked_domains")
    hits = []
    for item in shaped.output.get("results", []):
        url = str(item.get("url", ""))
        if allowed and not _host_in(url, allowed):
            continue
        if blocked and _host_in(url, blocked):
            continue
        hits.append({"title": item.get("title", ""), "url": url})
    elapsed = shaped.duration_ms / 1000 + (time.perf_counter() - started)
    return {
        "query": shaped.args.get("query", ""),
        "results": [{"tool_use_id": "toolrig_web_search", "content": hits}],
        "durationSeconds": round(elapsed, 3),
    }


# ------------------------------------------------------------------------------------------ todos

_CLAUDE_STATUS = {"pending", "in_progress", "completed"}


def todo_in(args: Args, notes: list[str]) -> Args:
    todos = args.get("todos")
    if not isinstance(todos, list):
        return {"todos": todos}
    converted = []
    for item in todos:
        if isinstance(item, dict):
            converted.append({"task": item.get("content"), "status": item.get("status", "pending")})
        else:
            converted.append(item)
    return {"todos": converted}


def todo_out(shaped: Shaped) -> dict[str, Any]:
    return {"oldTodos": [], "newTodos": shaped.args.get("todos", [])}


# ------------------------------------------------------------------------------------------ the profile

_PATH = "The absolute path to the file (a path relative to the workspace works too)."

FACES = (
    Face(
        "Read",
        "read_files",
        "Read a file from the workspace. Returns its lines; offset and limit (lines) page through long files.",
        obj(
            {
                "file_path": string(_PATH),
                "offset": number("The line number to start reading from.", "integer"),
                "limit": number("The number of lines to read.", "integer"),
                "pages": string("Page range for PDF files (e.g. '1-5')."),
            },
            ("file_path",),
        ),
        read_in,
        read_out,
        subject="file_path",
        subject_style="path",
    ),
    Face(
        "Write",
        "write_file",
        "Write a file: create it, or replace its whole content.",
        obj(
            {"file_path": string(_PATH), "content": string("The content to write to the file.")},
            ("file_path", "content"),
        ),
        write_in,
        write_out,
        subject="file_path",
        subject_style="path",
        tool_defaults=OVERWRITE,
    ),
    Face(
        "Edit",
        "edit",
        "Replace exact text in a file: old_string must occur once unless replace_all is true.",
        obj(
            {
                "file_path": string(_PATH),
                "old_string": string("The text to replace."),
                "new_string": string("The text to replace it with (must be different from old_string)."),
                "replace_all": boolean("Replace all occurrences of old_string (default false).", default=False),
            },
            ("file_path", "old_string", "new_string"),
        ),
        result_out=edit_out,
        subject="file_path",
        subject_style="path",
    ),
    Face(
        "MultiEdit",
        "str_replace",
        "Make several exact-text replacements in one file, in order; all succeed or none is written.",
        obj(
            {
                "file_path": string(_PATH),
                "edits": array(
                    obj(
                        {
                            "old_string": string("The text to replace."),
                            "new_string": string("The text to replace it with."),
                            "replace_all": boolean("Replace all occurrences (default false).", default=False),
                        },
                        ("old_string", "new_string"),
                    ),
                    "Edits applied in sequence.",
                    minItems=1,
                ),
            },
            ("file_path", "edits"),
        ),
        multi_edit_in,
        multi_edit_out,
        subject="file_path",
        subject_style="path",
    ),
    Face(
        "Bash",
        "run_command",
        "Run a shell command in the workspace. timeout is in milliseconds (default 120000, max 600000).",
        obj(
            {
                "command": string("The command to execute."),
                "timeout": number("Optional timeout in milliseconds (max 600000)."),
                "description": string("A short description of what the command does."),
                "run_in_background": boolean(
                    "Run it in the background; read it with BashOutput, stop it with KillShell."
                ),
                "dangerouslyDisableSandbox": boolean("Ignored: the sandbox stays on."),
            },
            ("command",),
        ),
        bash_in,
        bash_out,
        subject="command",
        subject_style="command",
    ),
    *BACKGROUND_FACES,  # BashOutput, KillShell (profiles/claude_shells.py)
    Face(
        "Glob",
        "glob",
        "Find files by glob pattern ('**/*.py'); newest first.",
        obj(
            {
                "pattern": string("The glob pattern to match files against."),
                "path": string("The directory to search in; default the workspace root."),
            },
            ("pattern",),
        ),
        glob_in,
        glob_out,
    ),
    Face(
        "Grep",
        "code_search",
        "Search file contents with ripgrep. output_mode: files_with_matches (default), content or count.",
        obj(
            {
                "pattern": string("The regular expression to search for."),
                "path": string("File or directory to search in; default the workspace root."),
                "glob": string("Only files matching this glob (e.g. '*.js', '*.{ts,tsx}')."),
                "output_mode": string(
                    "content: matching lines; files_with_matches: file paths; count: matches per file.",
                    enum=["content", "files_with_matches", "count"],
                ),
                "-B": number("Lines to show before each match (content mode).", "integer"),
                "-A": number("Lines to show after each match (content mode).", "integer"),
                "-C": number("Lines to show before and after each match (content mode).", "integer"),
                "context": number("Lines to show before and after each match (content mode).", "integer"),
                "-n": boolean("Show line numbers (content mode; always on)."),
                "-i": boolean("Case insensitive search."),
                "-o": boolean("Print only the matched parts of each line."),
                "type": string("File type to search (rg --type): js, py, rust, go..."),
                "head_limit": number("Show only the first N lines or entries (default 250, 0 for all).", "integer"),
                "offset": number("Skip the first N lines or entries.", "integer"),
                "multiline": boolean("Let patterns span lines ('.' matches newlines).", default=False),
            },
            ("pattern",),
        ),
        grep_in,
        grep_out,
    ),
    Face(
        "WebFetch",
        "fetch_url",
        "Fetch a web page and return its content as Markdown (prompt is not run: read the page yourself).",
        obj(
            {"url": string("The URL to fetch content from.", format="uri"), "prompt": string("What to look for.")},
            ("url", "prompt"),
        ),
        fetch_in,
        fetch_out,
    ),
    Face(
        "WebSearch",
        "web_search",
        "Search the web; results are titles and URLs, optionally limited to or excluding some domains.",
        obj(
            {
                "query": string("The search query to use.", minLength=2),
                "allowed_domains": array(string(), "Only include results from these domains."),
                "blocked_domains": array(string(), "Never include results from these domains."),
            },
            ("query",),
        ),
        search_in,
        search_out,
    ),
    Face(
        "TodoWrite",
        "write_todos",
        "Keep a visible todo list: send the whole updated list each time.",
        obj(
            {
                "todos": array(
                    obj(
                        {
                            "content": string(minLength=1),
                            "status": string(enum=sorted(_CLAUDE_STATUS)),
                            "activeForm": string(minLength=1),
                        },
                        ("content", "status", "activeForm"),
                    ),
                    "The updated todo list.",
                )
            },
            ("todos",),
        ),
        todo_in,
        todo_out,
    ),
    Face(
        "NotebookRead",
        "read_files",
        "Read a Jupyter notebook (.ipynb).",
        obj(
            {
                "notebook_path": string("The path to the notebook."),
                "cell_id": string("Only this cell (not supported: the whole notebook is read)."),
            },
            ("notebook_path",),
        ),
        lambda args, notes: {
            "paths": [args.get("notebook_path")],
            **{k: v for k, v in args.items() if k not in ("notebook_path", "cell_id")},
        },
        lambda shaped: read_out(Shaped(shaped.output, {"file_path": shaped.args.get("notebook_path", "")}, {})),
        subject="notebook_path",
        subject_style="path",
    ),
)

PROFILE = Profile(
    "claude",
    "Claude Code's built-in tools: Read, Write, Edit, MultiEdit, Bash, Glob, Grep, WebFetch, WebSearch, TodoWrite.",
    FACES,
)

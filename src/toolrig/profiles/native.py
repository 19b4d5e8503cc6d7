"""The "native" Python design's tools: ``read_file``, ``write_file``, ``list_dir``, ``web_search``, ``key_value_*``.

Every result is the design's ``ToolResult(success, data, error)`` as a dict: ``{"success": true, "data":
{...}, "error": null}`` (a failure keeps toolrig's error contract, see docs/profiles.md). The seed's own
source was not found; this contract is derived from issue 18's text.
"""

from __future__ import annotations

import shlex
from typing import Any

from toolrig.profiles.profile import Args, Face, Profile, Shaped, boolean, number, obj, string
from toolrig.profiles.shapes import single_file, unnumbered


def success(data: Any) -> dict[str, Any]:
    return {"success": True, "data": data, "error": None}


def read_in(args: Args, notes: list[str]) -> Args:
    out = dict(args)
    if "path" in out:
        out["paths"] = [out.pop("path")]
    if out.get("encoding") in (None, "utf-8", "utf8"):
        out.pop("encoding", None)  # toolrig's default; not sent, so it works before read_files learns encodings
    if out.get("binary") is False:
        out.pop("binary")
    return out


def read_out(shaped: Shaped) -> dict[str, Any]:
    path = str(shaped.args.get("path", ""))
    _, text = single_file(shaped.output.get("files", {}), path)
    # What the tool was really asked (a parameter it does not take yet was dropped with a note).
    binary = bool(shaped.canonical_args.get("binary"))
    content = text if binary else unnumbered(text)[0]
    encoding = "base64" if binary else shaped.canonical_args.get("encoding") or "utf-8"
    data = {"path": path, "content": content, "encoding": encoding}
    return success(data)


def write_in(args: Args, notes: list[str]) -> Args:
    out = dict(args)
    if out.get("encoding") in (None, "utf-8", "utf8"):
        out.pop("encoding", None)
    return out


def write_out(shaped: Shaped) -> dict[str, Any]:
    content = shaped.args.get("content", "")
    encoding = shaped.args.get("encoding") or "utf-8"
    written = shaped.output.get("bytes_written")
    if written is None:
        try:
            written = len(str(content).encode(str(encoding)))
        except (LookupError, UnicodeError):
            written = len(str(content).encode("utf-8"))
    return success({"path": shaped.args.get("path", ""), "bytes_written": written})


def list_in(args: Args, notes: list[str]) -> Args:
    out = dict(args)
    out["directories"] = [{"path": out.pop("path", ".")}]
    return out


def list_out(shaped: Shaped) -> dict[str, Any]:
    path = str(shaped.args.get("path", "."))
    entries: list[dict[str, Any]] = next(iter(shaped.output.get("listings", {}).values()), [])
    listed = [
        {
            "name": str(e.get("name", "")).rstrip("/"),
            "type": "directory" if e.get("type") == "dir" else e.get("type", "file"),
            "size": e.get("size", 0),
            "modified": e.get("modified", ""),
        }
        for e in entries
    ]
    return success({"path": path, "entries": listed})


def plain_out(shaped: Shaped) -> dict[str, Any]:
    return success(shaped.output)


def run_in(args: Args, notes: list[str]) -> Args:
    """Seed 004 runs a command as argv, with no shell expansion, unless the call asks for a shell (``shell``).

    The words are quoted back one by one, so the shell run_command starts sees each as a literal argument:
    ``echo $HOME *`` prints ``$HOME *``; a pipe, ``;`` or ``>`` is an argument, not an operator.
    """
    out = dict(args)
    if out.pop("shell", False) is True:
        return out
    command = out.get("command")
    if isinstance(command, str):
        try:
            out["command"] = shlex.join(shlex.split(command))
        except ValueError:
            out["unbalanced_quote_in_command"] = True  # refused by the tool as an unknown argument, never run
    return out


_ENCODING = string("Text encoding (default utf-8).", default="utf-8")

FACES = (
    Face(
        "read_file",
        "read_files",
        "Read a text file (or a binary one as base64 with binary=true).",
        obj(
            {
                "path": string("Path of the file, relative to the workspace."),
                "encoding": _ENCODING,
                "binary": boolean("Return the bytes as base64.", default=False),
            },
            ("path",),
        ),
        read_in,
        read_out,
        subject="path",
        subject_style="path",
    ),
    Face(
        "write_file",
        "write_file",
        "Write text to a file; mode 'append' adds to its end. Returns bytes_written.",
        obj(
            {
                "path": string("Path of the file, relative to the workspace."),
                "content": string("The text to write."),
                "mode": string("overwrite or append.", enum=["overwrite", "append"], default="overwrite"),
                "encoding": _ENCODING,
            },
            ("path", "content"),
        ),
        write_in,
        write_out,
        subject="path",
        subject_style="path",
        tool_defaults={"on_conflict": "overwrite"},  # the design's write_file replaces (or appends)
    ),
    Face(
        "list_dir",
        "list_directory",
        "List a directory: each entry's name, type, size and modification time; pattern filters names.",
        obj(
            {
                "path": string("Directory relative to the workspace.", default="."),
                "pattern": string("Only names matching this glob (e.g. '*.py')."),
            },
        ),
        list_in,
        list_out,
        subject="path",
        subject_style="path",
    ),
    Face(
        "web_search",
        "web_search",
        "Search the web; returns title, url and snippet per result.",
        obj(
            {
                "query": string("What to search for."),
                "num_results": number("How many results (at most 20).", "integer", default=5, minimum=1, maximum=20),
            },
            ("query",),
        ),
        result_out=plain_out,
    ),
    Face(
        "run_command",
        "run_command",
        "Run a program with arguments (argv-style: no shell expansion, pipes or redirects unless shell is true).",
        obj(
            {
                "command": string("The program and its arguments, quoted as on a command line."),
                "shell": boolean("Run the command through bash (expansion, pipes, redirects).", default=False),
                "timeout_seconds": number("Seconds before the command is stopped.", default=30),
                "cwd": string("Directory to run in, relative to the workspace."),
            },
            ("command",),
        ),
        run_in,
        plain_out,
        subject="command",
        subject_style="command",
    ),
    Face(
        "key_value_get",
        "key_value_get",
        "Read the value stored under a key.",
        obj({"key": string("The key.")}, ("key",)),
        result_out=plain_out,
    ),
    Face(
        "key_value_set",
        "key_value_set",
        "Store a JSON value under a key.",
        obj({"key": string("The key."), "value": {"description": "Any JSON value."}}, ("key", "value")),
        result_out=plain_out,
    ),
    Face(
        "key_value_delete",
        "key_value_delete",
        "Delete a key and its value.",
        obj({"key": string("The key.")}, ("key",)),
        result_out=plain_out,
    ),
    Face(
        "librarian_store",
        "librarian_store",
        "Store an XML document in a collection.",
        obj(
            {"collection": string(), "document_name": string(), "content": string("The XML document.")},
            ("collection", "document_name", "content"),
        ),
        result_out=plain_out,
    ),
    Face(
        "librarian_get",
        "librarian_get",
        "Fetch a stored XML document by its path.",
        obj({"path": string("Like /db/agents/greeter/conversation-001.xml.")}, ("path",)),
        result_out=plain_out,
    ),
    Face(
        "librarian_query",
        "librarian_query",
        "Run a read-only XQuery over stored documents.",
        obj(
            {
                "query": string("The XQuery."),
                "collection": string("The collection the query reads (its context)."),
                "variables": {"type": "object", "description": "Values for external variables."},
            },
            ("query",),
        ),
        result_out=plain_out,
    ),
    Face(
        "librarian_search",
        "librarian_search",
        "Full-text search over stored documents.",
        obj(
            {
                "query": string("Words to find."),
                "collection": string("Only this collection."),
                "num_results": number("How many results.", "integer", default=10),
            },
            ("query",),
        ),
        result_out=plain_out,
    ),
)

PROFILE = Profile(
    "native",
    "The Python native design: read_file, write_file, list_dir, web_search, key_value_*, librarian_*.",
    FACES,
)

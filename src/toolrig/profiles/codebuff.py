"""Codebuff's agent tools (``common/src/tools/params/tool/*.ts``): names, parameters and result shapes.

Codebuff's results are ``[{"type": "json", "value": ...}]``; a face's output is that one element. Its
``code_search`` takes ripgrep flags as one string and camelCase limits; ``run_terminal_command`` takes
``timeout_seconds`` (-1: no limit) and a ``process_type``.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from toolrig.profiles.profile import Args, Face, Profile, Shaped, array, boolean, drop, number, obj, rename, string
from toolrig.profiles.shapes import MARKER, unnumbered


def json_value(value: Any) -> dict[str, Any]:
    return {"type": "json", "value": value}


# ------------------------------------------------------------------------------------------ files


def read_out(shaped: Shaped) -> dict[str, Any]:
    files = []
    for path, text in shaped.output.get("files", {}).items():
        if MARKER.match(text):
            files.append({"path": path, "content": text})
        else:
            files.append({"path": path, "content": unnumbered(text)[0]})
    return json_value(files)


def write_in(args: Args, notes: list[str]) -> Args:
    return drop(args, notes, {"instructions": ""})


def update_out(shaped: Shaped) -> dict[str, Any]:
    output = shaped.output
    return json_value(
        {
            "file": output.get("file", ""),
            "message": output.get("message", ""),
            "unifiedDiff": output.get("unified_diff", ""),
        }
    )


def str_replace_in(args: Args, notes: list[str]) -> Args:
    out = dict(args)
    items = out.get("replacements")
    if isinstance(items, list):
        out["replacements"] = [
            rename(item, {"allowMultiple": "replace_all"}) if isinstance(item, dict) else item for item in items
        ]
    return out


# ------------------------------------------------------------------------------------------ search


def code_search_in(args: Args, notes: list[str]) -> Args:
    out = rename(
        drop(args, notes, {}),
        {
            "maxResults": "max_results_per_file",
            "globalMaxResults": "global_max_results",
            "timeoutSeconds": "timeout_seconds",
        },
    )
    out.pop("maxOutputStringLength", None)  # applied to the output afterwards
    flags = out.get("flags")
    if isinstance(flags, str):
        try:
            out["flags"] = shlex.split(flags)
        except ValueError:
            out["flags"] = flags.split()
    return out


def code_search_out(shaped: Shaped) -> dict[str, Any]:
    text = str(shaped.output.get("output", ""))
    cap = shaped.args.get("maxOutputStringLength", 20_000)
    cap = cap if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0 else 20_000
    message = str(shaped.output.get("message", ""))
    if len(text) > cap:
        text = text[:cap]
        message += f" Output cut at maxOutputStringLength={cap} characters; narrow the pattern or raise the cap."
    return json_value({"stdout": text, "message": message})


def glob_out(shaped: Shaped) -> dict[str, Any]:
    output = shaped.output
    return json_value(
        {"files": output.get("files", []), "count": output.get("count", 0), "message": output.get("message", "")}
    )


def list_in(args: Args, notes: list[str]) -> Args:
    """Codebuff's zod ``{path}`` or the seed's ``{directories: [...]}`` (paths, or ``{path}`` objects): both."""
    out = dict(args)
    wanted: list[Any] = []
    if "path" in out:
        wanted.append(out.pop("path"))
    directories = out.pop("directories", None)
    if isinstance(directories, list):
        wanted += directories
    elif directories is not None:
        wanted.append(directories)
    out["directories"] = [{"path": d} if isinstance(d, str) else d for d in wanted]
    return out


def list_out(shaped: Shaped) -> dict[str, Any]:
    """Both shapes: the zod result (``files``, ``directories``, ``path`` of the first) and the seed's ``results``."""
    results: list[dict[str, Any]] = []
    first: dict[str, Any] | None = None
    for directory, entries in shaped.output.get("listings", {}).items():
        files = [e["name"] for e in entries if e.get("type") != "dir"]
        dirs = [str(e["name"]).rstrip("/") for e in entries if e.get("type") == "dir"]
        results.append({"directory": directory, "files": files, "directories": dirs, "count": len(entries)})
        if first is None:
            first = {"files": files, "directories": dirs, "path": str(shaped.args.get("path", directory))}
    return json_value({**(first or {"files": [], "directories": [], "path": "."}), "results": results})


# ------------------------------------------------------------------------------------------ shell


def terminal_in(args: Args, notes: list[str]) -> Args:
    out = drop(args, notes, {})
    if out.pop("process_type", "SYNC") == "BACKGROUND":
        out["background"] = True  # read with command_output, stopped with stop_command
    out.setdefault("timeout_seconds", 30)
    return out


def terminal_settings(args: Args, settings: Any, notes: list[str]) -> Args:
    """``timeout_seconds: -1`` is no limit where config allows it, else the longest limit config allows.

    The seed's description offers -1 to the model; an unbounded command stays the person's choice
    (``tool_config.run_command.allow_no_timeout``), so without it the call runs, bounded, and says so.
    """
    longest = getattr(settings, "max_timeout_seconds", None)
    if args.get("timeout_seconds") != -1 or getattr(settings, "allow_no_timeout", False) or longest is None:
        return args
    notes.append(
        f"timeout_seconds -1 (no limit) ran with the longest limit the configuration allows, {longest:g} seconds "
        "(tool_config.run_command.allow_no_timeout lifts it)"
    )
    return {**args, "timeout_seconds": longest}


def terminal_out(shaped: Shaped) -> dict[str, Any]:
    output = shaped.output
    result: dict[str, Any] = {
        "command": output.get("command", shaped.args.get("command", "")),
        "startingCwd": shaped.canonical_args.get("cwd") or ".",
        "stdout": output.get("stdout", ""),
        "stderr": output.get("stderr", ""),
    }
    if output.get("exit_code") is not None:
        result["exitCode"] = output["exit_code"]
    if output.get("background_id"):
        result["processId"] = output["background_id"]
        result["backgroundProcessStatus"] = "running"
        result["message"] = f"Started in the background: read it with command_output, id {output['background_id']}."
    if output.get("timed_out"):
        result["message"] = "The command timed out."
    return json_value(result)


# ------------------------------------------------------------------------------------------ web, docs, ui


def web_search_in(args: Args, notes: list[str]) -> Args:
    out = dict(args)
    depth = out.pop("depth", "standard")
    out["num_results"] = 10 if depth == "deep" else 5
    return out


def web_search_out(shaped: Shaped) -> dict[str, Any]:
    parts = [
        f"{i}. {r.get('title', '')}\n{r.get('url', '')}\n{r.get('snippet', '')}".strip()
        for i, r in enumerate(shaped.output.get("results", []), 1)
    ]
    return json_value({"result": "\n\n".join(parts) or "No results."})


def read_docs_in(args: Args, notes: list[str]) -> Args:
    """The zod ``{libraryTitle, topic}`` or the seed's ``{query, url}``: a given query wins, the title adds to it."""
    out = dict(args)
    title, topic = out.pop("libraryTitle", None), out.pop("topic", None)
    words = [str(w) for w in (title, topic, out.get("query")) if isinstance(w, str) and w.strip()]
    if words or "query" not in out:
        out["query"] = " ".join(dict.fromkeys(words)) if words else title
    tokens = out.get("max_tokens")
    if isinstance(tokens, int) and not isinstance(tokens, bool):
        out["max_tokens"] = max(100, min(tokens, 20_000))
    return out


def read_docs_out(shaped: Shaped) -> dict[str, Any]:
    passages = shaped.output.get("passages", [])
    text = "\n\n".join(f"## {p.get('heading', '')}\n{p.get('url', '')}\n\n{p.get('text', '')}" for p in passages)
    return json_value({"documentation": text or "No documentation found."})


def todos_out(shaped: Shaped) -> dict[str, Any]:
    todos = [
        {"task": t.get("task", ""), "completed": t.get("status") == "completed"} for t in shaped.output.get("todos", [])
    ]
    return json_value({"todos": todos})


def todos_in(args: Args, notes: list[str]) -> Args:
    todos = args.get("todos")
    if not isinstance(todos, list):
        return dict(args)
    return {
        "todos": [
            {"task": t.get("task"), "status": "completed" if t.get("completed") is True else "pending"}
            if isinstance(t, dict)
            else t
            for t in todos
        ]
    }


def skill_in(args: Args, notes: list[str]) -> Args:
    return rename(args, {"skill_name": "name"})


def skill_out(shaped: Shaped) -> dict[str, Any]:
    return json_value(dict(shaped.output))


def ask_user_out(shaped: Shaped) -> dict[str, Any]:
    """Each answer as Codebuff reads it: ``selectedOption`` (one pick), ``selectedOptions`` (several), ``otherText``."""
    questions = shaped.args.get("questions")
    answers = []
    for index, answer in enumerate(shaped.output.get("answers", [])):
        asked = questions[index] if isinstance(questions, list) and index < len(questions) else {}
        several = isinstance(asked, dict) and bool(asked.get("allowMultipleOptions") or asked.get("allow_multiple"))
        picked = list(answer.get("selected") or [])
        shaped_answer: dict[str, Any] = {"questionIndex": index}
        if several:
            shaped_answer["selectedOptions"] = picked
        elif picked:
            shaped_answer["selectedOption"] = picked[0]
        if answer.get("other_text"):
            shaped_answer["otherText"] = answer["other_text"]
        if answer.get("values") is not None:
            shaped_answer["values"] = answer["values"]
        answers.append(shaped_answer)
    return json_value({"answers": answers, **({"skipped": True} if shaped.output.get("skipped") else {})})


def spawn_in(args: Args, notes: list[str]) -> Args:
    """Codebuff's prompt is optional (a child may take only params): its params then stand as the prompt."""
    agents = args.get("agents")
    if not isinstance(agents, list):
        return dict(args)
    out = []
    for agent in agents:
        if isinstance(agent, dict) and not agent.get("prompt") and isinstance(agent.get("params"), dict):
            agent = {**agent, "prompt": "Parameters: " + json.dumps(agent["params"], sort_keys=True)}
        out.append(agent)
    return {**args, "agents": out}


def spawn_out(shaped: Shaped) -> dict[str, Any]:
    """One ``{agentType, value}`` per child, as the child's output mode left it.

    The value is ``set_output``'s JSON or the last message's text; background children give their task ids.
    """
    children = shaped.output.get("results") or shaped.output.get("tasks") or []
    value = [
        {
            "agentName": child.get("agent_type", ""),
            "agentType": child.get("agent_type", ""),
            "value": child.get("output") if child.get("output") is not None else child.get("error") or child,
        }
        for child in children
    ]
    return json_value(value)


def followups_out(shaped: Shaped) -> dict[str, Any]:
    return json_value({"message": f"Suggested {shaped.output.get('recorded', 0)} followups."})


_PATH = "Path relative to the project root."

FACES: tuple[Face, ...] = (
    Face(
        "read_files",
        "read_files",
        "Read several files and return their contents.",
        obj({"paths": array(string(_PATH, minLength=1), "List of file paths to read.")}, ("paths",)),
        result_out=read_out,
        subject="paths",
        subject_style="path",
    ),
    Face(
        "write_file",
        "write_file",
        "Create or replace a file with the given content (the whole file: placeholder comments are written as is).",
        obj(
            {
                "path": string(_PATH, minLength=1),
                "instructions": string("What the change is intended to do in only one sentence."),
                "content": string("The file's content."),
            },
            ("path", "content"),
        ),
        write_in,
        update_out,
        subject="path",
        subject_style="path",
        tool_defaults={"on_conflict": "overwrite"},
    ),
    Face(
        "str_replace",
        "str_replace",
        "Replace strings in a file with new strings.",
        obj(
            {
                "path": string("The path to the file to edit.", minLength=1),
                "replacements": array(
                    obj(
                        {
                            "old": string("The exact string to replace.", minLength=1),
                            "new": string("The replacement; can be empty to delete."),
                            "allowMultiple": boolean("Whether to allow multiple replacements of old.", default=False),
                        },
                        ("old", "new"),
                    ),
                    "Array of replacements to make.",
                    minItems=1,
                ),
            },
            ("path", "replacements"),
        ),
        str_replace_in,
        update_out,
        subject="path",
        subject_style="path",
    ),
    Face(
        "code_search",
        "code_search",
        "Search the project's files with ripgrep; flags is one string ('-i', '-t ts', \"-g '*.test.ts'\", '-A 3').",
        obj(
            {
                "pattern": string("The pattern to search for.", minLength=1),
                "flags": string("Optional ripgrep flags, as on a command line."),
                "cwd": string("Optional directory to search within, relative to the project root."),
                "maxResults": number("Maximum results per file.", "integer", default=15, minimum=1),
                "globalMaxResults": number(
                    "Maximum results across all files.", "integer", default=250, minimum=1, maximum=5000
                ),
                "maxOutputStringLength": number(
                    "Maximum output size in characters.", "integer", default=20_000, minimum=1, maximum=200_000
                ),
                "timeoutSeconds": number("Seconds before the search stops.", "number", minimum=1, maximum=120),
            },
            ("pattern",),
        ),
        code_search_in,
        code_search_out,
    ),
    Face(
        "run_terminal_command",
        "run_command",
        "Run a CLI command from the project root. timeout_seconds defaults to 30; -1 for no timeout.",
        obj(
            {
                "command": string("CLI command valid for the user's OS.", minLength=1),
                "process_type": string("SYNC (waits) or BACKGROUND.", enum=["SYNC", "BACKGROUND"], default="SYNC"),
                "cwd": string("The working directory, relative to the project root."),
                "timeout_seconds": number("Seconds before the command is stopped; -1 for no timeout.", default=30),
            },
            ("command",),
        ),
        terminal_in,
        terminal_out,
        subject="command",
        subject_style="command",
        settings_in=terminal_settings,
    ),
    Face(
        "glob",
        "glob",
        "Find files matching a glob pattern, newest first.",
        obj(
            {
                "pattern": string("Glob pattern to match files against (e.g. *.js, src/**/*.ts).", minLength=1),
                "cwd": string("Optional directory to search within, relative to the project root."),
            },
            ("pattern",),
        ),
        result_out=glob_out,
    ),
    Face(
        "list_directory",
        "list_directory",
        "List the files and directories in a directory.",
        obj(
            {
                "path": string("Directory path to list, relative to the project root."),
                "directories": array(string(_PATH), "Several directories to list at once (instead of path)."),
            }
        ),
        list_in,
        list_out,
    ),
    Face(
        "write_todos",
        "write_todos",
        "Write the todo list for multi-step work: the whole list each time, with each task's completion.",
        obj(
            {
                "todos": array(
                    obj(
                        {
                            "task": string("Description of the task."),
                            "completed": boolean("Whether the task is completed."),
                        },
                        ("task", "completed"),
                    ),
                    "List of todos with their completion status.",
                )
            },
            ("todos",),
        ),
        todos_in,
        todos_out,
    ),
    Face(
        "suggest_followups",
        "suggest_followups",
        "Suggest clickable followup prompts to the user.",
        obj(
            {
                "followups": array(
                    obj(
                        {
                            "prompt": string("The prompt to send when clicked."),
                            "label": string("Short display label."),
                        },
                        ("prompt",),
                    ),
                    "Suggested followup prompts.",
                    minItems=1,
                )
            },
            ("followups",),
        ),
        result_out=followups_out,
    ),
    Face(
        "web_search",
        "web_search",
        "Search the web for current information.",
        obj(
            {
                "query": string("The search query.", minLength=1),
                "depth": string("standard or deep.", enum=["standard", "deep"], default="standard"),
            },
            ("query",),
        ),
        web_search_in,
        web_search_out,
    ),
    Face(
        "read_docs",
        "read_docs",
        "Fetch documentation for a library or framework, focused on a topic.",
        obj(
            {
                "libraryTitle": string("The library or framework name (e.g. 'Next.js').", minLength=1),
                "topic": string("Specific topic to focus on."),
                "max_tokens": number("Maximum number of tokens to return.", default=10_000),
                "query": string("What you want to know (instead of libraryTitle and topic)."),
                "url": string("The documentation site to read (default: the configured sites)."),
            },
        ),
        read_docs_in,
        read_docs_out,
    ),
)

_QUESTION = obj(
    {
        "question": string("The question.", minLength=1),
        "header": string("A short title shown above it."),
        "options": array(
            {"anyOf": [string(), obj({"label": string(minLength=1), "description": string()}, ("label",))]},
            "Choices to pick from; omit for a free-text answer.",
        ),
        "allowMultipleOptions": boolean("The user may pick several options.", default=False),
        "allowOtherText": boolean("The user may also type their own answer.", default=False),
    },
    ("question",),
)

FACES = (
    *FACES,
    Face(
        "skill",
        "load_skill",
        "Load a skill's instructions by name and follow them.",
        obj(
            {"skill_name": string("The skill's name, as the list of available skills gives it.", minLength=1)},
            ("skill_name",),
        ),
        skill_in,
        skill_out,
    ),
    Face(
        "ask_user",
        "ask_user",
        "Ask the user questions when you cannot go on without their choice.",
        obj({"questions": array(_QUESTION, "What to ask, in order.", minItems=1)}, ("questions",)),
        result_out=ask_user_out,
    ),
    Face(
        "spawn_agents",
        "spawn_agents",
        "Spawn subagents to do tasks in parallel; each gets a complete prompt.",
        obj(
            {
                "agents": array(
                    obj(
                        {
                            "agent_type": string(minLength=1),
                            "prompt": string("The task; optional when params say it all."),
                            "params": {"type": "object"},
                        },
                        ("agent_type",),
                    ),
                    "The agents to spawn.",
                    minItems=1,
                )
            },
            ("agents",),
        ),
        spawn_in,
        spawn_out,
    ),
)

PROFILE = Profile(
    "codebuff",
    "Codebuff's agent tools: read_files, write_file, str_replace, code_search, run_terminal_command, glob...",
    FACES,
)

"""Which built-in group holds each tool name, so a call imports one tool module instead of all of them.

A hint, never the truth: a name missing here (or moved) only costs the registry a full load. A test checks it
against the catalog; after adding or renaming a built-in tool, regenerate it with
``python -m toolrig.tools._index``.
"""

from __future__ import annotations

GROUP_OF = {
    "apply_patch": "patch",
    "calculate": "calculator",
    "capabilities_refresh": "capabilities",
    "code_search": "search",
    "complete_task": "tasks",
    "cron": "cron",
    "edit": "edit",
    "fail_task": "tasks",
    "fetch_url": "web",
    "glob": "search",
    "key_value_delete": "kv",
    "key_value_get": "kv",
    "key_value_set": "kv",
    "librarian_get": "librarian",
    "librarian_query": "librarian",
    "librarian_search": "librarian",
    "librarian_store": "librarian",
    "list_directory": "files",
    "load_skill": "skills",
    "mcp_info": "toolsearch",
    "mcp_list_tools": "toolsearch",
    "mcp_search": "toolsearch",
    "memory_get": "memory",
    "memory_search": "memory",
    "memory_write": "memory",
    "propose_str_replace": "edit",
    "propose_write_file": "edit",
    "read_docs": "docs",
    "read_files": "files",
    "read_output": "outputs",
    "read_skill_resource": "skills",
    "read_subtree": "files",
    "run_command": "shell",
    "send_email": "notify",
    "skill": "skills",
    "str_replace": "edit",
    "suggest_followups": "interact",
    "tasks": "tasks",
    "tool_info": "toolsearch",
    "tool_search": "toolsearch",
    "wait_task": "tasks",
    "web_search": "web",
    "webhook": "notify",
    "write_file": "edit",
    "write_todos": "interact",
}


def current() -> dict[str, str]:
    """The index as the catalog says it should be (imports every built-in group)."""
    from toolrig.registry import Registry

    found: dict[str, str] = {}
    for item in Registry.default(entry_points=False).list():
        for name in (item.name, item.display_name, *getattr(item, "aliases", ())):
            if name:
                found[name] = item.group
    return dict(sorted(found.items()))


if __name__ == "__main__":
    import pathlib

    path = pathlib.Path(__file__)
    head, _, rest = path.read_text().partition("GROUP_OF = {\n")
    _, _, tail = rest.partition("\n}\n")
    lines = "".join(f'    "{name}": "{group}",\n' for name, group in current().items())
    path.write_text(f"{head}GROUP_OF = {{\n{lines}}}\n{tail}")

"""Which built-in group holds each tool name, so a call imports one tool module instead of all of them.

A hint, never the truth: a name missing here (or moved) only costs the registry a full load. A test checks it
against the catalog; after adding or renaming a built-in tool, regenerate it with
``python -c "from toolrig.registry import write_builtin_index; write_builtin_index()"``.
"""

from __future__ import annotations

GROUP_OF = {
    "apply_patch": "patch",
    "ask_user": "interact",
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

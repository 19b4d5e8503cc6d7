"""`toolrig mcp serve --profile claude` through the official MCP client: Claude Code's tools over MCP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.mcp_peers import serve_params, stdio_session
from toolrig.policy.audit import AuditLog

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_mcp_serve_profile_claude_lists_reads_and_refuses_in_claudes_names(
    workspace: Path, toolrig_home: Path, tmp_path: Path
) -> None:
    (workspace / "notes.md").write_text("first\nsecond\n", encoding="utf-8")
    (toolrig_home / "config.yaml").write_text(
        "tools:\n  rules:\n    - {tool: Bash, subject: 'rm *', verdict: deny}\n", encoding="utf-8"
    )
    params = serve_params(workspace, toolrig_home, "--profile", "claude")
    async with stdio_session(params, tmp_path / "server.log") as client:
        listed = await client.list_tools()
        names = {tool.name for tool in listed.tools}
        assert {"Read", "Write", "Edit", "MultiEdit", "Bash", "Glob", "Grep", "WebFetch", "WebSearch"} <= names
        assert not names & {"read_files", "run_command", "code_search"}
        bash = next(tool for tool in listed.tools if tool.name == "Bash")
        assert "timeout" in bash.input_schema["properties"] and bash.input_schema["required"] == ["command"]

        read = await client.call_tool("Read", {"file_path": "notes.md", "offset": 2})
        assert not read.is_error
        body = json.loads(read.content[0].text)  # type: ignore[union-attr]
        assert body["file"]["content"] == "second\n"

        refused = await client.call_tool("Bash", {"command": "rm -rf notes.md"})
        assert refused.is_error
        assert json.loads(refused.content[0].text)["error_type"] == "denied"  # type: ignore[union-attr]
    assert (workspace / "notes.md").exists()
    rows = AuditLog(workspace / ".toolrig").query()
    assert [(r.tool, r.called_as, r.decision) for r in rows] == [
        ("read_files", "Read", "allow"),
        ("run_command", "Bash", "deny"),
    ]

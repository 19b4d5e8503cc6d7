"""A third-party client drives our server: the MCP Inspector's CLI mode (npm @modelcontextprotocol/inspector)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.adapters.test_mcp_http import TOKEN, http_server
from tests.support.mcp_peers import inspector, toolrig_command


def inspector_env(home: Path) -> dict[str, str]:
    """The Inspector keeps a catalog and storage under HOME: give it the test's own."""
    fake_home = home / "inspector-home"
    fake_home.mkdir(exist_ok=True)
    return {**os.environ, "HOME": str(fake_home), "MCP_CATALOG_PATH": str(fake_home / "catalog.json")}


def inspect(workspace: Path, home: Path, *method: str) -> tuple[int, Any, str]:
    """Run the Inspector CLI against a fresh ``toolrig mcp serve`` (stdio); exit code, parsed stdout, stderr."""
    args = [
        *inspector(),
        "-e",
        f"TOOLRIG_HOME={home}",
        toolrig_command(),
        "mcp",
        "serve",
        "--root",
        str(workspace),
        *method,
    ]
    done = subprocess.run(
        args, capture_output=True, text=True, timeout=120, env=inspector_env(home), stdin=subprocess.DEVNULL
    )
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else None, done.stderr


def test_the_inspector_lists_our_tools_with_schemas_and_hints(workspace: Path, toolrig_home: Path) -> None:
    code, listing, err = inspect(workspace, toolrig_home, "--method", "tools/list")
    assert code == 0, err
    tools = {tool["name"]: tool for tool in listing["tools"]}
    assert {"calculate", "read_output"} <= set(tools)
    assert tools["calculate"]["inputSchema"]["required"] == ["expression"]
    assert tools["calculate"]["outputSchema"]["type"] == "object"
    assert tools["calculate"]["annotations"]["readOnlyHint"] is True


def test_the_inspector_calls_several_tools(workspace: Path, toolrig_home: Path) -> None:
    code, result, err = inspect(
        workspace,
        toolrig_home,
        "--method",
        "tools/call",
        "--tool-name",
        "calculate",
        "--tool-arg",
        "expression=2 ** 10",
    )
    assert code == 0, err
    assert result["structuredContent"] == {"result": 1024}
    assert json.loads(result["content"][0]["text"]) == {"result": 1024}  # the output itself, as structuredContent
    code, result, err = inspect(
        workspace, toolrig_home, "--method", "tools/call", "--tool-name", "read_output", "--tool-arg", "handle=nope"
    )
    assert result["isError"] is True
    assert json.loads(result["content"][0]["text"])["error_type"] in {"not_found", "invalid_input"}


def test_the_inspector_sees_a_tool_error_as_an_error_result(workspace: Path, toolrig_home: Path) -> None:
    code, result, err = inspect(
        workspace, toolrig_home, "--method", "tools/call", "--tool-name", "calculate", "--tool-arg", "expression=2 **"
    )
    assert code != 0 and "isError" in err  # the Inspector exits non-zero on an isError result, not a protocol error
    assert result["isError"] is True
    body = json.loads(result["content"][0]["text"])
    assert body["error_type"] == "invalid_input" and body["next_action_hint"]


def test_the_inspector_does_not_see_a_denied_tool(workspace: Path, toolrig_home: Path) -> None:
    (toolrig_home / "config.yaml").write_text("tools:\n  deny: [calculate]\n", encoding="utf-8")
    code, listing, err = inspect(workspace, toolrig_home, "--method", "tools/list")
    assert code == 0, err
    assert "calculate" not in {tool["name"] for tool in listing["tools"]}
    code, result, err = inspect(
        workspace, toolrig_home, "--method", "tools/call", "--tool-name", "calculate", "--tool-arg", "expression=1"
    )
    # The Inspector looks the tool up in the listing first: a denied tool is simply not there to call.
    assert code != 0 and result is None
    assert "tool_not_found" in err


def test_the_inspector_calls_our_streamable_http_endpoint(workspace: Path, toolrig_home: Path) -> None:
    with http_server(workspace, toolrig_home) as url:
        args = [*inspector(), url, "--header", f"Authorization: Bearer {TOKEN}", "--method", "tools/call"]
        args += ["--tool-name", "calculate", "--tool-arg", "expression=3*3"]
        env = inspector_env(toolrig_home)
        done = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["structuredContent"] == {"result": 9}

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_peers import everything_server
from toolrig.rig import Rig


def call(rig: Rig, tool: str, /, **args: Any) -> Any:
    result = rig.call_sync(tool, args)
    assert not result.is_error, result
    return result.output


def test_tool_search_ranks_tools_by_what_they_do(rig: Rig) -> None:
    found = call(rig, "tool_search", query="replace text in a file")
    names = [t["name"] for t in found["tools"]]
    assert names[0] in ("str_replace", "edit")
    found = call(rig, "tool_search", query="send an email message")
    assert found["tools"][0]["name"] == "send_email"


def test_parameter_descriptions_are_searched_too(rig: Rig) -> None:
    # "handle" and "offset" are read_output's parameters: they are in its schema, not in its description.
    names = [t["name"] for t in call(rig, "tool_search", query="handle offset")["tools"]]
    assert "read_output" in names[:3]


def test_an_empty_query_lists_every_offered_tool_and_the_aliases_work(rig: Rig) -> None:
    listed = call(rig, "mcp_list_tools")
    assert listed["total"] == len(rig.tools())  # each capability once (Agent/Task are spawn_agents' names)
    assert call(rig, "mcp_search", query="arithmetic")["tools"][0]["name"] == "calculate"


def test_tool_search_never_shows_a_tool_the_policy_hides(workspace: Path) -> None:
    with Rig(workspace, {"tools": {"deny": ["send_email"]}}) as rig:
        names = [t["name"] for t in call(rig, "tool_search", query="send an email")["tools"]]
        assert "send_email" not in names
        missing = rig.call_sync("tool_info", {"name": "send_email"})
    assert missing.is_error and missing.error_type == "not_found"


def test_tool_info_gives_the_full_schema(rig: Rig) -> None:
    info = call(rig, "mcp_info", name="fetch_url")
    assert info["input_schema"]["properties"]["url"]["type"] == "string"
    assert info["open_world"] is True


def test_tool_search_finds_the_tools_of_an_npm_mcp_server(workspace: Path) -> None:
    command = everything_server()
    config = {"mcp_servers": {"everything": {"command": command[0], "args": command[1:]}}}
    rig = Rig(workspace, config)
    try:
        found = call(rig, "tool_search", query="add two numbers sum", group="mcp")
        assert found["tools"][0]["display_name"] == "everything/get-sum"
        info = call(rig, "tool_info", name="everything/get-sum")
        assert set(info["input_schema"]["properties"]) >= {"a", "b"}
    finally:
        rig.close()


@pytest.mark.parametrize("query", ["", "   ", "\x00", "*", '"unclosed', "a" * 500, "ÄÖÜ 漢字"])
def test_any_query_gives_a_result_not_an_error(rig: Rig, query: str) -> None:
    assert "tools" in call(rig, "tool_search", query=query)


def test_under_a_profile_search_and_info_give_the_names_and_schemas_that_profile_calls(workspace: Path) -> None:
    with Rig(workspace, profile="claude") as rig:
        found = call(rig, "tool_search", query="run a shell command in the workspace")
        assert found["tools"][0]["name"] == "Bash"
        info = call(rig, "tool_info", name="Bash")
        assert {"command", "timeout"} <= set(info["input_schema"]["properties"])
        assert call(rig, "tool_info", name="Read")["input_schema"]["required"] == ["file_path"]
    with Rig(workspace) as plain:  # toolrig's own names when no profile is spoken
        assert call(plain, "tool_search", query="run a shell command")["tools"][0]["name"] == "run_command"

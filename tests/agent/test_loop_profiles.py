"""The agent loop under a tool profile: the model is offered the profile's schemas and its calls are mapped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agent.conftest import agent_config
from tests.support.fake_llm import Call, FakeLLM, Text, reply
from toolrig.agent import RunOptions, run_agent
from toolrig.policy.audit import AuditLog
from toolrig.rig import Rig

pytestmark = pytest.mark.anyio


def offered_names(body: dict[str, Any], provider: str) -> list[str]:
    if provider == "anthropic":
        return [t["name"] for t in body["tools"]]
    return [t["function"]["name"] for t in body["tools"]]


def last_result(body: dict[str, Any], provider: str) -> dict[str, Any]:
    if provider == "anthropic":
        block = next(b for b in body["messages"][-1]["content"] if b["type"] == "tool_result")
        loaded: dict[str, Any] = json.loads(block["content"])
        return loaded
    message = next(m for m in reversed(body["messages"]) if m["role"] == "tool")
    loaded = json.loads(message["content"])
    return loaded


async def test_llm_tool_profile_offers_claude_names_and_maps_calls_and_results(
    llm: FakeLLM, provider: str, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\nbeta\n", encoding="utf-8")
    config = {"llm": {**agent_config(llm, provider)["llm"], "tool_profile": "claude"}}
    rig = Rig(workspace, config=config)
    llm.script(
        reply(Call("c1", "Read", json.dumps({"file_path": "a.txt", "offset": 2}))),
        reply(Text("beta it is.")),
    )
    result = await run_agent("What is on line 2?", rig=rig)
    assert result.response == "beta it is."
    first, second = llm.bodies()
    names = offered_names(first, provider)
    assert "Read" in names and "Bash" in names and "read_files" not in names
    sent = last_result(second, provider)
    assert sent["output"]["file"]["content"] == "beta\n" and sent["output"]["type"] == "text"
    row = AuditLog(rig.workspace.state_dir).query(limit=1)[0]
    assert (row.tool, row.called_as) == ("read_files", "Read")


async def test_an_agents_profile_key_chooses_its_faces(llm: FakeLLM, provider: str, workspace: Path) -> None:
    config = {
        "llm": agent_config(llm, provider)["llm"],
        "agents": {"buffer": {"profile": "codebuff"}},
    }
    rig = Rig(workspace, config=config, agent="buffer")
    llm.script(reply(Call("c1", "run_terminal_command", json.dumps({"command": "echo hi"}))), reply(Text("done")))
    await run_agent("say hi", rig=rig)
    first, second = llm.bodies()
    assert "run_terminal_command" in offered_names(first, provider)
    assert last_result(second, provider)["output"]["value"]["stdout"] == "hi\n"


async def test_run_options_profile_wins(llm: FakeLLM, provider: str, workspace: Path) -> None:
    rig = Rig(workspace, config={"llm": agent_config(llm, provider)["llm"]})
    llm.script(reply(Text("ok")))
    await run_agent("hi", RunOptions(profile="native"), rig=rig)
    assert "list_dir" in offered_names(llm.bodies()[0], provider)


async def test_tool_search_in_a_run_under_a_profile_names_the_tools_as_the_model_calls_them(
    llm: FakeLLM, provider: str, workspace: Path
) -> None:
    config = {"llm": {**agent_config(llm, provider)["llm"], "tool_profile": "claude"}}
    rig = Rig(workspace, config=config)
    query = json.dumps({"query": "run a shell command in the workspace"})
    llm.script(reply(Call("c1", "tool_search", query)), reply(Text("Bash it is.")))
    await run_agent("Which tool runs commands?", rig=rig)
    sent = last_result(llm.bodies()[1], provider)
    assert sent["output"]["tools"][0]["name"] == "Bash"

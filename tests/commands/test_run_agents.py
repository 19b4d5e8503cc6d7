"""``toolrig run`` with subagents and agent ids, end to end against the scripted provider (both protocols)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.commands.test_run import configure, invoke
from tests.support.fake_llm import Call, FakeLLM, Text, reply
from tests.support.subagent_conversations import install
from toolrig.stores import Stores


@pytest.fixture(params=["anthropic", "openai"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def conversations(llm: FakeLLM) -> Iterator[FakeLLM]:
    yield llm
    llm.responder = None


def memory_write(call_id: str, text: str) -> Call:
    return Call(call_id, "memory_write", json.dumps({"file_path": "MEMORY.md", "content": text}))


def kv_set(call_id: str, value: str) -> Call:
    return Call(call_id, "key_value_set", json.dumps({"key": "k", "value": value}))


def test_agent_id_scopes_memory_and_kv_and_json_prints_the_output(
    conversations: FakeLLM, workspace: Path, toolrig_home: Path, provider: str
) -> None:
    configure(toolrig_home, conversations, provider)
    conversations.script(
        reply(memory_write("m1", "alice remembers"), kv_set("k1", "alice's")),
        reply(Call("o1", "set_output", '{"output": {"ok": true}}')),
        reply(Text("stored")),
    )
    code, out, err = invoke("run", "store it", "--json", "--agent-id", "alice", "--root", str(workspace))
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    assert events[-1]["type"] == "done" and events[-1]["output"] == {"ok": True}
    assert (workspace / "agents" / "alice" / "MEMORY.md").read_text().strip() == "alice remembers"
    assert not (workspace / "MEMORY.md").exists()
    stores = Stores(workspace / ".toolrig")
    assert stores.kv.get("alice", "k") == (True, "alice's")
    assert stores.kv.get("default", "k") == (False, None)
    stores.close()


@pytest.mark.parametrize("shared", [False, True])
def test_a_childs_memory_is_its_own_unless_its_type_shares_the_parents(
    conversations: FakeLLM, workspace: Path, toolrig_home: Path, provider: str, shared: bool
) -> None:
    configure(toolrig_home, conversations, provider)
    home_config = (toolrig_home / "config.yaml").read_text()
    (toolrig_home / "config.yaml").write_text(
        home_config + f"agents:\n  scribe:\n    description: writes notes\n    shared_memory: {str(shared).lower()}\n"
    )
    spawn = {"agents": [{"agent_type": "scribe", "prompt": "note CHILDNOTE"}]}
    install(
        conversations,
        {
            "PARENTRUN": [reply(Call("p1", "spawn_agents", json.dumps(spawn))), reply(Text("done"))],
            "CHILDNOTE": [reply(memory_write("c1", "child wrote"), kv_set("c2", "child's")), reply(Text("noted"))],
        },
    )
    code, out, err = invoke("run", "PARENTRUN", "--json", "--agent-id", "boss", "--root", str(workspace))
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    kinds = [e["type"] for e in events]
    assert "subagent_start" in kinds and "subagent_done" in kinds
    [start] = [e for e in events if e["type"] == "subagent_start"]
    child_tools = [e for e in events if e["type"] == "tool_call" and e.get("task_id") == start["task_id"]]
    assert {e["name"] for e in child_tools} == {"memory_write", "key_value_set"}
    owner = "boss" if shared else start["agent_id"]
    assert (workspace / "agents" / owner / "MEMORY.md").read_text().strip() == "child wrote"
    stores = Stores(workspace / ".toolrig")
    assert stores.kv.get(owner, "k") == (True, "child's")
    stores.close()


def test_run_as_an_organism_listener_uses_its_prompt_and_only_its_tools(
    llm: FakeLLM, workspace: Path, toolrig_home: Path
) -> None:
    from toolrig.config import set_trust

    configure(toolrig_home, llm, "anthropic")
    (workspace / "organism.yaml").write_text(
        "listeners:\n"
        "  - name: researcher\n"
        "    agent: true\n"
        "    prompt: You are a research assistant.\n"
        "    tools: [read_files, calculate]\n",
        encoding="utf-8",
    )
    set_trust(workspace)
    llm.script(reply(Call("c1", "run_command", '{"command": "true"}')), reply(Text("done")))
    code, out, err = invoke("run", "go", "--agent", "researcher", "--json", "--root", str(workspace))
    assert code == 0, err
    first, second = llm.bodies()
    assert "You are a research assistant." in json.dumps(first["system"])
    assert {tool["name"] for tool in first["tools"]} == {"read_files", "calculate"}
    refused = [json.loads(line) for line in out.splitlines() if '"tool_result"' in line]
    assert refused and refused[0]["is_error"] and "run_command" in json.dumps(second["messages"][-1])


def test_an_agent_no_config_or_definition_names_is_a_usage_error_listing_the_known(
    workspace: Path, toolrig_home: Path
) -> None:
    code, _, err = invoke("run", "go", "--agent", "nobody", "--root", str(workspace))
    assert code == 2
    assert "no agent named 'nobody'" in err and "general" in err and "toolrig agents list" in err

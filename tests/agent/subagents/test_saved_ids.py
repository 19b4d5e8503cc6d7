"""A saved run state is input: the ids it carries are labels, never keys into the live configuration.

Hostile review 2026-11-28, N1: a paused child whose saved ``agent_id`` named a configured agent replaced that
agent's profile while it ran and deleted it when it ended, so later calls as that agent ran with no tool
list and no rules. The class: an id read back from a saved state chooses nothing (whose permissions,
memory, tasks or session); a child's permissions come with its run.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tests.agent.subagents.test_hub import spawn
from tests.support.fake_llm import Call, Text, reply
from toolrig.agent import RunOptions, RunState, resume_run, run_agent

pytestmark = pytest.mark.anyio

RESTRICTED = {"restricted": {"tools": ["note", "spawn_agents"]}}
ASK_NOTE = {"tools": {"rules": [{"tool": "note", "verdict": "ask"}]}}


async def paused_state(agent_tools_rig: Any, converse: Any) -> tuple[dict[str, Any], str]:
    """A run as ``restricted`` paused on its child's ``note`` call, as JSON data (what a file would hold)."""
    converse(
        {
            "PARENT": [reply(spawn("p1", ("general", "child CHILD"))), reply(Text("parent done"))],
            "CHILD": [reply(Call("a1", "note", '{"name": "asked"}')), reply(Text("child done"))],
        }
    )
    rig = agent_tools_rig(config={"agents": RESTRICTED, **ASK_NOTE})
    try:
        result = await run_agent("PARENT", RunOptions(approvals="pause", agent_id="restricted"), rig=rig)
    finally:
        rig.close()
    assert result.stop_reason == "paused" and result.state is not None
    return json.loads(result.state.to_json()), result.session_id


def saved_child(data: dict[str, Any]) -> dict[str, Any]:
    child: dict[str, Any] = data["children"]["spawns"]["p1"]["children"][0]
    return child


async def test_a_resumed_child_whose_saved_agent_id_names_a_configured_agent_leaves_its_profile_alone(
    agent_tools_rig: Any, converse: Any
) -> None:
    data, _ = await paused_state(agent_tools_rig, converse)
    saved_child(data)["agent_id"] = "restricted"  # what a committed .toolrig/paused/*.json can say
    rig = agent_tools_rig(config={"agents": RESTRICTED, **ASK_NOTE})
    before = rig.config.agents["restricted"].model_dump()
    try:
        state = RunState.from_json(json.dumps(data))
        result = await resume_run(state, {"a1": "allow_once"}, RunOptions(agent_id="restricted"), rig=rig)
        assert result.stop_reason == "completed"
        assert rig.config.agents["restricted"].model_dump() == before
        later = await rig.call("add", {"a": 1, "b": 2}, agent_id="restricted")
        assert later.is_error and later.error_type == "denied", later  # still outside its tool list
    finally:
        rig.close()


async def test_a_resumed_childs_forged_ids_are_replaced_by_fresh_ones(agent_tools_rig: Any, converse: Any) -> None:
    from toolrig.events import Event, SubagentStartEvent

    data, root = await paused_state(agent_tools_rig, converse)
    child = saved_child(data)
    forged = copy.deepcopy(data)
    saved_child(forged).update(agent_id="restricted", task_id="someone-elses-session")
    rig = agent_tools_rig(config={"agents": RESTRICTED, **ASK_NOTE})
    seen: list[Event] = []
    try:
        state = RunState.from_json(json.dumps(forged))
        opts = RunOptions(agent_id="restricted")
        await resume_run(state, {"a1": "allow_once"}, opts, rig=rig, on_event=seen.append)
    finally:
        rig.close()
    [started] = [e for e in seen if isinstance(e, SubagentStartEvent)]
    assert started.agent_id != "restricted" and started.agent_id.startswith("general-")
    assert started.task_id.startswith(root + ".") and started.task_id != child["task_id"]

"""No sequence of runs, resumes, children and direct calls on one Rig changes what another caller may do.

What a caller may do is read from the Rig before and after: each configured agent's (and no agent's) offered
tools, the policy's verdict on each tool, each tool's settings, and the configured profiles themselves.
Runs pause on their children's calls and resume from states whose every id field is drawn from the
configured names and from hostile strings (a saved state is input).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.agent.subagents.test_hub import spawn
from tests.support.fake_llm import Call, Text, reply
from toolrig.agent import RunOptions, RunState, resume_run, run_agent
from toolrig.rig import Rig

AGENTS = {
    "restricted": {"tools": ["note", "spawn_agents"]},
    "careful": {"approvals": {"mode": "always"}, "rules": [{"tool": "add", "verdict": "deny"}]},
}
CONFIG = {"agents": AGENTS, "tools": {"rules": [{"tool": "note", "verdict": "ask"}]}}
CALLERS = [None, *AGENTS]
IDS = st.sampled_from([*AGENTS, "general", "general-abcdef", "", "../x", "restricted.1", "a" * 300, "\u202e"])


def standing(rig: Rig) -> dict[str, Any]:
    """Everything a caller may do, per caller, as plain data."""
    policy = rig.governance.policy
    out: dict[str, Any] = {"profiles": {n: a.model_dump() for n, a in rig.config.agents.items()}}
    for caller in CALLERS:
        tools = rig.catalog.list()
        out[str(caller)] = {
            "offered": rig.registry_for(caller).names(),
            "verdicts": {t.name: policy.decide(t, caller, []).verdict for t in tools},
            "settings": {t.name: repr(rig.tool_settings(t, caller)) for t in tools},
        }
    return out


def forged(state: RunState, field: str, value: str) -> RunState:
    data = json.loads(state.to_json())
    for spawned in data.get("children", {}).get("spawns", {}).values():
        for child in spawned["children"]:
            child[field] = value
            for item in child.get("state", {}).get("pending", []):
                item["task_id"] = value
    return RunState.from_json(json.dumps(data))


operations = st.lists(
    st.one_of(
        st.tuples(st.just("run"), st.sampled_from(CALLERS)),
        st.tuples(st.just("resume"), st.sampled_from(["agent_id", "task_id", "agent_type"]), IDS),
        st.tuples(st.just("call"), st.sampled_from(CALLERS), st.sampled_from(["add", "note"])),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=operations)
def test_no_run_resume_child_or_call_changes_what_another_caller_may_do(
    agent_tools_rig: Any, converse: Any, steps: list[tuple[Any, ...]]
) -> None:
    converse(
        {
            "PARENT": [reply(spawn("p1", ("general", "child CHILD"))), reply(Text("parent done"))],
            "CHILD": [reply(Call("a1", "note", '{"name": "asked"}')), reply(Text("child done"))],
        }
    )
    rig = agent_tools_rig(config=CONFIG)

    async def play() -> None:
        before = standing(rig)
        saved: list[tuple[RunState, str | None]] = []
        for step in steps:
            if step[0] == "run":
                result = await run_agent("PARENT", RunOptions(approvals="pause", agent_id=step[1]), rig=rig)
                if result.state is not None:
                    saved.append((result.state, step[1]))
            elif step[0] == "resume" and saved:
                state, agent = saved.pop()
                options = RunOptions(approvals="pause", agent_id=agent)
                await resume_run(forged(state, step[1], step[2]), {"a1": "allow_once"}, options, rig=rig)
            elif step[0] == "call":
                await rig.call(step[2], {"a": 1, "b": 2} if step[2] == "add" else {"name": "x"}, agent_id=step[1])
            assert standing(rig) == before, step

    try:
        anyio.run(play)
    except Exception as exc:  # a run may fail (a forged type is gone): that is allowed, a change is not
        from toolrig.agent.errors import RunError
        from toolrig.errors import ToolError

        if not isinstance(exc, RunError | ToolError):
            raise
    finally:
        rig.close()

"""Subagents against the scripted provider servers, on both wire protocols (the ``provider`` fixture)."""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import pytest

from tests.support import sample_tools
from tests.support.fake_llm import Call, Text, reply
from toolrig.agent import RunOptions, run_agent
from toolrig.agent.errors import RunError
from toolrig.events import (
    Event,
    SubagentDoneEvent,
    SubagentStartEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from toolrig.policy.audit import AuditLog

pytestmark = pytest.mark.anyio


def spawn(call_id: str, *children: tuple[str, str], background: bool = False) -> Call:
    agents = [{"agent_type": t, "prompt": p} for t, p in children]
    return Call(call_id, "spawn_agents", json.dumps({"agents": agents, "background": background}))


def result_of(body_results: list[str], call: str) -> dict[str, Any]:
    for text in body_results:
        if call in text:
            return dict(json.loads(text))
    raise AssertionError(f"no result mentions {call}")


async def test_three_children_run_in_parallel_and_return_in_order(
    agent_tools_rig: Any, converse: Any, workspace: Any
) -> None:
    sample_tools.reset_probe(parties=3)
    converse(
        {
            "PARENT": [
                reply(spawn("p1", ("general", "job ALPHA"), ("general", "job BETA"), ("general", "job GAMMA"))),
                reply(Text("all three done")),
            ],
            "ALPHA": [reply(Call("a1", "rendezvous", '{"name": "alpha"}')), reply(Text("alpha finished"))],
            "BETA": [reply(Call("b1", "rendezvous", '{"name": "beta"}')), reply(Text("beta finished"))],
            "GAMMA": [reply(Call("g1", "rendezvous", '{"name": "gamma"}')), reply(Text("gamma finished"))],
        }
    )
    events: list[Event] = []
    rig = agent_tools_rig()
    result = await run_agent("PARENT", RunOptions(), rig=rig, on_event=events.append)
    assert result.response == "all three done"
    # rendezvous finishes only when all three are inside it at once: the children overlapped.
    log = sample_tools.PROBE.log
    assert {e for e in log if e.startswith("start:")} == {"start:alpha", "start:beta", "start:gamma"}
    assert max(i for i, e in enumerate(log) if e.startswith("start:")) < min(
        i for i, e in enumerate(log) if e.startswith("end:")
    )
    starts = [e for e in events if isinstance(e, SubagentStartEvent)]
    dones = [e for e in events if isinstance(e, SubagentDoneEvent)]
    assert len(starts) == 3 and {d.status for d in dones} == {"done"}
    root = result.session_id
    assert sorted(s.task_id for s in starts) == [f"{root}.1", f"{root}.2", f"{root}.3"]
    assert all(s.parent_task_id == root and s.agent_type == "general" for s in starts)
    tagged = [e for e in events if isinstance(e, ToolCallEvent | ToolResultEvent) and e.task_id is not None]
    assert {e.task_id for e in tagged} == {s.task_id for s in starts}
    # The parent's tool result: one record per child, in the order asked.
    [spawned] = [e for e in events if isinstance(e, ToolResultEvent) and e.task_id is None]
    assert spawned.name == "spawn_agents" and not spawned.is_error
    audit = AuditLog(workspace / ".toolrig")
    rows = list(audit.query(tool="rendezvous"))
    by_agent = {s.agent_id: s.task_id for s in starts}
    assert {(r.agent, r.session) for r in rows} == set(by_agent.items())
    audit.close()
    rig.close()


async def test_foreground_results_follow_the_record_shape_in_order(
    agent_tools_rig: Any, converse: Any, llm: Any
) -> None:
    converse(
        {
            "PARENT": [reply(spawn("p1", ("general", "say ONE"), ("general", "say TWO"))), reply(Text("ok"))],
            "ONE": [reply(Text("one"))],
            "TWO": [reply(Text("two"))],
        }
    )
    rig = agent_tools_rig()
    result = await run_agent("PARENT", RunOptions(), rig=rig)
    last = [b for b in llm.bodies() if "PARENT" in json.dumps(b)[:20_000]][-1]
    from tests.support.subagent_conversations import tool_results

    [text] = [t for t in tool_results(last) if "results" in t]
    records = json.loads(text)["output"]["results"]
    assert [r["output"] for r in records] == ["one", "two"]
    assert [r["task_id"] for r in records] == [f"{result.session_id}.1", f"{result.session_id}.2"]
    for record in records:
        assert set(record) == {"task_id", "agent_type", "status", "output", "summary", "usage"}
        assert set(record["usage"]) == {"input", "output", "cost_usd", "tool_calls", "duration_ms"}
        assert record["status"] == "done"
    # The parent's usage includes the children's: three model turns of 100 input tokens... plus the parent's two.
    assert result.usage.input == 100 * 4
    rig.close()


async def test_a_child_cannot_call_a_tool_its_parent_lacks_and_the_refusal_is_audited_with_lineage(
    agent_tools_rig: Any, converse: Any, workspace: Any
) -> None:
    probe = sample_tools.reset_probe()
    converse(
        {
            "PARENT": [reply(spawn("p1", ("general", "try SNEAKY"))), reply(Text("done"))],
            "SNEAKY": [reply(Call("s1", "note", '{"name": "x"}')), reply(Text("it was refused"))],
        }
    )
    events: list[Event] = []
    rig = agent_tools_rig()
    result = await run_agent("PARENT", RunOptions(tools_deny=["note"]), rig=rig, on_event=events.append)
    [refused] = [e for e in events if isinstance(e, ToolResultEvent) and e.name == "note"]
    assert refused.is_error and refused.task_id == f"{result.session_id}.1"
    assert "not offered" in refused.preview or "denied" in refused.preview
    [start] = [e for e in events if isinstance(e, SubagentStartEvent)]
    audit = AuditLog(workspace / ".toolrig")
    [row] = audit.query(tool="note")
    assert row.decision == "deny" and row.agent == start.agent_id and row.session == start.task_id
    assert row.session.rsplit(".", 1)[0] == result.session_id  # the parent task id is the prefix
    audit.close()
    assert probe.log.count("note:start:x") == 0
    rig.close()


async def test_structured_output_is_validated_and_the_child_repairs_it(
    agent_tools_rig: Any, converse: Any, llm: Any
) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    converse(
        {
            "PARENT": [reply(spawn("p1", ("counter", "count COUNTME"))), reply(Text("done"))],
            "COUNTME": [
                reply(Call("c1", "set_output", '{"output": {"n": "three"}}')),
                reply(Call("c2", "set_output", '{"output": {"n": 3}}')),
                reply(Text("counted")),
            ],
        }
    )
    config = {"agents": {"counter": {"description": "counts", "output_mode": "structured", "output_schema": schema}}}
    events: list[Event] = []
    rig = agent_tools_rig(config=config)
    await run_agent("PARENT", RunOptions(), rig=rig, on_event=events.append)
    results = [e for e in events if isinstance(e, ToolResultEvent) and e.name == "set_output"]
    assert [r.is_error for r in results] == [True, False]
    assert "output schema" in results[0].preview
    child_bodies = [b for b in llm.bodies() if "COUNTME" in json.dumps(b.get("messages", [])[:2])]
    assert any("set_output" in json.dumps(b.get("system", "")) or "JSON Schema" in json.dumps(b) for b in child_bodies)
    [done] = [e for e in events if isinstance(e, SubagentDoneEvent)]
    assert done.status == "done"
    parent_last = [b for b in llm.bodies() if "PARENT" in json.dumps(b.get("messages", [])[:2])][-1]
    from tests.support.subagent_conversations import tool_results

    [text] = [t for t in tool_results(parent_last) if "results" in t]
    assert json.loads(text)["output"]["results"][0]["output"] == {"n": 3}
    rig.close()


async def test_set_output_sets_a_top_level_runs_output(agent_tools_rig: Any, converse: Any) -> None:
    converse({"TOP": [reply(Call("o1", "set_output", '{"output": [1, 2]}')), reply(Text("done"))]})
    rig = agent_tools_rig()
    result = await run_agent("TOP", RunOptions(), rig=rig)
    assert result.output == [1, 2] and result.response == "done"
    rig.close()


async def test_depth_limit_refuses_a_grandchild(agent_tools_rig: Any, converse: Any) -> None:
    converse(
        {
            "PARENT": [reply(spawn("p1", ("manager", "manage DEEP"))), reply(Text("done"))],
            "DEEP": [reply(spawn("d1", ("general", "go DEEPER"))), reply(Text("could not"))],
            "DEEPER": [reply(Text("should never run"))],
        }
    )
    config = {"agents": {"manager": {"description": "delegates", "spawns": ["general"]}}, "subagents": {"max_depth": 1}}
    events: list[Event] = []
    rig = agent_tools_rig(config=config)
    await run_agent("PARENT", RunOptions(), rig=rig, on_event=events.append)
    [refused] = [e for e in events if isinstance(e, ToolResultEvent) and e.name == "spawn_agents" and e.task_id]
    assert refused.is_error and "max_depth" in refused.preview
    assert len([e for e in events if isinstance(e, SubagentStartEvent)]) == 1


async def test_a_child_may_spawn_only_its_types_spawns(agent_tools_rig: Any, converse: Any) -> None:
    converse(
        {
            "PARENT": [reply(spawn("p1", ("general", "try NESTED"))), reply(Text("done"))],
            "NESTED": [reply(spawn("n1", ("general", "go INNER"))), reply(Text("could not"))],
        }
    )
    events: list[Event] = []
    rig = agent_tools_rig()
    await run_agent("PARENT", RunOptions(), rig=rig, on_event=events.append)
    [refused] = [e for e in events if isinstance(e, ToolResultEvent) and e.name == "spawn_agents" and e.task_id]
    assert refused.is_error and "may not spawn" in refused.preview


async def test_background_children_are_waited_for_with_wait_task(agent_tools_rig: Any, converse: Any, llm: Any) -> None:
    from toolrig.tools.tasks import TOOLS as TASK_TOOLS

    converse(
        {
            "PARENT": [
                reply(spawn("p1", ("general", "bg LEFT"), ("general", "bg RIGHT"), background=True)),
                reply(Call("w1", "wait_task", '{"mode": "all", "timeout_seconds": 60}')),
                reply(Call("l1", "subagent_list", "{}")),
                reply(Text("both done")),
            ],
            "LEFT": [reply(Text("left"))],
            "RIGHT": [reply(Text("right"))],
        }
    )
    events: list[Event] = []
    rig = agent_tools_rig(tools=TASK_TOOLS)
    result = await run_agent("PARENT", RunOptions(), rig=rig, on_event=events.append)
    assert result.response == "both done" and result.stop_reason == "completed"
    from tests.support.subagent_conversations import tool_results

    last = [b for b in llm.bodies() if "PARENT" in json.dumps(b.get("messages", [])[:2])][-1]
    parsed = [json.loads(t) for t in tool_results(last)]
    waited = next(p["output"] for p in parsed if p.get("output", {}).get("task_status") == "waited")
    assert waited["pending"] == [] and sorted(r["output"] for r in waited["ended"]) == ["left", "right"]
    listed = next(p["output"]["subagents"] for p in parsed if "subagents" in p.get("output", {}))
    assert [c["status"] for c in listed] == ["done", "done"]
    rig.close()


async def test_claude_style_task_alias_runs_one_child(agent_tools_rig: Any, converse: Any) -> None:
    converse(
        {
            "PARENT": [
                reply(
                    Call("t1", "Task", '{"description": "look", "prompt": "look ALIASED", "subagent_type": "general"}')
                ),
                reply(Text("done")),
            ],
            "ALIASED": [reply(Text("looked"))],
        }
    )
    events: list[Event] = []
    rig = agent_tools_rig()
    await run_agent("PARENT", RunOptions(), rig=rig, on_event=events.append)
    [result] = [e for e in events if isinstance(e, ToolResultEvent) and e.name == "Task"]
    assert not result.is_error and "looked" in result.preview


async def test_child_approval_requests_reach_the_root_runs_channel(agent_tools_rig: Any, converse: Any) -> None:
    from toolrig.approvals import ApprovalDecision, ApprovalRequest, CallbackChannel

    probe = sample_tools.reset_probe()
    asked: list[ApprovalRequest] = []

    async def answer(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision("allow_once")

    converse(
        {
            "PARENT": [reply(spawn("p1", ("general", "ask ASKER"))), reply(Text("done"))],
            "ASKER": [reply(Call("a1", "note", '{"name": "asked"}')), reply(Text("noted"))],
        }
    )
    config = {"approvals": {"mode": "always", "batch_window_seconds": 0}}
    events: list[Event] = []
    rig = agent_tools_rig(config=config)
    result = await run_agent("PARENT", RunOptions(approvals=CallbackChannel(answer)), rig=rig, on_event=events.append)
    tools_asked = [r.tool for r in asked]
    assert "note" in tools_asked
    [note_request] = [r for r in asked if r.tool == "note"]
    assert note_request.session_id == f"{result.session_id}.1"
    assert probe.log.count("note:start:asked") == 1
    rig.close()


@pytest.mark.slow  # starts processes by design
async def test_cancelling_the_parent_mid_child_leaves_no_process_behind(
    agent_tools_rig: Any, converse: Any, workspace: Any
) -> None:
    from pathlib import Path

    from toolrig.tools.shell import TOOLS as SHELL

    marker = f"31.{os.getpid() % 100_000:05d}"  # its own per xdist worker: both providers may run at once
    converse(
        {
            "PARENT": [reply(spawn("p1", ("general", "sleep SLEEPER"))), reply(Text("never"))],
            "SLEEPER": [reply(Call("s1", "run_command", json.dumps({"command": f"sleep {marker}"}))), reply(Text("x"))],
        }
    )

    def sleepers() -> list[int]:
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                cmdline = (proc / "cmdline").read_bytes()
                state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if marker.encode() in cmdline and state != "Z":
                found.append(int(proc.name))
        return found

    abort = anyio.Event()
    rig = agent_tools_rig(tools=SHELL)
    outcome: list[Any] = []

    async def drive() -> None:
        outcome.append(await run_agent("PARENT", RunOptions(abort=abort), rig=rig))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(drive)
            while not sleepers():
                await anyio.sleep(0.05)
            abort.set()
    assert outcome[0].stop_reason == "aborted"
    assert sleepers() == []
    rig.close()


RESUME_SCRIPT = """
import json, anyio
from tests.support import sample_tools
from toolrig.agent import RunState, resume_run
from toolrig.registry import Registry
from toolrig.rig import Rig
from toolrig.tools.agents import TOOLS

async def main():
    tools = [*sample_tools.agent_tools(), *TOOLS]
    rig = Rig({root!r}, config=json.loads({config!r}), registry=Registry(tools))
    state = RunState.from_json(open({state!r}).read())
    result = await resume_run(state, {{"a1": "allow_once"}}, rig=rig)
    print(json.dumps({{"response": result.response, "stop_reason": result.stop_reason,
                      "session_id": result.session_id, "log": sample_tools.PROBE.log}}))

anyio.run(main)
"""


@pytest.mark.slow  # starts processes by design
async def test_a_childs_approval_pauses_the_root_and_resumes_in_another_process(
    agent_tools_rig: Any, converse: Any, llm: Any, provider: str, workspace: Any
) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tests.agent.conftest import agent_config
    from tests.support.subagent_conversations import tool_results
    from toolrig.agent import RunState

    probe = sample_tools.reset_probe()
    converse(
        {
            "PARENT": [reply(spawn("p1", ("general", "be QUICK"), ("general", "ask ASKER"))), reply(Text("all done"))],
            "QUICK": [reply(Text("quick"))],
            "ASKER": [reply(Call("a1", "note", '{"name": "asked"}')), reply(Text("noted"))],
        }
    )
    extra = {"tools": {"rules": [{"tool": "note", "verdict": "ask", "reason": "notes need a yes"}]}}
    rig = agent_tools_rig(config=extra)
    result = await run_agent("PARENT", RunOptions(approvals="pause"), rig=rig)
    assert result.stop_reason == "paused" and result.state is not None
    state = result.state
    root = result.session_id
    assert [(p.call_id, p.tool, p.needs_approval, p.task_id) for p in state.pending] == [
        ("p1", "spawn_agents", False, None),
        ("a1", "note", True, f"{root}.2"),
    ]
    assert state.pending[1].reason == "notes need a yes"
    assert probe.log == []
    text = state.to_json()
    assert RunState.from_json(text).to_json() == text
    rig.close()

    state_file = workspace / "state.json"
    state_file.write_text(text)
    config = {**agent_config(llm, provider), **extra}
    script = RESUME_SCRIPT.format(root=str(workspace), state=str(state_file), config=json.dumps(config))
    repo = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    done = await anyio.to_thread.run_sync(
        lambda: subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60, cwd=repo
        )
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {
        "response": "all done",
        "stop_reason": "completed",
        "session_id": root,
        "log": ["note:start:asked", "note:end:asked"],
    }
    last = [b for b in llm.bodies() if "PARENT" in json.dumps(b.get("messages", [])[:2])][-1]
    [spawned] = [json.loads(t) for t in tool_results(last) if "results" in t]
    records = spawned["output"]["results"]
    assert [(r["task_id"], r["status"], r["output"]) for r in records] == [
        (f"{root}.1", "done", "quick"),
        (f"{root}.2", "done", "noted"),
    ]


async def test_hook_calls_of_a_child_carry_its_agent_id_and_task_id(agent_tools_rig: Any, converse: Any) -> None:
    from toolrig.hooks import HookEvent, Hooks

    seen: list[HookEvent] = []

    class Recorder(Hooks):
        async def before_tool(self, event: HookEvent) -> None:
            seen.append(event)

    converse(
        {
            "PARENT": [reply(spawn("p1", ("general", "add ADDER"))), reply(Text("done"))],
            "ADDER": [reply(Call("a1", "add", '{"a": 1, "b": 2}')), reply(Text("3"))],
        }
    )
    events: list[Event] = []
    rig = agent_tools_rig()
    result = await run_agent("PARENT", RunOptions(hooks=[Recorder()]), rig=rig, on_event=events.append)
    [start] = [e for e in events if isinstance(e, SubagentStartEvent)]
    by_tool = {e.tool: e for e in seen}
    assert (by_tool["spawn_agents"].session_id, by_tool["spawn_agents"].agent_id) == (result.session_id, None)
    assert (by_tool["add"].session_id, by_tool["add"].agent_id) == (start.task_id, start.agent_id)
    assert start.parent_task_id == result.session_id
    rig.close()


async def test_a_child_past_its_timeout_is_timed_out_and_its_parent_goes_on(
    agent_tools_rig: Any, converse: Any
) -> None:
    converse(
        {
            "PARENT": [reply(spawn("p1", ("slow", "wait HANGER"))), reply(Text("went on"))],
            "HANGER": [reply(Call("h1", "hang", "{}")), reply(Text("never"))],
        }
    )
    events: list[Event] = []
    rig = agent_tools_rig(config={"agents": {"slow": {"description": "hangs", "timeout_seconds": 0.5}}})
    result = await run_agent("PARENT", RunOptions(), rig=rig, on_event=events.append)
    [done] = [e for e in events if isinstance(e, SubagentDoneEvent)]
    assert done.status == "timed_out" and result.response == "went on"
    rig.close()


async def test_a_childs_turn_budget_comes_from_its_type(agent_tools_rig: Any, converse: Any, llm: Any) -> None:
    converse(
        {
            "PARENT": [reply(spawn("p1", ("brief", "loop LOOPER"))), reply(Text("done"))],
            "LOOPER": [reply(Call("l1", "add", '{"a": 1, "b": 1}')), reply(Text("summary after one turn"))],
        }
    )
    rig = agent_tools_rig(config={"agents": {"brief": {"description": "one turn", "max_turns": 1}}})
    await run_agent("PARENT", RunOptions(), rig=rig)
    from tests.support.subagent_conversations import first_user_text

    child = [b for b in llm.bodies() if "LOOPER" in first_user_text(b)]
    assert len(child) == 2  # one turn with tools, then the summary request (no more tools)
    assert "You have used all 1 turns" in json.dumps(child[-1]["messages"][-1])
    rig.close()


async def test_a_child_type_wider_than_its_parent_cannot_use_the_extra_commands_or_domains(
    agent_tools_rig: Any, converse: Any
) -> None:
    from toolrig.tools.shell import RunCommand
    from toolrig.tools.web import FetchUrl

    converse(
        {
            "PARENT": [reply(spawn("p1", ("wide", "try WIDER"))), reply(Text("done"))],
            "WIDER": [
                reply(
                    Call("w1", "run_command", '{"command": "echo inside"}'),
                    Call("w2", "run_command", '{"command": "ls"}'),
                    Call("w3", "fetch_url", '{"url": "http://evil.test/"}'),
                ),
                reply(Text("tried")),
            ],
        }
    )
    lead = {"run_command": {"allow": ["echo *"]}, "fetch_url": {"allowed_domains": ["example.com"]}}
    wide = {
        "run_command": {"allow": ["echo *", "ls*"], "mode": "argv"},
        "fetch_url": {"allowed_domains": ["example.com", "evil.test"], "allow_loopback": True},
    }
    agents = {"lead": {"tool_config": lead}, "wide": {"description": "wider", "tool_config": wide}}
    events: list[Event] = []
    rig = agent_tools_rig(config={"agents": agents}, tools=[RunCommand(), FetchUrl()])
    await run_agent("PARENT", RunOptions(agent_id="lead"), rig=rig, on_event=events.append)
    results = {e.id: e for e in events if isinstance(e, ToolResultEvent) and e.task_id is not None}
    assert not results["w1"].is_error and "inside" in results["w1"].preview  # what both allow still runs
    assert results["w2"].is_error and "allow" in results["w2"].preview  # 'ls*' was the type's alone
    assert results["w3"].is_error and "evil.test" in results["w3"].preview and "allowlist" in results["w3"].preview
    # Settings without a narrowing rule keep the parent's value, and the warning names each one.
    warnings = "\n".join(rig.loaded.warnings)
    assert "agents.wide.tool_config.run_command.mode" in warnings
    assert "agents.wide.tool_config.fetch_url.allow_loopback" in warnings
    rig.close()


async def test_children_draw_from_their_parents_rate_limit_and_together_cannot_exceed_it(
    agent_tools_rig: Any, converse: Any
) -> None:
    def adds(prefix: str) -> list[Any]:
        calls = [Call(f"{prefix}{n}", "add", '{"a": 1, "b": 1}') for n in range(3)]
        return [reply(*calls), reply(Text(f"{prefix} done"))]

    converse(
        {
            "PARENT": [reply(spawn("p1", ("general", "job ONE"), ("general", "job TWO"))), reply(Text("done"))],
            "ONE": adds("one"),
            "TWO": adds("two"),
        }
    )
    events: list[Event] = []
    rig = agent_tools_rig(config={"agents": {"lead": {"rate_limits": {"add": "4/hour"}}}})
    await run_agent("PARENT", RunOptions(agent_id="lead"), rig=rig, on_event=events.append)
    added = [e for e in events if isinstance(e, ToolResultEvent) and e.name == "add"]
    assert len(added) == 6 and len({e.task_id for e in added if e.task_id is not None}) == 2
    # Six calls by two children under a parent limited to four: four ran, the rest were over the limit.
    assert sum(not e.is_error for e in added) == 4
    refused = [e for e in added if e.is_error]
    assert all("agents.lead.rate_limits.add" in e.preview for e in refused)
    rig.close()


async def test_allow_always_on_a_childs_call_is_kept_for_the_tree_not_under_the_childs_made_up_id(
    llm: Any, converse: Any, workspace: Any, toolrig_home: Any, provider: str
) -> None:
    import yaml

    from tests.agent.conftest import agent_config
    from toolrig.agent.subagents.loading import load_agent_types
    from toolrig.approvals import ApprovalDecision
    from toolrig.rig import Rig

    config = {**agent_config(llm, provider), "approvals": {"mode": "always"}, "agents": {"worker": {}}}
    (toolrig_home / "config.yaml").write_text(yaml.safe_dump(config))
    asked: list[tuple[str, str | None]] = []

    class Person:
        async def decide(self, requests: Any) -> list[ApprovalDecision]:
            asked.extend((r.tool, r.agent_id) for r in requests)
            return [ApprovalDecision("allow_always", "ok") for _ in requests]

    git = Call("c1", "run_command", '{"command": "git --version"}')
    converse(
        {
            "PARENT": [reply(spawn("p1", ("worker", "ONE"))), reply(spawn("p2", ("worker", "TWO"))), reply(Text("ok"))],
            "ONE": [reply(git), reply(Text("one"))],
            "TWO": [reply(git), reply(Text("two"))],
        }
    )
    with Rig(workspace, approval_channel=Person()) as rig:
        await run_agent("PARENT", RunOptions(), rig=rig)
    assert [tool for tool, _ in asked].count("run_command") == 1  # the second child was not asked again
    saved = yaml.safe_load((toolrig_home / "config.yaml").read_text())
    assert set(saved["agents"]) == {"worker"}  # no agent named after a child
    assert "run_command:git --version" in saved["approvals"]["allow"]
    types = load_agent_types(workspace, Rig(workspace).loaded, log_warnings=False)
    assert sorted(types.names()) == ["general", "worker"]


# ---------------------------------------------------------------------------------------------- one budget, one tree

PRICED = {"input": 1000.0, "output": 0.0}  # 100 input tokens a turn: every model turn costs $0.10
TURN = 0.10


def looping(marker: str) -> list[Any]:
    """A child that calls a tool every turn and never answers: it stops only when something stops it."""
    return [reply(Call(f"{marker.lower()}-add", "add", '{"a": 1, "b": 1}'))]


async def test_parallel_children_share_the_parents_budget_instead_of_each_getting_the_remainder(
    agent_tools_rig: Any, converse: Any, llm: Any
) -> None:
    """The reported case: $1.00, the first turn spawns four workers at once; each used to spend $1.00."""
    workers = [("worker", f"work CHILD{i}") for i in range(4)]
    converse(
        {"PARENT": [reply(spawn("p1", *workers)), reply(Text("done"))]}
        | {f"CHILD{i}": looping(f"c{i}") for i in range(4)}
    )
    events: list[Event] = []
    rig = agent_tools_rig(price=PRICED, config={"agents": {"worker": {"description": "works"}}})
    with pytest.raises(RunError) as caught:
        await run_agent("PARENT", RunOptions(max_budget_usd=1.0), rig=rig, on_event=events.append)
    assert caught.value.kind == "budget"
    # The tree stops at the limit plus the one turn that crosses it: 11 turns of $0.10, not 42.
    assert len(llm.requests) * TURN <= 1.0 + TURN + 1e-9
    dones = [e for e in events if isinstance(e, SubagentDoneEvent)]
    assert len(dones) == 4 and all(d.status == "failed" for d in dones)
    assert sum(d.usage["cost_usd"] for d in dones) <= 1.0 + 1e-9
    rig.close()


async def test_background_children_and_grandchildren_draw_from_the_roots_one_budget(
    agent_tools_rig: Any, converse: Any, llm: Any
) -> None:
    from toolrig.tools.tasks import TOOLS as TASK_TOOLS

    leads = [("lead", "lead LEADA"), ("lead", "lead LEADB")]
    converse(
        {
            "PARENT": [
                reply(spawn("p1", *leads, background=True)),
                reply(Call("w1", "wait_task", '{"mode": "all", "timeout_seconds": 600}')),
                reply(Text("done")),
            ],
            "LEADA": [reply(spawn("a1", ("worker", "work GRANDA1"), ("worker", "work GRANDA2"))), reply(Text("a"))],
            "LEADB": [reply(spawn("b1", ("worker", "work GRANDB1"))), *looping("lb")],
            "GRANDA1": looping("ga1"),
            "GRANDA2": looping("ga2"),
            "GRANDB1": looping("gb1"),
        }
    )
    agents = {"lead": {"description": "leads", "spawns": ["worker"]}, "worker": {"description": "works"}}
    events: list[Event] = []
    rig = agent_tools_rig(price=PRICED, config={"agents": agents}, tools=TASK_TOOLS)
    with pytest.raises(RunError) as caught:
        await run_agent("PARENT", RunOptions(max_budget_usd=1.5), rig=rig, on_event=events.append)
    assert caught.value.kind == "budget"
    assert len(llm.requests) * TURN <= 1.5 + TURN + 1e-9
    started = {e.task_id for e in events if isinstance(e, SubagentStartEvent)}
    assert len(started) == 5 and {t.count(".") for t in started} == {1, 2}  # children and grandchildren ran
    rig.close()


async def test_a_childs_own_type_budget_still_stops_it_first(agent_tools_rig: Any, converse: Any, llm: Any) -> None:
    converse({"PARENT": [reply(spawn("p1", ("thrifty", "work CHEAP"))), reply(Text("done"))], "CHEAP": looping("ch")})
    agents = {"thrifty": {"description": "spends little", "max_budget_usd": 0.25}}
    events: list[Event] = []
    rig = agent_tools_rig(price=PRICED, config={"agents": agents})
    result = await run_agent("PARENT", RunOptions(max_budget_usd=5.0), rig=rig, on_event=events.append)
    assert result.response == "done"
    [done] = [e for e in events if isinstance(e, SubagentDoneEvent)]
    assert done.status == "failed" and done.error is not None and "budget of $0.2500" in done.error
    assert done.usage["cost_usd"] == pytest.approx(0.3)  # its own limit plus the turn that crossed it
    rig.close()

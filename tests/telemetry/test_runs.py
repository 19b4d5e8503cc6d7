"""Span trees of agent runs, as the OTLP exporter really sends them: parents checked by span id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.agent.conftest import agent_config
from tests.support.fake_llm import Call, FakeLLM, Text, reply
from tests.support.otlp import Receiver, Span
from tests.support.sample_tools import agent_tools
from tests.support.subagent_conversations import install
from toolrig.agent import run_agent
from toolrig.agent.state import RunOptions
from toolrig.approvals.channel import CallbackChannel
from toolrig.approvals.model import ApprovalDecision
from toolrig.policy.audit import AuditLog
from toolrig.registry import Registry
from toolrig.rig import Rig
from toolrig.telemetry import names

pytestmark = pytest.mark.anyio


def telemetry_rig(
    workspace: Path, llm: FakeLLM, otlp: Receiver, extra_tools: list[Any] | None = None, **config: Any
) -> Rig:
    full = {
        **agent_config(llm, "anthropic"),
        "telemetry": {"endpoint": otlp.url, "service_name": "toolrig-tests"},
        **config,
    }
    return Rig(workspace, config=full, registry=Registry(agent_tools()), tools=extra_tools or [])


def one(spans: list[Span], name: str) -> Span:
    [span] = [s for s in spans if s.name == name]
    return span


def children(spans: list[Span], parent: Span) -> list[Span]:
    return [s for s in spans if s.parent_span_id == parent.span_id and s.trace_id == parent.trace_id]


async def _approve_after_a_wait(request: Any) -> ApprovalDecision:
    for _ in range(3):  # the answer comes later than the question: the approval span has a length
        await anyio.lowlevel.checkpoint()
    return ApprovalDecision("allow_once", "a person said yes")


async def test_a_run_with_a_denied_and_an_approved_call_is_one_tree(
    workspace: Path, llm: FakeLLM, otlp: Receiver
) -> None:
    rules = [
        {"tool": "note", "verdict": "deny", "reason": "no notes today"},
        {"tool": "add", "verdict": "ask", "reason": "sums need a person"},
    ]
    rig = telemetry_rig(workspace, llm, otlp, tools={"rules": rules})
    llm.script(
        reply(Call("c1", "note", '{"name": "x"}'), Call("c2", "add", '{"a": 2, "b": 3}')),
        reply(Text("done")),
    )
    options = RunOptions(approvals=CallbackChannel(_approve_after_a_wait))
    result = await run_agent("go", options, rig=rig)
    assert result.response == "done"
    assert rig.telemetry is not None and rig.telemetry.force_flush()

    runs = [s for s in otlp.named("invoke_agent") if s.attributes.get(names.CONVERSATION_ID) == result.session_id]
    [run] = runs
    spans = otlp.in_trace(run.trace_id)
    assert run.parent_span_id == b""
    chats = [s for s in children(spans, run) if s.name.startswith("chat ")]
    tools = [s for s in children(spans, run) if s.name.startswith("execute_tool ")]
    assert len(chats) == 2 and {s.name for s in tools} == {"execute_tool note", "execute_tool add"}
    denied = one(tools, "execute_tool note")
    approved = one(tools, "execute_tool add")
    assert denied.attributes[names.DECISION] == "deny" and denied.attributes[names.ERROR_TYPE] == "denied"
    assert denied.attributes[names.OUTCOME] == "error" and denied.status_code == 2  # STATUS_CODE_ERROR
    assert approved.attributes[names.APPROVAL] == "allow_once" and approved.attributes[names.OUTCOME] == "ok"
    [asked] = children(spans, approved)
    assert asked.name == "approval add" and asked.attributes[names.APPROVAL] == "allow_once"
    assert approved.start <= asked.start <= asked.end <= approved.end
    chat = chats[0]
    assert chat.attributes[names.PROVIDER] == "anthropic" and chat.attributes[names.REQUEST_MODEL] == "claude-test"
    assert chat.attributes[names.INPUT_TOKENS] >= 0 and names.FINISH_REASONS in chat.attributes
    assert names.TIME_TO_FIRST_CHUNK in chat.attributes

    # Every audit row of the run has its span, with the same decision.
    rig.close()
    audit = AuditLog(rig.workspace.state_dir)
    rows = [r for r in audit.query(limit=None) if r.session == result.session_id]
    audit.close()
    by_call = {s.attributes[names.TOOL_CALL_ID]: s for s in spans if s.name.startswith("execute_tool ")}
    assert len(rows) == 2 and all(by_call[row.call_id].attributes[names.DECISION] == row.decision for row in rows)


async def test_two_subagents_are_child_runs_of_the_spawning_call(workspace: Path, llm: FakeLLM, otlp: Receiver) -> None:
    from toolrig.tools.agents import TOOLS

    agents = [{"agent_type": "general", "prompt": "job LEFT"}, {"agent_type": "general", "prompt": "job RIGHT"}]
    install(
        llm,
        {
            "PARENT": [reply(Call("p1", "spawn_agents", json.dumps({"agents": agents}))), reply(Text("both done"))],
            "LEFT": [reply(Call("l1", "add", '{"a": 1, "b": 2}')), reply(Text("left done"))],
            "RIGHT": [reply(Text("right done"))],
        },
    )
    rig = telemetry_rig(workspace, llm, otlp, extra_tools=list(TOOLS))
    try:
        result = await run_agent("lead PARENT", rig=rig)
    finally:
        llm.responder = None
    assert result.response == "both done"
    assert rig.telemetry is not None and rig.telemetry.force_flush()
    [root] = [s for s in otlp.named("invoke_agent") if s.attributes.get(names.CONVERSATION_ID) == result.session_id]
    spans = otlp.in_trace(root.trace_id)
    spawn = one(children(spans, root), "execute_tool spawn_agents")
    kids = [s for s in children(spans, spawn) if s.name.startswith("invoke_agent ")]
    assert len(kids) == 2
    for kid in kids:
        assert kid.name == "invoke_agent general" and kid.attributes[names.PARENT_TASK_ID] == result.session_id
        assert [s.name for s in children(spans, kid) if s.name.startswith("chat ")]
    left_adds = [s for kid in kids for s in children(spans, kid) if s.name == "execute_tool add"]
    assert len(left_adds) == 1 and left_adds[0].attributes[names.DECISION] == "allow"
    rig.close()

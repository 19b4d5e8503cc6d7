"""A resumed run's decisions: each holds once, and only for the call the person saw (hostile review F2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.agent.conftest import agent_config
from tests.support.fake_llm import Call, FakeLLM, Text, reply
from toolrig.agent import RunOptions, RunState, resume_run, run_agent
from toolrig.approvals.model import ApprovalRequest, fingerprint
from toolrig.approvals.paused import ReplayChannel
from toolrig.policy.audit import AuditLog
from toolrig.rig import Rig

pytestmark = pytest.mark.anyio


def command(call_id: str, text: str) -> Call:
    return Call(call_id, "run_command", json.dumps({"command": text}))


def make(workspace: Path, llm: FakeLLM, provider: str) -> Rig:
    return Rig(workspace, config={**agent_config(llm, provider), "approvals": {"mode": "always"}})


async def test_a_decision_never_approves_a_later_call_that_reuses_the_paused_calls_id(
    llm: FakeLLM, provider: str, workspace: Path
) -> None:
    llm.script(reply(command("call_0", "echo seen-by-the-person")))
    paused = await run_agent("go", RunOptions(approvals="pause"), rig=make(workspace, llm, provider))
    assert paused.state is not None
    [pending] = paused.state.pending
    assert pending.fingerprint  # the paused call's identity travels with the state
    state = RunState.from_json(paused.state.to_json())
    llm.script(reply(command("call_0", "touch PWNED")))
    resumed = await resume_run(
        state, {"call_0": "allow_once"}, RunOptions(approvals="pause"), rig=make(workspace, llm, provider)
    )
    assert (workspace / "PWNED").exists() is False
    assert resumed.stop_reason == "paused" and resumed.state is not None  # the new call waits for its own decision
    [again] = resumed.state.pending
    assert json.loads(again.arguments) == {"command": "touch PWNED"} and again.fingerprint != pending.fingerprint


@pytest.mark.parametrize("verdict", ["allow_once", "deny"])
async def test_a_paused_call_is_recorded_as_waiting_and_its_resumed_call_as_the_person_decided(
    llm: FakeLLM, workspace: Path, verdict: str
) -> None:
    """Issue 33 item 13: the paused call's row read ``deny`` although nobody had said no."""
    llm.script(reply(command("call_0", "echo approved")), reply(Text("done")))
    paused = await run_agent("go", RunOptions(approvals="pause"), rig=make(workspace, llm, "anthropic"))
    assert paused.state is not None
    await resume_run(paused.state, {"call_0": verdict}, RunOptions(), rig=make(workspace, llm, "anthropic"))
    log = AuditLog(workspace / ".toolrig")
    rows = [(r.call_id, r.decision, r.approval) for r in log.query()]
    log.close()
    assert rows == [("call_0", "ask", "paused"), ("call_0", "allow" if verdict == "allow_once" else "deny", verdict)]


async def test_ids_a_server_leaves_out_are_unique_across_turns(llm: FakeLLM, workspace: Path) -> None:
    llm.script(reply(command("", "echo one")))
    paused = await run_agent("go", RunOptions(approvals="pause"), rig=make(workspace, llm, "openai"))
    assert paused.state is not None
    [first] = paused.state.pending
    llm.script(reply(command("", "echo two")))
    again = await resume_run(
        paused.state, {first.call_id: "allow_once"}, RunOptions(approvals="pause"), rig=make(workspace, llm, "openai")
    )
    assert again.state is not None
    [second] = again.state.pending
    assert first.call_id != second.call_id


def request(call_id: str, args: dict[str, str]) -> ApprovalRequest:
    return ApprovalRequest(id=call_id, tool="run_command", args=args, fingerprint=fingerprint("run_command", args))


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seen=st.text(max_size=40), later=st.text(max_size=40))
async def test_a_replayed_decision_holds_once_and_only_for_the_arguments_it_was_given_for(
    seen: str, later: str
) -> None:
    paused = request("c1", {"command": seen})
    channel = ReplayChannel({"c1": "allow_always"}, bound={"c1": paused.fingerprint})
    [other] = await channel.decide([request("c1", {"command": later})])
    if later != seen:
        assert other.verdict == "deny"
        return
    assert other.verdict == "allow_always"
    [twice] = await channel.decide([request("c1", {"command": seen})])
    assert twice.verdict == "deny"  # used once

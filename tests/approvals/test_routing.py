from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agent.conftest import agent_config
from tests.agent.test_loop import tool_results
from tests.support import sample_tools
from tests.support.fake_llm import Call, FakeLLM, Text, reply
from toolrig.agent import RunOptions, RunState, resume_run, run_agent
from toolrig.approvals import ApprovalDecision, ApprovalRequest, CallbackChannel
from toolrig.events import Event

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
# Governance's own gate decides: `wipe` asks, everything else is allowed.
ASK_WIPE = {"tools": {"rules": [{"tool": "wipe", "verdict": "ask", "reason": "wipe is destructive"}]}}


def channel(verdict: str, reason: str = "") -> tuple[CallbackChannel, list[ApprovalRequest]]:
    asked: list[ApprovalRequest] = []

    async def decide(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(verdict, reason)  # type: ignore[arg-type]

    return CallbackChannel(decide), asked


async def test_an_approved_call_runs_and_the_events_show_the_question(
    llm: FakeLLM, make_rig: Any, provider: str
) -> None:
    probe = sample_tools.reset_probe()
    llm.script(reply(Call("c1", "wipe", '{"target": "tmp"}')), reply(Text("Wiped.")))
    approve, asked = channel("allow_once")
    events: list[Event] = []
    result = await run_agent(
        "wipe tmp", RunOptions(approvals=approve), rig=make_rig(config=ASK_WIPE), on_event=events.append
    )
    assert result.response == "Wiped." and probe.log == ["wipe:tmp"]
    assert [r.tool for r in asked] == ["wipe"] and asked[0].args == {"target": "tmp"}
    kinds = [e.type for e in events if e.type in ("tool_call", "approval_request", "approval_resolved", "tool_result")]
    assert kinds == ["tool_call", "approval_request", "approval_resolved", "tool_result"]


async def test_a_denied_call_tells_the_model_the_reason(llm: FakeLLM, make_rig: Any, provider: str) -> None:
    probe = sample_tools.reset_probe()
    llm.script(reply(Call("c1", "wipe", '{"target": "home"}')), reply(Text("Understood.")))
    deny, _ = channel("deny", "not my home directory")
    result = await run_agent("wipe", RunOptions(approvals=deny), rig=make_rig(config=ASK_WIPE))
    assert result.response == "Understood." and probe.log == []
    [(_, sent)] = tool_results(llm.bodies()[1], provider)
    assert sent["error_type"] == "denied" and "not my home directory" in sent["message"]


async def test_the_rig_channel_answers_when_the_run_brings_none(llm: FakeLLM, make_rig: Any) -> None:
    sample_tools.reset_probe()
    approve, asked = channel("allow_once")
    rig = make_rig(config=ASK_WIPE, rig_options={"approval_channel": approve})
    llm.script(reply(Call("c1", "wipe", '{"target": "a"}')), reply(Text("ok")))
    await run_agent("wipe", rig=rig)
    assert len(asked) == 1


async def test_a_paused_run_saves_plain_json_and_resumes_in_another_process(
    llm: FakeLLM, make_rig: Any, provider: str, workspace: Path
) -> None:
    probe = sample_tools.reset_probe()
    llm.script(
        reply(
            Call("c1", "add", '{"a": 1, "b": 2}'),
            Call("c2", "wipe", '{"target": "cache"}'),
            Call("c3", "step", '{"name": "after"}'),
        )
    )
    result = await run_agent("clean up", RunOptions(approvals="pause"), rig=make_rig(config=ASK_WIPE))
    assert result.stop_reason == "paused" and result.state is not None
    state = result.state
    assert [(p.call_id, p.tool, p.needs_approval) for p in state.pending] == [
        ("c2", "wipe", True),
        ("c3", "step", False),  # after a barrier: waits for the paused call, in order
    ]
    assert state.pending[0].reason == "wipe is destructive"
    assert set(state.results) == {"c1"}
    assert probe.log == []  # neither the paused call nor the one behind the barrier ran
    text = state.to_json()
    assert RunState.from_json(text).to_json() == text

    # Another process resumes it with the person's decision, against the same fake provider.
    state_file = workspace / "state.json"
    state_file.write_text(text)
    config = {**agent_config(llm, provider), **ASK_WIPE}
    llm.script(reply(Text("Cleaned.")))
    script = RESUME_SCRIPT.format(root=str(workspace), state=str(state_file), config=json.dumps(config))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {
        "response": "Cleaned.",
        "stop_reason": "completed",
        "session_id": state.session_id,
        "log": ["wipe:cache", "step:start:after", "step:end:after"],
    }
    sent = tool_results(llm.bodies()[-1], provider)
    assert [cid for cid, _ in sent] == ["c1", "c2", "c3"]
    assert sent[0][1]["output"] == {"result": 3} and sent[1][1]["output"] == {"result": "wiped cache"}


RESUME_SCRIPT = """
import json, anyio
from tests.support import sample_tools
from toolrig.agent import RunState, resume_run
from toolrig.registry import Registry
from toolrig.rig import Rig

async def main():
    rig = Rig({root!r}, config=json.loads({config!r}), registry=Registry(sample_tools.agent_tools()))
    state = RunState.from_json(open({state!r}).read())
    result = await resume_run(state, {{"c2": "allow_once"}}, rig=rig)
    print(json.dumps({{"response": result.response, "stop_reason": result.stop_reason,
                      "session_id": result.session_id, "log": sample_tools.PROBE.log}}))

anyio.run(main)
"""


async def test_resuming_with_a_denial_runs_nothing_and_the_model_hears_why(
    llm: FakeLLM, make_rig: Any, provider: str
) -> None:
    probe = sample_tools.reset_probe()
    rig = make_rig(config=ASK_WIPE)
    llm.script(reply(Call("c1", "wipe", '{"target": "x"}')))
    paused = await run_agent("wipe", RunOptions(approvals="pause"), rig=rig)
    assert paused.state is not None
    llm.script(reply(Text("Fine, I won't.")))
    result = await resume_run(paused.state, {"c1": ApprovalDecision("deny", "keep it")}, rig=rig)
    assert result.response == "Fine, I won't." and probe.log == []
    [(_, sent)] = tool_results(llm.bodies()[-1], provider)
    assert sent["error_type"] == "denied" and "keep it" in sent["message"]
    assert [m.role for m in result.new_messages] == ["user", "assistant", "user", "assistant"]


async def test_a_corrupt_run_state_is_a_clear_error() -> None:
    from toolrig.agent import RunError

    with pytest.raises(RunError) as caught:
        RunState.from_json('{"version": 1, "session_id": "x"}')
    assert caught.value.kind == "state" and "unreadable" in caught.value.message
    with pytest.raises(RunError):
        RunState.from_json('{"version": 99}')

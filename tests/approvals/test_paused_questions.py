"""A headless run that asks: it pauses with the questions in its RunState and resumes with answers anywhere."""

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
from toolrig.agent import RunOptions, resume_run, run_agent
from toolrig.approvals.channel import QuestionsApart
from toolrig.approvals.paused import PauseChannel
from toolrig.registry import Registry
from toolrig.rig import Rig
from toolrig.tools.interact import AskUser

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
ASK = json.dumps({"questions": [{"question": "Which database?", "options": ["PostgreSQL", "SQLite"]}]})


def make(workspace: Path, llm: FakeLLM, provider: str, **config: Any) -> Rig:
    registry = Registry([*sample_tools.agent_tools(), AskUser()])
    return Rig(workspace, config={**agent_config(llm, provider), **config}, registry=registry)


@pytest.mark.slow
async def test_a_paused_question_resumes_with_answers_in_a_new_process(
    llm: FakeLLM, provider: str, workspace: Path
) -> None:
    llm.script(reply(Call("q1", "ask_user", ASK)))
    result = await run_agent("set up", RunOptions(approvals="pause"), rig=make(workspace, llm, provider))
    assert result.stop_reason == "paused" and result.state is not None
    [pending] = result.state.pending
    assert (pending.call_id, pending.tool, pending.needs_approval) == ("q1", "ask_user", False)
    assert pending.questions[0]["question"] == "Which database?"
    assert [o["label"] for o in pending.questions[0]["options"]] == ["PostgreSQL", "SQLite"]

    state_file = workspace / "state.json"
    state_file.write_text(result.state.to_json())
    llm.script(reply(Text("SQLite it is.")))
    config = json.dumps(agent_config(llm, provider))
    script = RESUME.format(root=str(workspace), state=str(state_file), config=config)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"response": "SQLite it is.", "stop_reason": "completed"}
    [(call_id, sent)] = tool_results(llm.bodies()[-1], provider)
    assert call_id == "q1"
    assert sent["output"] == {"answers": [{"selected": ["SQLite"], "other_text": None}], "skipped": False}


RESUME = """
import json, anyio
from tests.support import sample_tools
from toolrig.agent import RunState, resume_run
from toolrig.registry import Registry
from toolrig.rig import Rig
from toolrig.tools.interact import AskUser

async def main():
    registry = Registry([*sample_tools.agent_tools(), AskUser()])
    rig = Rig({root!r}, config=json.loads({config!r}), registry=registry)
    state = RunState.from_json(open({state!r}).read())
    result = await resume_run(state, rig=rig, answers={{"q1": [{{"selectedOption": "SQLite"}}]}})
    print(json.dumps({{"response": result.response, "stop_reason": result.stop_reason}}))

anyio.run(main)
"""


async def test_resuming_without_answers_skips_the_questions(llm: FakeLLM, provider: str, workspace: Path) -> None:
    rig = make(workspace, llm, provider)
    llm.script(reply(Call("q1", "ask_user", ASK)))
    paused = await run_agent("set up", RunOptions(approvals="pause"), rig=rig)
    assert paused.state is not None
    llm.script(reply(Text("I'll pick PostgreSQL then.")))
    await resume_run(paused.state, rig=rig, answers={"q1": None})
    [(_, sent)] = tool_results(llm.bodies()[-1], provider)
    assert sent["output"]["skipped"] is True


async def test_questions_can_pause_while_approvals_keep_their_channel(
    llm: FakeLLM, provider: str, workspace: Path
) -> None:
    llm.script(reply(Call("q1", "ask_user", ASK)))
    result = await run_agent("set up", RunOptions(questions="pause"), rig=make(workspace, llm, provider))
    assert result.stop_reason == "paused" and result.state is not None
    assert result.state.pending[0].questions


async def test_a_run_that_skips_questions_goes_on_at_once(llm: FakeLLM, provider: str, workspace: Path) -> None:
    # How a scheduled task runs: nobody watches it, so questions are skipped and approvals still pause.
    llm.script(reply(Call("q1", "ask_user", ASK)), reply(Text("Assumed PostgreSQL.")))
    options = RunOptions(approvals="pause", questions="skip")
    result = await run_agent("set up", options, rig=make(workspace, llm, provider))
    assert result.stop_reason == "completed" and result.response == "Assumed PostgreSQL."
    [(_, sent)] = tool_results(llm.bodies()[-1], provider)
    assert sent["output"]["skipped"] is True


async def test_questions_apart_leaves_approvals_to_the_fallback_when_it_has_no_channel() -> None:
    from toolrig.approvals import ApprovalRequest
    from toolrig.approvals.broker import ApprovalBroker
    from toolrig.event_bus import NullSink

    broker = ApprovalBroker(QuestionsApart(questions=PauseChannel(), approvals=None), fallback="allow")
    answer = await broker.decide(ApprovalRequest("c1", "wipe", {}), NullSink())
    assert answer.how == "no_channel:allow"

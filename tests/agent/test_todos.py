"""The model's todo list lives with the session: a continued session (or a resumed paused run) starts with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agent.conftest import agent_config
from tests.support import sample_tools
from tests.support.fake_llm import Call, FakeLLM, Text, reply
from toolrig.agent import RunOptions, run_agent
from toolrig.registry import Registry
from toolrig.rig import Rig
from toolrig.tools.interact import WriteTodos

pytestmark = pytest.mark.anyio


async def test_a_continued_session_is_reminded_of_its_todo_list(llm: FakeLLM, provider: str, workspace: Path) -> None:
    rig = Rig(
        workspace, config=agent_config(llm, provider), registry=Registry([*sample_tools.agent_tools(), WriteTodos()])
    )
    todos = {"todos": [{"task": "Read the code", "status": "completed"}, {"task": "Fix it", "status": "in_progress"}]}
    llm.script(reply(Call("c1", "write_todos", json.dumps(todos))), reply(Text("On it.")))
    first = await run_agent("fix the bug", rig=rig)
    llm.script(reply(Text("Still fixing.")))
    await run_agent("how far are you?", RunOptions(session_id=first.session_id), rig=rig)
    sent = json.dumps(llm.bodies()[-1]["messages"][-1])
    assert "Your todo list so far" in sent and "[in_progress] Fix it" in sent and "[completed] Read the code" in sent
    llm.script(reply(Text("New topic.")))
    await run_agent("something else", rig=rig)  # a new session has no list to be reminded of
    assert "todo list" not in json.dumps(llm.bodies()[-1]["messages"])

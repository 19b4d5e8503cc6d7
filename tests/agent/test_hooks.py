from __future__ import annotations

from typing import Any

import pytest

from tests.support.fake_llm import Call, FakeLLM, Text, reply
from toolrig.agent import RunOptions, run_agent
from toolrig.errors import ErrorType, ToolError
from toolrig.hooks import HookEvent, Hooks

pytestmark = pytest.mark.anyio


class Recorder(Hooks):
    def __init__(self, label: str, seen: list[str]) -> None:
        self.label = label
        self.seen = seen

    async def before_prompt(self, event: HookEvent) -> None:
        self.seen.append(f"{self.label}:prompt:{event.message}")

    async def after_response(self, event: HookEvent) -> None:
        self.seen.append(f"{self.label}:response:{event.response}")

    async def before_tool(self, event: HookEvent) -> None:
        self.seen.append(f"{self.label}:before:{event.tool}")
        if self.label == "run" and event.tool_args == {"a": 0, "b": 0}:
            raise ToolError(ErrorType.DENIED, "zeros are not allowed")

    async def after_tool(self, event: HookEvent) -> None:
        self.seen.append(f"{self.label}:after:{event.tool}")


async def test_prompt_and_response_hooks_run_around_the_run_for_rig_and_run_hooks(llm: FakeLLM, make_rig: Any) -> None:
    seen: list[str] = []
    rig = make_rig(rig_options={"hooks": [Recorder("rig", seen)]})
    llm.script(reply(Call("c1", "add", '{"a": 1, "b": 1}')), reply(Text("2")))
    await run_agent("1+1", RunOptions(hooks=[Recorder("run", seen)]), rig=rig)
    assert seen == [
        "rig:prompt:1+1",
        "run:prompt:1+1",
        "rig:before:add",
        "run:before:add",
        "rig:after:add",
        "run:after:add",
        "rig:response:2",
        "run:response:2",
    ]


async def test_a_run_hook_can_block_a_call_and_other_runs_are_not_affected(
    llm: FakeLLM, make_rig: Any, provider: str
) -> None:
    seen: list[str] = []
    rig = make_rig()
    llm.script(reply(Call("c1", "add", '{"a": 0, "b": 0}')), reply(Text("blocked")))
    await run_agent("0+0", RunOptions(hooks=[Recorder("run", seen)]), rig=rig)
    body = llm.bodies()[1]
    sent = str(body["messages"][-1])
    assert "zeros are not allowed" in sent
    seen.clear()
    llm.script(reply(Call("c2", "add", '{"a": 0, "b": 0}')), reply(Text("0")))
    result = await run_agent("0+0 again", rig=rig)  # no run hooks this time: the call goes through
    assert result.response == "0" and seen == []

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.sample_tools import all_tools
from toolrig import Rig, ToolError
from toolrig.errors import ErrorType
from toolrig.hooks import HookChain, HookEvent, Hooks
from toolrig.registry import Registry

pytestmark = pytest.mark.anyio


class Recorder(Hooks):
    def __init__(self, label: str, log: list[str]) -> None:
        self.label = label
        self.log = log

    async def before_tool(self, event: HookEvent) -> None:
        self.log.append(f"{self.label}:before:{event.tool}:{event.tool_args}")
        if event.tool_args and event.tool_args.get("text") == f"block-{self.label}":
            raise ToolError(ErrorType.DENIED, f"{self.label} blocked it")

    async def after_tool(self, event: HookEvent) -> None:
        assert event.tool_result is not None
        self.log.append(f"{self.label}:after:{event.tool_result.is_error}")


class Broken(Hooks):
    async def before_tool(self, event: HookEvent) -> None:
        raise RuntimeError("hook bug")

    async def after_tool(self, event: HookEvent) -> None:
        raise RuntimeError("hook bug")


def rig_with(workspace: Path, *hooks: Hooks) -> Rig:
    return Rig(workspace, config={}, registry=Registry(all_tools()), hooks=hooks)


async def test_python_hooks_run_in_order_around_the_call(workspace: Path) -> None:
    log: list[str] = []
    rig = rig_with(workspace, Recorder("a", log), Recorder("b", log))
    assert not (await rig.call("echo", {"text": "x"})).is_error
    assert log == ["a:before:echo:{'text': 'x'}", "b:before:echo:{'text': 'x'}", "a:after:False", "b:after:False"]


async def test_before_tool_can_block_and_its_message_reaches_the_model(workspace: Path) -> None:
    log: list[str] = []
    rig = rig_with(workspace, Recorder("a", log), Recorder("b", log))
    result = await rig.call("echo", {"text": "block-a"})
    assert result.error_type == "denied" and result.message == "a blocked it"
    assert log == ["a:before:echo:{'text': 'block-a'}", "a:after:True", "b:after:True"]


async def test_a_failing_hook_is_logged_and_never_fails_the_call(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log: list[str] = []
    rig = rig_with(workspace, Broken(), Recorder("after-broken", log))
    with caplog.at_level(logging.ERROR, logger="toolrig.hooks"):
        result = await rig.call("echo", {"text": "x"})
    assert not result.is_error
    assert log[0].startswith("after-broken:before") and log[1] == "after-broken:after:False"
    assert sum("hook bug" in (r.exc_text or "") for r in caplog.records) == 2


async def test_prompt_and_response_points_run_and_disabled_chain_skips_all() -> None:
    seen: list[str] = []

    class Prompts(Hooks):
        async def before_prompt(self, event: HookEvent) -> None:
            seen.append(f"prompt:{event.message}")

        async def after_response(self, event: HookEvent) -> None:
            seen.append(f"response:{event.response}")

    chain = HookChain()
    chain.add(Prompts())
    await chain.run(HookEvent("before_prompt", message="hi"))
    await chain.run(HookEvent("after_response", response="hello"))
    chain.enabled = False
    await chain.run(HookEvent("before_prompt", message="ignored"))
    assert seen == ["prompt:hi", "response:hello"]
